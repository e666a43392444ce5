"""scripts/gpu_table.py: the GPU check's JSON becomes the docs' table, figure for figure; the docs page's marked section
agrees with the recorded JSON once one exists (docs/results/gpu_check.json)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GIB = 1024**3

# A small synthetic run, shaped like gpu_check.py --json-out's file (figures made up).
SAMPLE = {
    "date": "2026-12-01 14:00 UTC", "gpu": "NVIDIA H200, 139 GiB", "python": "3.12.3", "dry_run": False,
    "versions": {"torch": "2.11.0+cu130", "transformers": "5.17.0", "trl": "1.14.2", "unsloth": "2026.10.9", "unsloth_zoo": "2026.10.9",
                 "peft": "0.17.1", "accelerate": "1.15.0", "bitsandbytes": "0.50.2", "datasets": "4.8.5", "xformers": None, "triton": "3.6.0"},
    "settings": {"steps": 2, "llama_steps": 1, "prompts_per_step": 1, "num_generations": 32, "completion_tokens": 256, "lora_rank": 64, "time_budget_s": 420},
    "rows": [
        {"stage": "pair", "model": "Qwen2.5-7B", "backend": "unsloth", "status": "ok", "peak_vram_bytes": 16 * GIB, "estimate_bytes": 20 * GIB,
         "step_seconds": 12.345, "tokens_per_second": 1234.4},
        {"stage": "train", "model": "Qwen2.5-7B", "backend": "unsloth", "status": "ok", "peak_vram_bytes": int(18.5 * GIB), "step_seconds": 30.0},
        {"stage": "pair", "model": "Llama-3.1-8B", "backend": "unsloth", "status": "ok", "peak_vram_bytes": 17 * GIB, "estimate_bytes": None,
         "estimate_note": "planner: unknown model_type", "step_seconds": 20.0, "tokens_per_second": 900.0},
        {"stage": "pair", "model": "Qwen2.5-32B", "backend": "unsloth", "status": "skipped: time budget"},
    ],
    "running": "Qwen2.5-32B/transformers/pair", "complete": False,
}


@pytest.fixture(scope="module")
def gt():
    spec = importlib.util.spec_from_file_location("gpu_table", REPO / "scripts" / "gpu_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tables(markdown: str) -> list[list[list[str]]]:
    """Each markdown table's body rows (header and rule left out), in order."""
    found: list[list[list[str]]] = []
    previous = ""
    for line in markdown.splitlines():
        if line.startswith("|") and not previous.startswith("|"):
            found.append([])
        elif line.startswith("| "):
            found[-1].append([c.strip() for c in line.strip("|").split("|")])
        previous = line
    return found  # a table's first line (its header) opens it; its rule ("|---") starts no "| " row


def table_rows(markdown: str) -> list[list[str]]:
    """The body rows of the first markdown table: one per stage."""
    return tables(markdown)[0]


def assert_table_matches(gt, markdown: str, run: dict) -> None:
    rows = table_rows(markdown)
    assert len(rows) == len(run["rows"])
    for cells, row in zip(rows, run["rows"]):
        assert cells[:3] == [row["model"], row["backend"], row.get("stage", "pair")]
        peak, est = row.get("peak_vram_bytes"), row.get("estimate_bytes")
        assert cells[3] == (f"{peak / GIB:.2f}" if peak is not None else "-")
        assert cells[4] == (f"{est / GIB:.2f}" if est is not None else "-")
        if row.get("step_seconds") is not None:
            assert abs(float(cells[6]) - row["step_seconds"]) < 0.05
        if row.get("tokens_per_second") is not None:
            assert abs(float(cells[7]) - row["tokens_per_second"]) < 0.5
        assert cells[8].startswith(str(row.get("status", "")).replace("|", "/"))
    assert run["gpu"] in markdown and run["date"] in markdown
    for name, version in run.get("versions", {}).items():
        assert f"{name} {version or 'missing'}" in markdown


def test_table_from_the_sample(gt):
    markdown = gt.render(SAMPLE)
    assert_table_matches(gt, markdown, SAMPLE)
    rows = table_rows(markdown)
    assert rows[0] == ["Qwen2.5-7B", "unsloth", "pair", "16.00", "20.00", "1.25", "12.3", "1234", "ok"]
    assert rows[2][4] == "-" and "no plan: planner: unknown model_type" in rows[2][8]
    assert rows[3][3:8] == ["-"] * 5 and rows[3][8] == "skipped: time budget"
    assert "xformers missing" in markdown and "cut short while running: Qwen2.5-32B/transformers/pair" in markdown


def test_probes_are_listed_under_the_table(gt):
    probes = {"adapter_dtypes": ["torch.float32"], "split_gradient_error_grpo": 1e-07}
    run = {**SAMPLE, "rows": [{**SAMPLE["rows"][0], "probes": probes}, SAMPLE["rows"][1]]}
    markdown = gt.render(run)
    assert_table_matches(gt, markdown, run)
    lines = [line for line in markdown.splitlines() if line.startswith("- ")]
    assert lines == ['- Qwen2.5-7B/unsloth/pair: adapter_dtypes ["torch.float32"]; split_gradient_error_grpo 1e-07']
    assert "Probes" not in gt.render(SAMPLE)


