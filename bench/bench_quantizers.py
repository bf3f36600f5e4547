"""Agreement with onnxruntime and cost of each quantiser: the small CNN and the digits CNN.

    python bench/bench_quantizers.py

For each quantiser (graph.quantize.QUANTIZERS): where each layer runs, whether the accelerator
matches the CPU build bit for bit, and how close both are to onnxruntime (ORT_DISABLE_ALL) in
output quantisation steps; for digits also the held-out accuracy of all three.
"""
from __future__ import annotations

from graph.kernels import KernelCache
from graph.models import digits, small_cnn
from graph.quantize import QUANTIZERS, quantizer_named
from graph.run import ModelCase, run_model


def row(name: str, quantizer: str, result) -> str:
    j = result.to_json()
    o = j["onnxruntime"]
    on_vta = sum(r["target"] == "vta" for r in j["layers"])
    acc = "" if j["accuracy_cpu"] is None else (
        f"{j['accuracy_vta']:.4f} / {j['accuracy_onnxruntime']:.4f}")
    return (f"| {name} | {quantizer} | {on_vta}/{len(j['layers'])} | {'yes' if j['verified'] else 'NO'} | "
            f"{100 * o['identical_fraction']:.2f} % | {o['max_abs_lsb']} | "
            f"{'yes' if o['argmax_equal'] else 'no'} | {acc} | {j['total_cycles']:,} |")


def main() -> None:
    cache = KernelCache()
    print("| model | quantiser | layers on VTA | bit-exact vs CPU build | identical to onnxruntime | "
          "max LSB | argmax equal | accuracy vta / onnxruntime | cycles |")
    print("|---|---|---|---|---:|---:|---|---|---:|")
    for quantizer in QUANTIZERS:
        qdq = quantizer_named(quantizer)(small_cnn.float_model(), small_cnn.images(64, seed=6))
        result = run_model(ModelCase("small_cnn", qdq, small_cnn.images(256, seed=7)), cache=cache,
                           compare_onnxruntime=True)
        print(row("small CNN", quantizer, result), flush=True)
    for quantizer in QUANTIZERS:
        d = digits.load(quantizer=quantizer)
        result = run_model(ModelCase("digits", d.qdq, d.x_test, d.y_test), cache=cache,
                           compare_onnxruntime=True)
        print(row("digits", quantizer, result), flush=True)


if __name__ == "__main__":
    main()
