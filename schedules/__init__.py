"""Workloads and their VTA-8 schedules: packed dense and conv2d with requantisation, the
ResNet-18 layer table, and the gemm / conv2d / resnet18 subcommands."""