def test_write_replaces_only_the_marked_sections(gt, tmp_path, capsys):
    doc, recorded, source = tmp_path / "gpu.md", tmp_path / "results" / "gpu_check.json", tmp_path / "gpu_check.json"
    readme = tmp_path / "README.md"
    source.write_text(json.dumps(SAMPLE))
    doc.write_text(f"# GPU\n\nProse before.\n\n{gt.BEGIN}\nold table\n{gt.END}\n\nProse after.\n")
    readme.write_text(f"# Kit\n{gt.LINE_BEGIN}\n{gt.README_PLACEHOLDER}\n{gt.LINE_END}\nMore.\n")
    write = ["--write", "--doc", str(doc), "--readme", str(readme), "--recorded", str(recorded)]
    assert gt.main([str(source), *write]) == 0
    text = doc.read_text()
    assert text.startswith("# GPU\n\nProse before.\n\n") and text.endswith("\n\nProse after.\n") and "old table" not in text
    assert gt.read_section(text) == gt.render(SAMPLE) and json.loads(recorded.read_text()) == SAMPLE
    line = gt.readme_line(SAMPLE)
    assert readme.read_text() == f"# Kit\n{gt.LINE_BEGIN}\n{line}\n{gt.LINE_END}\nMore.\n"
    assert line.startswith("**Measured on a GPU** (NVIDIA H200, 139 GiB, 2026-12-01 14:00 UTC, `scripts/gpu_check.py`): ")
    assert "unsloth 16.0 GiB peak (plan 20.0), 12.3 s a step" in line  # each pair's figures, next to the command that measured them
    assert gt.main([str(source), *write]) == 0
    assert doc.read_text() == text  # idempotent
    fresh = tmp_path / "new.md"
    assert gt.main([str(source), "--write", "--doc", str(fresh), "--readme", str(readme), "--recorded", str(recorded)]) == 0
    assert fresh.read_text().startswith("# GPU\n") and gt.read_section(fresh.read_text()) == gt.render(SAMPLE)
    (tmp_path / "bad.json").write_text("{not json")
    assert gt.main([str(tmp_path / "bad.json")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("gpu_table: cannot read")


def test_rows_only_json_and_an_empty_run(gt, tmp_path):
    (tmp_path / "rows.json").write_text(json.dumps(SAMPLE["rows"][:1]))  # what gpu_check.py --json prints
    assert table_rows(gt.render(gt.load_run(tmp_path / "rows.json")))[0][3] == "16.00"
    assert table_rows(gt.render({"rows": [], "complete": False, "running": "Qwen2.5-7B: building"}))[0][-1] == "no stage finished"


def test_docs_agree_with_the_recorded_run(gt):
    """Once a GPU run is recorded, docs/gpu.md's marked section and the README's line are exactly what gpu_table.py makes of it."""
    doc = gt.DOC.read_text() if gt.DOC.is_file() else ""
    section = gt.read_section(doc)
    readme = gt.README.read_text().split(gt.LINE_BEGIN, 1)[1].split(gt.LINE_END, 1)[0].strip()
    if not gt.RECORDED.is_file():
        assert section is None or gt.PLACEHOLDER in section
        assert readme.startswith(gt.README_PLACEHOLDER)
        pytest.skip("no recorded GPU run (docs/results/gpu_check.json) yet")
    run = gt.load_run(gt.RECORDED)
    assert section == gt.render(run), "docs/gpu.md is out of date: run python scripts/gpu_table.py docs/results/gpu_check.json --write"
    assert readme == gt.readme_line(run)
    assert_table_matches(gt, section, run)


def test_a_recorded_dry_run_renders_figure_for_figure(gt, tmp_path, capsys):
    """The CPU dry run recorded in docs/results/gpu_check_dry_run.json renders: every stage's row, the learning table
    from its learning rows, the summary and the command; --write refuses it (no GPU measurement)."""
    path = REPO / "docs" / "results" / "gpu_check_dry_run.json"
    run = gt.load_run(path)
    assert run["dry_run"] and run["command"].startswith("python scripts/gpu_check.py --dry-run")
    markdown = gt.render(run)
    assert_table_matches(gt, markdown, run)
    assert f"**Summary:** {run['summary']}" in markdown and f"Printed by `{run['command']}`" in markdown
    learned = [r for r in run["rows"] if r["stage"] == "learn"]
    learn_rows = tables(markdown)[1]
    assert [row[0] for row in learn_rows] == [r["backend"] for r in learned] == ["unsloth", "transformers"]
    done = learned[1]
    if "gapo" in done:  # the CPU's own learning figures, to three places
        cells = learn_rows[1]
        assert cells[4:8] == [f"{done['before']['heldout_jsd']:.3f}", f"{done['gapo']['heldout_jsd']:.3f}",
                              f"{done['gapo']['heldout_valid_rate']:.3f}", f"{done['grpo_baseline']['heldout_jsd']:.3f}"]
    assert gt.main([str(path), "--write", "--doc", str(tmp_path / "gpu.md"), "--readme", str(tmp_path / "README.md")]) == 2
    assert "a dry run is no GPU measurement" in capsys.readouterr().err and not (tmp_path / "gpu.md").exists()


def test_what_gpu_check_writes_is_what_the_table_reads(gt):
    """The record gpu_check.py --json-out writes (its own function, not a copy) renders, figure for figure."""
    import os
    import sys
    import time

    before = os.environ.get("GAPO_LITE_BACKEND")
    spec = importlib.util.spec_from_file_location("gpu_check_for_table", REPO / "scripts" / "gpu_check.py")
    check = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = check  # its dataclasses read their module's namespace
    try:
        spec.loader.exec_module(check)
    finally:
        sys.modules.pop(spec.name, None)
    if before is None:  # gpu_check.py defaults the backend for its own process
        os.environ.pop("GAPO_LITE_BACKEND", None)
    record = check.run_record(check.parse_args(["--dry-run"]), "no GPU (dry run)", SAMPLE["versions"], SAMPLE["rows"], None, time.time())
    assert json.loads(json.dumps(record)) == record
    markdown = gt.render(record)
    assert_table_matches(gt, markdown, record)
    assert "(CPU dry run, tiny models)" in markdown and "cut short" not in markdown
