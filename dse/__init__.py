"""Design-space exploration: sweeps of hardware configs x workloads and tile tuning, on Dask.

`vta-sim sweep SPEC.json --out results.csv` (dse.cli) runs a grid of design points
(dse.spec) as Dask tasks (dse.point, dse.sweep) and draws the Pareto front and sensitivities
(dse.report); `vta-sim conv2d|gemm --tune N` searches tiles with the simulator as the cost
(dse.tune) and keeps the best in the tuning database the compiler reads (schedules.tuning_db).
See docs/dse.md.
"""
