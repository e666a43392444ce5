"""docs/smollm2.md's tables, printed from the lab's experiment folders and records.

    python -m lab.smollm2_report naming runs/naming_s0 runs/naming_s1 --record docs/results/smollm2_naming.json --plot docs/results/smollm2_naming.png
    python -m lab.smollm2_report naming docs/results/smollm2_naming.json      # the same tables from the record
    python -m lab.smollm2_report lists docs/results/smollm2_clean.json        # GAPO on list prompts: the table, targets, damage checks
    python -m lab.smollm2_report crossed docs/results/smollm2_crossed.json    # each run on the lists it trained on and on the others
    python -m lab.smollm2_report nf4 docs/results/smollm2_nf4.json            # the same GAPO run on the 32-bit and the NF4 model

``naming`` reads the folders of ``python -m lab.smollm2 --set runs=gapo_naming,grpo_naming --set measure_every=100``
(GAPO on the open suite's own prompts, recipes/smollm2_naming.py), stage by stage, so it also reads a run that
has not finished; ``--record`` keeps each stage's figures (not its replies), which is what the page's tests read.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from gapo_lite.demo.stages import table
from lab.smollm2 import LABELS, _value, suites_of

# ---------------------------------------------------------------------------------------------------------------- naming
# Issue 54's targets for GAPO on the prompts it trains on, within 300 steps: the trained prompts' valid Unique@100 at least
# doubles with their valid rate and end of turn kept and no damage warning on the guard; rewordings gain 1.5x; the
# baseline is no more diverse than the start.
TRAINED_GAIN, REWORDED_GAIN, VALID_MARGIN, END_MARGIN, TARGET_STEPS = 2.0, 1.5, 0.05, 0.02, 300
PAPER_GAIN = 147 / 24  # "Name a city" on Qwen2.5-32B, 500 samples
NAMING_RUNS = {"gapo_naming": "GAPO", "grpo_naming": "GRPO + validity"}


def trained_prompts() -> tuple[str, ...]:
    """The open suite's prompts the naming recipe trains on (its ``PROMPTS``)."""
    import runpy

    from gapo_lite.training.recipes import recipe_path

    return tuple(runpy.run_path(str(recipe_path("smollm2_naming")), run_name="gapo_lite_recipe")["PROMPTS"])


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def stage_figures(measured: dict[str, Any], trained: tuple[str, ...]) -> dict[str, Any]:
    """What the record keeps of one stage: the trained prompts', the suite's other prompts' and the rewordings' means,
    each prompt's own figures, the guard, and the suites' reply form (what the damage check reads)."""
    open_prompts = measured["open"]["prompts"]
    untrained = [p for p in open_prompts if p not in trained]

    def means(prompts: dict[str, Any], names: list[str]) -> dict[str, float]:
        return {key: _mean([prompts[n][key] for n in names]) for key in ("unique_valid", "valid_rate", "end_rate")}

    reworded = measured["reworded"]["prompts"]
    return {
        "trained": means(open_prompts, list(trained)),
        "untrained": means(open_prompts, untrained),
        "reworded": means(reworded, list(reworded)),
        "prompts": {n: {k: p[k] for k in ("unique_valid", "valid_rate", "end_rate")} | {"top_valid": p["top_valid"][:3]}
                    for n, p in {**open_prompts, **reworded}.items()},
        "open": {k: measured["open"][k] for k in ("mean_unique_valid", "mean_valid_rate", "mean_end_rate", "mean_words", "sd_words", "replies")},
        **({"guard": {k: measured["guard"][k] for k in ("accuracy", "n", "end_rate")}} if "guard" in measured else {}),
    }


