"""End to end on CPU with tiny models: every suite, an adapter, a comparison, the sweep and the report files."""
import json
import math
import re
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
    from gapo_lite.demo.tiny import build_tiny_model

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


def _rows(out: Path, relative: str) -> list[dict]:
    return [json.loads(line) for line in (out / relative).read_text().splitlines()]


def _simple_choice(text: str, items: list[str]) -> str | None:
    """A second, simpler parser: the one item whose words appear in a row in the lowercased text, else None."""
    words = re.findall(r"[\w']+", text.lower())
    hits = {item for item in items if any(words[i : i + len(item.split())] == item.lower().split() for i in range(len(words)))}
    hits = {h for h in hits if not any(h != o and h.lower() in o.lower() for o in hits)}  # "sea" inside "sea lion"
    return hits.pop() if len(hits) == 1 else None


def _simple_clean_choice(text: str, ended: bool, items: list[str]) -> str | None:
    """The clean rule, simply: the reply ended and its words are the item's words alone (a plural -s allowed)."""
    words = re.findall(r"[\w']+", text.lower())
    hits = [item for item in items if words in (item.lower().split(), item.lower().split()[:-1] + [item.lower().split()[-1] + "s"])]
    return hits[0] if ended and len(hits) == 1 else None


def _jsd_by_hand(counts: list[int]) -> float:
    """JSD (base 2) of the empirical distribution to uniform, from the definition with M = (P + U) / 2."""
    total, size = sum(counts), len(counts)
    p = [c / total for c in counts]
    m = [(pi + 1 / size) / 2 for pi in p]
    kl_p = sum(pi * math.log2(pi / mi) for pi, mi in zip(p, m) if pi > 0)
    kl_u = sum((1 / size) * math.log2((1 / size) / mi) for mi in m)
    return (kl_p + kl_u) / 2


def test_lists_suite_recomputed_from_its_samples(full_run):
    """Counts, invalid, valid rate and JSD of every list, recomputed from the raw completions in samples/."""
    out, results = full_run
    for label in ("base", "adapter"):
        r = results["variants"][label]["lists"]
        rows = _rows(out, r["samples_file"])
        assert len(rows) == 4 * 4  # 4 lists x n=4
        for lst in r["lists"]:
            mine = [row for row in rows if row["list_id"] == lst["list_id"]]
            assert [row["lenient_choice"] for row in mine] == [_simple_choice(row["completion"], lst["items"]) for row in mine]
            choices = [_simple_clean_choice(row["completion"], row["ended"], lst["items"]) for row in mine]
            assert choices == [row["choice"] for row in mine]
            counts = [choices.count(item) for item in lst["items"]]
            assert lst["counts"] == dict(zip(lst["items"], counts))
            assert lst["invalid"] == choices.count(None)
            assert lst["valid_rate"] == (4 - choices.count(None)) / 4
            if sum(counts):
                assert lst["jsd"] == pytest.approx(_jsd_by_hand(counts), abs=1e-12)
            else:
                assert lst["jsd"] is None  # no valid answer: JSD undefined (nan, stored as null)
        scored = [lst["jsd"] for lst in r["lists"] if lst["jsd"] is not None]
        if scored:
            assert r["mean_jsd"] == pytest.approx(sum(scored) / len(scored))


def test_score_list_against_the_simpler_implementations():
    """The tiny random model names no list item, so the end-to-end JSD above is undefined; here a list with
    valid choices is scored and checked against the by-hand JSD and counts."""
    from gapo_lite.eval.list_suite import score_list

    items = ("Owl", "Cat", "Dog", "Sea lion")
    texts = ["owl", "I pick the Owl.", "cat", "Sea lion!", "nothing", "Owl and Cat"]
    shown = [items] * len(texts)
    choices = [_simple_choice(t, list(items)) for t in texts]
    assert choices == ["Owl", "Owl", "Cat", "Sea lion", None, None]
    r = score_list(choices, shown, items)
    assert r["counts"] == {"Owl": 2, "Cat": 1, "Dog": 0, "Sea lion": 1} and r["invalid"] == 2
    assert r["valid_rate"] == pytest.approx(4 / 6)
    assert r["jsd"] == pytest.approx(_jsd_by_hand([2, 1, 0, 1]), abs=1e-12)
    # by hand: P = (1/2, 1/4, 0, 1/4), M = (3/8, 1/4, 1/8, 1/4)
    by_hand = 0.5 * (0.5 * math.log2(4 / 3) + 0) + 0.5 * (0.25 * math.log2(2 / 3) + 0.25 * math.log2(2))
    assert r["jsd"] == pytest.approx(by_hand, abs=1e-12)
    assert r["position_shares"] == [0.5, 0.25, 0.0, 0.25]


