"""Generated models for the graph level: small ONNX graphs across the exporters' common ops
(graph.fuzz.models, Hypothesis strategies) and what `vta-sim model` made of each
(graph.fuzz.outcome). tests/graph/test_graph_fuzz.py runs a few, bench/fuzz_graph.py many."""
