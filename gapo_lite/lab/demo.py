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

from gapo_lite.lab.lists import measure, rl_config

MODELS = ("before", "gapo", "grpo_baseline")
LABELS = {"before": "before (collapsed)", "gapo": "GAPO", "grpo_baseline": "GRPO + validity reward"}


@dataclass(frozen=True)
class DemoSettings:
    """Sizes and schedules of the demo; ``quick()`` is a seconds-long variant for tests and notebooks."""

    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 8
    embedding_std: float = 0.1
    copy_steps: int = 2500  # seed 2 copies worst; its items stay uneven after GAPO with 2000
    copy_lr: float = 3e-3
    pretrain_steps: int = 400  # long enough for the collapse to reach its target on every seed
    pretrain_batch: int = 32
    pretrain_lr: float = 3e-3
    first_share: float = 0.9  # held-out JSD > 0.3 at the start on every seed (a pure first-position habit scores 0.311)
    mixed_share: float = 0.5
    lm_on_items: bool = False
    freeze_embeddings_in_collapse: bool = True
    collapse_params: tuple[str, ...] | None = ("layers.1.self_attn",)  # the collapse trains the last attention layer only
    rl_steps: int = 250  # as far as 350 on every seed (0.066 mean held-out JSD against 0.070, benchmarks/demo_seeds.py)
    rl_freeze_embeddings: bool = True  # as with LoRA: RL moves the blocks, not the words' embeddings
    prompts_per_step: int = 4
    num_generations: int = 32
    rl_lr: float = 3e-4
    rl_schedule: str = "cosine"  # decaying the RL learning rate lowers the noise floor the answers settle at
    rl_temperature: float = 0.7
    completion_tokens: int = 3  # RL and evaluation read the same text: an answer, then end-of-turn or more words
    eval_lists: int = 10
    eval_samples: int = 100
    eval_temperatures: tuple[float, ...] = (0.7, 1.0)
    seed: int = 0
    threads: int = 2  # idle 2 cores: 0.71x the time per copy step, 0.73x per GAPO step (benchmarks/threads.py)

    @classmethod
    def quick(cls) -> "DemoSettings":
        return cls(hidden_size=32, num_heads=4, copy_steps=20, pretrain_steps=10, pretrain_batch=16, rl_steps=3, prompts_per_step=2, num_generations=4,
                   eval_lists=2, eval_samples=8, threads=1)


def start_line(before: dict[str, Any], temperature: float) -> str:
    """One line on the starting model: valid rate, dominant share, and whether GAPO is expected to spread it."""
    p = before["heldout_pressure"]
    return f"start (held-out, T={temperature:g}; {p['prompts_spreading']}/{p['prompts']} prompts with negative pressure): {p['verdict']}"


REWARDS = {"gapo": "gapo", "grpo_baseline": "validity"}


def build_demo_model(path: Path, s: DemoSettings) -> Path:
    """The demo's untrained tiny Qwen2 (sizes, seed and embedding scale from ``s``), saved to ``path``."""
    from gapo_lite.lab.tiny import build_tiny_model

    return build_tiny_model(path, hidden_size=s.hidden_size, num_layers=s.num_layers, num_heads=s.num_heads, num_kv_heads=s.num_heads,
                            seed=s.seed, embedding_std=s.embedding_std)


def run_demo(out_dir: str | Path = "runs/demo", settings: DemoSettings | None = None, command: str | None = None) -> dict[str, Any]:
    """Run every stage (on the experiments' staged runner), print the table, write ``results.json``, ``choices.png`` and ``curves.png``."""
    from gapo_lite.lab.pretrain import pretrain_collapsed
    from gapo_lite.lab.runner import Experiment, RLRun, run_staged

    s = settings or DemoSettings()

    def pretrain(model: Any, tok: Any) -> list[float]:
        return pretrain_collapsed(model, tok, copy_steps=s.copy_steps, copy_learning_rate=s.copy_lr, steps=s.pretrain_steps, batch_size=s.pretrain_batch,
                                  first_share=s.first_share, learning_rate=s.pretrain_lr, mixed_share=s.mixed_share, lm_on_items=s.lm_on_items,
                                  freeze_embeddings_in_collapse=s.freeze_embeddings_in_collapse, collapse_params=s.collapse_params, seed=s.seed)

    def on_start(results: dict[str, Any]) -> dict[str, Any]:
        print("      " + start_line(results["before"], s.eval_temperatures[0]))
        return {"start": {"temperature": s.eval_temperatures[0], **{k: v for k, v in results["before"]["heldout_pressure"].items() if k != "lists"}}}

    experiment = Experiment(
        settings=s,
        build_model=lambda path: build_demo_model(path, s),
        pretrain=pretrain,
        runs=[RLRun(name, LABELS[name]) for name in REWARDS],
        rl_config=lambda start, out, run: rl_config(s, start, out, REWARDS[run.name], freeze_embeddings=s.rl_freeze_embeddings),
        measure=lambda model, tok: measure(model, tok, s),
        format_table=format_table,
        pretrain_message="building and pretraining a collapsed tiny model (all categories: learn to copy an item, then collapse onto the first)",
        run_message=" on training categories only",
        plot=write_plots,
        extra_results=lambda results: {"targets": targets(results)},
        on_start=on_start,
    )
    return run_staged(experiment, out_dir, command=command)


