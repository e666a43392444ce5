"""The CPU-runnable parts of scripts/gpu_check.py: arguments, model configs, tokenizer padding, table, streaming and
per-stage timeouts (a fake worker stands in for a GPU stage), the 32B room check, the dry run."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gpu_check.py"
if str(SCRIPT.parent) not in sys.path:  # gpu_versions, gpu_check_learn and gpu_table import by name, as the scripts do
    sys.path.insert(0, str(SCRIPT.parent))


@pytest.fixture(scope="module")
def script():
    before = os.environ.get("GAPO_LITE_BACKEND")
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gpu_check", None)
    if before is None:  # the script defaults GAPO_LITE_BACKEND for its own process; leave other tests as they were
        os.environ.pop("GAPO_LITE_BACKEND", None)
    else:
        os.environ["GAPO_LITE_BACKEND"] = before


def test_the_plan_runs_what_matters_most_first(script):
    """(a) errors, (b) 7B transformers, (c) 7B Unsloth, (d) learning on both backends, (e) train() + resume, then (f)."""
    names = [(s.key, s.backend, s.name) for s in script.plan(script.parse_args([]))]
    assert names[:6] == [("-", "-", "errors"), ("7b", "transformers", "pair"), ("7b", "unsloth", "pair"), ("start", "unsloth", "learn"),
                         ("start", "transformers", "learn"), ("start", "auto", "train")]
    assert names[6:9] == [("7b", "unsloth", "recipe"), ("llama8b", "unsloth", "pair"), ("7b", "unsloth", "short")]
    assert names[9:] == [("32b", "unsloth", "pair"), ("32b", "transformers", "pair")]  # 32B last: first to be skipped
    stages = script.plan(script.parse_args([]))
    assert [s.essential for s in stages] == [True] * 6 + [False] * 5
    dry = [(s.key, s.backend, s.name) for s in script.plan(script.parse_args(["--dry-run"]))]
    assert dry[:6] == [("-", "-", "errors"), ("tiny", "transformers", "pair"), ("tiny", "unsloth", "pair"), ("start", "unsloth", "learn"),
                       ("start", "transformers", "learn"), ("start", "auto", "train")]
    assert ("32b", "unsloth", "pair") not in dry
    assert [s.name for s in script.plan(script.parse_args(["--quick"]))] == ["errors", "pair", "pair", "learn", "learn", "train"]
    assert [(s.key, s.name) for s in script.plan(script.parse_args(["--only", "learn,llama"]))] == [
        ("start", "learn"), ("start", "learn"), ("llama8b", "pair")]
    scaled = script.parse_args(["--dry-run", "--budget-scale", "3"])
    assert scaled.time_budget_s == 3 * 450 and [s.budget_s for s in script.plan(scaled)] == [3 * s.budget_s for s in script.plan(script.parse_args(["--dry-run"]))]
    for bad in (["--only", "vllm"], ["--num-generations", "1"], ["--budget-scale", "0"]):
        with pytest.raises(SystemExit):
            script.parse_args(bad)


def test_the_budgets_fit_one_ten_minute_call_with_a_minute_to_spare(script):
    """(a)-(e) within the check's default budget, and that budget with the wheel install inside offline_gpu_check.sh's 540 s
    (a 600 s command less 60 s); the dry run keeps the same whole."""
    for dry in (False, True):
        args = script.parse_args(["--dry-run"] if dry else [])
        essential = sum(s.budget_s for s in script.plan(args) if s.essential and not (dry and script.needs_cuda(s)))
        assert essential <= args.time_budget_s, (dry, essential)
    wrapper = (script.REPO / "scripts" / "offline_gpu_check.sh").read_text()
    total = int(wrapper.split("OFFLINE_TOTAL_S:-", 1)[1].split("}", 1)[0])
    install = int(wrapper.split("INSTALL_ALLOWANCE_S=", 1)[1].split()[0])
    assert total <= 600 - 60 and script.parse_args([]).time_budget_s + install <= total


def test_the_docs_stage_table_shows_the_budgets(script):
    """docs/gpu.md's stage table lists, in order, the budgets the plan runs with (BUDGET_S is the one place they are set)."""
    page = (script.REPO / "docs" / "gpu.md").read_text()
    shown = [int(x) for line in page.splitlines() if line.startswith("| (") for x in line.rstrip(" |").rsplit("|", 1)[1].split(",")]
    # (a) 1, (b) 1, (c) 1, (d) 2, (e) 1, (f) recipe, Llama, short and the 32B once (its two backends share a budget)
    assert shown == [int(s.budget_s) for s in script.plan(script.parse_args([]))][:10]


