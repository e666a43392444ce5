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


def test_arguments(script):
    args = script.parse_args([])
    assert args.model_list == ["7b", "llama8b", "32b"] and args.backend_list == ["unsloth", "transformers"]
    assert (args.steps, args.num_generations, args.completion_tokens) == (2, 32, 256)
    assert args.train_stage and args.time_budget_s + 30 <= 7 * 60  # the default run ends within 7 minutes
    quick = script.parse_args(["--quick"])
    assert (quick.model_list, quick.backend_list, quick.steps, quick.train_stage) == (["7b"], ["unsloth"], 1, False)
    stages = script.plan_stages(args)
    assert stages[:2] == [("7b", "unsloth", "pair"), ("7b", "unsloth", "train")]
    assert stages[2:4] == [("llama8b", "unsloth", "pair"), ("7b", "transformers", "pair")]  # after the 7B Unsloth stages, one Unsloth stage
    assert stages[4] == ("7b", "unsloth", "short")  # max_seq_length 384: below Unsloth's offloading threshold
    assert stages[5:] == [("32b", "unsloth", "pair"), ("32b", "transformers", "pair")]  # 32B last: first to be skipped
    assert ("7b", "unsloth", "short") not in script.plan_stages(script.parse_args(["--no-short-stage"]))
    assert args.errors_stage and not script.parse_args(["--no-errors-stage"]).errors_stage
    assert script.parse_args(["--skip-32b"]).model_list == ["7b", "llama8b"]
    assert script.parse_args(["--models", "32b", "--backends", "transformers"]).backend_list == ["transformers"]
    dry = script.parse_args(["--dry-run"])
    assert dry.model_list == ["tiny", "tiny-llama"] and dry.backend_list == ["transformers"] and dry.completion_tokens <= 8
    for bad in (["--models", "70b"], ["--backends", "vllm"], ["--models", "32b", "--skip-32b"], ["--num-generations", "1"]):
        with pytest.raises(SystemExit):
            script.parse_args(bad)


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


def test_llama_stage_is_skipped_when_time_is_short(script, tmp_path, capsys, monkeypatch):
    """Less than --llama-min-s left: the Llama row says so; the JSON file has every row, complete at the end."""
    import time as time_

    args = script.parse_args(["--dry-run", "--work-dir", str(tmp_path), "--no-train-stage", "--json-out", str(tmp_path / "r" / "gpu_check.json")])
    args.model_list = ["tiny", "llama8b"]
    monkeypatch.setattr(script, "parse_args", lambda argv=None: args)
    monkeypatch.setattr(script, "build_checkpoint", lambda spec, out_dir, tok=None, llama=None: out_dir)
    clock = iter([0.0] + [args.time_budget_s - 10.0] * 50)  # the first stage eats all but 10 s

    def fake_stage(stage, d, name, backend, a, timeout):
        return {"stage": stage, "model": name, "backend": backend, "status": "ok", "peak_vram_bytes": 1, "estimate_bytes": 2}

    monkeypatch.setattr(script, "run_stage", fake_stage)
    monkeypatch.setattr(script.time, "perf_counter", lambda: next(clock))
    assert script.main([]) == 0
    monkeypatch.setattr(script.time, "perf_counter", time_.perf_counter)
    out = capsys.readouterr().out
    assert "skipping Llama-3.1-8B: time budget: 10 s left" in out
    record = json.loads((tmp_path / "r" / "gpu_check.json").read_text())
    assert record["complete"] and record["running"] is None and [r["model"] for r in record["rows"]] == ["tiny-dry-run", "Llama-3.1-8B"]
    assert record["rows"][1]["status"].startswith("skipped: time budget") and "versions" in record and record["versions"]["torch"]
    assert not list((tmp_path / "r").glob(".*tmp"))  # written through a renamed temporary file


