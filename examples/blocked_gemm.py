"""Run the double-buffered blocked GEMM of `vta_sim.blocked_gemm` (the kernel `vta-sim demo`
runs) with a shape of your choice, verify it against numpy and print its figures.

Run it: python examples/blocked_gemm.py [--m 64 --k 256 --n 256 --vthreads 2 --timeline gemm.png]
"""
import argparse
import sys

from vta_sim.blocked_gemm import run_and_report


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="1x8x8", help="1x8x8 (default), 8x8x8 or a JSON file")
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--k", type=int, default=256)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--vthreads", type=int, default=2, choices=(1, 2))
    p.add_argument("--timeline", default=None, help="write the PNG timeline here")
    args = p.parse_args(argv)
    figures = run_and_report(args.config, args.m, args.k, args.n, args.vthreads, timeline=args.timeline)
    return 0 if figures["verified"] else 1


if __name__ == "__main__":
    sys.exit(main())
