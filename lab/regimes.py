"""The regime map: from which starting points does GAPO spread a model, and does the mode pressure predict it?

Tiny models are pretrained with the demo's recipe (the shared parts of ``gapo_lite.demo.parts``) to a grid of
starting points: a short, medium and long copy phase (how often the model answers an item of the list at
all: its valid rate) times three degrees of collapse onto the first item (its dominant share). GAPO runs
from each with the demo's RL settings but fewer steps (the map runs one RL run per start, plus one more
per start of one collapse level), and, on one axis the paper leaves open, with ``invalid_reward = 0``
instead of -1 from the starts of the middle collapse level. Every start is read with
:mod:`gapo_lite.diagnostics` before RL; after RL, held-out and training JSD say what GAPO actually did.
Each start is one run of the staged runner (``start_copy<N>_first<S>/``), so an interrupted map resumes.

    python -m lab.regimes --out runs/regimes
    python -m lab.regimes --quick --out /tmp/regimes  # seconds, figures meaningless
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gapo_lite.demo.parts import QUICK, RL, SPREAD_MARGIN, Measurement, Pretraining, TinyModel

RUNS = {-1.0: "gapo", 0.0: "gapo_inv0"}  # invalid reward -> the RL run's name in a start's folder


@dataclass(frozen=True)
class RegimeSettings(Measurement, RL, Pretraining, TinyModel):
    """The list miniatures' shared parts (``gapo_lite.demo.parts``, the demo's recipe) and the grid of starts."""

    copy_steps: tuple[int, ...] = (250, 600, 2500)  # cumulative: snapshots of one copy-phase run (low, mid, the demo's validity)
    first_shares: tuple[float, ...] = (0.4, 0.65, 0.9)  # collapse targets (degree of collapse onto the first item)
    zero_invalid_share: float = 0.65  # the collapse level whose starts also run with invalid_reward = 0
    # The recorded map (docs/results/regimes.json) was made with the demo's earlier start: copying learned from Qwen2's
    # random start, the collapse in the whole last attention layer.
    copy_head: bool = False
    collapse_params: tuple[str, ...] | None = ("layers.1.self_attn",)
    rl_steps: int = 150  # shorter than the demo's run: the map makes one or two per start
    eval_temperatures: tuple[float, ...] = (0.7,)
    seed: int = 0
    threads: int = 1

    @classmethod
    def quick(cls) -> "RegimeSettings":
        return cls(**QUICK, copy_steps=(5, 10), first_shares=(0.5, 0.9), pretrain_steps=5, pretrain_batch=8, zero_invalid_share=0.5, rl_steps=2)


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


def copy_snapshots(out: Path, s: RegimeSettings) -> dict[int, Path]:
    """One copy-phase run of the demo's tiny model, saved after each of ``s.copy_steps`` (cumulative) steps; a
    snapshot already saved is loaded instead of trained again."""
    from gapo_lite.demo.parts import build_list_model, pretrain_list_model
    from gapo_lite.models import load_model

    snapshots = {copy: out / f"copy{copy}" for copy in sorted(s.copy_steps)}
    model = tok = None
    done = 0
    for copy, snapshot in snapshots.items():
        if (snapshot / "config.json").is_file():
            model = tok = None
        else:
            if model is None:
                model, tok = load_model(snapshots[done] if done else build_list_model(out / "base_model", s), lora=None)
            pretrain_list_model(model, tok, s, copy_steps=copy - done, collapse_steps=0, first_share=None, seed=s.seed + copy, progress=False)
            model.save_pretrained(snapshot)
            tok.save_pretrained(snapshot)
        done = copy
    return snapshots


def start_experiment(s: RegimeSettings, snapshot: Path, share: float, copy: int):
    """One start of the map for the staged runner: the copy snapshot, collapsed at ``share``, then GAPO (with
    ``invalid_reward = 0`` too at the ``zero_invalid_share`` level)."""
    from gapo_lite.demo.parts import measure, pretrain_list_model, rl_config
    from gapo_lite.demo.stages import Experiment, RLRun

    rewards = [r for r in RUNS if r == -1.0 or share == s.zero_invalid_share]
    return Experiment(
        settings=s,
        build_model=lambda path: snapshot,
        pretrain=lambda model, tok: pretrain_list_model(model, tok, s, copy_steps=0, collapse_steps=s.pretrain_steps, first_share=share,
                                                        seed=s.seed, progress=False),
        runs=[RLRun(RUNS[r], f"GAPO, invalid reward {r:g}") for r in rewards],
        rl_config=lambda start, out, run: rl_config(s, start, out, "gapo", invalid_reward=next(r for r in RUNS if RUNS[r] == run.name)),
        measure=lambda model, tok: measure(model, tok, s),
        format_table=lambda results: "\n".join([HEADER] + [format_row(row) for row in start_rows(results, copy, share)]),
        pretrain_message=f"collapsing {snapshot.name} onto the first item at {share:g}",
    )


def start_rows(results: dict[str, Any], copy: int, share: float) -> list[dict[str, Any]]:
    """The map's rows of one start (its staged results), one per RL run (invalid reward)."""
    rows = []
    for invalid_reward in (r for r in RUNS if RUNS[r] in results):
        start = _start_summary(results["before"], invalid_reward)
        after = results[RUNS[invalid_reward]]
        row = {"start_name": start_name(copy, share), "copy_steps": copy, "first_share_target": share, "invalid_reward": invalid_reward, "start": start,
               "after": {k: after[k] for k in ("heldout_jsd", "train_jsd", "heldout_valid_rate", "train_valid_rate")}}
        row.update(prediction_record(start, row["after"]))
        rows.append(row)
    return rows


def start_name(copy: int, share: float) -> str:
    return f"start_copy{copy}_first{share:g}"


def run_regimes(out_dir: str | Path, s: RegimeSettings, command: str | None = None) -> dict[str, Any]:
    """Pretrain the grid, run GAPO from every start, write ``results.json`` and ``regimes.png``; return the results."""
    from gapo_lite.demo.stages import run_staged, torch_threads

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with torch_threads(s.threads):
        snapshots = copy_snapshots(out, s)
    rows: list[dict[str, Any]] = []
    for copy, snapshot in snapshots.items():
        for share in s.first_shares:
            results = run_staged(start_experiment(s, snapshot, share, copy), out / start_name(copy, share))
            rows += start_rows(results, copy, share)
    results = {"rows": rows, "settings": dataclasses.asdict(s), "command": command, "wall_seconds": time.perf_counter() - t0,
               "spread_margin": SPREAD_MARGIN}
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
    """Final held-out JSD over the start's valid rate and dominant share, with the threshold curves (L = 8)."""
    from gapo_lite.demo.plots import plot_regimes as plot

    plot(results, path, {invalid_reward: threshold_curve(8, invalid_reward) for invalid_reward in RUNS})


def main(argv: list[str] | None = None) -> int:
    from gapo_lite.demo.stages import experiment_main

    return experiment_main("python -m lab.regimes", __doc__.split("\n")[0], "runs/regimes", RegimeSettings, run_regimes, argv,
                           what="regime setting")


if __name__ == "__main__":
    raise SystemExit(main())
