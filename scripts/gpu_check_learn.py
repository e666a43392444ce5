"""The GPU check's learning stage: does GAPO spread a collapsed model through the kit, on each backend?

    python scripts/gpu_check_learn.py build runs/gpu_check_start           # on the CPU, before the GPU call (~2 min)
    python scripts/gpu_check_learn.py build runs/gpu_check_start --quick   # seconds; figures meaningless (tests)

Why a prepared start: a random-weight model answers nothing valid, so every reward, advantage and gradient is
zero and no stage would show learning. The demo's tiny model (``gapo_lite.demo``: a word-level Qwen2 pretrained
to copy an item of a list, then collapsed onto the first one) is in the paper's regime: almost always valid and
collapsed. It is built here, on the CPU, with the demo's own functions (``gapo_lite.demo.parts``), so a faster
demo pretraining makes this faster too, and carried to the GPU (a few MB under the ignored ``runs/``).

On the GPU (``scripts/gpu_check_worker.py --stage learn``, one process per backend), from that start: GAPO, and
the GRPO + validity baseline, each through the kit's ``train()`` with LoRA (4-bit where bitsandbytes and the
backend take the tiny shapes, else 16-bit, saying why), each measured with the demo's lists suite on held-out
categories. ``targets`` says whether the demo's targets hold.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

START_FILE = "start.json"  # beside the start's weights: its settings and its measured held-out figures
RUNS = {"gapo": "gapo", "grpo_baseline": "validity"}  # run name -> reward, as in the demo
# The demo's targets (docs/demo.md): a collapsed start, spread by GAPO with validity kept; the baseline does not spread it.
START_MIN_JSD, GAPO_MAX_JSD, GAPO_MIN_VALID, BASELINE_MIN_JSD = 0.3, 0.1, 0.95, 0.3
# LoRA on the tiny model (r=16 of hidden 128, the seven projections of both layers). Its learning rate is the demo's
# full fine-tuning one (3e-4) a few times over: LoRA's B starts at zero, so the first steps move the weights less;
# Adam then moves each LoRA entry by about lr a step, and a weight's change is a rank-16 sum of such products.
# Chosen by that reading, then measured on the CPU (docs/gpu.md, "GAPO learning").
LORA = dict(use_lora=True, lora_r=16, lora_alpha=32, lora_dropout=0.0)
LORA_LR = 1e-3


def settings(quick: bool = False, **changes: Any):
    """The demo's settings (or its quick variant), measured at its first temperature only (T = 0.7, the paper's)."""
    from gapo_lite.demo.run import DemoSettings

    s = DemoSettings.quick() if quick else DemoSettings()
    return dataclasses.replace(s, eval_temperatures=s.eval_temperatures[:1], **changes)


def heldout(measured: dict[str, Any]) -> dict[str, float | None]:
    """The figures the check keeps of a lists-suite measurement: held-out JSD and valid rate at T = 0.7 (None for a
    JSD with no valid answer to compute it from: JSON has no NaN)."""
    return {k: None if math.isnan(measured[k]) else measured[k] for k in ("heldout_jsd", "heldout_valid_rate")}


def figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def build_start(out: Path, quick: bool = False, threads: int = 1) -> dict[str, Any]:
    """Build and pretrain the demo's collapsed start into ``out`` (weights, tokenizer, ``start.json``)."""
    from gapo_lite.demo.parts import build_list_model, measure, pretrain_list_model
    from gapo_lite.demo.stages import torch_threads
    from gapo_lite.models import load_model

    s = settings(quick, threads=threads)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with torch_threads(s.threads):
        model, tokenizer = load_model(build_list_model(out / "base", s), lora=None)
        pretrain_list_model(model, tokenizer, s, copy_steps=s.copy_steps, collapse_steps=s.pretrain_steps, first_share=s.first_share,
                            seed=s.seed, progress=False)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        measured = heldout(measure(model, tokenizer, s))
    record = {"quick": quick, "settings": dataclasses.asdict(s), "before_cpu": measured, "seconds": time.perf_counter() - start,
              "command": f"python scripts/gpu_check_learn.py build {out}" + (" --quick" if quick else "")}
    (out / START_FILE).write_text(json.dumps(record, indent=2) + "\n")
    shutil.rmtree(out / "base", ignore_errors=True)  # the untrained model: only the pretrained start travels
    print(f"gpu_check_learn: start in {out}: held-out JSD {figure(measured['heldout_jsd'])}, valid {figure(measured['heldout_valid_rate'])} "
          f"({record['seconds']:.0f} s)", flush=True)
    return record


def read_start(start: Path) -> dict[str, Any]:
    """The start's record; a missing or unfinished start says how to build it."""
    path = start / START_FILE
    if not path.is_file() or not (start / "config.json").is_file():
        raise FileNotFoundError(f"no prepared start in {start}: build it on the CPU first (python scripts/gpu_check_learn.py build {start})")
    return json.loads(path.read_text())


def run_config(s: Any, start: Path, out: Path, reward: str, backend: str, load_in_4bit: bool | None):
    """The demo's RL config for ``reward`` with LoRA on ``backend`` (the demo fine-tunes the whole tiny model in fp32
    on the CPU; a GPU user trains LoRA, 4-bit where it can, in the precision the plan picks)."""
    import torch

    from gapo_lite.demo.parts import rl_config

    config = rl_config(s, start, out, reward)
    precision = "auto" if torch.cuda.is_available() else config.precision  # the CPU keeps the demo's fp32, as its records
    return dataclasses.replace(config, backend=backend, load_in_4bit=load_in_4bit, learning_rate=LORA_LR, freeze_embeddings=False,
                               precision=precision, save_steps=s.rl_steps, **LORA)


