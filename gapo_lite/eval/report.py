"""Report: ``results.json``, ``report.md`` with a side-by-side table, and PNG figures (matplotlib, Agg backend)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

Row = tuple[str, Any, str]  # (metric name, value, direction: "up", "down" or "")


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers, tuples as lists and NaN/inf as ``None`` (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def mode_pressure_lines(lists_by_variant: dict[str, dict[str, Any]]) -> list[str]:
    """Will GAPO spread it? The lists suite's mode-pressure reading per variant: a sentence and a per-list table."""
    lines = ["### Will GAPO spread this model? (mode pressure, `gapo_lite.diagnostics`)", ""]
    for label, r in lists_by_variant.items():
        p = r.get("pressure")
        if not p:
            continue
        lines += [f"**{label}** ({p['prompts_spreading']}/{p['prompts']} prompts with negative pressure): {p['verdict']}", ""]
        rows = [[x["list_id"], x.get("valid_rate"), x.get("dominant_share"), x.get("threshold"), x.get("pressure")] for x in p["lists"]]
        lines += _table(["list", "valid rate", "dominant share", "validity threshold", "mode pressure"], rows) + [""]
    return lines


def headline(suites: dict[str, Any]) -> list[Row]:
    """The side-by-side metrics of one variant's suite results."""
    rows: list[Row] = []
    if "lists" in suites:
        r = suites["lists"]
        rows += [
            ("Lists: mean JSD to uniform", r["mean_jsd"], "down"),
            ("Lists: mean valid rate", r["mean_valid_rate"], "up"),
            ("Lists: mean normalised entropy", r["mean_entropy"], "up"),
            ("Lists: position bias (TV from uniform)", r["position_tv"], "down"),
        ]
        if "end_rate" in r:  # results written before the clean-answer rule lack these
            rows += [("Lists: replies that end their turn", r["end_rate"], "up"), ("Lists: mean reply length (words)", r["mean_words"], ""),
                     ("Lists: JSD, first item found (lenient)", r["lenient"]["mean_jsd"], "down"),
                     ("Lists: valid rate, first item found (lenient)", r["lenient"]["mean_valid_rate"], "up")]
        if r.get("pressure", {}).get("mean"):
            rows += [("Lists: mode pressure (< 0: GAPO spreads)", r["pressure"]["mean"]["pressure"], ""),
                     ("Lists: validity threshold", r["pressure"]["mean"]["threshold"], "")]
    if "open" in suites:
        r = suites["open"]
        rows.append((f"Open: mean Unique@{r['n']} (raw replies)", r["mean_unique"], "up"))
        if "mean_unique_valid" in r:  # results written before valid answers were extracted lack these
            rows += [(f"Open: mean Unique@{r['n']} over valid answers", r["mean_unique_valid"], "up"), ("Open: valid answer rate", r["mean_valid_rate"], "up")]
        rows.append(("Open: non-empty answer rate", r.get("mean_answer_rate", r["mean_valid_rate"]), "up"))
        if "mean_end_rate" in r:
            rows += [("Open: replies that end their turn", r["mean_end_rate"], "up"), ("Open: mean reply length (words)", r["mean_words"], ""),
                     (f"Open: mean Unique@{r['n']} valid, first answer found (lenient)", r["mean_lenient_unique_valid"], "up")]
    if "guard" in suites:
        r = suites["guard"]
        rows += [(f"Guard: accuracy ({r['n']} instructions)", r["accuracy"], "up"), ("Guard: accuracy, not counting the end of turn", r["lenient_accuracy"], "up")]
    if "creative" in suites:
        r = suites["creative"]
        rows += [("Creative: mean embedding distance", r["mean_embedding_distance"], "up"), ("Creative: mean 1 - Self-BLEU", r["mean_one_minus_self_bleu"], "up")]
    for key, r in suites.get("bench", {}).items():
        if r.get("status") != "ok":
            rows.append((f"Bench {key}", r.get("status", "?"), ""))
            continue
        for metric, value in r["metrics"].items():
            rows.append((f"Bench {key}: {metric}", value, "up"))
    return rows


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3f}"
    return str(value)


