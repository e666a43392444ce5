"""What the CPU's "auto" precision measures, and what it decides: the probe step's bf16 / fp32 time ratio, a few times.

    python benchmarks/cpu_precision.py [--repeats 5] [--threads 2]

The kit measures once per CPU (``gapo_lite._bootstrap.measured_bf16_ratio``, cached in ``<cache>/cpu_precision.json``)
and takes bf16 autocast below ``BF16_PROBE_RATIO``. This script repeats the probe so its spread can be read next to
the threshold, and says what ``auto`` would choose here. For the whole GAPO step, ``benchmarks/smollm2_step.py``.
Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import statistics


def main(argv: list[str] | None = None) -> int:
    import torch

    from gapo_lite._bootstrap import BF16_PROBE_RATIO, cpu_bf16_native, cpu_identity
    from gapo_lite.probes import bf16_step_ratio

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_identity()}; native bf16: {cpu_bf16_native()}")
    if not cpu_bf16_native():
        print("auto: fp32 (bf16 would be emulated); nothing to measure")
        return 0
    ratios = [bf16_step_ratio() for _ in range(args.repeats)]
    print("probe bf16 / fp32 time: " + ", ".join(f"{r:.3f}" for r in ratios))
    median = statistics.median(ratios)
    print(f"median {median:.3f}, threshold {BF16_PROBE_RATIO}: auto would choose {'bf16' if median < BF16_PROBE_RATIO else 'fp32'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