def write_plots(results: dict[str, Any], out: Path) -> list[Path]:
    """``choices.png`` (answers by list position) and ``curves.png`` (training curves of both RL runs)."""
    plot_choices(results, out / "choices.png")
    plot_curves({LABELS[name]: out / name / "metrics.jsonl" for name in REWARDS}, out / "curves.png")
    return [out / "choices.png", out / "curves.png"]


def targets(results: dict[str, Any]) -> dict[str, bool]:
    """The issue's targets at T = 0.7, checked on the measured figures."""
    return {
        "before_heldout_jsd_above_0.3": results["before"]["heldout_jsd"] > 0.3,
        "gapo_heldout_jsd_below_0.1": results["gapo"]["heldout_jsd"] < 0.1,
        "gapo_heldout_valid_rate_at_least_0.95": results["gapo"]["heldout_valid_rate"] >= 0.95,
        "grpo_baseline_stays_collapsed_jsd_above_0.3": results["grpo_baseline"]["heldout_jsd"] > 0.3,
        "wall_seconds_at_most_600": results["wall_seconds"] <= 600,
    }


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


def plot_choices(results: dict[str, Any], path: Path) -> None:
    """Share of choices by list position (held-out lists, T = 0.7), before / GAPO / baseline side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), sharey=True)
    for ax, name in zip(axes, MODELS):
        r = results[name]
        shares = r["heldout_position_shares"]
        ax.bar(range(1, len(shares) + 1), shares, color={"before": "#888888", "gapo": "#2a7ab9", "grpo_baseline": "#d9822b"}[name])
        ax.axhline(1 / len(shares), color="black", linestyle="--", linewidth=1, label="uniform")
        ax.set_title(f"{LABELS[name]}\nJSD {r['heldout_jsd']:.2f}, valid {r['heldout_valid_rate']:.2f}")
        ax.set_xlabel("position of the chosen item in the shown list")
        ax.set_xticks(range(1, len(shares) + 1))
    axes[0].set_ylabel("share of valid answers")
    axes[0].legend()
    fig.suptitle("Held-out categories (never trained with RL), 8-item lists, T = 0.7")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


CURVES = (("distinct_per_group", "distinct valid answers per group"), ("group_entropy", "group entropy (bits)"), ("valid_rate", "valid rate"))


def read_curves(metrics_path: Path) -> dict[str, tuple[list[int], list[float]]]:
    """Per-step series of the hook's group metrics from a run's ``metrics.jsonl`` (keyed by metric suffix)."""
    from gapo_lite.training.callbacks import read_metrics

    series: dict[str, tuple[list[int], list[float]]] = {key: ([], []) for key, _ in CURVES}
    for row in read_metrics(metrics_path):
        for name, value in row.items():
            key = name.rsplit("/", 1)[-1]
            if "/" in name and key in series:
                series[key][0].append(row["step"])
                series[key][1].append(value)
    return series


def plot_curves(runs: dict[str, Path], path: Path) -> None:
    """Group distinct answers, group entropy and valid rate per training step, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(CURVES), figsize=(13, 3.6))
    for label, metrics_path in runs.items():
        series = read_curves(metrics_path)
        for ax, (key, title) in zip(axes, CURVES):
            steps, values = series[key]
            ax.plot(steps, values, label=label, color="#2a7ab9" if label == LABELS["gapo"] else "#d9822b")
            ax.set_title(title)
            ax.set_xlabel("RL step")
    axes[0].legend()
    fig.suptitle("During RL (training categories, groups of the sampled completions)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gapo_lite.lab import add_common_arguments

    add_common_arguments(parser, "runs/demo")


def run(args: argparse.Namespace) -> int:
    from gapo_lite.lab import apply_overrides

    s = apply_overrides(DemoSettings.quick() if args.quick else DemoSettings(), args.overrides, what="demo setting")
    run_demo(args.out, s, command=" ".join(["gapo-lite demo", *(["--quick"] if args.quick else []), *(f"--set {o}" for o in args.overrides)]))
    return 0