def targets(before: dict[str, float], runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The demo's targets on these figures: each one True / False (None when its run has no figures)."""
    def jsd(name: str) -> float | None:
        return (runs.get(name) or {}).get("heldout_jsd")

    gapo, base, start = jsd("gapo"), jsd("grpo_baseline"), before.get("heldout_jsd")
    valid = (runs.get("gapo") or {}).get("heldout_valid_rate")
    return {
        f"start JSD > {START_MIN_JSD}": start is not None and start > START_MIN_JSD,
        f"GAPO JSD < {GAPO_MAX_JSD}": None if gapo is None else gapo < GAPO_MAX_JSD,
        f"GAPO valid >= {GAPO_MIN_VALID}": None if valid is None else valid >= GAPO_MIN_VALID,
        f"baseline JSD > {BASELINE_MIN_JSD}": None if base is None else base > BASELINE_MIN_JSD,
    }


def verdict(backend: str, before: dict[str, float], runs: dict[str, dict[str, Any]], met: dict[str, Any]) -> str:
    """One line: did GAPO spread the model on this backend, with the figures and the baseline beside it."""
    gapo, base = runs.get("gapo") or {}, runs.get("grpo_baseline") or {}
    word = "GAPO spread the model" if all(v is True for v in met.values()) else "GAPO did NOT meet the targets"
    figures = (f"held-out JSD {figure(before.get('heldout_jsd'))} -> {figure(gapo.get('heldout_jsd'))} "
               f"(valid {figure(gapo.get('heldout_valid_rate'))})")
    missed = [k for k, v in met.items() if v is not True]
    return f"{backend}: {word}: {figures}; baseline {figure(base.get('heldout_jsd'))}" + (f"; missed: {', '.join(missed)}" if missed else "")


def load_adapter(adapter_dir: Path, start: Path, load_in_4bit: bool):
    """A trained adapter on the start, loaded through transformers + peft whatever backend trained it, so that
    both backends' models are measured the same way (4-bit when the run trained on a 4-bit base)."""
    from peft import PeftModel

    from gapo_lite.models import load_model

    model, tokenizer = load_model(start, backend="transformers", lora=None, load_in_4bit=load_in_4bit or None)
    return PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=False), tokenizer


def learn(start: Path, out: Path, backend: str, note: Callable[[str, Any], None], *, quick: bool | None = None, steps: int | None = None,
          callbacks: Callable[[str], list[Any]] = lambda name: []) -> dict[str, Any]:
    """GAPO and the baseline from ``start`` on ``backend``, each measured; ``note(key, value)`` records each figure
    the moment it exists (the worker's partial file), so a stage cut short keeps the runs that finished.

    4-bit is tried first on a CUDA GPU; if loading refuses it, the refusal is kept word for word and the run
    trains 16-bit LoRA instead."""
    import torch

    from gapo_lite.demo.parts import measure
    from gapo_lite.models import load_model
    from gapo_lite.training import train

    record = read_start(start)
    s = settings(record["quick"] if quick is None else quick, **({"rl_steps": steps} if steps else {}))
    cuda = torch.cuda.is_available()
    want_4bit = cuda  # on the CPU the kit trains the tiny model in full precision (4-bit there only costs time)
    note("settings", {"rl_steps": s.rl_steps, "prompts_per_step": s.prompts_per_step, "num_generations": s.num_generations,
                      "learning_rate": LORA_LR, **LORA, "eval_lists": s.eval_lists, "eval_samples": s.eval_samples})
    t = time.perf_counter()
    model, tokenizer = load_model(start, backend="transformers", lora=None, load_in_4bit=want_4bit or None)
    before = heldout(measure(model, tokenizer, s))
    del model
    note("before", before)
    note("measure_seconds", time.perf_counter() - t)
    runs: dict[str, dict[str, Any]] = {}
    load_in_4bit = want_4bit
    for name, reward in RUNS.items():
        t = time.perf_counter()
        config = run_config(s, start, out / name, reward, backend, load_in_4bit)
        try:
            result = train(config, callbacks=callbacks(name))
        except Exception as err:  # a 4-bit refusal before the first step: keep its words, train 16-bit
            if not load_in_4bit or Path(config.output_dir, "metrics.jsonl").is_file():  # it had trained: a failure, not a refusal
                raise
            note("refused_4bit", f"{type(err).__name__}: {err}"[-2000:])
            load_in_4bit = False
            config = run_config(s, start, out / name, reward, backend, load_in_4bit)
            result = train(config, callbacks=callbacks(name))
        train_seconds = time.perf_counter() - t
        note("weights", "4-bit NF4 + LoRA" if load_in_4bit else ("16-bit LoRA" if cuda else "fp32 LoRA (CPU)"))
        trained, trained_tokenizer = load_adapter(result.adapter_dir, start, load_in_4bit)
        step_times = [entry["step_time"] for entry in result.log_history if "step_time" in entry]  # the kit logs each step's time
        runs[name] = {**heldout(measure(trained, trained_tokenizer, s)), "steps": result.global_step, "train_seconds": train_seconds,
                      "step_seconds": sum(step_times) / len(step_times) if step_times else train_seconds / max(1, result.global_step)}
        del trained
        note(name, runs[name])
    met = targets(before, runs)
    line = verdict(backend, before, runs, met)
    note("targets", met)
    note("verdict", line)
    return {"before": before, **runs, "targets": met, "targets_met": all(v is True for v in met.values()), "verdict": line}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build and pretrain the collapsed start (CPU)")
    build.add_argument("out", type=Path)
    build.add_argument("--quick", action="store_true", help="the demo's quick settings: seconds, figures meaningless")
    build.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    build_start(args.out, quick=args.quick, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
