"""The CPU and GPU builds VTA-8 is measured against (`vta-sim compare`): the same workloads as
scalar, optimised, tensorised (AVX2/VNNI), auto-tuned and CUDA TVM builds, and numpy/onnxruntime
baselines. It reaches the accelerator only through `schedules.measure.run_vta`."""
