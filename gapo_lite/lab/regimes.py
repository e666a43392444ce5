"""The regime map: from which starting points does GAPO spread a model, and does the mode pressure predict it?

Tiny models are pretrained to a grid of starting points: a short, medium and long copy phase (how often the
model answers an item of the list at all: its valid rate) times three degrees of collapse onto the first item
(its dominant share). GAPO runs from each (the demo's RL settings, 150 instead of 250 steps so the map fits in
about 25 minutes), and, on one axis the paper leaves open,
with ``invalid_reward = 0`` instead of -1 from the starts of the middle collapse level. Every start is read with
:mod:`gapo_lite.diagnostics` before RL; after RL, held-out and training JSD say what GAPO actually did.

    python -m gapo_lite.lab.regimes --out runs/regimes          # ~25 min on 2 cores
    python -m gapo_lite.lab.regimes --quick --out /tmp/regimes  # seconds, figures meaningless
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPREAD_MARGIN = 0.02  # a held-out JSD drop larger than this counts as "GAPO spread the model"


@dataclass(frozen=True)
class RegimeSettings:
    """The grid and the shared sizes: the demo's model, pretraining recipe, RL settings and evaluation, with a shorter RL run."""

    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 8
    embedding_std: float = 0.1
    copy_steps: tuple[int, ...] = (250, 600, 1600)  # cumulative: snapshots of one copy-phase run (low, mid, high validity)
    first_shares: tuple[float, ...] = (0.4, 0.65, 0.9)  # collapse targets (degree of collapse onto the first item)
    pretrain_steps: int = 200
    pretrain_batch: int = 32
    copy_lr: float = 3e-3
    pretrain_lr: float = 3e-3
    mixed_share: float = 0.5
    lm_on_items: bool = False
    freeze_embeddings_in_collapse: bool = True
    zero_invalid_share: float = 0.65  # the collapse level whose starts also run with invalid_reward = 0
    rl_steps: int = 150  # the demo's RL run at less than half its length, so that the whole map fits in ~25 minutes
    prompts_per_step: int = 4
    num_generations: int = 32
    rl_lr: float = 3e-4
    rl_schedule: str = "cosine"
    rl_temperature: float = 0.7
    completion_tokens: int = 3
    eval_lists: int = 10
    eval_samples: int = 100
    eval_temperatures: tuple[float, ...] = (0.7,)
    seed: int = 0
    threads: int = 1

    @classmethod
    def quick(cls) -> "RegimeSettings":
        return cls(hidden_size=32, num_heads=4, copy_steps=(5, 10), first_shares=(0.5, 0.9), pretrain_steps=5, pretrain_batch=8,
                   zero_invalid_share=0.5, rl_steps=2, prompts_per_step=2, num_generations=4, eval_lists=2, eval_samples=8)


def threshold_curve(num_valid: int, invalid_reward: float, points: int = 60) -> tuple[list[float], list[float]]:
    """(dominant share, validity threshold) pairs when the non-favourite shares are spread evenly over L - 1 items."""
    from gapo_lite.diagnostics import validity_threshold

    shares, thresholds = [], []
    for k in range(points + 1):
        d = 1.0 / num_valid + (1.0 - 1.0 / num_valid) * k / points
        rest = (1.0 - d) / (num_valid - 1)
        shares.append(d)
        thresholds.append(validity_threshold([d] + [rest] * (num_valid - 1), num_valid, invalid_reward))
    return shares, thresholds


