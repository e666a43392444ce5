"""Where an NF4 step's extra time goes on the CPU: one bitsandbytes Linear4bit against the same fp32 Linear,
alternating in one process, in the two ways a GAPO step uses a frozen weight: the training pass (forward and the
backward to its input, 16 rows of 16 tokens) and one decoding step of generation (32 rows, one token each).

    python benchmarks/nf4_matmul.py [--rounds 7] [--threads 1]

Shapes: SmolLM2-135M's MLP up-projection (576 -> 1536). bitsandbytes dequantizes the whole weight at every call, so
its cost per call is fixed while the matrix product's grows with the tokens. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import statistics
import time


def main(argv: list[str] | None = None) -> int:
    import bitsandbytes as bnb
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=20, help="forward + backward calls per timing")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(1536, 576, generator=generator) / 24
    dense = torch.nn.Linear(576, 1536, bias=False)
    dense.weight = torch.nn.Parameter(weight.clone(), requires_grad=False)
    nf4 = bnb.nn.Linear4bit(576, 1536, bias=False, compute_dtype=torch.float32, compress_statistics=True, quant_type="nf4")
    nf4.weight = bnb.nn.Params4bit(weight.clone(), requires_grad=False, compress_statistics=True, quant_type="nf4")
    nf4 = nf4.to("cpu")
    train_x = torch.randn(256, 576, generator=generator, requires_grad=True)
    decode_x = torch.randn(32, 1, 576, generator=generator)

    def training_pass(layer) -> None:
        layer(train_x).sum().backward()

    def decoding_step(layer) -> None:
        with torch.no_grad():
            layer(decode_x)

    for label, call in (("training pass (256 tokens, forward + backward to the input)", training_pass), ("decoding step (32 rows x 1 token)", decoding_step)):
        times: dict[str, list[float]] = {"fp32": [], "nf4": []}
        for i in range(args.rounds + 1):
            for name, layer in (("fp32", dense), ("nf4", nf4)):
                start = time.perf_counter()
                for _ in range(args.repeats):
                    call(layer)
                if i:  # the first round warms up
                    times[name].append((time.perf_counter() - start) / args.repeats)
        fp32, quantized = statistics.median(times["fp32"]), statistics.median(times["nf4"])
        print(f"{label}: fp32 {fp32 * 1e3:.3f} ms, NF4 {quantized * 1e3:.3f} ms ({quantized / fp32:.2f}x), median of {args.rounds}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
