"""Where every recorded SmolLM2 run landed: held-out JSD against held-out valid rate, with issue 34's target.

Reads the report's records (`docs/results/smollm2_*.json`, measured by the clean-answer rule), one point per
start and run (a model recorded in several files once), fits the GAPO runs' JSD as a line in their valid rate,
and prints how many runs reached the target and what the line reads at the target's valid rate:

    python lab/scripts/smollm2_frontier.py docs/results/smollm2_clean.json docs/results/smollm2_probes*.json \
        docs/results/smollm2_average_s*.json docs/results/smollm2_fixed_lists*.json --plot docs/results/smollm2_frontier.png

Runs trained on the lists they are measured on (the lab's ``rl_lists="measured"``) show no transfer: they are
plotted as "other" and left out of the fit.

Records made before the clean rule (no held-out end-of-turn rate) are left out: they counted a reply by its
first item, so their valid rates are not comparable.

``--points FILE`` writes the points themselves (a few KB); the script reads such a file back as its one record,
so the summary and the plot stay reproducible after the full records have gone to git history:

    python lab/scripts/smollm2_frontier.py docs/results/smollm2_frontier.json --plot docs/results/smollm2_frontier.png
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

KINDS = {"before": "start", "gapo_lists": "GAPO, lists only", "gapo": "GAPO, lists + open", "grpo_baseline": "GRPO + validity reward"}
GAPO_KINDS = ("GAPO, lists only", "GAPO, lists + open")


def points(records: list[Path]) -> list[dict[str, Any]]:
    """One dict per measured model (record, seed, kind, label, jsd, valid); a model in several records once."""
    from lab.smollm2_report import model_settings, models, on_measured_lists, run_label, run_of

    seen, out = set(), []
    for path in records:
        recorded = json.loads(Path(path).read_text())
        if isinstance(recorded, dict) and "points" in recorded:  # written by --points
            out += [p for p in recorded["points"] if (p["seed"], p["label"], round(p["jsd"], 6), round(p["valid"], 6)) not in seen]
            seen.update((p["seed"], p["label"], round(p["jsd"], 6), round(p["valid"], 6)) for p in recorded["points"])
            continue
        for results in recorded:
            if "heldout_end_rate" not in results["before"]:
                continue  # measured by the lenient rule
            for name in models(results):
                m = results[name]
                label = run_label(results, name)
                key = (results["settings"]["seed"], label, round(m["heldout_jsd"], 6), round(m["heldout_valid_rate"], 6))
                if key in seen:
                    continue
                seen.add(key)
                kind = "other" if on_measured_lists(model_settings(results, name)) else KINDS.get(run_of(name), "other")  # no transfer to fit
                out.append({"record": Path(path).name, "seed": results["settings"]["seed"], "kind": kind, "label": label,
                            "jsd": m["heldout_jsd"], "valid": m["heldout_valid_rate"]})
    return out


def fit(pts: list[dict[str, Any]]) -> dict[str, float]:
    """Least squares ``jsd = a + b * valid`` over ``pts``, with Pearson's r.

    >>> f = fit([{"jsd": 0.3, "valid": 0.9}, {"jsd": 0.2, "valid": 0.8}, {"jsd": 0.1, "valid": 0.7}])
    >>> round(f["a"], 6), round(f["b"], 6), round(f["r"], 6)
    (-0.6, 1.0, 1.0)
    """
    n = len(pts)
    if n < 3:
        raise ValueError(f"a line needs at least 3 runs, got {n}")
    mx, my = sum(p["valid"] for p in pts) / n, sum(p["jsd"] for p in pts) / n
    sxx = sum((p["valid"] - mx) ** 2 for p in pts)
    syy = sum((p["jsd"] - my) ** 2 for p in pts)
    sxy = sum((p["valid"] - mx) * (p["jsd"] - my) for p in pts)
    b = sxy / sxx
    return {"n": n, "a": my - b * mx, "b": b, "r": sxy / (sxx * syy) ** 0.5}


def summary(pts: list[dict[str, Any]]) -> str:
    """The lines the script prints (and docs/smollm2.md quotes)."""
    from lab.smollm2_report import HELDOUT_JSD_TARGET, HELDOUT_VALID_TARGET

    gapo = [p for p in pts if p["kind"] in GAPO_KINDS]
    f = fit(gapo)
    met = [p for p in gapo if p["jsd"] <= HELDOUT_JSD_TARGET and p["valid"] >= HELDOUT_VALID_TARGET]
    valid_enough = [p for p in gapo if p["valid"] >= HELDOUT_VALID_TARGET]
    best = min(valid_enough, key=lambda p: p["jsd"]) if valid_enough else None
    starts = ", ".join(f"seed {p['seed']} {p['jsd']:.3f} at valid {p['valid']:.3f}" for p in pts if p["kind"] == "start")
    counts = ", ".join(f"{sum(p['kind'] == k for p in pts)} {k}" for k in (*KINDS.values(), "other") if any(p["kind"] == k for p in pts))
    lines = [
        f"models: {len(pts)} ({counts}); starts: {starts}",
        f"GAPO runs reaching held-out JSD <= {HELDOUT_JSD_TARGET} with valid >= {HELDOUT_VALID_TARGET}: {len(met)} of {len(gapo)}",
        f"GAPO runs, held-out JSD = {f['a']:.3f} {f['b']:+.3f} x valid (r = {f['r']:.2f}, {f['n']} runs): "
        f"{f['a'] + f['b'] * HELDOUT_VALID_TARGET:.3f} at valid {HELDOUT_VALID_TARGET}",
    ]
    if best:
        lines.append(f"lowest held-out JSD with valid >= {HELDOUT_VALID_TARGET}: {best['jsd']:.3f} (seed {best['seed']}, {best['label']}, valid {best['valid']:.3f})")
    return "\n".join(lines)


def plot(pts: list[dict[str, Any]], path: Path) -> Path:
    """The points by kind and seed, the GAPO runs' line, the target's corner shaded."""
    from gapo_lite.demo.plots import save
    from gapo_lite.eval.report import pyplot
    from lab.smollm2_report import HELDOUT_JSD_TARGET, HELDOUT_VALID_TARGET

    fig, ax = pyplot().subplots(figsize=(7, 4.5))
    ax.fill_between([HELDOUT_VALID_TARGET, 1.0], 0, HELDOUT_JSD_TARGET, color="tab:green", alpha=0.15, label="issue 34's target")
    styles = {"start": ("*", "black", 160), "GAPO, lists only": ("o", "tab:blue", 40), "GAPO, lists + open": ("s", "tab:orange", 40),
              "GRPO + validity reward": ("^", "tab:red", 50), "other": ("x", "grey", 40)}
    for kind, (marker, color, size) in styles.items():
        for seed, fill in ((0, color), (1, "white")):
            sel = [p for p in pts if p["kind"] == kind and p["seed"] == seed]
            # a line marker has no face to leave white: seed 1's is "+" instead
            mark, face = ("+", color) if marker == "x" and seed == 1 else (marker, color if marker == "x" else fill)
            if sel:
                ax.scatter([p["valid"] for p in sel], [p["jsd"] for p in sel], marker=mark, s=size, facecolors=face, edgecolors=color,
                           label=f"{'other (averaged updates)' if kind == 'other' else kind}, seed {seed}")
    f = fit([p for p in pts if p["kind"] in GAPO_KINDS])
    xs = [min(p["valid"] for p in pts), 1.0]
    ax.plot(xs, [f["a"] + f["b"] * x for x in xs], color="tab:blue", lw=1, ls="--", label=f"GAPO runs' line (r = {f['r']:.2f})")
    ax.set_xlabel("held-out valid rate")
    ax.set_ylabel("held-out JSD to uniform (lower: more spread)")
    ax.set_title("SmolLM2-135M: every recorded run (clean-answer rule)")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    save(fig, path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument("--plot", type=Path, help="draw the points here (PNG)")
    parser.add_argument("--points", type=Path, help="write the points here (JSON), with the command that read them")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.records if not p.is_file()]
    if missing:
        parser.error(f"no such record: {', '.join(missing)}")
    pts = points(args.records)
    try:
        print(summary(pts))
    except ValueError as err:
        parser.error(str(err))
    if args.points:
        command = " ".join(["python -m lab.scripts.smollm2_frontier", *(argv if argv is not None else __import__("sys").argv[1:])])
        args.points.write_text(json.dumps({"command": command, "points": pts}, indent=1) + "\n")
        print("wrote", args.points)
    if args.plot:
        print("wrote", plot(pts, args.plot))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
