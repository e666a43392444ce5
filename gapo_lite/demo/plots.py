"""The lab's figures: the demo's answers by list position and training curves, and the regime map.

Every figure is drawn on :func:`gapo_lite.eval.report.pyplot` (the kit's one matplotlib set-up) and saved
by :func:`save`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

COLORS = ("#2a7ab9", "#d9822b", "#888888")  # GAPO, the baseline, the start
CURVES = (("distinct_per_group", "distinct valid answers per group"), ("group_entropy", "group entropy (bits)"), ("valid_rate", "valid rate"))


def save(fig: Any, path: Path) -> None:
    """Lay out, write at 110 dpi and close ``fig``."""
    from gapo_lite.eval.report import pyplot

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)


def plot_choices(results: dict[str, Any], path: Path, labels: Mapping[str, str], colors: Mapping[str, str]) -> None:
    """Share of choices by list position (held-out lists, first evaluation temperature), one panel per model in ``labels``."""
    from gapo_lite.eval.report import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, len(labels), figsize=(13, 3.6), sharey=True)
    for ax, (name, label) in zip(axes, labels.items()):
        r = results[name]
        shares = r["heldout_position_shares"]
        ax.bar(range(1, len(shares) + 1), shares, color=colors[name])
        ax.axhline(1 / len(shares), color="black", linestyle="--", linewidth=1, label="uniform")
        ax.set_title(f"{label}\nJSD {r['heldout_jsd']:.2f}, valid {r['heldout_valid_rate']:.2f}")
        ax.set_xlabel("position of the chosen item in the shown list")
        ax.set_xticks(range(1, len(shares) + 1))
    axes[0].set_ylabel("share of valid answers")
    axes[0].legend()
    fig.suptitle("Held-out categories (never trained with RL), 8-item lists, T = 0.7")
    save(fig, path)


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


def plot_curves(runs: Mapping[str, Path], path: Path) -> None:
    """Group distinct answers, group entropy and valid rate per training step, one line per run (label -> ``metrics.jsonl``), coloured in order."""
    from gapo_lite.eval.report import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, len(CURVES), figsize=(13, 3.6))
    for (label, metrics_path), color in zip(runs.items(), COLORS):
        series = read_curves(metrics_path)
        for ax, (key, title) in zip(axes, CURVES):
            steps, values = series[key]
            ax.plot(steps, values, label=label, color=color)
            ax.set_title(title)
            ax.set_xlabel("RL step")
    axes[0].legend()
    fig.suptitle("During RL (training categories, groups of the sampled completions)")
    save(fig, path)


def plot_regimes(results: dict[str, Any], path: Path, thresholds: Mapping[float, tuple[Sequence[float], Sequence[float]]]) -> None:
    """Final held-out JSD over the start's valid rate and dominant share, with a threshold curve per invalid
    reward (``thresholds``: invalid reward -> (dominant shares, validity thresholds))."""
    from gapo_lite.eval.report import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    for (invalid_reward, (d, v)), style in zip(thresholds.items(), ("-", "--", ":")):
        ax.plot(v, d, style, color="black", linewidth=1, label=f"threshold, invalid reward {invalid_reward:g} (GAPO spreads to the right)")
    rows = results["rows"]
    for invalid_reward, marker in zip(thresholds, ("o", "s", "^")):
        mine = [r for r in rows if r["invalid_reward"] == invalid_reward]
        if not mine:
            continue
        sc = ax.scatter([r["start"]["valid_rate"] for r in mine], [r["start"]["dominant_share"] for r in mine], c=[r["after"]["heldout_jsd"] for r in mine],
                        cmap="viridis_r", vmin=0, vmax=0.6, marker=marker, s=90, edgecolors="black", label=f"start, invalid reward {invalid_reward:g}")
    first = next(iter(thresholds))
    for r in rows:
        ax.annotate(f"{r['start']['heldout_jsd']:.2f}->{r['after']['heldout_jsd']:.2f}", (r["start"]["valid_rate"], r["start"]["dominant_share"]),
                    textcoords="offset points", xytext=(6, 4 if r["invalid_reward"] == first else -10), fontsize=7)
    fig.colorbar(sc, ax=ax, label="held-out JSD after GAPO (T = 0.7)")
    ax.set_xlabel("start valid rate (held-out, T = 0.7)")
    ax.set_ylabel("start dominant share per prompt")
    ax.set_xlim(max(0.0, min(r["start"]["valid_rate"] for r in rows) - 0.05), 1.005)
    ax.set_ylim(0.1, 1.02)
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(f"Where GAPO spreads a model (L = 8; pressure right in {results['prediction_right']}/{results['prediction_total']})")
    save(fig, path)
