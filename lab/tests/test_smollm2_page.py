"""docs/smollm2.md and the README's SmolLM2 lines show what their commands print from the records in docs/results/,
and say what the records say (each reading that the page states in words is checked against the figures)."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
PAGE = (ROOT / "docs" / "smollm2.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def between(text: str, name: str) -> str:
    """The part of ``text`` between ``<!-- name:begin -->`` and ``<!-- name:end -->``."""
    return text.split(f"<!-- {name}:begin -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0].strip("\n")


def recorded(name: str):
    return json.loads((RESULTS / name).read_text())


def test_the_naming_tables_are_what_the_report_prints():
    """The lead: GAPO and the baseline on the naming prompts, per seed and stage, the targets and the damage checks,
    as `python -m lab.smollm2_report naming docs/results/smollm2_naming.json` prints them."""
    from lab.smollm2_report import format_naming_table, format_naming_targets, format_per_prompt, format_top_answers, naming_damage_lines

    record = recorded("smollm2_naming.json")
    records = record["records"]
    assert sorted(r["seed"] for r in records) == [0, 1]
    block = between(PAGE, "naming")
    assert format_naming_table(records) in block and format_naming_targets(records) in block
    assert format_top_answers(records) in block and format_per_prompt(records) in block
    for line in naming_damage_lines(records):
        assert line in block, line
    assert record["command"] in block or record["command"] in PAGE


def test_the_naming_record_trained_the_recipe_on_the_suites_own_prompts_from_one_start_per_seed():
    from lab.smollm2_report import trained_prompts

    for r in recorded("smollm2_naming.json")["records"]:
        s = r["settings"]
        assert r["trained_prompts"] == list(trained_prompts()) and len(r["trained_prompts"]) == 7
        assert (s["reworded_samples"], s["open_samples"], s["open_validator"], s["clean_answers"]) == (100, 100, "open", True)
        runs = {p["run"] for p in r["points"]}
        assert runs == {"start", "gapo_naming", "grpo_naming"}
        assert max(p["steps"] for p in r["points"] if p["run"] == "gapo_naming") == 300


def test_the_readme_and_the_page_lead_state_the_naming_result_as_recorded():
    """The README's SmolLM2 lines are the report's summary; they and the page's first bullet quote each seed's
    trained-prompt gain at 300 steps."""
    from lab.smollm2_report import format_naming_summary

    records = recorded("smollm2_naming.json")["records"]
    assert format_naming_summary(records) in between(README, "smollm2")
    for r in records:
        start = r["points"][0]["trained"]["unique_valid"]
        last = [p for p in r["points"] if p["run"] == "gapo_naming"][-1]["trained"]["unique_valid"]
        quoted = f"{start:.1f} -> {last:.1f}"
        assert quoted in README and quoted in between(PAGE, "expect"), quoted


def test_the_lists_block_is_what_the_report_prints():
    from lab.smollm2_report import damage_lines, format_result_markdown, format_targets_markdown

    record = recorded("smollm2_clean.json")
    block = between(PAGE, "lists")
    assert format_result_markdown(record) in block and format_targets_markdown(record) in block
    for results in record:
        for line in damage_lines(results):
            assert line in block, line


def test_the_frontier_summary_is_what_the_script_prints_from_its_points():
    from lab.scripts.smollm2_frontier import fit, points, summary

    pts = points([RESULTS / "smollm2_frontier.json"])
    assert summary(pts) in between(PAGE, "frontier")
    gapo = [p for p in pts if p["kind"].startswith("GAPO")]
    assert len(gapo) == 52 and fit(gapo)["b"] > 0  # more valid, less spread: the line the page reads
    assert not any(p["jsd"] <= 0.15 and p["valid"] >= 0.95 for p in gapo)


def test_the_crossed_table_is_what_the_report_prints_and_reads_as_the_page_says():
    from lab.smollm2_report import format_crossed

    record = recorded("smollm2_crossed.json")
    assert format_crossed(record) in between(PAGE, "crossed")
    for rows in record["seeds"].values():
        start = rows[0]
        fixed = [r for r in rows if "fixed" in r["model"]]
        measured = [r for r in rows if "measured" in r["model"]]
        assert start["model"] == "start" and len(fixed) == 2 and len(measured) == 1
        for r in fixed:  # the training lists spread; the held-out lists do not follow
            assert r["train_jsd"] <= start["train_jsd"] - 0.04 and r["heldout_jsd"] >= start["heldout_jsd"] - 0.03
        assert measured[0]["train_jsd"] >= start["train_jsd"] - 0.03  # trained on the held-out lists: the training lists do not move


def test_the_cost_block_is_the_recorded_benchmark_output():
    step = (RESULTS / "smollm2_step.txt").read_text(encoding="utf-8").strip()
    assert step.startswith("GAPO step, 1 prompt x 16 completions") and step in between(PAGE, "step")