def test_on_a_gpu_the_errors_stage_runs_first_and_the_short_stage_after_the_7b_ones(script, tmp_path, monkeypatch):
    """The stages' order on a (faked) GPU: errors (no model), the 7B pair, then the 7B at max_seq_length 384."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (70 * script.GIB, 80 * script.GIB))
    monkeypatch.setattr(script, "build_checkpoint", lambda spec, out_dir, tok=None, llama=None: out_dir)
    ran = []

    def fake_stage(stage, model_dir, model_name, backend, args, timeout):
        ran.append((stage, model_name, backend))
        return {"stage": stage, "model": model_name, "backend": backend, "status": "ok"}

    monkeypatch.setattr(script, "run_stage", fake_stage)
    assert script.main(["--models", "7b", "--backends", "unsloth", "--no-train-stage", "--work-dir", str(tmp_path)]) == 0
    assert ran == [("errors", "-", "-"), ("pair", "Qwen2.5-7B", "unsloth"), ("short", "Qwen2.5-7B", "unsloth")]


def test_json_out_is_written_after_each_stage(script, tmp_path, monkeypatch):
    """A run killed in its second stage leaves a JSON file with the first stage's row and the stage in flight."""
    out = tmp_path / "gpu_check.json"
    seen = []

    def fake_stage(stage, model_dir, model_name, backend, args, timeout):
        seen.append(json.loads(out.read_text()))
        if stage == "train":
            raise KeyboardInterrupt
        return {"stage": stage, "model": model_name, "backend": backend, "status": "ok", "peak_vram_bytes": 3 * script.GIB}

    monkeypatch.setattr(script, "run_stage", fake_stage)
    monkeypatch.setattr(script, "build_checkpoint", lambda spec, out_dir, tok=None, llama=None: out_dir)
    with pytest.raises(KeyboardInterrupt):
        script.main(["--dry-run", "--work-dir", str(tmp_path), "--json-out", str(out)])
    assert seen[0]["rows"] == [] and seen[0]["running"] == "tiny-dry-run/transformers/pair"
    left = json.loads(out.read_text())
    assert left["running"] == "tiny-dry-run/transformers/train" and not left["complete"]
    assert [r["stage"] for r in left["rows"]] == ["pair"] and left["rows"][0]["peak_vram_bytes"] == 3 * script.GIB