def naming_record(folder: Path) -> dict[str, Any]:
    """One seed's record from its experiment folder: the settings and, in order of steps, every finished stage."""
    stages = Path(folder) / "stages"
    read = lambda name: json.loads((stages / f"{name}.json").read_text()) if (stages / f"{name}.json").is_file() else None
    settings, start = read("settings"), read("start")
    if settings is None or start is None:
        raise FileNotFoundError(f"{folder} holds no measured start (stages/settings.json and stages/start.json)")
    if not set(settings["runs"]) <= set(NAMING_RUNS) or not settings.get("reworded_samples"):
        raise ValueError(f"{folder} is not a naming experiment (runs {settings['runs']}, reworded_samples {settings.get('reworded_samples')})")
    trained = trained_prompts()
    points = [{"run": "start", "steps": 0, **stage_figures(start["before"], trained)}]
    every = settings.get("measure_every") or settings["rl_steps"]
    for run in settings["runs"]:
        for steps in range(every, settings["rl_steps"] + 1, every):
            done = read(run if steps == settings["rl_steps"] else f"{run}@{steps}")
            if done is not None:
                points.append({"run": run, "steps": steps, "seconds": done["seconds"], **stage_figures(done["measured"], trained)})
    return {"seed": settings["seed"], "settings": settings, "trained_prompts": list(trained), "points": points}


def point_label(p: dict[str, Any]) -> str:
    return "start" if p["run"] == "start" else f"{NAMING_RUNS[p['run']]}, {p['steps']} steps"


NAMING_COLUMNS = (("trained.unique_valid", "trained prompts: valid Unique@100"), ("trained.valid_rate", "trained: valid rate"),
                  ("trained.end_rate", "trained: end-of-turn rate"), ("reworded.unique_valid", "rewordings: valid Unique@100"),
                  ("reworded.valid_rate", "rewordings: valid rate"), ("untrained.unique_valid", "other 3 prompts: valid Unique@100"),
                  ("guard.accuracy", "guard accuracy"))


