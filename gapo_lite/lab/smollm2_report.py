"""The SmolLM2 spreading experiment's write-up from its recorded results: per seed the held-out table, the
open-ended suite under each validator (re-scored from the recorded replies), the top answers, and plots.

    python -m gapo_lite.lab.smollm2_report runs/smollm2_spread_s0/results.json runs/smollm2_spread_s1/results.json \\
        --plots docs/results --record docs/results/smollm2_spread.json

``--record`` writes the results without the raw replies' bulk (the open-ended replies are kept: they are
what the re-scoring reads) so the docs page's tables can be checked against it.

With ``--longer`` the folders are GAPO runs continued from one another's checkpoints
(``scripts/smollm2_longer.sh``): one table per seed, a column per number of steps, and a plot of the held-out
figures over the steps.

With ``--precision`` the folders are one start's short GAPO runs in fp32 and bf16 with several RL seeds
(``scripts/smollm2_precision.sh``): one row per RL seed, the two precisions and their difference, against the
spread of each precision's runs over the RL seeds.
"""
from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gapo_lite.eval.open_suite import VALIDATORS
from gapo_lite.lab.plots import save
from gapo_lite.lab.runner import table
from gapo_lite.lab.smollm2 import LABELS, REWARDS, format_table

VALIDATOR_LABELS = {"word_lists": "kit's word lists", "open": "open vocabularies", "short": "short-answer rule"}
WORDNET_LABEL = "open vocabularies and WordNet"  # the rule of records rescored with --open-validator wordnet, shown beside the three
TOP_PROMPTS = ("city", "country", "animal")


def load_results(path: Path) -> dict[str, Any]:
    """One seed's results: its ``results.json``, or for an experiment folder whose runs have not all finished,
    the stages recorded so far (``stages/*.json``), marked ``"complete": False``."""
    path = Path(path)
    if path.is_file():
        return regrade_guard({**json.loads(path.read_text()), "complete": True})
    stages = path / "stages"
    continued = stages / "continued_from.json"  # the settings of the folder whose checkpoint scripts/smollm2_longer.sh resumed
    more = {"continued_from": json.loads(continued.read_text())} if continued.is_file() else {}
    if (path / "results.json").is_file():
        return {**load_results(path / "results.json"), **more}
    read = lambda name: json.loads((stages / f"{name}.json").read_text()) if (stages / f"{name}.json").is_file() else None
    start, settings = read("start"), read("settings")
    if start is None or settings is None:
        raise FileNotFoundError(f"{path} holds neither results.json nor a measured start (stages/start.json)")
    results: dict[str, Any] = {"before": start["before"], "settings": settings, "stage_seconds": {"pretrain": start["seconds"]}, "complete": False, **more}
    quantized = read("start_nf4")
    if quantized is not None:
        results["before_nf4"] = quantized["measured"]
    for name in settings["runs"]:
        done = read(name)
        if done is not None:
            results[name] = done["measured"]
            results["stage_seconds"][name] = done["seconds"]
    return regrade_guard(results)


