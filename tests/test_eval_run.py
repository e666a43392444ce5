"""End to end on CPU with tiny models: every suite, an adapter, a comparison, the sweep and the report files."""
import json
from pathlib import Path

import pytest

from gapo_lite.cli import main
from gapo_lite.eval import evaluate

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _make_adapter(model_dir: Path, out: Path, seed: int) -> Path:
    """A LoRA adapter on the tiny model whose B matrices are random, so it really changes the outputs."""
    import torch

    from gapo_lite.models import LoraSettings, load_model

    model, _ = load_model(model_dir, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from gapo_lite.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("eval")
    model = build_tiny_model(root / "model")
    return {"root": root, "model": model, "adapter": _make_adapter(model, root / "adapter", 1)}


@pytest.fixture(scope="module")
def full_run(tiny):
    """All four suites plus the sweep, base vs adapter, through the CLI."""
    out = tiny["root"] / "out"
    argv = [
        "eval", "--model", str(tiny["model"]), "--adapter", str(tiny["adapter"]), "--out", str(out),
        "--suite", "lists,open,creative,bench", "--n", "4", "--max-new-tokens", "5", "--seed", "3", "--num-lists", "4",
        "--sweep", "--sweep-n", "3", "--sweep-temperatures", "0.5,1.3",
        "--bench-tasks", "gapo_pick_mc,gapo_pick_gen,gapo_pick_group", "--bench-limit", "4", "--no-progress",
    ]
    assert main(argv) == 0
    return out, json.loads((out / "results.json").read_text())


def test_report_files(full_run):
    out, results = full_run
    for name in ("lists_jsd.png", "lists_histograms.png", "lists_position.png", "open_unique.png", "creative.png", "sweep.png"):
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, name
    report = (out / "report.md").read_text()
    assert "| metric | base | adapter | delta (adapter - base) |" in report
    for fig in results["figures"]:
        assert f"]({fig['file']})" in report
        assert "seed=3" in fig["caption"] and "temperature=" in fig["caption"] and "N=" in fig["caption"]
        assert results["config"]["adapter"] in fig["caption"]
    json.dumps(results, allow_nan=False)  # strict JSON


def test_config_records_the_run(full_run):
    _, results = full_run
    cfg = results["config"]
    assert [v["label"] for v in cfg["variants"]] == ["base", "adapter"]
    assert cfg["variants"][0]["adapter"] is None and cfg["variants"][1]["adapter"] == cfg["adapter"]
    assert cfg["temperature"] == 0.7 and cfg["seed"] == 3
    assert cfg["n"] == {"lists": 4, "open": 4, "creative": 4, "sweep": 3}


def test_adapter_is_really_applied(full_run):
    out, _ = full_run
    base = (out / "samples" / "base_open.jsonl").read_text().splitlines()
    tuned = (out / "samples" / "adapter_open.jsonl").read_text().splitlines()
    assert len(base) == len(tuned) == 40
    assert base != tuned


def test_lists_suite(full_run):
    _, results = full_run
    for label in ("base", "adapter"):
        r = results["variants"][label]["lists"]
        assert len(r["lists"]) == 4
        for lst in r["lists"]:
            assert lst["n"] == 4
            assert sum(lst["counts"].values()) + lst["invalid"] == 4
            assert lst["valid_rate"] == pytest.approx(1 - lst["invalid"] / 4)
            assert lst["jsd"] is None or 0.0 <= lst["jsd"] <= 1.0
        assert 0.0 <= r["mean_valid_rate"] <= 1.0
        assert len((Path(full_run[0]) / r["samples_file"]).read_text().splitlines()) == 16


def test_open_and_creative_suites(full_run):
    _, results = full_run
    for label in ("base", "adapter"):
        open_ = results["variants"][label]["open"]
        assert len(open_["prompts"]) == 10
        assert all(1 <= p["unique"] <= 4 and p["n"] == 4 for p in open_["prompts"].values())
        creative = results["variants"][label]["creative"]
        assert len(creative["tasks"]) == 8
        for task in creative["tasks"].values():
            assert 0.0 <= task["embedding_distance"] <= 2.0
            assert 0.0 <= task["one_minus_self_bleu"] <= 1.0


def test_bench_suite(full_run):
    _, results = full_run
    for label in ("base", "adapter"):
        b = results["variants"][label]["bench"]
        assert b["gapo_pick_mc"]["status"] == "ok" and b["gapo_pick_mc"]["questions"] == 4
        assert 0.0 <= b["gapo_pick_mc"]["metrics"]["acc,none"] <= 1.0
        assert b["gapo_pick_gen"]["status"] == "ok" and "exact_match,none" in b["gapo_pick_gen"]["metrics"]
        group = b["gapo_pick_group"]
        assert group["status"] == "ok" and group["limit_per_task"] == 2 and group["questions"] == 4
        assert set(group["subtasks"]) == {"gapo_pick_mc", "gapo_pick_mc_b"}


def test_sweep(full_run):
    _, results = full_run
    sweep = results["sweep"]
    assert "BASE model" in sweep["coherence"]
    for label in ("base", "adapter"):
        points = sweep["points"][label]
        assert [p["temperature"] for p in points] == [0.5, 1.3]
        for p in points:
            assert 1 <= p["diversity"] <= 3
            assert p["coherence"] < 0.0


def test_compare_with_another_model_and_adapters(tiny, tmp_path):
    from gapo_lite.tiny import build_tiny_model

    other = build_tiny_model(tmp_path / "other", seed=5)
    r = evaluate(str(tiny["model"]), compare=str(other), suites=("open",), out_dir=tmp_path / "out", n=3, max_new_tokens=4, progress=False)
    assert r["comparison"]["labels"] == ["base", "compare"]
    assert r["variants"]["compare"]["open"]["n"] == 3
    assert all("delta" in row for row in r["comparison"]["rows"])

    second = _make_adapter(tiny["model"], tmp_path / "adapter2", 2)
    r = evaluate(str(tiny["model"]), adapter=str(tiny["adapter"]), compare=str(second), suites=("open",), out_dir=tmp_path / "out2", n=3, max_new_tokens=4, progress=False)
    assert [v["adapter"] for v in r["config"]["variants"]] == [str(tiny["adapter"]), str(second)]
    first_samples = (tmp_path / "out2" / "samples" / "adapter_open.jsonl").read_text()
    second_samples = (tmp_path / "out2" / "samples" / "compare_open.jsonl").read_text()
    assert first_samples != second_samples


def test_single_model_has_no_delta_column(tiny, tmp_path):
    r = evaluate(str(tiny["model"]), suites=("lists",), out_dir=tmp_path, n=2, max_new_tokens=3, num_lists=3, progress=False)
    assert r["comparison"]["labels"] == ["base"]
    assert "delta" not in (tmp_path / "report.md").read_text()
    assert len(r["variants"]["base"]["lists"]["lists"]) == 3


def test_bad_input_is_named(tiny, tmp_path):
    with pytest.raises(SystemExit):
        main(["eval", "--model", str(tiny["model"]), "--out", str(tmp_path), "--suite", "lists,poetry"])
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        evaluate(str(tiny["model"]), adapter=str(tmp_path), suites=("lists",), out_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown suite"):
        evaluate(str(tiny["model"]), suites=("poetry",), out_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        evaluate(str(tmp_path / "missing"), suites=("lists",), out_dir=tmp_path / "o", n=2)