def format_naming_table(records: list[dict[str, Any]]) -> str:
    """The page's lead table: per seed, the start and every measured stage of each run (a markdown table)."""
    lines = ["| seed | model | " + " | ".join(label for _, label in NAMING_COLUMNS) + " |", "|" + "---|" * (len(NAMING_COLUMNS) + 2)]
    for record in records:
        for p in record["points"]:
            cells = [f"{_value(p, key):.1f}" if key.endswith("unique_valid") else f"{_value(p, key):.3f}" for key, _ in NAMING_COLUMNS]
            lines.append(f"| {record['seed']} | {point_label(p)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def last_stages(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The start and each run's last measured stage, in the record's order."""
    return list({p["run"]: p for p in record["points"]}.values())


def format_naming_summary(records: list[dict[str, Any]]) -> str:
    """The README's lines: per seed the start and each run's last stage (the columns of :func:`format_naming_table`)."""
    return format_naming_table([{**r, "points": last_stages(r)} for r in records])


def naming_damage(record: dict[str, Any], point: dict[str, Any]) -> list[str]:
    """The damage check of one stage against the start (open suite's reply form and valid rate, guard)."""
    from gapo_lite.eval.damage import damage

    start = record["points"][0]
    return [f.line() for f in damage(suites_of(start), suites_of(point)) if f.worse]


def guard_damaged(record: dict[str, Any], point: dict[str, Any]) -> bool:
    """Whether the damage check flags the stage's guard accuracy (or its end of turn) beyond the noise."""
    return any(line.startswith("guard") for line in naming_damage(record, point))


def naming_targets(record: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, what this seed read, met?) for each of issue 54's targets, at the run's last stage within the target's
    steps; the trained prompts' target also names the first stage that met it, if one did."""
    start = record["points"][0]
    gapo = [p for p in record["points"] if p["run"] == "gapo_naming" and p["steps"] <= TARGET_STEPS]
    baseline = [p for p in record["points"] if p["run"] == "grpo_naming" and p["steps"] <= TARGET_STEPS]
    rows = []

    def trained_met(p: dict[str, Any]) -> bool:
        t, t0 = p["trained"], start["trained"]
        return (t["unique_valid"] >= TRAINED_GAIN * t0["unique_valid"] and t["valid_rate"] >= t0["valid_rate"] - VALID_MARGIN
                and t["end_rate"] >= t0["end_rate"] - END_MARGIN and not guard_damaged(record, p))

    if gapo:
        last, t0 = gapo[-1], start["trained"]
        t = last["trained"]
        first = next((p["steps"] for p in gapo if trained_met(p)), None)
        rows.append((f"GAPO: trained prompts' valid Unique@100 >= {TRAINED_GAIN:g}x, valid rate and end of turn within {VALID_MARGIN} / {END_MARGIN}, "
                     "no guard damage",
                     f"{t['unique_valid'] / t0['unique_valid']:.3f}x at {last['steps']} steps ({t0['unique_valid']:.1f} -> {t['unique_valid']:.1f}), "
                     f"valid rate {t['valid_rate'] - t0['valid_rate']:+.3f}, end of turn {t['end_rate'] - t0['end_rate']:+.3f}, "
                     f"guard {'WORSE beyond the noise' if guard_damaged(record, last) else 'kept'}" + (f"; met at {first} steps" if first else ""), first is not None))
        r, r0 = last["reworded"], start["reworded"]
        rows.append((f"GAPO: rewordings' valid Unique@100 >= {REWORDED_GAIN:g}x", f"{r['unique_valid'] / r0['unique_valid']:.3f}x ({r0['unique_valid']:.1f} -> "
                     f"{r['unique_valid']:.1f})", r["unique_valid"] >= REWORDED_GAIN * r0["unique_valid"]))
        rows.append((f"beyond: the paper's {PAPER_GAIN:.1f}x on the trained prompts", f"{t['unique_valid'] / t0['unique_valid']:.3f}x",
                     t["unique_valid"] >= PAPER_GAIN * t0["unique_valid"]))
    if baseline:
        b = baseline[-1]["trained"]
        rows.append(("GRPO + validity: trained prompts' valid Unique@100 no higher than the start's",
                     f"{b['unique_valid']:.1f} at {baseline[-1]['steps']} steps against {start['trained']['unique_valid']:.1f}",
                     b["unique_valid"] <= start["trained"]["unique_valid"]))
    return rows


def format_naming_targets(records: list[dict[str, Any]]) -> str:
    return targets_table([(r["seed"], naming_targets(r)) for r in records])


def naming_damage_lines(records: list[dict[str, Any]]) -> list[str]:
    """Per seed and stage, the damage check's verdict against the start (what `gapo-lite eval --compare` would print)."""
    lines = []
    for record in records:
        for p in record["points"][1:]:
            worse = naming_damage(record, p)
            label = f"seed {record['seed']}, {point_label(p)}"
            lines += [f"WARNING: {label}: " + "; ".join(worse)] if worse else [f"{label}: no damage check worse than the start beyond the noise"]
    return lines


def format_per_prompt(records: list[dict[str, Any]]) -> str:
    """Each trained prompt's valid Unique@100 (and valid rate) at the start and at each run's last stage, per seed:
    where the gain comes from. A prompt validated by a 25-item word list can show at most 25."""
    lines = ["| seed | model | " + " | ".join(records[0]["trained_prompts"]) + " |", "|" + "---|" * (len(records[0]["trained_prompts"]) + 2)]
    for record in records:
        for p in last_stages(record):
            cells = [f"{p['prompts'][n]['unique_valid']} ({p['prompts'][n]['valid_rate']:.2f})" for n in record["trained_prompts"]]
            lines.append(f"| {record['seed']} | {point_label(p)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_top_answers(records: list[dict[str, Any]], prompt: str = "city") -> str:
    """One prompt's three most frequent valid answers at the start and after each run's last stage, per seed."""
    lines = []
    for record in records:
        for p in last_stages(record):
            top = ", ".join(f"{a['answer']} {a['share']:.2f}" for a in p["prompts"][prompt]["top_valid"])
            lines.append(f"seed {record['seed']}, {point_label(p)}: {top}")
    return "\n".join(lines)


def plot_naming(records: list[dict[str, Any]], path: Path) -> Path:
    """Valid Unique@100 (trained prompts, rewordings) and guard accuracy against steps, both runs, each seed."""
    from gapo_lite.demo.plots import save
    from gapo_lite.eval.report import pyplot

    fig, axes = pyplot().subplots(1, 3, figsize=(12, 3.6))
    panels = (("trained.unique_valid", "trained prompts: valid Unique@100"), ("reworded.unique_valid", "rewordings: valid Unique@100"),
              ("guard.accuracy", "guard accuracy"))
    for ax, (key, title) in zip(axes, panels):
        for record, style in zip(records, ("-", "--")):
            start = record["points"][0]
            for run, color in (("gapo_naming", "tab:blue"), ("grpo_naming", "tab:red")):
                pts = [start] + [p for p in record["points"] if p["run"] == run]
                ax.plot([p["steps"] for p in pts], [_value(p, key) for p in pts], style, marker="o", color=color, label=f"{NAMING_RUNS[run]}, seed {record['seed']}")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("RL steps")
    axes[0].legend(fontsize=7)
    fig.suptitle("SmolLM2-135M: GAPO on the prompts it trains on (recipes/smollm2_naming.py)", fontsize=10)
    save(fig, path)
    return path


def merge_seeds(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per seed: the stages of folders that trained from one start (a copy of it: the same measured start)
    together, in the folders' order. Each stage keeps the settings of the folder it ran in."""
    merged: dict[int, dict[str, Any]] = {}
    for record in records:
        for p in record["points"][1:]:
            p["rl_steps"] = record["settings"]["rl_steps"]
        first = merged.setdefault(record["seed"], {**record, "points": record["points"][:1], "folders": []})
        if record["points"][0] != first["points"][0]:
            raise ValueError(f"seed {record['seed']}'s folders do not start from one start (their measured starts differ)")
        first["points"] += record["points"][1:]
        first["folders"].append(record["settings"]["runs"])
    return [merged[seed] for seed in sorted(merged)]


def report_naming(sources: list[Path], record: Path | None, plot: Path | None) -> list[dict[str, Any]]:
    if len(sources) == 1 and sources[0].is_file():
        records = json.loads(sources[0].read_text())["records"]
    else:
        records = merge_seeds([naming_record(folder) for folder in sources])
    print(format_naming_table(records), "", format_naming_targets(records), "", *naming_damage_lines(records), "", format_per_prompt(records), "",
          format_top_answers(records), sep="\n")
    if record:
        command = "python -m lab.smollm2_report naming " + " ".join(map(str, sources))
        record.write_text(json.dumps({"command": command, "records": records}, indent=1) + "\n")
        print("wrote", record)
    if plot:
        print("wrote", plot_naming(records, plot))
    return records


# ---------------------------------------------------------------------------------------------------------------- lists
# docs/results/smollm2_clean.json: one results dict per seed, each model's measurement under its run's name.

def models(results: dict[str, Any]) -> list[str]:
    """The measured models of one seed: the start and its runs, then the runs added from other folders."""
    return [n for n in LABELS if isinstance(results.get(n), dict) and "heldout_jsd" in results[n]] + list(results.get("added", {}))


def model_settings(results: dict[str, Any], name: str) -> dict[str, Any]:
    """The settings a model of ``results`` ran with: its own folder's for a run added from another."""
    return results.get("added", {}).get(name, {}).get("settings") or results.get("settings", {})


def run_of(name: str) -> str:
    """The run a model's key names: "gapo_lists@fx10_s0" (a run added from another folder) -> "gapo_lists"."""
    return name.split("@")[0]


def run_label(results: dict[str, Any], name: str) -> str:
    """A model's column name; the GAPO run says it mixed open prompts in when its settings did (``open_share``)."""
    if name in results.get("labels", {}) or name in results.get("added", {}):
        return results.get("labels", {}).get(name) or results["added"][name]["label"]
    s = results.get("settings", {})
    if name == "before":
        return "start"
    share = s.get("open_share") or 0
    return f"GAPO, lists + {share:g} open" if name == "gapo" and share > 0 else LABELS[name]


def on_measured_lists(settings: dict[str, Any]) -> bool:
    """Whether a run trained on the very lists the held-out suite measures (``rl_lists="measured"``): no transfer result."""
    return settings.get("rl_lists", "train") == "measured"


def damage_lines(results: dict[str, Any]) -> list[str]:
    """Each RL run's reply form and guard accuracy against the start: the warnings, or one line saying nothing got worse."""
    from gapo_lite.eval.damage import damage, warning_lines

    lines = []
    for name in models(results)[1:]:
        reference = results["before_nf4"] if "before_nf4" in results and name != "before_nf4" else results["before"]
        findings = damage(suites_of(reference), suites_of(results[name]))
        if findings:
            label = f"seed {results['settings']['seed']}, {run_label(results, name)}"
            lines += warning_lines(findings, label=label) or [f"{label}: no damage check worse than the start beyond the noise"]
    return lines


RESULT_ROWS = (("heldout_jsd", "held-out JSD"), ("heldout_valid_rate", "held-out valid"), ("open.mean_unique_valid", "open valid Unique@100"),
               ("open.mean_valid_rate", "open valid rate"), ("open.mean_end_rate", "open end-of-turn rate"), ("heldout_end_rate", "lists end-of-turn rate"),
               ("guard.accuracy", "guard accuracy"))


def format_result_markdown(all_results: list[dict[str, Any]]) -> str:
    """Per seed and model the headline figures of the lists runs (a markdown table)."""
    header = "| seed | model | " + " | ".join(label for _, label in RESULT_ROWS) + " |"
    lines = [header, "|" + "---|" * (len(RESULT_ROWS) + 2)]
    for results in all_results:
        for name in models(results):
            values = [_value(results[name], key) for key, _ in RESULT_ROWS]
            cells = " | ".join("n/a" if v is None else f"{v:.1f}" if key == "open.mean_unique_valid" else f"{v:.3f}" for (key, _), v in zip(RESULT_ROWS, values))
            lines.append(f"| {results['settings']['seed']} | {run_label(results, name)} | {cells} |")
    return "\n".join(lines)


# Issue 34's targets for a lists run: the held-out lists spread and stay valid; the open suite gains distinct valid answers.
HELDOUT_JSD_TARGET, HELDOUT_VALID_TARGET = 0.15, 0.95
OPEN_GAIN_TARGET, OPEN_VALID_MARGIN, OPEN_END_MARGIN = 1.5, 0.05, 0.02
BASELINE_JSD_FLOOR = 0.3


def target_rows(results: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, what this seed's runs read, met?) for each of issue 34's targets that its runs measured."""
    start, rows = results["before"], []
    for name in [n for n in models(results) if run_of(n) in ("gapo_lists", "gapo") and not on_measured_lists(model_settings(results, n))]:
        m = results[name]
        rows.append((f"{run_label(results, name)}: held-out JSD <= {HELDOUT_JSD_TARGET} with valid >= {HELDOUT_VALID_TARGET}",
                     f"{m['heldout_jsd']:.3f}, valid {m['heldout_valid_rate']:.3f}",
                     m["heldout_jsd"] <= HELDOUT_JSD_TARGET and m["heldout_valid_rate"] >= HELDOUT_VALID_TARGET))
        gain = _value(m, "open.mean_unique_valid") / _value(start, "open.mean_unique_valid")
        valid = _value(m, "open.mean_valid_rate") - _value(start, "open.mean_valid_rate")
        end = _value(m, "open.mean_end_rate") - _value(start, "open.mean_end_rate")
        rows.append((f"{run_label(results, name)}: open valid Unique@100 >= {OPEN_GAIN_TARGET}x the start's, valid rate and end of turn within "
                     f"{OPEN_VALID_MARGIN} / {OPEN_END_MARGIN}", f"{gain:.2f}x, valid rate {valid:+.3f}, end of turn {end:+.3f}",
                     gain >= OPEN_GAIN_TARGET and valid >= -OPEN_VALID_MARGIN and end >= -OPEN_END_MARGIN))
    for name in [n for n in models(results) if run_of(n) == "grpo_baseline"]:
        m = results[name]
        unique, unique0 = _value(m, "open.mean_unique_valid"), _value(start, "open.mean_unique_valid")
        rows.append((f"{run_label(results, name)}: held-out JSD >= {BASELINE_JSD_FLOOR}, open valid Unique@100 no higher than the start's",
                     f"{m['heldout_jsd']:.3f}, open {unique:.1f} against {unique0:.1f}", m["heldout_jsd"] >= BASELINE_JSD_FLOOR and unique <= unique0))
    return rows


def format_targets_markdown(all_results: list[dict[str, Any]]) -> str:
    return targets_table([(r["settings"]["seed"], target_rows(r)) for r in all_results])


def targets_table(per_seed: list[tuple[int, list[tuple[str, str, bool]]]]) -> str:
    """Per target (each seed's (target, reading, met?) rows, in one order) each seed's reading and whether it is met."""
    lines = ["| target | " + " | ".join(f"seed {seed}" for seed, _ in per_seed) + " | met? |", "|" + "---|" * (len(per_seed) + 2)]
    for i, (target, _, _) in enumerate(per_seed[0][1]):
        met = [rows[i][2] for _, rows in per_seed]
        verdict = "yes" if all(met) else "no" if not any(met) else ", ".join(f"seed {seed} {'yes' if rows[i][2] else 'no'}" for seed, rows in per_seed)
        lines.append(f"| {target} | " + " | ".join(rows[i][1] for _, rows in per_seed) + f" | {verdict} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------- crossed

def crossed_rows(results: dict[str, Any], train_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One seed's crossed test: each model measured on the training lists (``train_rows``: lab/scripts/smollm2_train_lists.py's
    rows) beside its held-out figures (``results``: the report's record of that start with the runs added from their folders)."""
    def model_of(row: dict[str, Any]) -> str:  # "fx10_s0: start" -> "before"; "fx10_s0_600/gapo_lists" -> "gapo_lists@fx10_s0_600"
        folder, _, run = row["model"].partition("/")
        return "before" if row["model"].endswith(": start") else f"{run}@{folder}"

    unknown = [row["model"] for row in train_rows if model_of(row) not in models(results)]
    if unknown:
        raise ValueError(f"measured on the training lists but not in the held-out record: {', '.join(unknown)}")
    out = []
    for row in train_rows:
        name = model_of(row)
        m, s = results[name], model_settings(results, name)
        trained_on = "" if name == "before" else "the 40 measured prompts" if on_measured_lists(s) else f"{s.get('fixed_lists')} fixed training lists"
        out.append({"model": "start" if name == "before" else f"trained on {trained_on}, {s['rl_steps']} steps", "source": row["model"],
                    "heldout_jsd": m["heldout_jsd"], "heldout_valid": m["heldout_valid_rate"], "train_jsd": row["train_jsd"],
                    "train_valid": row["train_valid_rate"], "open_unique_valid": _value(m, "open.mean_unique_valid"),
                    "guard": _value(m, "guard.accuracy")})
    return out


def format_crossed(record: dict[str, Any]) -> str:
    lines = ["| seed | model | held-out JSD | held-out valid | training-lists JSD | training-lists valid | open valid Unique@100 | guard |",
             "|---|---|---|---|---|---|---|---|"]
    for seed, rows in record["seeds"].items():
        lines += [f"| {seed} | {r['model']} | {r['heldout_jsd']:.3f} | {r['heldout_valid']:.3f} | {r['train_jsd']:.3f} | {r['train_valid']:.3f} | "
                  f"{r['open_unique_valid']:.1f} | {r['guard']:.3f} |" for r in rows]
    return "\n".join(lines)


def report_crossed(sources: list[Path], train: list[Path], record: Path | None) -> dict[str, Any]:
    if len(sources) == 1 and not train:
        crossed = json.loads(sources[0].read_text())
    else:
        if len(sources) != len(train):
            raise ValueError("give one --train-lists record per held-out record, seed by seed")
        seeds = {}
        for path, train_path in zip(sources, train):
            (results,) = json.loads(path.read_text())
            seeds[str(results["settings"]["seed"])] = crossed_rows(results, json.loads(train_path.read_text()))
        command = "python -m lab.smollm2_report crossed " + " ".join(map(str, sources)) + "".join(f" --train-lists {p}" for p in train)
        crossed = {"command": command, "seeds": seeds}
    print(format_crossed(crossed))
    if record:
        record.write_text(json.dumps(crossed, indent=1) + "\n")
        print("wrote", record)
    return crossed


# ---------------------------------------------------------------------------------------------------------------- nf4
RESAMPLES = 200


def heldout_jsd_se(measured: dict[str, Any], seed: int, num_lists: int = 10, resamples: int = RESAMPLES) -> float:
    """The sampling noise of a recorded held-out JSD: the standard deviation of the mean JSD over ``resamples``
    bootstrap draws of each list's samples (with replacement; the lists are the suite's, rebuilt from ``seed``)."""
    import random
    import statistics

    from gapo_lite.eval.list_suite import make_eval_lists
    from gapo_lite.metrics import jsd_to_uniform

    lists = make_eval_lists(num_lists, 8, 4, seed, split="heldout")
    n = len(measured["heldout_choices"]) // num_lists  # the suite samples list by list, the same number each
    per_list = [measured["heldout_choices"][i * n:(i + 1) * n] for i in range(num_lists)]
    rng = random.Random(0)

    def mean_jsd(groups: list[list[Any]]) -> float:
        values = [v for v in (jsd_to_uniform(g, lst.items) for g, lst in zip(groups, lists)) if v == v]  # NaN: no valid answer
        return sum(values) / len(values) if values else math.nan

    draws = [mean_jsd([[rng.choice(g) for _ in g] for g in per_list]) for _ in range(resamples)]
    return math.nan if any(math.isnan(d) for d in draws) else statistics.stdev(draws)


QUANTIZATION_ROWS = RESULT_ROWS + (("trained_pressure", "mode pressure, trained reward"),)


def quantization_columns(all_results: list[dict[str, Any]], run: str = "gapo_lists") -> list[tuple[str, dict[str, Any], float | None]]:
    """(label, measurement, seconds per step) of the start, the start in NF4 and each folder's ``run``, from one 32-bit and
    one NF4 folder of the same start and settings (``--set load_in_4bit=true`` the only difference)."""
    by_bits = {bool(r["settings"].get("load_in_4bit")): r for r in all_results}
    if set(by_bits) != {False, True} or len(all_results) != 2:
        raise ValueError("nf4 takes two results of one start: one run with --set load_in_4bit=true and one without")
    full, nf4 = by_bits[False], by_bits[True]
    seconds = lambda r: r.get("seconds_per_step", {}).get(run)
    return [("start, 32-bit", full["before"], None), ("start, NF4", nf4["before_nf4"], None),
            ("GAPO, 32-bit", full[run], seconds(full)), ("GAPO, NF4", nf4[run], seconds(nf4))]


def format_quantization_table(columns: list[tuple[str, dict[str, Any], float | None]], seed: int) -> str:
    def cells(values: list[Any]) -> list[float]:  # nan where a column has no such figure
        return [math.nan if v is None else v for v in values]

    rows = [(label, cells([_value(m, key) for _, m, _ in columns])) for key, label in QUANTIZATION_ROWS]
    rows.append(("held-out JSD, bootstrap standard error", cells([heldout_jsd_se(m, seed) if "heldout_choices" in m else None for _, m, _ in columns])))
    rows.append(("seconds per GAPO step", cells([t for _, _, t in columns])))
    return table(rows, [label for label, _, _ in columns], width=16, label_width=40)


# ---------------------------------------------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.smollm2_report", description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("naming", "lists", "crossed", "nf4"))
    parser.add_argument("sources", nargs="+", type=Path, help="experiment folders (naming), or records")
    parser.add_argument("--record", type=Path, help="write the figures the page's tables are printed from (JSON)")
    parser.add_argument("--plot", type=Path, help="naming: draw the figures against the steps (PNG)")
    parser.add_argument("--train-lists", action="append", type=Path, default=[], help="crossed: lab/scripts/smollm2_train_lists.py's rows, one per seed")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.sources if not p.exists()]
    if missing:
        parser.error(f"no such folder or record: {', '.join(missing)}")
    try:
        if args.what == "naming":
            report_naming(args.sources, args.record, args.plot)
        elif args.what == "crossed":
            report_crossed(args.sources, args.train_lists, args.record)
        else:
            all_results = [r for p in args.sources for r in json.loads(p.read_text())]
            if args.what == "lists":
                print(format_result_markdown(all_results), "", format_targets_markdown(all_results), "", *[x for r in all_results for x in damage_lines(r)], sep="\n")
            else:
                print(format_quantization_table(quantization_columns(all_results), all_results[0]["settings"]["seed"]))
    except (FileNotFoundError, ValueError, KeyError) as err:
        parser.error(str(err))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