@pytest.mark.parametrize("model", ["7b", "32b"])
def test_config_reproduces_spec(script, model):
    """The Qwen2Config built for the check has the spec's shapes and, on the meta device, its parameter count."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    from gapo_lite.memory import ModelSpec

    spec = script.spec_for(model)
    config = Qwen2Config(**script.qwen2_config_kwargs(spec, pad_token_id=0, eos_token_id=2))
    again = ModelSpec.from_config(config.to_dict(), name=spec.name)
    assert again == spec
    with torch.device("meta"):
        model_ = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model_.parameters()) == spec.num_params


def test_llama_config_is_the_published_one_and_the_planner_reads_it(script):
    """Llama-3.1-8B from its config dict: 8.03B parameters on the meta device, the planner's spec agrees."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    raw = script.llama_config_dict("llama8b")
    assert (raw["hidden_size"], raw["num_hidden_layers"], raw["num_attention_heads"], raw["num_key_value_heads"]) == (4096, 32, 32, 8)
    assert (raw["intermediate_size"], raw["vocab_size"], raw["rope_theta"], raw["max_position_embeddings"]) == (14336, 128256, 500000.0, 131072)
    assert raw["rope_scaling"]["rope_type"] == "llama3" and raw["tie_word_embeddings"] is False
    spec = script.spec_for("llama8b")
    assert spec.name == "Llama-3.1-8B" and not spec.qkv_bias and not spec.tie_word_embeddings
    config = LlamaConfig(**{k: v for k, v in raw.items() if k not in ("model_type", "architectures")})
    rope = config.to_dict()["rope_parameters"]  # transformers 5 keeps rope_theta and the llama3 scaling together
    assert (rope["rope_type"], rope["rope_theta"], rope["factor"], rope["original_max_position_embeddings"]) == ("llama3", 500000.0, 8.0, 8192)
    with torch.device("meta"):
        model_ = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model_.parameters()) == spec.num_params == 8_030_261_248


def test_an_f_stage_is_skipped_when_its_budget_is_not_left(script, tmp_path, capsys, monkeypatch):
    """(f) stages start only with their whole budget left, saying so; the JSON file has every row, complete at the end."""
    import time as time_

    out = tmp_path / "r" / "gpu_check.json"
    monkeypatch.setattr(script, "build_checkpoint", lambda spec, out_dir, tok=None, llama=None: out_dir)
    clock = iter([0.0] + [script.parse_args([]).time_budget_s - 10.0] * 500)  # the first stage eats all but 10 s

    def fake_stage(stage, d, name, a, timeout, partial, work):
        return {"stage": stage.name, "model": name, "backend": stage.backend, "status": "ok", "peak_vram_bytes": 1, "estimate_bytes": 2}

    monkeypatch.setattr(script, "run_stage", fake_stage)
    monkeypatch.setattr(script.time, "perf_counter", lambda: next(clock))
    assert script.main(["--dry-run", "--only", "pair,llama", "--work-dir", str(tmp_path), "--json-out", str(out)]) == 0
    monkeypatch.setattr(script.time, "perf_counter", time_.perf_counter)
    record = json.loads(out.read_text())
    assert record["complete"] and record["running"] is None
    statuses = [(r["model"], r["backend"], r["status"]) for r in record["rows"]]
    assert statuses[0] == ("tiny-dry-run", "transformers", "ok")
    assert statuses[1] == ("tiny-dry-run", "unsloth", "skipped: needs CUDA (Unsloth's patched GRPOTrainer)")
    assert statuses[2][0] == "tiny-llama-dry-run" and statuses[2][2] == "skipped: time budget: 10 s left, the stage needs 60 s"
    assert record["versions"]["torch"] and record["versions"]["fsspec"] and record["summary"].endswith("1 of 3 stages ok, 2 skipped")
    assert not list((tmp_path / "r").glob(".*tmp"))  # written through a renamed temporary file