def test_versions(script, capsys):
    assert script.main(["--versions"]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert set(lines) == set(script.VERSIONED) and lines["torch"].startswith("2.")


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


def test_stage_figures_are_streamed_and_kept_when_the_stage_times_out(script, tmp_path, capsys, monkeypatch):
    """A stage that prints a figure and then hangs: the figure is printed at once and kept; the stage is stopped."""
    fake = [sys.executable, "-c", "import time; print('gpu_check: [fake] step 1: 9.9 s', flush=True); time.sleep(60)"]
    monkeypatch.setattr(script, "worker_command", lambda *a, **k: fake)
    args = script.parse_args(["--dry-run"])
    (tmp_path / "m").mkdir()
    start = __import__("time").perf_counter()
    row = script.run_stage("pair", tmp_path / "m", "tiny", "transformers", args, timeout=3)
    assert __import__("time").perf_counter() - start < 30
    assert row["status"].startswith("timed out after 3s")
    assert "  | gpu_check: [fake] step 1: 9.9 s" in capsys.readouterr().out


def test_each_row_is_printed_when_its_stage_ends(script, tmp_path, capsys, monkeypatch):
    """The first stage's row is out before the second stage starts (so a kill of the whole run keeps it)."""
    calls = []

    def fake_stage(stage, model_dir, model_name, backend, args, timeout):
        calls.append(stage)
        if stage == "train":
            raise KeyboardInterrupt  # the run is killed during the second stage
        return {"stage": stage, "model": model_name, "backend": backend, "status": "ok", "peak_vram_bytes": 3 * script.GIB,
                "estimate_bytes": 4 * script.GIB, "chunk_size": 4, "step_seconds": 1.5}

    monkeypatch.setattr(script, "run_stage", fake_stage)
    monkeypatch.setattr(script, "build_checkpoint", lambda spec, out_dir, tok=None, llama=None: out_dir)
    with pytest.raises(KeyboardInterrupt):
        script.main(["--dry-run", "--work-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert calls == ["pair", "train"]
    result = [line for line in out.splitlines() if line.startswith("gpu_check: RESULT")]
    assert len(result) == 1 and result[0].split()[2:5] == ["tiny-dry-run", "transformers", "pair"] and "3.00" in result[0]


def test_32b_is_skipped_saying_why_when_its_weights_do_not_fit(script, tmp_path, capsys, monkeypatch):
    import collections

    spec = script.spec_for("32b")
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(script.shutil, "disk_usage", lambda path: usage(100 * script.GIB, 50 * script.GIB, 50 * script.GIB))
    why = script.room_for(spec, tmp_path)
    assert why is not None and "50.0 GiB free" in why and "do not fit" in why
    monkeypatch.setattr(script.shutil, "disk_usage", lambda path: usage(200 * script.GIB, 0, 200 * script.GIB))
    assert script.room_for(spec, tmp_path) is None  # no GPU here to ask; disk has room

    monkeypatch.setattr(script.shutil, "disk_usage", lambda path: usage(100 * script.GIB, 50 * script.GIB, 50 * script.GIB))
    args = script.parse_args(["--dry-run", "--work-dir", str(tmp_path), "--no-train-stage"])
    args.model_list = ["tiny", "32b"]
    monkeypatch.setattr(script, "parse_args", lambda argv=None: args)
    monkeypatch.setattr(script, "build_checkpoint", lambda spec, out_dir, tok=None, llama=None: out_dir)
    monkeypatch.setattr(script, "run_stage", lambda stage, d, name, backend, a, timeout: {"stage": stage, "model": name, "backend": backend, "status": "ok"})
    assert script.main([]) == 0
    out = capsys.readouterr().out
    assert "skipping Qwen2.5-32B: " in out and "do not fit" in out
    assert [line.split()[2] for line in out.splitlines() if line.startswith("gpu_check: RESULT")] == ["tiny-dry-run", "Qwen2.5-32B"]


def test_train_stage_runs_the_recipe_with_a_capped_budget():
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


@pytest.mark.slow
def test_dry_run_end_to_end(script, tmp_path, capsys):
    """The same stages as on the GPU (build, worker subprocesses, build_trainer + plan, train()), tiny and on CPU."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("the dry run is the CPU path")
    assert script.main(["--dry-run", "--work-dir", str(tmp_path), "--json", "--json-out", str(tmp_path / "gpu_check.json")]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out[out.index("\n[") + 1:])
    assert json.loads((tmp_path / "gpu_check.json").read_text())["rows"] == rows
    row, trained, llama = rows
    assert llama["model"] == "tiny-llama-dry-run" and llama["status"] == "ok" and llama["steps"] == 1 and llama["estimate_bytes"] > 0
    assert trained["stage"] == "train" and trained["status"] == "ok"
    assert trained["checkpoint"] == "checkpoint-2" and trained["adapter_saved"] and trained["steps"] == 2
    assert "[tiny-dry-run/transformers/train] step 2:" in out  # figures printed as measured
    assert row["status"] == "ok" and row["backend"] == "transformers" and row["stage"] == "pair"
    assert row["generated_tokens"] == 2 * 4 * 8  # 2 steps x G=4 x 8 tokens: completions forced to full length
    assert row["chunk_size"] * row["steps_per_generation"] == 4
    assert row["prompt_tokens"] > 10 and row["estimate_bytes"] > 0
    probes = row["probes"]  # what the GPU run must show too (docs/gpu.md), here in fp32 on the CPU
    assert probes["gradient_checkpointing"]["plan"] == probes["gradient_checkpointing"]["model"]
    assert probes["adapter_dtypes"] == ["torch.float32"] and probes["pad_token"]["distinct"]
    assert probes["split_gradient_error_grpo"] < 1e-5
    assert probes["shared_prompt_vs_trl"]["logps"] < 1e-5 and probes["shared_prompt_vs_trl"]["grads"] < 1e-4
    assert not (tmp_path / "tiny-dry-run").exists() and not (tmp_path / "tiny-llama-dry-run").exists()  # checkpoints removed without --keep
