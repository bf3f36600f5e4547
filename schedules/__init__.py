"""VTA-8's kernels: packed dense and conv2d with requantisation, pooling and element-wise ops as
TensorIR schedules (`vta_*`), the ResNet-18 layer table, and `measure.run_vta`, which compiles,
runs and verifies one of them; `cli` is the argparse front (gemm / conv2d / resnet18)."""
