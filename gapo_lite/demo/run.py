"""The miniature GAPO reproduction on CPU: collapse a tiny model, then make it diverse with GAPO.

1. build a tiny Qwen2 whose word-level vocabulary holds every item of every category;
2. "pretrain" it on list prompts of ALL categories: first to copy an item of the list (uniform target),
   then to answer mostly the first item (mode collapse), so that it starts where the paper's models do:
   almost always valid, and collapsed;
3. read the start's mode pressure (``gapo_lite.diagnostics``): is it valid often enough for GAPO to spread it?
4. train it with GAPO on the TRAINING categories only, and, from the same start, with plain GRPO and a
   per-sample validity reward (the baseline);
5. measure all three on held-out and training categories at T = 0.7 (the paper's) and T = 1.0; plot the
   answers by list position and the training curves.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gapo_lite.demo.parts import QUICK, RL, SPREAD_MARGIN, Measurement, Pretraining, TinyModel, build_list_model, measure, pretrain_list_model, rl_config

MODELS = ("before", "gapo", "grpo_baseline")
LABELS = {"before": "before (collapsed)", "gapo": "GAPO", "grpo_baseline": "GRPO + validity reward"}
COLORS = {"before": "#888888", "gapo": "#2a7ab9", "grpo_baseline": "#d9822b"}
REWARDS = {"gapo": "gapo", "grpo_baseline": "validity"}


@dataclass(frozen=True)
class DemoSettings(Measurement, RL, Pretraining, TinyModel):
    """The demo: the list miniatures' shared parts (``gapo_lite.demo.parts``) and its one start; ``quick()`` is a
    seconds-long variant for tests and notebooks."""

    copy_steps: int = 800  # with the copy head (TinyModel.copy_head); from Qwen2's random start it took 2500
    first_share: float = 0.9  # a start collapsed well past a pure first-position habit (held-out JSD 0.311)
    seed: int = 0
    threads: int = 2  # see gapo_lite.demo.stages.torch_threads

    @classmethod
    def quick(cls) -> "DemoSettings":
        return cls(**QUICK, copy_steps=20, pretrain_steps=10, pretrain_batch=16, rl_steps=3, threads=1)


def start_line(before: dict[str, Any], temperature: float) -> str:
    """One line on the starting model: valid rate, dominant share, and whether GAPO is expected to spread it."""
    p = before["heldout_pressure"]
    return f"start (held-out, T={temperature:g}; {p['prompts_spreading']}/{p['prompts']} prompts with negative pressure): {p['verdict']}"


def reading(results: dict[str, Any]) -> str:
    """The table in one line: did GAPO spread the start on held-out categories, and what did the baseline do."""
    before, gapo, base = (results[m]["heldout_jsd"] for m in MODELS)
    verdict = "GAPO spread it" if gapo < before - SPREAD_MARGIN else "GAPO did not spread it"
    return (f"{verdict}: held-out JSD {before:.3f} -> {gapo:.3f} (valid {results['gapo']['heldout_valid_rate']:.3f}); "
            f"{LABELS['grpo_baseline']}: {before:.3f} -> {base:.3f}")


def run_demo(out_dir: str | Path = "runs/demo", settings: DemoSettings | None = None, command: str | None = None) -> dict[str, Any]:
    """Run every stage (on the experiments' staged runner), print the table and its reading, write ``results.json``, ``choices.png`` and ``curves.png``."""
    from gapo_lite.demo.stages import Experiment, RLRun, run_staged

    s = settings or DemoSettings()

    def on_start(results: dict[str, Any]) -> dict[str, Any]:
        print("      " + start_line(results["before"], s.eval_temperatures[0]))
        return {"start": {"temperature": s.eval_temperatures[0], **{k: v for k, v in results["before"]["heldout_pressure"].items() if k != "lists"}}}

    experiment = Experiment(
        settings=s,
        build_model=lambda path: build_list_model(path, s),
        pretrain=lambda model, tok: pretrain_list_model(model, tok, s, copy_steps=s.copy_steps, collapse_steps=s.pretrain_steps,
                                                        first_share=s.first_share, seed=s.seed),
        runs=[RLRun(name, LABELS[name]) for name in REWARDS],
        rl_config=lambda start, out, run: rl_config(s, start, out, REWARDS[run.name]),
        measure=lambda model, tok: measure(model, tok, s),
        format_table=format_table,
        pretrain_message="building and pretraining a collapsed tiny model (all categories: learn to copy an item, then collapse onto the first)",
        run_message=" on training categories only",
        plot=write_plots,
        extra_results=lambda results: {"reading": reading(results)},
        on_start=on_start,
        summary=lambda m: f"held-out JSD {m['heldout_jsd']:.3f}, valid {m['heldout_valid_rate']:.3f} (T={s.eval_temperatures[0]:g})",
    )
    results = run_staged(experiment, out_dir, command=command)
    print(results["reading"])
    return results


def write_plots(results: dict[str, Any], out: Path) -> list[Path]:
    """``choices.png`` (answers by list position) and ``curves.png`` (training curves of both RL runs)."""
    from gapo_lite.demo.plots import plot_choices, plot_curves

    plot_choices(results, out / "choices.png", {m: LABELS[m] for m in MODELS}, COLORS)
    plot_curves({LABELS[name]: out / name / "metrics.jsonl" for name in REWARDS}, out / "curves.png")
    return [out / "choices.png", out / "curves.png"]


def format_table(results: dict[str, Any]) -> str:
    """Before / GAPO / baseline side by side, one row per metric and temperature."""
    temps = [("T=0.7", lambda r: r)] + [(f"T={k.split('_', 1)[1]}", (lambda key: lambda r: r[key])(k)) for k in results["before"] if k.startswith("temperature_")]
    metrics = [("heldout_jsd", "held-out JSD"), ("heldout_valid_rate", "held-out valid"), ("heldout_unique", "held-out unique/8"),
               ("heldout_first_share", "held-out 1st-position share"), ("train_jsd", "train JSD"), ("train_valid_rate", "train valid")]
    header = f"{'metric':34s}" + "".join(f"{LABELS[m]:>24s}" for m in MODELS)
    lines = [header, "-" * len(header)]
    for temp_label, pick in temps:
        for key, label in metrics:
            lines.append(f"{label + ' (' + temp_label + ')':34s}" + "".join(f"{pick(results[m])[key]:24.3f}" for m in MODELS))
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gapo_lite.demo.stages import add_common_arguments

    add_common_arguments(parser, "runs/demo")


def run(args: argparse.Namespace) -> int:
    from gapo_lite.demo.stages import settings_from_args

    s = settings_from_args(DemoSettings, args, what="demo setting")
    run_demo(args.out, s, command=" ".join(["gapo-lite demo", *(["--quick"] if args.quick else []), *(f"--set {o}" for o in args.overrides)]))
    return 0