def damage_check(results: dict[str, Any]) -> dict[str, Any] | None:
    """The second variant's reply form and guard accuracy against the first's (:mod:`gapo_lite.eval.damage`):
    every finding, and the warning lines for what got worse beyond the noise; None with one variant."""
    from gapo_lite.eval.damage import damage, warning_lines

    labels = list(results["variants"])
    if len(labels) < 2:
        return None
    findings = damage(results["variants"][labels[0]], results["variants"][labels[1]])
    return {"reference": labels[0], "checked": labels[1], "findings": [f.__dict__ for f in findings], "lines": [f.line() for f in findings],
            "warnings": warning_lines(findings, label=f"'{labels[1]}'")}


def comparison(results: dict[str, Any]) -> dict[str, Any]:
    """Side-by-side rows of the first two variants: values and delta (second - first)."""
    labels = list(results["variants"])
    tables = {label: dict((name, (value, d)) for name, value, d in headline(results["variants"][label])) for label in labels}
    names = list(dict.fromkeys(name for label in labels for name in tables[label]))
    rows = []
    for name in names:
        values = [tables[label].get(name, (None, ""))[0] for label in labels]
        direction = next((tables[label][name][1] for label in labels if name in tables[label]), "")
        row = {"metric": name, "direction": direction, **{label: v for label, v in zip(labels, values)}}
        if len(labels) >= 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values[:2]):
            row["delta"] = values[1] - values[0]
        rows.append(row)
    return {"labels": labels, "rows": rows}


def caption(results: dict[str, Any], *, temperature: Any = None, n: Any = None) -> str:
    """Model, adapter, temperature, N and seed, for a figure or table."""
    cfg = results["config"]
    parts = "; ".join(f"{v['label']}: model={v['model']}, adapter={v['adapter'] or 'none'}" for v in cfg["variants"])
    t = cfg["temperature"] if temperature is None else temperature
    return f"{parts}; temperature={t}; N={n}; seed={cfg['seed']}"


# ----------------------------------------------------------------------------------------------- figures
def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (files only, no display): the one set-up every figure of the kit uses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finish(fig, path: Path, text: str) -> None:
    """Caption ``text`` under the axes (wrapped, with room reserved for it), then save and close."""
    import textwrap

    lines = textwrap.wrap(text, width=int(fig.get_figwidth() * 17)) or [""]
    fig.text(0.5, 0.01, "\n".join(lines), ha="center", va="bottom", fontsize=7)
    bottom = (len(lines) * 7 * 1.35 + 10) / (fig.get_figheight() * 72)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(path, dpi=110)
    pyplot().close(fig)


