"""VTA-8 as Verilog (hw/rtl), its Verilated build, cocotb benches and the `rtl` backend.

docs/hardware.md describes the micro-architecture and how to run everything.
"""
