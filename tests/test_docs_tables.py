"""Every printed table in the README and docs/ is what its command's own formatter prints from the recorded
results in docs/results/ (the demo, the seeds, the regime map, open-ended, accuracy, the GPU page); the SmolLM2
page's are checked by lab/tests/test_smollm2_page.py."""
import importlib
import importlib.util
import json
from pathlib import Path

import pytest

from gapo_lite.demo.run import format_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def recorded_json(name: str):
    """A recorded result in docs/results/."""
    return json.loads((DOCS / "results" / name).read_text())


RECORDED = recorded_json("demo_seeds.json")


def _demo_seeds():
    spec = importlib.util.spec_from_file_location("demo_seeds", ROOT / "benchmarks" / "demo_seeds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _seed_table():
    return _demo_seeds().seed_table({int(k): v for k, v in RECORDED.items()})


def test_readme_and_demo_page_show_the_seed0_table_as_printed():
    assert format_table(RECORDED["0"]) in README
    assert format_table(RECORDED["0"]) in page("demo.md")


def test_demo_page_shows_the_seed_table_as_printed():
    assert _seed_table() in page("demo.md")


def test_recorded_targets_follow_the_recorded_figures():
    for seed, r in RECORDED.items():
        recomputed = _demo_seeds().targets({**r, "before": r["before"], "gapo": r["gapo"], "grpo_baseline": r["grpo_baseline"]})
        assert recomputed == r["targets"], f"seed {seed}"


def test_recorded_runs_used_the_demo_defaults():
    """The README's 'seed 0 is make demo's run' holds only if the recorded settings are today's defaults."""
    import dataclasses

    from gapo_lite.demo.run import DemoSettings

    for seed, r in RECORDED.items():
        defaults = json.loads(json.dumps(dataclasses.asdict(DemoSettings(seed=int(seed)))))
        recorded = {k: v for k, v in r["settings"].items() if k in defaults}
        assert recorded == {k: defaults[k] for k in recorded}, f"seed {seed}"
        assert set(recorded) >= {"copy_steps", "first_share", "rl_steps", "pretrain_steps", "seed"}


def test_start_line_in_the_demo_page_is_seed0s():
    assert RECORDED["0"]["start"]["verdict"] in page("demo.md")


def test_regimes_page_shows_the_regime_table_as_printed():
    from lab.regimes import format_table as regime_table

    recorded = recorded_json("regimes.json")
    assert regime_table(recorded) in page("regimes.md")
    assert recorded["prediction_right"] == sum(r["right"] for r in recorded["rows"])


@pytest.mark.parametrize(("module", "recorded_file", "doc"), [("open_ended", "open_ended.json", "open_ended.md"), ("accuracy", "accuracy.json", "accuracy.md")])
def test_miniature_experiment_pages_show_their_tables_as_printed(module, recorded_file, doc):
    formatter = importlib.import_module(f"lab.{module}").format_table
    recorded = recorded_json(recorded_file)
    assert formatter(recorded) in page(doc)
    assert recorded["command"] in page(doc)  # the page names the command that printed it


def test_every_recorded_result_is_shown_by_a_page():
    """No orphan JSON: each file in docs/results/ is linked from a docs page."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md")) + README
    orphans = [p.name for p in (DOCS / "results").iterdir() if f"results/{p.name}" not in text]
    assert not orphans, orphans


def between(text: str, name: str) -> str:
    """The part of ``text`` between ``<!-- name:begin -->`` and ``<!-- name:end -->``."""
    return text.split(f"<!-- {name}:begin -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0].strip("\n")


def test_gpu_page_resident_terms_are_the_recorded_benchmark():
    """docs/gpu.md's planner-against-real-bytes table is what benchmarks/memory.py --resident printed, every term within 5%."""
    import runpy

    rows = recorded_json("memory_resident.json")
    bench = runpy.run_path(str(ROOT / "benchmarks" / "memory.py"), run_name="memory_bench")
    assert between(page("gpu.md"), "resident") == bench["format_resident"](rows)
    assert {r["model"] for r in rows} >= {"SmolLM2-135M"} and len({r["model"] for r in rows}) >= 3
    assert all(abs(r["ratio"] - 1) < 0.05 for r in rows)


def test_gpu_page_nf4_run_is_what_the_quantization_report_prints():
    from lab.smollm2_report import format_quantization_table, quantization_columns

    record = recorded_json("smollm2_nf4.json")
    table = format_quantization_table(quantization_columns(record), record[0]["settings"]["seed"])
    assert table in between(page("gpu.md"), "nf4-run")



def test_the_docs_stay_within_their_budget():
    """docs/ leads with results, not history: at most 2,000 lines in all, the SmolLM2 page 250, and the records the
    pages are printed from at most 20 files and 3 MB (the lab's history is lab/LOG.md and git)."""
    lines = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in DOCS.glob("*.md")}
    records = [p for p in RESULTS.iterdir() if p.is_file()]
    assert sum(lines.values()) <= 2000, lines
    assert lines["smollm2.md"] <= 250
    assert len(records) <= 20 and sum(p.stat().st_size for p in records) <= 3 * 2**20
    assert len((ROOT / "lab" / "LOG.md").read_text(encoding="utf-8").splitlines()) <= 300