def regrade_guard(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` with each model's guard suite graded again from its recorded replies by the current
    :func:`~gapo_lite.eval.guard.score_guard`, so every record is read by one rule."""
    from gapo_lite.data.guard_set import guard_items
    from gapo_lite.eval.guard_suite import score_guard

    items = guard_items()
    for name in models(results):
        guard = results[name].get("guard")
        if guard and [x["prompt"] for x in guard["samples"]] == [i.prompt for i in items]:
            results[name]["guard"] = score_guard(items, [x["reply"] for x in guard["samples"]], [x["ended"] for x in guard["samples"]])
    return results


def models(results: dict[str, Any]) -> list[str]:
    """The measured models of one seed: the start and its runs, then the runs added from other folders (:func:`add_runs`)."""
    return [n for n in LABELS if isinstance(results.get(n), dict) and "heldout_jsd" in results[n]] + list(results.get("added", {}))


def model_settings(results: dict[str, Any], name: str) -> dict[str, Any]:
    """The settings a model of ``results`` ran with: its own folder's for a run added from another."""
    return results.get("added", {}).get(name, {}).get("settings") or results.get("settings", {})


# Settings a run added from another folder names in its label where they differ from the first folder's.
# (key, label of a value: a format string or a function of the value, label of None: the recipe's value)
NAMED_SETTINGS = (("invalid_margin", "margin {:g}", "no margin"), ("invalid_reward", "invalid {:g}", "invalid -1"), ("learning_rate", "lr {:g}", "recipe's lr"),
                  ("rl_temperature", "T {:g}", "recipe's T"), ("prompts_per_step", lambda n: f"{n} prompt{'' if n == 1 else 's'}", "recipe's prompts"),
                  ("num_generations", "G {}", "recipe's G"),
                  ("rl_seed", "RL seed {}", "RL seed as the seed"), ("lora_r", "LoRA r {}", "recipe's LoRA r"), ("lora_alpha", "alpha {}", "recipe's alpha"),
                  ("lora_dropout", "dropout {:g}", "recipe's dropout"))


def steps_label(results: dict[str, Any], name: str, reference: dict[str, Any] | None = None) -> str:
    """A run's label with its number of steps, the open prompts' vocabulary where it was not the word lists, the
    reward's rule where it was not the measurements', its invalid margin, and the settings of :data:`NAMED_SETTINGS`
    that differ from ``reference`` (another folder's settings)."""
    s = results["settings"]
    vocabulary = ", WordNet" if name == "gapo" and s.get("open_share") and s.get("open_vocabulary", "word_lists") != "word_lists" else ""
    previous = results.get("continued_from")
    changed = _named_settings(s, previous) if previous is not None else []
    if changed:  # a stage of scripts/smollm2_longer.sh that changed a setting
        return f"{steps_label({**results, 'settings': previous, 'continued_from': None}, name, reference)}, then {', '.join(changed)} to {s['rl_steps']}"
    named = _named_settings(s, reference)
    return ", ".join([f"{run_label(results, name)}{vocabulary}", *named, f"{s['rl_steps']} steps"])


def _named_settings(settings: dict[str, Any], reference: dict[str, Any] | None) -> list[str]:
    """Labels of the :data:`NAMED_SETTINGS` in which ``settings`` differ from ``reference``; without one, the margin."""
    if reference is None:
        keys = ["invalid_margin"] if settings.get("invalid_margin") is not None else []
    else:
        keys = [key for key, _, _ in NAMED_SETTINGS if settings.get(key) != reference.get(key)]
    def text(label: Any, value: Any) -> str:  # a format string, or a callable where the wording depends on the value
        return label(value) if callable(label) else label.format(value)

    return [none if settings.get(key) is None else text(label, settings.get(key)) for key, label, none in NAMED_SETTINGS if key in keys]


def add_runs(results: dict[str, Any], other: dict[str, Any], path: Path) -> dict[str, Any]:
    """``results`` with the finished RL runs of ``other`` (another folder from the same start: a run continued
    by scripts/smollm2_longer.sh, or an arm trained with other settings) as further models; every run's label
    then names its steps (and what else differs), since they differ."""
    same = lambda r: (r["settings"]["seed"], r["before"]["heldout_jsd"])
    if same(other) != same(results):
        raise ValueError(f"{path} does not start from the start of seed {results['settings']['seed']} (its seed or measured start differ)")
    if "added" not in results:
        results["labels"] = {n: steps_label(results, n) for n in models(results)[1:]}
        results["added"] = {}
    for name in models(other)[1:]:
        key = f"{name}@{Path(path).name}"
        results[key] = other[name]
        results["added"][key] = {"label": steps_label(other, name, reference=results["settings"]), "folder": str(path), "settings": other["settings"]}
    return results


def rescore_open(results: dict[str, Any], validator: str) -> dict[str, Any]:
    """``results`` with each model's open suite scored again by ``validator`` from its recorded replies (records of
    the clean-answer rule, which kept the end flags), so that every column is counted by one rule."""
    from gapo_lite.lab.smollm2 import open_record

    for name in models(results):
        recorded = results[name].get("open")
        if recorded and recorded.get("clean") and "ended" in recorded:
            results[name]["open"] = open_record(rescore(results[name], (validator,))[validator], recorded["completions"], recorded["ended"], validator)
    results["open_validator"] = validator
    return results


def rescore(measured: dict[str, Any], validators: Sequence[str] = tuple(VALIDATOR_LABELS)) -> dict[str, dict[str, Any]]:
    """validator -> the open suite's scores of one model, from its recorded replies, by the rule it was measured
    with (records made before the clean-answer rule carry no end flags and count the first answer found)."""
    from gapo_lite.eval.open_suite import PROMPTS, score_open

    recorded = measured["open"]
    replies = dict(zip(PROMPTS, recorded["completions"]))
    clean = bool(recorded.get("clean")) and "ended" in recorded
    ended = dict(zip(PROMPTS, recorded["ended"])) if clean else None
    return {v: score_open(replies, PROMPTS, validator=v, ended=ended, clean=clean) for v in validators}


def validator_labels(results: dict[str, Any]) -> dict[str, str]:
    """The validators a seed's open table shows: the three, and WordNet's where the report counted by it."""
    return {**VALIDATOR_LABELS, **({"wordnet": WORDNET_LABEL} if results.get("open_validator") == "wordnet" else {})}


def open_scores(results: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """model -> validator -> the open suite's scores, from the recorded replies."""
    return {name: rescore(results[name], tuple(validator_labels(results))) for name in models(results)}


def format_open_table(results: dict[str, Any], scores: dict[str, dict[str, dict[str, Any]]] | None = None) -> str:
    """Valid-answer Unique@N per prompt (mean of the 10 prompts) and valid rate, per validator and model."""
    scores = scores or open_scores(results)
    names = models(results)
    rows = []
    for v, label in validator_labels(results).items():
        rows.append((f"Unique@N valid, {label}", [scores[n][v]["mean_unique_valid"] for n in names]))
        rows.append((f"valid rate, {label}", [scores[n][v]["mean_valid_rate"] for n in names]))
    rows.append(("distinct replies (raw)", [scores[n]["word_lists"]["mean_unique"] for n in names]))
    return table(rows, [run_label(results, n) for n in names], width=24, label_width=40)


def format_top_answers(results: dict[str, Any], scores: dict[str, dict[str, dict[str, Any]]] | None = None, k: int = 5) -> str:
    """The ``k`` most frequent valid answers (open vocabularies) to a few open prompts, per model."""
    scores = scores or open_scores(results)
    lines = []
    for prompt in TOP_PROMPTS:
        for name in models(results):
            top = scores[name]["open"]["prompts"][prompt]["top_valid"][:k]
            cells = ", ".join(f"{t['answer']} {t['share']:.2f}" for t in top)
            lines.append(f"{prompt:8s} {run_label(results, name):24s} {cells}")
    return "\n".join(lines)


def plot_positions(all_results: list[dict[str, Any]], path: Path) -> Path:
    """Held-out answer shares by list position for the three models, one panel per seed."""
    from gapo_lite.eval.report import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, len(all_results), figsize=(5 * len(all_results), 3.4), squeeze=False)
    for ax, results in zip(axes[0], all_results):
        names = models(results)
        width = 0.8 / len(names)
        for j, name in enumerate(names):
            shares = results[name]["heldout_position_shares"]
            ax.bar([i + j * width for i in range(len(shares))], shares, width=width, label=f"{run_label(results, name)} (JSD {results[name]['heldout_jsd']:.2f})")
        ax.axhline(1 / len(shares), color="grey", linestyle=":", linewidth=1)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(shares))], [str(i + 1) for i in range(len(shares))])
        ax.set_xlabel("position of the chosen item in the shown list")
        ax.set_title(f"seed {results['settings']['seed']}: held-out lists, T = {results['settings']['eval_temperature']:g}")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("share of valid answers")
    save(fig, path)
    return path


def _two_panels(fig: Any, path: Path, ylabels: tuple[str, str], xlabel: str, fontsize: int) -> Path:
    """Label a figure's two panels, give each a legend, save it."""
    for ax, ylabel in zip(fig.axes, ylabels):
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
        ax.legend(fontsize=fontsize)
    save(fig, path)
    return path


def hook_rows(run_dir: Path) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(run, the hook's metric prefix, the steps it logged) for each RL run of an experiment folder with a
    metrics.jsonl; the prefix is the hook's name, its scorer's (``gapo_frequency``, ``gapo_tasks``, ...)."""
    from gapo_lite.training.callbacks import read_metrics

    out = []
    for name in REWARDS:  # the lab's RL runs
        metrics = run_dir / name / "metrics.jsonl"
        if not metrics.is_file():
            continue
        rows = read_metrics(metrics)
        prefixes = sorted({k.split("/")[0] for r in rows for k in r if k.endswith("/distinct_per_group")})
        if prefixes:
            out.append((name, prefixes[0], [r for r in rows if f"{prefixes[0]}/valid_rate" in r]))
    return out


def plot_curves(run_dirs: list[Path], path: Path, window: int = 20) -> Path:
    """Distinct valid answers per group and the group valid rate during training (moving average of ``window`` steps)."""
    from gapo_lite.eval.report import pyplot

    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    for run_dir in run_dirs:
        for name, prefix, rows in hook_rows(run_dir):
            label = f"{LABELS[name]}, {run_dir.name.rsplit('_', 1)[-1]}"
            for ax, key in ((left, "distinct_per_group"), (right, "valid_rate")):
                values = [r[f"{prefix}/{key}"] for r in rows]
                smooth = [sum(values[max(0, i - window + 1): i + 1]) / len(values[max(0, i - window + 1): i + 1]) for i in range(len(values))]
                ax.plot([r["step"] for r in rows], smooth, label=label)
    return _two_panels(fig, path, ("distinct valid answers per group", "valid share of the group"), "GAPO / GRPO step", fontsize=7)


TRAINING_KEYS = (("distinct_per_group", "distinct valid answers per group"), ("valid_rate", "valid share"),
                 ("mode_pressure", "mode pressure (< 0: pushes the favourite down)"))


def training_groups(run_dir: Path, first: int = 30, last: int = 100) -> list[tuple[str, dict[str, tuple[float, float] | None]]]:
    """Per RL run of a folder: the hook's logged group metrics (:data:`TRAINING_KEYS`) averaged over the first
    ``first`` and the last ``last`` steps; ``None`` for a metric the run did not log (mode pressure is logged
    since issue 34)."""
    out = []
    for name, prefix, rows in hook_rows(run_dir):
        summary: dict[str, tuple[float, float] | None] = {}
        for key, _ in TRAINING_KEYS:
            logged = [r[f"{prefix}/{key}"] for r in rows if f"{prefix}/{key}" in r]
            summary[key] = (sum(logged[:first]) / len(logged[:first]), sum(logged[-last:]) / len(logged[-last:])) if logged else None
        out.append((f"{run_dir.name}/{name}", summary))
    return out


def format_training_table(rows: list[tuple[str, dict[str, tuple[float, float] | None]]], first: int = 30, last: int = 100) -> str:
    """The rows of :func:`training_groups` (of one folder or several) as a table, first steps against last."""
    header = "| run | " + " | ".join(f"{title}, first {first} -> last {last} steps" for _, title in TRAINING_KEYS) + " |"
    lines = [header, "|---|" + "---|" * len(TRAINING_KEYS)]
    for label, summary in rows:
        cells = ["not logged" if summary[k] is None else f"{summary[k][0]:.3f} -> {summary[k][1]:.3f}" for k, _ in TRAINING_KEYS]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def add_training(record: list[dict[str, Any]], folders: list[tuple[Path, int]]) -> None:
    """Each seed's record gets ``training``: the :func:`training_groups` of that seed's folders (folder, seed), in order."""
    for results in record:
        results["training"] = [[label, summary] for f, seed in folders if seed == results["settings"]["seed"] for label, summary in training_groups(f)]


LONGER_ROWS = (("heldout_valid_rate", "held-out valid rate"), ("heldout_jsd", "held-out JSD"), ("heldout_position_tv", "position bias (TV)"),
               ("dominant_share", "dominant share per prompt"), ("trained_pressure", "pressure, reward trained with"),
               ("pressure", "pressure, paper's reward (-1)"))


Point = tuple[int, str | None, dict[str, Any]]  # GAPO steps, the stage's own learning-rate schedule (None: the recipe's), measured


def longer_runs(all_results: list[dict[str, Any]], run: str = "gapo") -> dict[int, list[Point]]:
    """seed -> its points, the start first (0 steps), from folders of one run (``run``) continued in stages."""
    by_seed: dict[int, list[dict[str, Any]]] = {}
    for r in all_results:
        by_seed.setdefault(r["settings"]["seed"], []).append(r)
    out = {}
    for seed, runs in sorted(by_seed.items()):
        runs.sort(key=lambda r: (r["settings"]["rl_steps"], r["settings"].get("rl_schedule") or ""))
        if any(r["before"]["heldout_jsd"] != runs[0]["before"]["heldout_jsd"] for r in runs):
            raise ValueError(f"seed {seed}: the folders do not share one start (their measured starts differ)")
        out[seed] = [(0, None, runs[0]["before"])] + [(r["settings"]["rl_steps"], r["settings"].get("rl_schedule"), r[run]) for r in runs if run in r]
    return out


def column(steps: int, schedule: str | None) -> str:
    """A point's column label: "start", "750 steps", or with its own schedule "1000 linear"."""
    return "start" if steps == 0 else f"{steps} {schedule}" if schedule else f"{steps} steps"


def format_longer_table(points: list[Point]) -> str:
    """One seed's held-out figures and open-suite Unique@N (word lists, open vocabularies) after each number of GAPO steps."""
    validators = ("word_lists", "open")
    rows = [(label, [m[key] for _, _, m in points]) for key, label in LONGER_ROWS]
    scored = [rescore(m, validators) for _, _, m in points] if all("open" in m for _, _, m in points) else []  # lists suite only: no open rows
    for v in validators if scored else ():
        rows.append((f"open: Unique@N valid, {VALIDATOR_LABELS[v]}", [x[v]["mean_unique_valid"] for x in scored]))
        rows.append((f"open: valid rate, {VALIDATOR_LABELS[v]}", [x[v]["mean_valid_rate"] for x in scored]))
    from gapo_lite.lab.smollm2 import _value

    for key, label in FORM_ROWS:  # measured since the clean-answer rule
        values = [_value(m, key) for _, _, m in points]
        if all(v is not None for v in values):
            rows.append((label, values))
    return table(rows, [column(n, schedule) for n, schedule, _ in points], width=12, label_width=40)


FORM_ROWS = (("heldout_end_rate", "held-out: replies that end their turn"), ("open.mean_end_rate", "open: replies that end their turn"),
             ("open.mean_words", "open: mean reply length (words)"), ("guard.accuracy", "guard accuracy"))


def step_shape(settings: dict[str, Any]) -> str:
    """ "P prompt(s) x G" of an experiment's RL steps: its settings, else the recipe's (what SmolSettings' None means)."""
    from gapo_lite.training.recipes import load_recipe

    recipe = load_recipe("smollm2_lists")
    prompts = settings.get("prompts_per_step") or recipe.prompts_per_step
    return f"{prompts} prompt{'s' if prompts > 1 else ''} x {settings.get('num_generations') or recipe.num_generations}"


def plot_longer(runs: dict[int, list[Point]], path: Path, shape: str) -> Path:
    """Held-out JSD and dominant share over GAPO steps, one line per seed (a stage with its own schedule as a cross)."""
    from gapo_lite.eval.report import pyplot

    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    for seed, points in runs.items():
        plain = [(n, m) for n, schedule, m in points if schedule is None]
        other = [(n, schedule, m) for n, schedule, m in points if schedule is not None]
        for ax, key in ((left, "heldout_jsd"), (right, "dominant_share")):
            line, = ax.plot([n for n, _ in plain], [m[key] for _, m in plain], marker="o", label=f"seed {seed}")
            for n, schedule, m in other:
                ax.plot([n], [m[key]], marker="x", markersize=9, linestyle="", color=line.get_color(), label=f"seed {seed}, {schedule} decay")
    left.axhline(0.15, color="grey", linestyle=":", linewidth=1, label="JSD 0.15")
    return _two_panels(fig, path, ("held-out JSD to uniform", "dominant share per prompt"), f"GAPO steps ({shape})", fontsize=8)


RESAMPLES = 200


def choices_per_list(choices: list[Any], num_lists: int) -> list[list[Any]]:
    """A measurement's held-out choices cut into its lists' (the suite samples them list by list, the same number each)."""
    n = len(choices) // num_lists
    return [choices[i * n:(i + 1) * n] for i in range(num_lists)]


def heldout_jsd_se(measured: dict[str, Any], seed: int, num_lists: int = 10, resamples: int = RESAMPLES) -> float:
    """The sampling noise of a recorded held-out JSD: the standard deviation of the mean JSD over ``resamples``
    bootstrap draws of each list's samples (with replacement; the lists are the suite's, rebuilt from ``seed``)."""
    import random
    import statistics

    from gapo_lite.eval.list_suite import make_eval_lists
    from gapo_lite.metrics import jsd_to_uniform

    lists = make_eval_lists(num_lists, 8, 4, seed, split="heldout")
    per_list = choices_per_list(measured["heldout_choices"], num_lists)
    rng = random.Random(0)

    def mean_jsd(groups: list[list[Any]]) -> float:
        values = [v for v in (jsd_to_uniform(g, lst.items) for g, lst in zip(groups, lists)) if v == v]  # NaN: no valid answer
        return sum(values) / len(values) if values else math.nan

    draws = [mean_jsd([[rng.choice(g) for _ in g] for g in per_list]) for _ in range(resamples)]
    return math.nan if any(math.isnan(d) for d in draws) else statistics.stdev(draws)


def item_ranks(results: dict[str, Any], by: str = "start") -> list[list[Any]]:
    """[label, shares] for each model that kept its held-out choices: the share of a list's valid answers that went
    to its most chosen item, its second, ..., averaged over the lists; uniform is 1/8 each. ``by="start"`` ranks the
    items by the start's choices (ties in the list's own order), so a run that pushes the start's favourite down
    shows it in the first share; ``by="own"`` ranks each model's items by its own choices, the shape of its
    distribution: a run that only trades one favourite for another keeps that shape.

    >>> s = {"seed": 0, "eval_lists": 1, "eval_samples": 4}
    >>> from gapo_lite.eval.list_suite import make_eval_lists
    >>> a, b, *_ = make_eval_lists(1, seed=0)[0].items
    >>> m = lambda *choices: {"heldout_jsd": 0.0, "heldout_choices": list(choices)}
    >>> r = {"settings": s, "before": m(a, a, a, b), "gapo_lists": m(a, b, None, b)}
    >>> [round(x, 3) for x in item_ranks(r)[1][1][:3]], [round(x, 3) for x in item_ranks(r, by="own")[1][1][:3]]
    ([0.333, 0.667, 0.0], [0.667, 0.333, 0.0])
    """
    from gapo_lite.eval.list_suite import make_eval_lists

    if by not in ("start", "own"):
        raise ValueError(f"by must be 'start' or 'own', got {by!r}")
    s = results["settings"]
    num_lists = s.get("eval_lists", 10)
    lists = make_eval_lists(num_lists, 8, 4, s["seed"], split="heldout")

    def ranked(choices: list[Any]) -> list[list[str]]:  # each list's items, most chosen first, ties in the list's order
        return [sorted(lst.items, key=lambda item: (-counts[item], lst.items.index(item)))
                for lst, counts in zip(lists, map(Counter, choices_per_list(choices, num_lists)))]

    start_orders = ranked(results["before"]["heldout_choices"]) if by == "start" else None
    rows = []
    for name in (m for m in models(results) if "heldout_choices" in results[m]):
        choices = results[name]["heldout_choices"]
        per_list = []
        for order, chunk in zip(start_orders or ranked(choices), choices_per_list(choices, num_lists)):
            counts = Counter(c for c in chunk if c is not None)
            if counts:
                per_list.append([counts[item] / sum(counts.values()) for item in order])
        rows.append([run_label(results, name), [sum(col) / len(per_list) for col in zip(*per_list)]])
    return rows


def uniform_own_ranks(samples: int, draws: int = 2000) -> list[float]:
    """What ``item_ranks(..., by="own")`` reads for a model that picks uniformly among 8 items, ``samples`` valid
    answers a list (simulated, seeded): not flat, since the most chosen of 8 by chance is above 1/8.

    >>> [round(x, 2) for x in uniform_own_ranks(100)]
    [0.18, 0.16, 0.14, 0.13, 0.12, 0.11, 0.09, 0.08]
    """
    import random

    rng = random.Random(0)
    total = [0.0] * 8
    for _ in range(draws):
        counts = sorted(Counter(rng.randrange(8) for _ in range(samples)).values(), reverse=True) + [0] * 8
        total = [t + c / samples for t, c in zip(total, counts[:8])]
    return [t / draws for t in total]


def format_item_ranks(rows: list[list[Any]]) -> str:
    """The rows of :func:`item_ranks` as a table."""
    ordinals = ("1st", "2nd", "3rd", *(f"{k}th" for k in range(4, 9)))
    lines = ["| model | " + " | ".join(ordinals) + " |", "|---|" + "---|" * len(ordinals)]
    return "\n".join(lines + [f"| {label} | " + " | ".join(f"{x:.3f}" for x in shares) + " |" for label, shares in rows])


DRAW_FREE = ("rl_seed", "threads")  # what may differ between two draws of one setting: the RL seed, and the torch threads (rounding only)


def draws(results: dict[str, Any]) -> tuple[str, list[float]] | None:
    """(label, held-out JSDs) of the first run and the added runs that trained it again with only :data:`DRAW_FREE`
    changed (another RL seed), when there are two or more: how far one setting's runs differ from one another."""
    runs = models(results)[1:]
    if not runs:
        return None
    # a setting left at None is the recipe's, as in a record made before that setting existed
    setting = lambda name: {k: v for k, v in model_settings(results, name).items() if k not in DRAW_FREE and v is not None}
    same = [n for n in runs if run_of(n) == run_of(runs[0]) and setting(n) == setting(runs[0])]
    return (run_label(results, runs[0]), [results[n]["heldout_jsd"] for n in same]) if len(same) > 1 else None


def format_draws(results: dict[str, Any]) -> str | None:
    """One line: the held-out JSD of each draw of the first run's setting, their mean and standard deviation, and the start's."""
    found = draws(results)
    if found is None:
        return None
    label, values = found
    return (f"seed {results['settings']['seed']}, {label} and its RL seeds: held-out JSD {', '.join(f'{v:.3f}' for v in values)}; "
            f"mean {sum(values) / len(values):.3f}, standard deviation {_sd(values):.3f} ({len(values)} runs); start {results['before']['heldout_jsd']:.3f}")


def format_noise(labelled: Sequence[tuple[str, dict[str, Any]]], seed: int, num_lists: int = 10) -> str:
    """One line: :func:`heldout_jsd_se` of each labelled measurement that kept its held-out choices."""
    noise = ", ".join(f"{label} {heldout_jsd_se(m, seed, num_lists):.3f}" for label, m in labelled if "heldout_choices" in m)
    return f"held-out JSD, bootstrap standard error ({RESAMPLES} resamples of each list's samples): {noise}"


def slim_measured(measured: dict[str, Any], keep_choices: bool = False) -> dict[str, Any]:
    """What the docs keep of one model's measurement: everything but the held-out samples (choices, replies, end flags;
    with ``keep_choices`` the parsed choices stay, for the bootstrap standard error a table prints)."""
    dropped = ("heldout_completions", "heldout_ended") if keep_choices else ("heldout_choices", "heldout_completions", "heldout_ended")
    return {k: v for k, v in measured.items() if k not in dropped}


def damage_lines(results: dict[str, Any]) -> list[str]:
    """Each RL run's reply form and guard accuracy against the start (:mod:`gapo_lite.eval.damage`): the
    warnings, or one line saying nothing got worse beyond the noise; nothing for records without them."""
    from gapo_lite.eval.damage import damage, warning_lines
    from gapo_lite.lab.smollm2 import suites_of

    lines = []
    for name in models(results)[1:]:
        # a run on an NF4 base is compared with the start in NF4; that start with the start as trained
        reference = results["before_nf4"] if "before_nf4" in results and name != "before_nf4" else results["before"]
        findings = damage(suites_of(reference), suites_of(results[name]))
        if findings:
            label = f"seed {results['settings']['seed']}, {run_label(results, name)}"
            lines += warning_lines(findings, label=label) or [f"{label}: no damage check worse than the start beyond the noise"]
    return lines


RESULT_ROWS = (("heldout_jsd", "held-out JSD"), ("heldout_valid_rate", "held-out valid"), ("open.mean_unique_valid", "open valid Unique@100"),
               ("open.mean_valid_rate", "open valid rate"), ("open.mean_end_rate", "open end-of-turn rate"), ("heldout_end_rate", "lists end-of-turn rate"),
               ("guard.accuracy", "guard accuracy"))


def summary_models(results: dict[str, Any]) -> list[str]:
    """The start and, of each run (lists only, mixed, baseline), its last column: with runs added from other
    folders, the longest or newest arm (the README's table)."""
    last = {run_of(n): n for n in models(results)}
    return [last[run] for run in LABELS if run in last]


def format_result_markdown(all_results: list[dict[str, Any]], summary: bool = False) -> str:
    """The write-up's lead table: per seed and model the headline figures (a markdown table); with ``summary``
    only :func:`summary_models`."""
    from gapo_lite.lab.smollm2 import _value

    header = "| seed | model | " + " | ".join(label for _, label in RESULT_ROWS) + " |"
    lines = [header, "|" + "---|" * (len(RESULT_ROWS) + 2)]
    for results in all_results:
        for name in summary_models(results) if summary else models(results):
            values = [_value(results[name], key) for key, _ in RESULT_ROWS]
            cells = " | ".join("n/a" if v is None else f"{v:.1f}" if key == "open.mean_unique_valid" else f"{v:.3f}" for (key, _), v in zip(RESULT_ROWS, values))
            lines.append(f"| {results['settings']['seed']} | {run_label(results, name)} | {cells} |")
    return "\n".join(lines)


# The warm-up of the recorded starts (24 steps on 8 replies to each of 48 prompts, sampled at the evaluation's T). A
# start made otherwise says how in its label, so that its table is not read as theirs.
RECORDED_WARMUP = {"warmup_steps": 24, "warmup_prompts": 48, "warmup_samples": 8, "warmup_temperature": None}


def warmup_label(settings: dict[str, Any]) -> str:
    """", warm-up 96 steps, 192 prompts, sampled at T 1" for a warmed start made otherwise than
    :data:`RECORDED_WARMUP`; "" for those and for unwarmed starts.

    >>> warmup_label({"warmup_steps": 96, "warmup_prompts": 192, "warmup_samples": 8})
    ', warm-up 96 steps, 192 prompts'
    >>> warmup_label({"warmup_steps": 24, "warmup_prompts": 48, "warmup_samples": 8, "warmup_temperature": 1.0})
    ', warm-up sampled at T 1'
    """
    if not settings.get("warmup_steps"):
        return ""
    wording = {"warmup_steps": "{} steps", "warmup_prompts": "{} prompts", "warmup_samples": "{} replies each", "warmup_temperature": "sampled at T {:g}"}
    parts = [wording[key].format(settings[key]) for key, recorded in RECORDED_WARMUP.items() if settings.get(key, recorded) != recorded]
    return f", warm-up {', '.join(parts)}" if parts else ""


def run_label(results: dict[str, Any], name: str) -> str:
    """A model's column name; the GAPO run says it mixed open prompts in when its settings did (``open_share``), and
    a run says it trained on the lenient reward where it was measured by the clean rule (``reward_clean_answers``)."""
    if name in results.get("labels", {}) or name in results.get("added", {}):
        return results.get("labels", {}).get(name) or results["added"][name]["label"]
    s = results.get("settings", {})
    if name == "before":
        return "start" + warmup_label(s)
    share = s.get("open_share") or 0
    trained = name in REWARDS  # an RL run, not a start
    lenient = ", lenient reward" if trained and s.get("reward_clean_answers") is False and s.get("clean_answers", True) else ""
    fixed = s.get("fixed_lists", 1)
    lists = {"measured": ", trained on the measured lists", "fixed": f", {fixed} fixed list{'' if fixed == 1 else 's'}"}.get(s.get("rl_lists", "train"), "")
    return (f"GAPO, lists + {share:g} open" if name == "gapo" and share > 0 else LABELS[name]) + lenient + (lists if trained else "")


def on_measured_lists(settings: dict[str, Any]) -> bool:
    """Whether a run trained on the very lists the held-out suite measures (``rl_lists="measured"``): a diagnostic
    of what GAPO can do to those prompts, never a transfer result, so no target or fit counts it."""
    return settings.get("rl_lists", "train") == "measured"


# Issue 34's targets for a GAPO run from its start: the held-out lists spread and stay valid, the open suite gains
# distinct valid answers without losing its valid rate or its end of turn; the baseline stays collapsed.
HELDOUT_JSD_TARGET, HELDOUT_VALID_TARGET = 0.15, 0.95
OPEN_GAIN_TARGET, OPEN_VALID_MARGIN, OPEN_END_MARGIN = 1.5, 0.05, 0.02
BASELINE_JSD_FLOOR = 0.3


def run_of(name: str) -> str:
    """The run a model's key names: "gapo_lists@m300_lists_s0_300" (a run added from another folder) -> "gapo_lists"."""
    return name.split("@")[0]


def target_rows(results: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, what this seed's runs read, met?) for each of issue 34's targets that its runs measured."""
    from gapo_lite.lab.smollm2 import _value

    start, rows = results["before"], []
    trained = [n for n in models(results) if run_of(n) in ("gapo_lists", "gapo") and not on_measured_lists(model_settings(results, n))]
    for name in trained:
        m = results[name]
        rows.append((f"{run_label(results, name)}: held-out JSD <= {HELDOUT_JSD_TARGET} with valid >= {HELDOUT_VALID_TARGET}",
                     f"{m['heldout_jsd']:.3f}, valid {m['heldout_valid_rate']:.3f}",
                     m["heldout_jsd"] <= HELDOUT_JSD_TARGET and m["heldout_valid_rate"] >= HELDOUT_VALID_TARGET))
        gain = _value(m, "open.mean_unique_valid") / _value(start, "open.mean_unique_valid")
        valid = _value(m, "open.mean_valid_rate") - _value(start, "open.mean_valid_rate")
        end = _value(m, "open.mean_end_rate") - _value(start, "open.mean_end_rate")
        rows.append((f"{run_label(results, name)}: open valid Unique@100 >= {OPEN_GAIN_TARGET}x the start's, valid rate and end of turn within "
                     f"{OPEN_VALID_MARGIN} / {OPEN_END_MARGIN}",
                     f"{gain:.2f}x, valid rate {valid:+.3f}, end of turn {end:+.3f}",
                     gain >= OPEN_GAIN_TARGET and valid >= -OPEN_VALID_MARGIN and end >= -OPEN_END_MARGIN))
    for name in [n for n in models(results) if run_of(n) == "grpo_baseline"]:
        m = results[name]
        unique, unique0 = _value(m, "open.mean_unique_valid"), _value(start, "open.mean_unique_valid")
        rows.append((f"{run_label(results, name)}: held-out JSD >= {BASELINE_JSD_FLOOR}, open valid Unique@100 no higher than the start's",
                     f"{m['heldout_jsd']:.3f}, open {unique:.1f} against {unique0:.1f}", m["heldout_jsd"] >= BASELINE_JSD_FLOOR and unique <= unique0))
    return rows


def format_targets_markdown(all_results: list[dict[str, Any]]) -> str:
    """The write-up's target table: per target each seed's reading and whether it is met."""
    per_seed = [(r["settings"]["seed"], target_rows(r)) for r in all_results]
    targets = [t for t, _, _ in per_seed[0][1]]
    header = "| target | " + " | ".join(f"seed {seed}" for seed, _ in per_seed) + " | met? |"
    lines = [header, "|" + "---|" * (len(per_seed) + 2)]
    for i, target in enumerate(targets):
        cells = [rows[i][1] for _, rows in per_seed]
        met = [rows[i][2] for _, rows in per_seed]
        verdict = "yes" if all(met) else "no" if not any(met) else ", ".join(f"seed {seed} {'yes' if rows[i][2] else 'no'}" for seed, rows in per_seed)
        lines.append(f"| {target} | " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines)


def slim(results: dict[str, Any], keep_choices: bool = False) -> dict[str, Any]:
    """What the docs keep of one seed's results: each model's :func:`slim_measured`."""
    return {k: slim_measured(v, keep_choices) if k in models(results) else v for k, v in results.items()}


PRECISIONS = ("fp32", "bf16")


def precision_pairs(all_results: list[dict[str, Any]]) -> dict[int, dict[str, dict[str, Any]]]:
    """RL seed -> precision -> the GAPO run's measurement, from the folders of ``scripts/smollm2_precision.sh``:
    one start, one seed's held-out lists, each RL seed run once in each precision."""
    pairs: dict[int, dict[str, dict[str, Any]]] = {}
    first = all_results[0]
    for r in all_results:
        s = r["settings"]
        if (s["seed"], r["before"]["heldout_jsd"]) != (first["settings"]["seed"], first["before"]["heldout_jsd"]):
            raise ValueError("the folders do not share one start and one seed's lists (their seeds or measured starts differ)")
        if s.get("precision") not in PRECISIONS or "gapo" not in r:
            raise ValueError(f"a folder holds no finished fp32 or bf16 GAPO run (precision {s.get('precision')!r})")
        rl_seed = s["seed"] if s.get("rl_seed") is None else s["rl_seed"]
        if s["precision"] in pairs.get(rl_seed, {}):
            raise ValueError(f"RL seed {rl_seed} is given twice in {s['precision']}")
        pairs.setdefault(rl_seed, {})[s["precision"]] = r["gapo"]
    incomplete = sorted(k for k, v in pairs.items() if len(v) < len(PRECISIONS))
    if incomplete:
        raise ValueError(f"RL seeds {incomplete} were not run in both precisions")
    return dict(sorted(pairs.items()))


def _sd(values: Sequence[float]) -> float:
    import statistics

    return statistics.stdev(values) if len(values) > 1 else float("nan")


def format_precision_table(pairs: dict[int, dict[str, dict[str, Any]]], key: str = "heldout_jsd") -> str:
    """Per RL seed the two precisions' held-out ``key`` and bf16 - fp32; then their means, the standard deviation
    over the RL seeds (of each precision's runs: the RL noise; of the differences) and the means' standard errors."""
    rows = [(f"RL seed {r}", [p["fp32"][key], p["bf16"][key], p["bf16"][key] - p["fp32"][key]]) for r, p in pairs.items()]
    columns = list(zip(*(values for _, values in rows)))
    rows.append(("mean", [sum(c) / len(c) for c in columns]))
    rows.append(("standard deviation over the RL seeds", [_sd(c) for c in columns]))
    rows.append(("standard error of the mean", [_sd(c) / len(c) ** 0.5 for c in columns]))
    return table(rows, ["fp32", "bf16", "bf16 - fp32"], width=14, label_width=40)


def report_precision(all_results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``--precision``: both tables and each run's sampling noise; returns the record."""
    pairs = precision_pairs(all_results)
    first = all_results[0]
    seed = first["settings"]["seed"]
    print(f"== seed {seed}'s start (held-out JSD {first['before']['heldout_jsd']:.3f}, valid {first['before']['heldout_valid_rate']:.3f}): "
          f"{first['settings']['rl_steps']} GAPO steps in each precision")
    for key, label in (("heldout_jsd", "held-out JSD"), ("heldout_valid_rate", "held-out valid rate")):
        print(f"{label}\n{format_precision_table(pairs, key)}\n")
    print(format_noise([(f"{p} r{r}", m) for r, by in pairs.items() for p, m in by.items()], seed))
    return [slim(r) for r in all_results]


QUANTIZATION_ROWS = RESULT_ROWS + (("trained_pressure", "mode pressure, trained reward"),)


def step_seconds(run_dir: Path) -> float | None:
    """The mean of a run's logged ``step_time`` (TRL's seconds per optimizer step: generation, scoring, loss, update)."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        return None
    times = [float(r["step_time"]) for r in map(json.loads, path.read_text().splitlines()) if "step_time" in r]
    return sum(times) / len(times) if times else None


def quantization_columns(all_results: list[dict[str, Any]], run: str = "gapo_lists") -> list[tuple[str, dict[str, Any], float | None]]:
    """(label, measurement, seconds per step) of the start, the start in NF4 and each folder's ``run``, from one
    32-bit and one NF4 folder of the same start and settings (``--set load_in_4bit=true`` the only difference);
    the seconds are each results' ``seconds_per_step`` (:func:`report_quantization` reads them from the runs' logs)."""
    by_bits = {bool(r["settings"].get("load_in_4bit")): r for r in all_results}
    if set(by_bits) != {False, True} or len(all_results) != 2:
        raise ValueError("--quantization takes two folders of one start: one run with --set load_in_4bit=true and one without")
    full, nf4 = by_bits[False], by_bits[True]
    if full["before"]["heldout_jsd"] != nf4["before"]["heldout_jsd"]:
        raise ValueError("the two folders do not share one start (their measured starts differ)")
    differ = sorted(k for k in set(full["settings"]) | set(nf4["settings"]) if k not in ("load_in_4bit", "threads") and full["settings"].get(k) != nf4["settings"].get(k))
    if differ:
        raise ValueError(f"the two folders differ in more than load_in_4bit: {', '.join(differ)}")
    for r in (full, nf4):
        if run not in r:
            raise ValueError(f"{run} has not finished in both folders")
    seconds = lambda r: r.get("seconds_per_step", {}).get(run)
    return [("start, 32-bit", full["before"], None), ("start, NF4", nf4["before_nf4"], None),
            ("GAPO, 32-bit", full[run], seconds(full)), ("GAPO, NF4", nf4[run], seconds(nf4))]


def format_quantization_table(columns: list[tuple[str, dict[str, Any], float | None]], seed: int) -> str:
    from gapo_lite.lab.smollm2 import _value

    def cells(values: list[Any]) -> list[float]:  # nan where a column has no such figure
        return [math.nan if v is None else v for v in values]

    rows = [(label, cells([_value(m, key) for _, m, _ in columns])) for key, label in QUANTIZATION_ROWS]
    rows.append(("held-out JSD, bootstrap standard error", cells([heldout_jsd_se(m, seed) if "heldout_choices" in m else None for _, m, _ in columns])))
    rows.append(("seconds per GAPO step", cells([t for _, _, t in columns])))
    return table(rows, [label for label, _, _ in columns], width=16, label_width=40)


def report_quantization(all_results: list[dict[str, Any]], paths: list[Path]) -> list[dict[str, Any]]:
    """``--quantization``: the same GAPO run on the 32-bit and the NF4 model, side by side; returns the record."""
    for results, path in zip(all_results, paths):
        folder = Path(path) if Path(path).is_dir() else Path(path).parent
        results["seconds_per_step"] = {run: step_seconds(folder / run) for run in results["settings"]["runs"]}
    columns = quantization_columns(all_results)
    seed = all_results[0]["settings"]["seed"]
    print(f"== seed {seed}: {all_results[0]['settings']['rl_steps']} GAPO steps (lists only) on the 32-bit model and on its NF4 quantization\n"
          f"{format_quantization_table(columns, seed)}")
    times = [t for _, _, t in columns[2:]]
    if all(times):
        print(f"NF4 / 32-bit time per step: {times[1] / times[0]:.2f}x")
    for results in all_results:
        print("\n".join(damage_lines(results)))
    return [slim(r, keep_choices=True) for r in all_results]


def report_longer(all_results: list[dict[str, Any]], plots: Path | None, name: str, run: str = "gapo") -> list[dict[str, Any]]:
    """``--longer``: one table per seed over the stages, the plot; returns the record."""
    runs = longer_runs(all_results, run)
    for seed, points in runs.items():
        print(f"== seed {seed}: GAPO continued (held-out lists, open suite)\n{format_longer_table(points)}")
        print(format_noise([(column(n, schedule), m) for n, schedule, m in points], seed) + "\n")
    if plots:
        plots.mkdir(parents=True, exist_ok=True)
        print("wrote", plot_longer(runs, plots / f"{name}_longer.png", step_shape(all_results[0]["settings"])))
    return [{"seed": seed, "points": [[n, schedule, slim_measured(m)] for n, schedule, m in points]} for seed, points in runs.items()]


def report_seeds(paths: list[Path], all_results: list[dict[str, Any]], plots: Path | None, name: str) -> list[dict[str, Any]]:
    """Each seed's start / GAPO / baseline table, its open suite, the plots; returns the record."""
    for path, results in zip(paths, all_results):
        status = "" if results["complete"] else ", runs not all finished"
        print(f"== seed {results['settings']['seed']} ({path}{status})\n{format_table(results)}")
        if "heldout_choices" in results["before"]:
            results["item_ranks"] = {by: item_ranks(results, by) for by in ("start", "own")}
            samples = results["settings"].get("eval_samples", 100)
            results["item_ranks"]["own"].append([f"uniform choice, {samples} samples a list (simulated)", uniform_own_ranks(samples)])
            for by, whose in (("start", "the start's"), ("own", "each model's own")):
                print(f"held-out lists: share of a list's valid answers by {whose} rank of the item (mean over lists; uniform 0.125)\n"
                      f"{format_item_ranks(results['item_ranks'][by])}")
        print(format_noise([(run_label(results, n), results[n]) for n in models(results)], results["settings"]["seed"], results["settings"].get("eval_lists", 10)))
        print("\n".join(damage_lines(results)) + "\n")
        line = format_draws(results)
        if line:
            print(line + "\n")
        if all("open" in results[n] for n in models(results)):  # a run measured without the open suite has no replies to re-score
            scores = open_scores(results)
            print(f"{format_open_table(results, scores)}\n\n{format_top_answers(results, scores)}\n")
    print(f"result table\n{format_result_markdown(all_results)}\n")
    if any("added" in r for r in all_results):
        print(f"summary (each run's last column)\n{format_result_markdown(all_results, summary=True)}\n")
    if all("open" in r["before"] for r in all_results) and any(target_rows(r) for r in all_results):  # runs on the measured lists have none
        print(f"targets\n{format_targets_markdown(all_results)}\n")
    if plots:
        plots.mkdir(parents=True, exist_ok=True)
        print("wrote", plot_positions(all_results, plots / f"{name}_positions.png"), "and",
              plot_curves([p if p.is_dir() else p.parent for p in paths], plots / f"{name}_curves.png"))
    return [slim(r) for r in all_results]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gapo_lite.lab.smollm2_report", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="each seed's results.json, or its experiment folder (the stages finished so far)")
    parser.add_argument("--plots", type=Path, help="folder for NAME_positions.png and NAME_curves.png (NAME_longer.png with --longer)")
    parser.add_argument("--name", default="smollm2", help="the plots' file-name prefix (default smollm2)")
    parser.add_argument("--record", type=Path, help="write the slimmed results here (a JSON list)")
    parser.add_argument("--longer", action="store_true", help="the folders continue one another's GAPO runs (scripts/smollm2_longer.sh)")
    parser.add_argument("--run", default="gapo", choices=("gapo", "gapo_lists", "grpo_baseline"), help="with --longer: which run was continued (default gapo)")
    parser.add_argument("--quantization", action="store_true", help="two folders of one start, one with --set load_in_4bit=true: 32-bit against NF4")
    parser.add_argument("--precision", action="store_true", help="the folders are one start's fp32 / bf16 runs with several RL seeds (scripts/smollm2_precision.sh)")
    parser.add_argument("--add", action="append", type=Path, default=[], metavar="FOLDER",
                        help="runs of another folder from one of the seeds' starts (a continued run, an arm with other settings), as further columns of that seed")
    parser.add_argument("--open-validator", choices=VALIDATORS, help="count every model's open suite by this rule, from its recorded replies (default: each as measured)")
    args = parser.parse_args(argv)
    if args.longer + args.precision + args.quantization > 1:
        parser.error("--longer, --precision and --quantization read different folders; give one")
    if args.add and (args.longer or args.precision or args.quantization):
        parser.error("--add adds columns to the seeds' tables; --longer, --precision and --quantization have none")
    try:  # a folder that is missing or does not fit the mode is one line, before anything is written
        all_results = [load_results(p) for p in args.results]
        folders = [(p if p.is_dir() else p.parent, r["settings"]["seed"]) for p, r in zip(args.results, all_results)]
        for path in args.add:
            other = load_results(path)
            folders.append((path if path.is_dir() else path.parent, other["settings"]["seed"]))
            seeds = [r for r in all_results if r["settings"]["seed"] == other["settings"]["seed"]]
            if not seeds:
                raise ValueError(f"{path} is seed {other['settings']['seed']}'s, which none of the folders given is")
            add_runs(seeds[0], other, path)
        columns = {r["settings"]["seed"]: [run_label(r, n) for n in models(r)] for r in all_results}
        if args.add and len({tuple(c) for c in columns.values()}) > 1:
            raise ValueError("the seeds' columns differ (" + "; ".join(f"seed {s}: {', '.join(c)}" for s, c in columns.items()) + "); add the same runs to each seed")
        if args.open_validator:
            all_results = [rescore_open(r, args.open_validator) for r in all_results]
        if args.quantization:
            record = report_quantization(all_results, args.results)
        elif args.precision:
            record = report_precision(all_results)
        elif args.longer:
            record = report_longer(all_results, args.plots, args.name, args.run)
        else:
            record = report_seeds(args.results, all_results, args.plots, args.name)
            add_training(record, folders)
            for results in record:
                print(f"training groups, seed {results['settings']['seed']} (the reward hook's logged metrics)\n{format_training_table(results['training'])}\n")
    except (FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    if args.record:
        args.record.write_text(json.dumps(record, indent=1))
        print("wrote", args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