def test_on_a_gpu_every_stage_runs_in_order(script, tmp_path, monkeypatch):
    """On a (faked) GPU: (a)-(e) in order, then (f) while time allows; each stage's budget is its timeout."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (70 * script.GIB, 80 * script.GIB))
    monkeypatch.setattr(script, "build_checkpoint", lambda spec, out_dir, tok=None, llama=None: out_dir)
    monkeypatch.setattr(script, "room_for", lambda spec, work_dir: "no room (test)")
    start = tmp_path / "start"
    start.mkdir()
    (start / "config.json").write_text("{}")
    (start / "start.json").write_text("{}")
    ran = []

    def fake_stage(stage, model_dir, model_name, args, timeout, partial, work):
        ran.append((stage.name, model_name, stage.backend, round(timeout)))
        return {"stage": stage.name, "model": model_name, "backend": stage.backend, "status": "ok"}

    monkeypatch.setattr(script, "run_stage", fake_stage)
    assert script.main(["--work-dir", str(tmp_path), "--start", str(start)]) == 0
    budget = script.BUDGET_S
    assert ran[:6] == [("errors", "-", "-", budget["errors"]), ("pair", "Qwen2.5-7B", "transformers", budget["pair"]),
                       ("pair", "Qwen2.5-7B", "unsloth", budget["pair"]), ("learn", "demo start", "unsloth", budget["learn/unsloth"]),
                       ("learn", "demo start", "transformers", budget["learn/transformers"]), ("train", "demo start", "auto", budget["train"])]
    assert [r[:3] for r in ran[6:]] == [("recipe", "Qwen2.5-7B", "unsloth"), ("pair", "Llama-3.1-8B", "unsloth"), ("short", "Qwen2.5-7B", "unsloth")]


def test_a_missing_start_is_a_row_that_says_how_to_build_it(script, tmp_path, monkeypatch):
    monkeypatch.setattr(script, "run_stage", lambda *a: pytest.fail("no stage should run without its model"))
    out = tmp_path / "gpu_check.json"
    assert script.main(["--dry-run", "--only", "learn", "--start", str(tmp_path / "none"), "--work-dir", str(tmp_path), "--json-out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert rows[1]["status"] == f"skipped: no prepared start in {tmp_path / 'none'}: build it on the CPU first " \
                                f"(python scripts/gpu_check_learn.py build {tmp_path / 'none'})"


def test_json_out_is_written_after_each_stage(script, tmp_path, monkeypatch):
    """A run killed in its second stage leaves a JSON file with the first stage's row and the stage in flight."""
    out = tmp_path / "gpu_check.json"
    seen = []

    def fake_stage(stage, model_dir, model_name, args, timeout, partial, work):
        seen.append(json.loads(out.read_text()))
        if stage.name == "recipe":
            raise KeyboardInterrupt
        return {"stage": stage.name, "model": model_name, "backend": stage.backend, "status": "ok", "peak_vram_bytes": 3 * script.GIB}

    monkeypatch.setattr(script, "run_stage", fake_stage)
    monkeypatch.setattr(script, "build_checkpoint", lambda spec, out_dir, tok=None, llama=None: out_dir)
    with pytest.raises(KeyboardInterrupt):
        script.main(["--dry-run", "--only", "pair,recipe", "--work-dir", str(tmp_path), "--json-out", str(out)])
    assert seen[0]["rows"] == [] and seen[0]["running"] == "tiny-dry-run/transformers/pair"
    left = json.loads(out.read_text())
    assert left["running"] == "tiny-dry-run/transformers/recipe" and not left["complete"]
    assert [r["stage"] for r in left["rows"]] == ["pair", "pair"] and left["rows"][0]["peak_vram_bytes"] == 3 * script.GIB