def test_open_suite_recomputed_from_its_samples(full_run):
    """Unique@N per prompt and its mean, counted from the canonical answers in samples/."""
    out, results = full_run
    for label in ("base", "adapter"):
        r = results["variants"][label]["open"]
        rows = _rows(out, r["samples_file"])
        assert len(r["prompts"]) == 10 and len(rows) == 40
        for name, p in r["prompts"].items():
            answers = [row["answer"] for row in rows if row["prompt"] == name]
            assert p["n"] == len(answers) == 4
            assert p["unique"] == len({a for a in answers if a})
        assert r["mean_unique"] == pytest.approx(sum(p["unique"] for p in r["prompts"].values()) / 10)


def test_creative_self_bleu_recomputed(full_run):
    """1 - Self-BLEU per task from sacrebleu directly: each output against all the others, then the mean."""
    from sacrebleu.metrics import BLEU

    out, results = full_run
    bleu = BLEU(effective_order=True)
    r = results["variants"]["base"]["creative"]
    rows = _rows(out, r["samples_file"])
    assert len(r["tasks"]) == 8
    for task, scores in r["tasks"].items():
        texts = [row["completion"] for row in rows if row["task"] == task]
        assert len(texts) == 4
        self_bleu = sum(bleu.sentence_score(t, texts[:i] + texts[i + 1 :]).score / 100 for i, t in enumerate(texts)) / len(texts)
        assert scores["one_minus_self_bleu"] == pytest.approx(1 - self_bleu, abs=1e-9)


def test_bench_suite(full_run):
    _, results = full_run
    for label in ("base", "adapter"):
        b = results["variants"][label]["bench"]
        assert b["gapo_pick_mc"]["status"] == "ok" and b["gapo_pick_mc"]["questions"] == 4
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
            assert p["coherence"] < 0.0  # a mean log-probability of sampled tokens


def test_compare_with_another_model_and_adapters(tiny, tmp_path):
    from gapo_lite.demo.tiny import build_tiny_model

    other = build_tiny_model(tmp_path / "other", seed=5)
    r = evaluate(str(tiny["model"]), compare=str(other), suites=("open",), out_dir=tmp_path / "out", n=3, max_new_tokens=4, progress=False)
    assert r["comparison"]["labels"] == ["base", "compare"]
    assert r["variants"]["compare"]["open"]["n"] == 3
    assert all("delta" in row for row in r["comparison"]["rows"])

    second = _make_adapter(tiny["model"], tmp_path / "adapter2", 2)
    r = evaluate(str(tiny["model"]), adapter=str(tiny["adapter"]), compare=str(second), suites=("open",), out_dir=tmp_path / "out2",
                 n=3, max_new_tokens=4, progress=False)
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


def test_precision_reaches_the_sampling_settings_and_bad_values_are_refused(tiny, monkeypatch):
    """--precision: fp32 forces full-precision sampling; bf16 on a CPU without native bf16 is refused before any load."""
    from gapo_lite import _bootstrap
    from gapo_lite.eval.runner import EvalOptions, prepare_evaluation

    job = prepare_evaluation(str(tiny["model"]), options=EvalOptions(suites=("lists", "open"), precision="fp32"))
    assert {s.precision for s in job.settings.values()} == {"fp32"}
    with pytest.raises(ValueError, match="precision must be"):
        prepare_evaluation(str(tiny["model"]), options=EvalOptions(suites=("lists",), precision="fp16"))
    monkeypatch.setattr(_bootstrap, "cpu_bf16_native", lambda: False)
    with pytest.raises(ValueError, match="no native bf16"):
        prepare_evaluation(str(tiny["model"]), options=EvalOptions(suites=("lists",), precision="bf16"))