def prediction_record(start: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Predicted (pressure < 0) against observed (held-out JSD fell by more than ``SPREAD_MARGIN``)."""
    predicted = start["pressure"] < 0
    observed = after["heldout_jsd"] < start["heldout_jsd"] - SPREAD_MARGIN
    return {"predicted_spread": predicted, "observed_spread": observed, "right": predicted == observed}


def _start_summary(measured: dict[str, Any], invalid_reward: float) -> dict[str, Any]:
    """The start's figures at the first temperature, with the pressure re-read from its per-prompt tallies for ``invalid_reward``."""
    from gapo_lite.diagnostics import mean_reading, read_pressure

    tallies = [t for lst in measured["heldout_pressure"]["lists"] for t in lst["tallies"]]
    readings = [r for r in (read_pressure(t["counts"], t["invalid"], invalid_reward) for t in tallies) if r is not None]
    out = {"heldout_jsd": measured["heldout_jsd"], "train_jsd": measured["train_jsd"], "heldout_valid_rate": measured["heldout_valid_rate"]}
    if not readings:
        return {**out, "valid_rate": 0.0, "dominant_share": float("nan"), "pressure": float("inf"), "threshold": float("inf")}
    return {**out, **dataclasses.asdict(mean_reading(readings)), "prompts_spreading": sum(r.spreads for r in readings), "prompts": len(readings)}


def run_regimes(out_dir: str | Path, s: RegimeSettings) -> dict[str, Any]:
    """Pretrain the grid, run GAPO from every start, write ``results.json`` and ``regimes.png``; return the results."""
    import torch
    from transformers import logging as hf_logging

    from gapo_lite.lab.lists import measure, rl_config
    from gapo_lite.lab.pretrain import pretrain_collapsed
    from gapo_lite.lab.tiny import build_tiny_model
    from gapo_lite.models import load_model
    from gapo_lite.training import train

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hf_logging.set_verbosity_error()
    torch.set_num_threads(s.threads)
    t0 = time.perf_counter()
    base = build_tiny_model(out / "base_model", hidden_size=s.hidden_size, num_layers=s.num_layers, num_heads=s.num_heads,
                            num_kv_heads=s.num_heads, seed=s.seed, embedding_std=s.embedding_std)
    model, tok = load_model(base, lora=None)
    starts: list[tuple[str, int, float, Path]] = []
    done = 0
    for copy in sorted(s.copy_steps):  # one copy-phase run, snapshotted
        pretrain_collapsed(model, tok, copy_steps=copy - done, steps=0, batch_size=s.pretrain_batch, learning_rate=s.copy_lr,
                           mixed_share=s.mixed_share, lm_on_items=s.lm_on_items, seed=s.seed + copy, progress=False)
        done = copy
        snapshot = out / f"copy{copy}"
        model.save_pretrained(snapshot)
        tok.save_pretrained(snapshot)
        for share in s.first_shares:
            start_model, start_tok = load_model(snapshot, lora=None)
            pretrain_collapsed(start_model, start_tok, steps=s.pretrain_steps, batch_size=s.pretrain_batch, first_share=share,
                               learning_rate=s.pretrain_lr, mixed_share=s.mixed_share, lm_on_items=s.lm_on_items,
                               freeze_embeddings_in_collapse=s.freeze_embeddings_in_collapse, seed=s.seed, progress=False)
            path = out / f"start_copy{copy}_first{share:g}"
            start_model.save_pretrained(path)
            start_tok.save_pretrained(path)
            starts.append((path.name, copy, share, path))
    print(f"pretrained {len(starts)} starts in {time.perf_counter() - t0:.0f} s")
    rows: list[dict[str, Any]] = []
    for name, copy, share, path in starts:
        start_model, start_tok = load_model(path, lora=None)
        measured = measure(start_model, start_tok, s)
        rewards = (-1.0, 0.0) if share == s.zero_invalid_share else (-1.0,)
        for invalid_reward in rewards:
            start = _start_summary(measured, invalid_reward)
            run_dir = out / f"{name}_inv{invalid_reward:g}"
            result = train(rl_config(s, path, run_dir, "gapo", invalid_reward=invalid_reward))
            trained, trained_tok = load_model(result.adapter_dir, lora=None)
            after = measure(trained, trained_tok, s)
            row = {"start_name": name, "copy_steps": copy, "first_share_target": share, "invalid_reward": invalid_reward, "start": start,
                   "after": {k: after[k] for k in ("heldout_jsd", "train_jsd", "heldout_valid_rate", "train_valid_rate")}}
            row.update(prediction_record(start, row["after"]))
            rows.append(row)
            print(format_row(row), flush=True)
    results = {"rows": rows, "settings": dataclasses.asdict(s), "wall_seconds": time.perf_counter() - t0, "spread_margin": SPREAD_MARGIN}
    results["prediction_right"] = sum(r["right"] for r in rows)
    results["prediction_total"] = len(rows)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    plot_regimes(results, out / "regimes.png")
    print(format_table(results))
    print(f"wrote {out / 'results.json'} and {out / 'regimes.png'} in {results['wall_seconds']:.0f} s")
    return results


HEADER = (f"{'copy':>5s} {'first':>6s} {'r_inv':>6s} | {'valid':>6s} {'dom':>6s} {'thresh':>6s} {'press':>7s} | "
          f"{'JSD 0':>6s} {'JSD 1':>6s} {'valid 1':>7s} {'trainJSD':>8s} | pred/obs")


def format_row(r: dict[str, Any]) -> str:
    """One start: its diagnostic, held-out JSD before and after GAPO, and whether the prediction held."""
    st, af = r["start"], r["after"]
    verdict = f"{'spread' if r['predicted_spread'] else 'sharpen'}/{'spread' if r['observed_spread'] else 'no'} {'ok' if r['right'] else 'WRONG'}"
    return (f"{r['copy_steps']:>5d} {r['first_share_target']:>6.2f} {r['invalid_reward']:>6g} | {st['valid_rate']:6.3f} {st['dominant_share']:6.3f} "
            f"{st['threshold']:6.3f} {st['pressure']:+7.3f} | {st['heldout_jsd']:6.3f} {af['heldout_jsd']:6.3f} {af['heldout_valid_rate']:7.3f} "
            f"{af['train_jsd']:8.3f} | {verdict}")


def format_table(results: dict[str, Any]) -> str:
    """Every run of the map, then how often the diagnostic predicted the outcome."""
    lines = ["held-out categories, T = 0.7; start = before GAPO (valid, per-prompt dominant share, threshold, pressure), 1 = after GAPO",
             HEADER, "-" * len(HEADER)]
    lines += [format_row(r) for r in results["rows"]]
    lines.append(f"mode pressure predicted the outcome in {results['prediction_right']} of {results['prediction_total']} runs "
                 f"(spread = held-out JSD fell by more than {results['spread_margin']})")
    return "\n".join(lines)


def plot_regimes(results: dict[str, Any], path: Path) -> None:
    """Final held-out JSD over the start's valid rate and dominant share, with the threshold curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    for invalid_reward, style in ((-1.0, "-"), (0.0, "--")):
        d, v = threshold_curve(8, invalid_reward)
        ax.plot(v, d, style, color="black", linewidth=1, label=f"threshold, invalid reward {invalid_reward:g} (GAPO spreads to the right)")
    rows = results["rows"]
    for invalid_reward, marker in ((-1.0, "o"), (0.0, "s")):
        mine = [r for r in rows if r["invalid_reward"] == invalid_reward]
        if not mine:
            continue
        sc = ax.scatter([r["start"]["valid_rate"] for r in mine], [r["start"]["dominant_share"] for r in mine], c=[r["after"]["heldout_jsd"] for r in mine],
                        cmap="viridis_r", vmin=0, vmax=0.6, marker=marker, s=90, edgecolors="black", label=f"start, invalid reward {invalid_reward:g}")
    for r in rows:
        ax.annotate(f"{r['start']['heldout_jsd']:.2f}->{r['after']['heldout_jsd']:.2f}", (r["start"]["valid_rate"], r["start"]["dominant_share"]),
                    textcoords="offset points", xytext=(6, 4 if r["invalid_reward"] == -1.0 else -10), fontsize=7)
    fig.colorbar(sc, ax=ax, label="held-out JSD after GAPO (T = 0.7)")
    ax.set_xlabel("start valid rate (held-out, T = 0.7)")
    ax.set_ylabel("start dominant share per prompt")
    ax.set_xlim(max(0.0, min(r["start"]["valid_rate"] for r in rows) - 0.05), 1.005)
    ax.set_ylim(0.1, 1.02)
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(f"Where GAPO spreads a model (L = 8; pressure right in {results['prediction_right']}/{results['prediction_total']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from gapo_lite.lab import add_common_arguments, apply_overrides

    parser = argparse.ArgumentParser(prog="python -m gapo_lite.lab.regimes", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser, "runs/regimes")
    args = parser.parse_args(argv)
    s = apply_overrides(RegimeSettings.quick() if args.quick else RegimeSettings(), args.overrides, what="regime setting")
    run_regimes(args.out, s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