def test_versions(script, capsys):
    assert script.main(["--versions"]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert set(lines) == set(script.gpu_versions.RELEVANT) and lines["torch"].startswith("2.")


def test_a_version_out_of_range_stops_the_check_in_one_line(script, tmp_path, capsys, monkeypatch):
    """Versions are printed first; one outside the tested range stops the run before any stage (exit 3), and says so
    in the JSON's summary."""
    problem = "fsspec 2026.9.0 is outside datasets 4.8.5's range fsspec<=2026.2.0,>=2023.1.0"
    monkeypatch.setattr(script.gpu_versions, "check", lambda: ({"torch": "2.11.0", "fsspec": "2026.9.0"}, [problem]))
    monkeypatch.setattr(script, "run_stage", lambda *a: pytest.fail("no stage may run"))
    out = tmp_path / "gpu_check.json"
    assert script.main(["--dry-run", "--json-out", str(out)]) == 3
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "gpu_check: versions: torch 2.11.0, fsspec 2026.9.0"
    assert printed[1] == f"gpu_check: STOP, versions outside the tested range: {problem} (--ignore-versions runs anyway)"
    record = json.loads(out.read_text())
    assert record["summary"] == printed[1] and record["rows"] == [] and record["complete"]


def test_the_version_check_catches_an_fsspec_outside_datasets_range():
    """datasets' own metadata (installed here) holds its fsspec range, and a newer fsspec is caught with it."""
    import gpu_versions
    from packaging.requirements import Requirement

    versions = gpu_versions.installed_versions()
    asks = dict((str(req.name), (who, req)) for who, req in gpu_versions.package_requirements(versions) if who.startswith("datasets "))
    who, fsspec = asks["fsspec"]
    assert "2026.3.0" not in fsspec.specifier and versions["fsspec"] in fsspec.specifier  # what the wheelhouse ships fits
    problems = gpu_versions.version_problems({**versions, "fsspec": "2026.9.0"}, [(who, fsspec)])
    assert problems == [f"fsspec 2026.9.0 is outside {who}'s range fsspec{fsspec.specifier}"]
    assert gpu_versions.version_problems({"fsspec": "2026.2.0"}, [(who, fsspec)]) == []
    assert gpu_versions.version_problems({"fsspec": None}, [(who, fsspec)]) == []  # missing is listed, not a stop
    kit = gpu_versions.version_problems({"trl": "1.15.1"}, [("the kit (pyproject.toml)", r) for r in gpu_versions.kit_ranges()])
    assert kit == ["trl 1.15.1 is outside the kit (pyproject.toml)'s range trl" + str(Requirement("trl>=1.7.0,<=1.15.0").specifier)]
    assert gpu_versions.check()[1] == []  # this environment is inside every range


def test_tokenizer_padded_to_vocab(script):
    from gapo_lite.data import vocabulary

    spec = script.spec_for("tiny")
    tokenizer = script.build_tokenizer_for(spec)
    assert len(tokenizer) == spec.vocab_size == 1024
    word = sorted(vocabulary())[0]
    assert tokenizer.convert_ids_to_tokens(tokenizer(word, add_special_tokens=False)["input_ids"]) == [word]
    with pytest.raises(ValueError, match="cannot hold"):
        script.filler_words(100)
    assert len(script.filler_words(152064)) == 152064 - 18  # 4 special tokens + 14 base words
    assert len(script.build_tokenizer_for(script.spec_for("7b"))) == 152064  # the GPU check's Qwen2.5-7B vocabulary


def test_format_results(script):
    rows = [
        {"stage": "pair", "model": "Qwen2.5-7B", "backend": "unsloth", "status": "ok", "peak_vram_bytes": 16 * script.GIB,
         "estimate_bytes": 20 * script.GIB, "chunk_size": 8, "step_seconds": 12.345, "tokens_per_second": 1234.4},
        {"stage": "pair", "model": "Qwen2.5-32B", "backend": "transformers", "status": "skipped: time budget"},
    ]
    table = script.format_results(rows).splitlines()
    assert table[0].split()[:3] == ["model", "backend", "stage"]
    first = table[2].split()
    assert first[:7] == ["Qwen2.5-7B", "unsloth", "pair", "16.00", "20.00", "1.25", "8"]
    assert first[7:10] == ["12.3", "1234", "ok"]
    assert table[3].split()[:5] == ["Qwen2.5-32B", "transformers", "pair", "-", "-"] and table[3].endswith("skipped: time budget")


def worker_with(script, stage_body: str) -> list[str]:
    """The real worker process, its ``pair`` stage replaced by ``stage_body`` (which may call ``w.note``)."""
    code = ("import sys, time; sys.path.insert(0, {scripts!r}); import gpu_check_worker as w\n"
            "def fake(args, label):\n" + "".join(f"    {line}\n" for line in stage_body.splitlines()) +
            "w.STAGES['pair'] = fake\nsys.exit(w.main(sys.argv[1:]))\n").format(scripts=str(SCRIPT.parent))
    return [sys.executable, "-c", code]


@pytest.mark.parametrize("how", ["hangs", "raises"])
def test_partial_figures_survive_a_timeout_and_a_crash(script, tmp_path, capsys, monkeypatch, how):
    """A stage that measures two steps and then hangs (stopped by its budget) or raises: its row keeps the figures,
    printed at once and merged from the partial file, and a crash keeps the end of its traceback (up to 2,000 characters)."""
    ending = "time.sleep(60)" if how == "hangs" else "raise RuntimeError('CUDA error: an illegal memory access ' + 'x' * 3000)"
    body = ("w.note('load_seconds', 4.5)\nw.note('step_seconds_so_far', [9.9, 8.1])\nw.note('peak_vram_bytes_so_far', 123)\n"
            "print('gpu_check: [fake] step 2: 8.1 s', flush=True)\n" + ending)
    real = script.worker_command
    monkeypatch.setattr(script, "worker_command", lambda *a: worker_with(script, "\n".join(body.splitlines())) + real(*a)[2:])
    args = script.parse_args(["--dry-run"])
    (tmp_path / "m").mkdir()
    stage = script.Stage("tiny", "transformers", "pair", 3)
    start = __import__("time").perf_counter()
    row = script.run_stage(stage, tmp_path / "m", "tiny", args, 3 if how == "hangs" else 60, tmp_path / script.PARTIAL, tmp_path)
    assert __import__("time").perf_counter() - start < 40
    assert (row["load_seconds"], row["step_seconds_so_far"], row["peak_vram_bytes_so_far"]) == (4.5, [9.9, 8.1], 123)
    assert "  | gpu_check: [fake] step 2: 8.1 s" in capsys.readouterr().out
    if how == "hangs":
        assert row["status"] == "timed out after 3s (partial figures kept)" and "traceback" not in row
    else:
        assert row["status"].startswith("failed (rc 1): RuntimeError: CUDA error: an illegal memory access xxx")
        assert len(row["traceback"]) == script.TRACEBACK_CHARS and row["traceback"].rstrip().endswith("x" * 100)
    import gpu_table  # the table reads a cut stage's figures: its step time is the mean of the steps it finished

    assert gpu_table.cells(row)[3] == f"{123 / script.GIB:.2f}" and gpu_table.cells(row)[6] == "9.0"


def test_a_run_killed_inside_a_stage_keeps_that_stages_figures(script, tmp_path):
    """The whole command killed mid-stage: gpu_check.json names the stage in flight, the partial file beside it holds its
    figures, and gpu_table.py renders them as that stage's row."""
    import time as time_

    import gpu_table

    out = tmp_path / "gpu_check.json"
    rows = [{"stage": "pair", "model": "Qwen2.5-7B", "backend": "transformers", "status": "ok", "peak_vram_bytes": 9 * script.GIB}]
    script.write_json_atomic(out, script.run_record(script.parse_args([]), "Fake GPU", {}, rows, "Qwen2.5-7B/unsloth/pair", time_.time()))
    (tmp_path / script.PARTIAL).write_text(json.dumps({"load_seconds": 30.0, "step_seconds_so_far": [20.0], "peak_vram_bytes_so_far": 2 * script.GIB}))
    run = gpu_table.load_run(out)
    assert [r["backend"] for r in run["rows"]] == ["transformers", "unsloth"]
    cut = gpu_table.cells(run["rows"][1])
    assert cut[:4] == ["Qwen2.5-7B", "unsloth", "pair", "2.00"] and cut[6] == "20.0" and cut[8].startswith("cut short")


def test_32b_is_skipped_saying_why_when_its_weights_do_not_fit(script, tmp_path, capsys, monkeypatch):
    import collections

    spec = script.spec_for("32b")
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(script.shutil, "disk_usage", lambda path: usage(100 * script.GIB, 50 * script.GIB, 50 * script.GIB))
    why = script.room_for(spec, tmp_path)
    assert why is not None and "50.0 GiB free" in why and "do not fit" in why
    monkeypatch.setattr(script.shutil, "disk_usage", lambda path: usage(200 * script.GIB, 0, 200 * script.GIB))
    assert script.room_for(spec, tmp_path) is None  # no GPU here to ask; disk has room

    import torch

    monkeypatch.setattr(script.shutil, "disk_usage", lambda path: usage(100 * script.GIB, 50 * script.GIB, 50 * script.GIB))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (70 * script.GIB, 80 * script.GIB))
    monkeypatch.setattr(script, "run_stage", lambda *a: pytest.fail("the 32B has no room"))
    out = tmp_path / "gpu_check.json"
    assert script.main(["--only", "32b", "--work-dir", str(tmp_path), "--json-out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["model"], r["backend"]) for r in rows] == [("Qwen2.5-32B", "unsloth"), ("Qwen2.5-32B", "transformers")]
    assert all(r["status"].startswith("skipped: ") and "do not fit" in r["status"] for r in rows)


def test_recipe_stage_runs_the_recipe_with_a_capped_budget():
    import argparse

    from gapo_lite.training.recipes import load_recipe_file

    worker = importlib.util.spec_from_file_location("gpu_check_worker", SCRIPT.parent / "gpu_check_worker.py")
    module = importlib.util.module_from_spec(worker)
    worker.loader.exec_module(module)
    args = argparse.Namespace(model_dir=Path("/x/7b"), backend="unsloth", steps=2, out_dir=Path("/x/out"), prompts_per_step=1,
                              num_generations=32, train_budget_gb=40.0, completion_tokens=256, lora_rank=64)
    config = load_recipe_file("qwen7b_lists").config.with_overrides(module.train_overrides(args, cuda=True))
    assert (config.model, config.backend, config.max_steps, config.save_steps, config.memory_budget_gb) == ("/x/7b", "unsloth", 2, 2, 40.0)
    # the recipe's own settings on a GPU (not the pair stage's 1 prompt and 256 tokens)
    assert (config.num_generations, config.prompts_per_step, config.max_completion_length, config.lora_r, config.load_in_4bit) == (32, 8, 32, 64, True)
    dry = load_recipe_file("qwen7b_lists").config.with_overrides(module.train_overrides(args, cuda=False))
    assert (dry.prompts_per_step, dry.load_in_4bit, dry.memory_budget_gb) == (1, False, None)


def test_no_gpu_without_dry_run_is_refused(script, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert script.main(["--quick"]) == 2
    assert "--dry-run" in capsys.readouterr().err


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory):
    """The demo's collapsed start at the demo's quick settings (seconds; its figures are meaningless)."""
    import gpu_check_learn

    out = tmp_path_factory.mktemp("start") / "gpu_check_start"
    gpu_check_learn.build_start(out, quick=True)
    return out


def test_the_learning_stage_trains_both_runs_and_records_each_figure(script, quick_start, tmp_path):
    """The dry run's learning stage, in process, at quick settings: GAPO and the baseline through train() with LoRA on the
    transformers backend, each measured; every figure noted as it came; the verdict names what was missed."""
    import gpu_check_learn

    noted = []
    found = gpu_check_learn.learn(quick_start, tmp_path / "out", "transformers", lambda k, v: noted.append(k), steps=2)
    assert noted[:3] == ["settings", "before", "measure_seconds"] and noted[-2:] == ["targets", "verdict"]
    assert noted.index("gapo") < noted.index("grpo_baseline")  # each run's figures noted when it ends
    assert found["gapo"]["steps"] == found["grpo_baseline"]["steps"] == 2 and found["gapo"]["step_seconds"] > 0
    assert set(found["before"]) == {"heldout_jsd", "heldout_valid_rate"}
    assert found["verdict"].startswith("transformers: GAPO ") and found["targets_met"] == all(v is True for v in found["targets"].values())
    assert (tmp_path / "out" / "gapo" / "adapter" / "adapter_config.json").is_file()  # LoRA, as on the GPU


def test_the_targets_and_the_verdict():
    import gpu_check_learn

    before = {"heldout_jsd": 0.43, "heldout_valid_rate": 0.999}
    runs = {"gapo": {"heldout_jsd": 0.06, "heldout_valid_rate": 0.99}, "grpo_baseline": {"heldout_jsd": 0.45, "heldout_valid_rate": 0.999}}
    met = gpu_check_learn.targets(before, runs)
    assert all(v is True for v in met.values())
    assert gpu_check_learn.verdict("unsloth", before, runs, met) == "unsloth: GAPO spread the model: held-out JSD 0.430 -> 0.060 (valid 0.990); baseline 0.450"
    runs["gapo"]["heldout_valid_rate"] = 0.9
    missed = gpu_check_learn.targets(before, runs)
    assert [k for k, v in missed.items() if not v] == ["GAPO valid >= 0.95"]
    assert gpu_check_learn.verdict("unsloth", before, runs, missed).endswith("baseline 0.450; missed: GAPO valid >= 0.95")
    assert gpu_check_learn.targets(before, {})["GAPO JSD < 0.1"] is None  # a run that did not finish is not a miss yet


@pytest.mark.slow
def test_dry_run_end_to_end(script, quick_start, tmp_path, capsys):
    """Every stage in the GPU run's order (build, worker subprocesses, build_trainer + plan, learning, train() + resume, the
    recipe, the Llama), tiny and on the CPU; the stages that need CUDA say so."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("the dry run is the CPU path")
    out = tmp_path / "gpu_check.json"
    code = script.main(["--dry-run", "--start", str(quick_start), "--learn-steps", "2", "--work-dir", str(tmp_path), "--json", "--json-out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1  # the quick start's learning misses the targets: its figures are meaningless
    rows = json.loads(printed[printed.index("\n[") + 1:])
    record = json.loads(out.read_text())
    assert record["rows"] == rows and record["complete"] and record["summary"].startswith("transformers: GAPO did NOT meet the targets")
    by = {(r["model"], r["backend"], r["stage"]): r for r in rows}
    assert list(by) == [("-", "-", "errors"), ("tiny-dry-run", "transformers", "pair"), ("tiny-dry-run", "unsloth", "pair"),
                        ("demo start", "unsloth", "learn"), ("demo start", "transformers", "learn"), ("demo start", "auto", "train"),
                        ("tiny-dry-run", "transformers", "recipe"), ("tiny-llama-dry-run", "transformers", "pair"), ("tiny-dry-run", "unsloth", "short")]
    assert [r["status"].split(":")[0] for r in rows if r["backend"] == "unsloth" or r["stage"] == "errors"] == ["skipped"] * 4
    row = by[("tiny-dry-run", "transformers", "pair")]
    assert row["status"] == "ok" and row["generated_tokens"] == 2 * 4 * 8  # 2 steps x G=4 x 8 tokens: completions forced to full length
    assert row["chunk_size"] * row["steps_per_generation"] == 4 and row["prompt_tokens"] > 10 and row["estimate_bytes"] > 0
    probes = row["probes"]  # what the GPU run must show too (docs/gpu.md), here in fp32 on the CPU
    assert probes["gradient_checkpointing"]["plan"] == probes["gradient_checkpointing"]["model"]
    assert probes["adapter_dtypes"] == ["torch.float32"] and probes["pad_token"]["distinct"]
    # at float rounding: fp32's, or bf16's where this CPU's precision="auto" measured bf16 autocast faster
    assert probes["split_gradient_error_grpo"] < 1e-2
    assert probes["shared_prompt_vs_trl"]["logps"] < 1e-2 and probes["shared_prompt_vs_trl"]["grads"] < 1e-2
    learned = by[("demo start", "transformers", "learn")]
    assert learned["gapo"]["steps"] == learned["grpo_baseline"]["steps"] == 2 and learned["weights"] == "fp32 LoRA (CPU)"
    trained = by[("demo start", "auto", "train")]
    assert trained["status"] == "ok" and (trained["checkpoint"], trained["resumed_to"], trained["steps"]) == ("checkpoint-2", "checkpoint-4", 4)
    recipe = by[("tiny-dry-run", "transformers", "recipe")]
    assert recipe["status"] == "ok" and recipe["checkpoint"] == "checkpoint-2" and recipe["adapter_saved"]
    llama = by[("tiny-llama-dry-run", "transformers", "pair")]
    assert llama["status"] == "ok" and llama["steps"] == 1 and llama["estimate_bytes"] > 0
    assert "[tiny-dry-run/transformers/recipe] step 2:" in printed  # figures printed as measured
    assert not (tmp_path / "tiny-dry-run").exists() and not (tmp_path / "tiny-llama-dry-run").exists()  # checkpoints removed without --keep