def _grouped_bars(ax, names: list[str], series: dict[str, list[float]], ylabel: str) -> None:
    import numpy as np

    x = np.arange(len(names))
    width = 0.8 / max(1, len(series))
    for k, (label, values) in enumerate(series.items()):
        offsets = x + (k - (len(series) - 1) / 2) * width
        heights = [v if v is not None and math.isfinite(v) else math.nan for v in values]
        ax.bar(offsets, heights, width, label=label)
        for xo, h in zip(offsets, heights):
            if math.isnan(h):  # a missing value (e.g. JSD with no valid answer) is marked, never drawn as 0
                ax.text(xo, 0, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def plot_lists(results: dict[str, Any], out: Path) -> list[dict[str, str]]:
    """Per-list JSD bars, choice histograms and position shares."""
    plt = pyplot()
    variants = {label: r["lists"] for label, r in results["variants"].items() if "lists" in r}
    if not variants:
        return []
    first = next(iter(variants.values()))
    n = first["lists"][0]["n"]
    text = caption(results, n=f"{n} per list")
    figures = []

    fig, ax = plt.subplots(figsize=(8, 4))
    names = [f"{lst['list_id']} {lst['category']}" for lst in first["lists"]]
    _grouped_bars(
        ax,
        names,
        {f"{label} (mean {_fmt(r['mean_jsd'])})": [lst["jsd"] for lst in r["lists"]] for label, r in variants.items()},
        "JSD to uniform (lower = more uniform)",
    )
    ax.set_ylim(0, 1)
    ax.set_title("Lists: JSD of the choice distribution to uniform")
    _finish(fig, out / "lists_jsd.png", text)
    figures.append({"file": "lists_jsd.png", "title": "Lists: JSD to uniform per list", "caption": text})

    count = len(first["lists"])
    cols = min(5, count)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    for idx, ax in enumerate(axes.flat):
        if idx >= count:
            ax.axis("off")
            continue
        items = first["lists"][idx]["items"] + ["(invalid)"]
        series = {}
        for label, r in variants.items():
            lst = r["lists"][idx]
            series[label] = [lst["counts"][i] / lst["n"] for i in items[:-1]] + [lst["invalid"] / lst["n"]]
        _grouped_bars(ax, items, series, "share")
        ax.axhline(1 / (len(items) - 1), color="grey", lw=0.8, ls="--")
        ax.set_title(f"{first['lists'][idx]['list_id']} ({first['lists'][idx]['category']})", fontsize=8)
    fig.suptitle("Lists: choice histograms (dashed: uniform share)")
    _finish(fig, out / "lists_histograms.png", text)
    figures.append({"file": "lists_histograms.png", "title": "Lists: choice histograms", "caption": text})

    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = max(len(r["position_shares"]) for r in variants.values())
    _grouped_bars(
        ax,
        [str(k + 1) for k in range(width)],
        {f"{label} (TV {_fmt(r['position_tv'])})": r["position_shares"] for label, r in variants.items()},
        "share of valid choices",
    )
    ax.axhline(1 / width, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("position of the chosen item in the list as shown")
    ax.set_title(f"Lists: position bias ({first['num_orders']} shuffled orders per list)")
    _finish(fig, out / "lists_position.png", text)
    figures.append({"file": "lists_position.png", "title": "Lists: position bias", "caption": text})
    return figures


def plot_open(results: dict[str, Any], out: Path) -> list[dict[str, str]]:
    plt = pyplot()
    variants = {label: r["open"] for label, r in results["variants"].items() if "open" in r}
    if not variants:
        return []
    first = next(iter(variants.values()))
    text = caption(results, n=f"{first['n']} per prompt")
    fig, ax = plt.subplots(figsize=(8, 4))
    names = list(first["prompts"])
    _grouped_bars(
        ax,
        names,
        {f"{label} (mean {_fmt(r['mean_unique'])})": [r["prompts"][p]["unique"] for p in names] for label, r in variants.items()},
        f"Unique@{first['n']}",
    )
    ax.set_title("Open-ended: distinct canonical answers per prompt")
    _finish(fig, out / "open_unique.png", text)
    return [{"file": "open_unique.png", "title": "Open-ended: Unique@N", "caption": text}]


def plot_creative(results: dict[str, Any], out: Path) -> list[dict[str, str]]:
    plt = pyplot()
    variants = {label: r["creative"] for label, r in results["variants"].items() if "creative" in r}
    if not variants:
        return []
    first = next(iter(variants.values()))
    text = caption(results, n=f"{first['n']} per task")
    names = list(first["tasks"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    _grouped_bars(axes[0], names, {label: [r["tasks"][t]["embedding_distance"] for t in names] for label, r in variants.items()}, "mean pairwise cosine distance")
    axes[0].set_title("Embedding distance (all-MiniLM-L6-v2)")
    _grouped_bars(axes[1], names, {label: [r["tasks"][t]["one_minus_self_bleu"] for t in names] for label, r in variants.items()}, "1 - Self-BLEU")
    axes[1].set_title("1 - Self-BLEU")
    _finish(fig, out / "creative.png", text)
    return [{"file": "creative.png", "title": "Creative: embedding distance and 1 - Self-BLEU", "caption": text}]


def plot_sweep(results: dict[str, Any], out: Path) -> list[dict[str, str]]:
    plt = pyplot()
    sweep = results.get("sweep")
    if not sweep:
        return []
    temps = [p["temperature"] for p in next(iter(sweep["points"].values()))]
    text = caption(results, temperature=",".join(str(t) for t in temps), n=f"{sweep['n']} per prompt")
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    for label, points in sweep["points"].items():
        t = [p["temperature"] for p in points]
        div = [p["diversity"] for p in points]
        coh = [p["coherence"] if p["coherence"] is not None else math.nan for p in points]
        axes[0].plot(t, div, marker="o", label=label)
        axes[1].plot(t, coh, marker="o", label=label)
        axes[2].plot(coh, div, marker="o", label=label)
        for x, y, temp in zip(coh, div, t):
            axes[2].annotate(f"T={temp}", (x, y), fontsize=6)
    axes[0].set(xlabel="temperature", ylabel=f"mean Unique@{sweep['n']}", title="Diversity")
    axes[1].set(xlabel="temperature", ylabel="mean per-token log-lik. (base model)", title="Coherence")
    axes[2].set(xlabel="coherence (base-model log-lik. per token)", ylabel=f"mean Unique@{sweep['n']}", title="Diversity vs coherence")
    for ax in axes:
        ax.legend(fontsize=7)
    _finish(fig, out / "sweep.png", text)
    return [{"file": "sweep.png", "title": "Temperature sweep", "caption": text}]


# ----------------------------------------------------------------------------------------------- markdown
def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return lines


def markdown(results: dict[str, Any]) -> str:
    cfg = results["config"]
    comp = results["comparison"]
    labels = comp["labels"]
    lines = ["# gapo-lite evaluation", ""]
    lines += [f"- {v['label']}: model `{v['model']}`, adapter `{v['adapter'] or 'none'}`" for v in cfg["variants"]]
    lines += [
        f"- suites: {', '.join(cfg['suites'])}; temperature {cfg['temperature']}; seed {cfg['seed']}; "
        f"N per prompt: {', '.join(f'{k} {v}' for k, v in cfg['n'].items())}; max new tokens: {', '.join(f'{k} {v}' for k, v in cfg['max_new_tokens'].items())}",
        f"- sampling: gapo_lite.sampling.sample_completions (top_p=1, top_k off), batch size {cfg['batch_size']}; backend {cfg['backend']}",
        "",
        "## Side by side",
        "",
        f"Caption: {caption(results, n='per suite as above')}. Arrows: which direction is better.",
        "",
    ]
    header = ["metric", *labels] + ([f"delta ({labels[1]} - {labels[0]})"] if len(labels) >= 2 else [])
    arrow = {"up": " ↑", "down": " ↓", "": ""}
    body = [[row["metric"] + arrow[row["direction"]], *[row.get(label) for label in labels]] + ([row.get("delta")] if len(labels) >= 2 else []) for row in comp["rows"]]
    lines += _table(header, body)
    check = results.get("damage")
    if check and check["lines"]:
        from gapo_lite.eval.damage import RATE_FLOOR, SE_MULTIPLE, WORDS_FLOOR

        lines += ["", f"## Damage check: {check['checked']} against {check['reference']}", "",
                  f"Flagged when worse by more than {SE_MULTIPLE:g} standard errors of the difference and by more than {RATE_FLOOR:g} for a rate "
                  f"or {WORDS_FLOOR:.0%} for a mean length (gapo_lite.eval.damage).", ""]
        lines += [f"**{w.strip()}**" for w in check["warnings"]] or ["No check is worse beyond the noise."]
        lines += [""] + [f"- {line}" for line in check["lines"]]
    figures = {f["file"]: f for f in results.get("figures", [])}

    def figure(name: str) -> list[str]:
        f = figures.get(name)
        return [f"![{f['title']}]({f['file']})", "", f"*{f['title']}.* {f['caption']}", ""] if f else []

    variants = results["variants"]
    if any("lists" in r for r in variants.values()):
        lines += ["", "## Lists (held-out categories)", ""]
        first = next(r["lists"] for r in variants.values() if "lists" in r)
        lines += [
            f'Prompt: "{first["template"]}"; each list shown in {first["num_orders"]} shuffled orders, the N samples split evenly across them. '
            f'JSD is base 2 (0 = uniform over the {len(first["lists"][0]["items"])} items) over valid answers; invalid answers count in the valid rate only.',
            "",
        ]
        rows = []
        for idx, lst in enumerate(first["lists"]):
            rows.append(
                [
                    f"{lst['list_id']} {lst['category']}",
                    *[variants[label]["lists"]["lists"][idx]["jsd"] if "lists" in variants[label] else None for label in labels],
                    *[variants[label]["lists"]["lists"][idx]["valid_rate"] if "lists" in variants[label] else None for label in labels],
                ]
            )
        lines += _table(["list", *[f"JSD {label}" for label in labels], *[f"valid {label}" for label in labels]], rows)
        lines += ["", *mode_pressure_lines({label: r["lists"] for label, r in variants.items() if "lists" in r})]
        lines += [""] + figure("lists_jsd.png") + figure("lists_histograms.png") + figure("lists_position.png")
    if any("open" in r for r in variants.values()):
        lines += ["## Open-ended", "",
                  "Raw: whole replies, canonicalised (gapo_lite.answers.canonical.canonicalize), so every distinct sentence counts. "
                  "Valid: the answer extracted from the reply (gapo_lite.answers.extract: lead-ins like \"The city I'm referring to is\" removed), "
                  "counted when it is in the kit's word list for the prompt (a closed list of 25) or, with no list, is a short name-like answer.", ""]
        first = next(r["open"] for r in variants.values() if "open" in r)
        rows = []
        for name in first["prompts"]:
            row: list[Any] = [name]
            for label in labels:
                p = variants[label].get("open", {}).get("prompts", {}).get(name)
                row.append(p["unique"] if p else None)
                row.append(p.get("unique_valid") if p else None)
                row.append(p.get("valid_rate") if p else None)
                top = p.get("top_valid", p["top"]) if p else []
                row.append(", ".join(f"{t['answer']} {t['share']:.0%}" for t in top[:3]) if p else None)
            rows.append(row)
        n = first["n"]
        headers = [h for label in labels for h in (f"Unique@{n} raw {label}", f"Unique@{n} valid {label}", f"valid rate {label}", f"top valid answers {label}")]
        lines += _table(["prompt", *headers], rows)
        lines += [""] + figure("open_unique.png")
    if any("creative" in r for r in variants.values()):
        lines += [
            "## Creative",
            "",
            "Embedding distance: mean over pairs of 1 - cosine similarity of all-MiniLM-L6-v2 embeddings. "
            "Self-BLEU: mean over outputs of sacrebleu sentence BLEU against all the other outputs.",
            "",
        ]
        first = next(r["creative"] for r in variants.values() if "creative" in r)
        rows = [
            [
                t,
                *[
                    variants[label].get("creative", {}).get("tasks", {}).get(t, {}).get(key)
                    for key in ("embedding_distance", "one_minus_self_bleu")
                    for label in labels
                ],
            ]
            for t in first["tasks"]
        ]
        lines += _table(["task", *[f"distance {label}" for label in labels], *[f"1-SelfBLEU {label}" for label in labels]], rows)
        lines += [""] + figure("creative.png")
    if any("bench" in r for r in variants.values()):
        lines += [
            "## Benchmarks (lm-evaluation-harness)",
            "",
            f"Limit: {cfg.get('bench_limit')} questions per benchmark (split across a group's subtasks; HumanEval whole); "
            "greedy decoding and few-shot settings as the harness's task configs define them.",
            "",
        ]
        rows = []
        for label in labels:
            for key, r in variants[label].get("bench", {}).items():
                detail = ", ".join(f"{m}={_fmt(v)}" for m, v in r.get("metrics", {}).items()) if r.get("status") == "ok" else r.get("reason", "")
                rows.append([label, key, r.get("task"), r.get("status"), r.get("questions"), detail])
        lines += _table(["variant", "benchmark", "lm-eval task", "status", "questions", "metrics or reason"], rows)
        lines += [""]
    if results.get("sweep"):
        sweep = results["sweep"]
        lines += ["## Temperature sweep", "", f"Diversity: mean Unique@{sweep['n']} over the 10 open-ended prompts. Coherence: {sweep['coherence']}", ""]
        rows = [[label, p["temperature"], p["diversity"], p["coherence"], p["valid_rate"]] for label, points in sweep["points"].items() for p in points]
        lines += _table(["variant", "temperature", "diversity", "coherence", "valid rate"], rows)
        lines += [""] + figure("sweep.png")
    return "\n".join(lines) + "\n"


def write_report(results: dict[str, Any], out_dir: str | Path) -> dict[str, Any]:
    """Write the figures, ``results.json`` and ``report.md`` into ``out_dir``; return the results with figures listed."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = dict(results)
    results["comparison"] = comparison(results)
    results["damage"] = damage_check(results)
    figures = []
    for plot in (plot_lists, plot_open, plot_creative, plot_sweep):
        figures += plot(results, out)
    results["figures"] = figures
    clean = jsonable(results)
    (out / "results.json").write_text(json.dumps(clean, indent=2, allow_nan=False), encoding="utf-8")
    (out / "report.md").write_text(markdown(results), encoding="utf-8")
    return clean
