"""The CPU-runnable parts of scripts/gpu_check.py: arguments, model configs, tokenizer padding, table, dry run."""
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
    assert args.model_list == ["7b", "32b"] and args.backend_list == ["unsloth", "transformers"]
    assert (args.steps, args.num_generations, args.completion_tokens) == (2, 32, 256)
    quick = script.parse_args(["--quick"])
    assert (quick.model_list, quick.backend_list, quick.steps) == (["7b"], ["unsloth"], 1)
    assert script.parse_args(["--skip-32b"]).model_list == ["7b"]
    assert script.parse_args(["--models", "32b", "--backends", "transformers"]).backend_list == ["transformers"]
    dry = script.parse_args(["--dry-run"])
    assert dry.model_list == ["tiny"] and dry.backend_list == ["transformers"] and dry.completion_tokens <= 8
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
        {"model": "Qwen2.5-7B", "backend": "unsloth", "status": "ok", "peak_vram_bytes": 16 * script.GIB, "estimate_bytes": 20 * script.GIB,
         "chunk_size": 8, "step_seconds": 12.345, "tokens_per_second": 1234.4},
        {"model": "Qwen2.5-32B", "backend": "transformers", "status": "skipped: time budget"},
    ]
    table = script.format_results(rows).splitlines()
    assert table[0].split()[:2] == ["model", "backend"]
    first = table[2].split()
    assert first[:6] == ["Qwen2.5-7B", "unsloth", "16.00", "20.00", "1.25", "8"]
    assert first[6:9] == ["12.3", "1234", "ok"]
    assert table[3].split()[:4] == ["Qwen2.5-32B", "transformers", "-", "-"] and table[3].endswith("skipped: time budget")


def test_no_gpu_without_dry_run_is_refused(script, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert script.main(["--quick"]) == 2
    assert "--dry-run" in capsys.readouterr().err


def test_dry_run_end_to_end(script, tmp_path, capsys):
    """The same path as on the GPU (build, subprocess worker, GRPOTrainer + GroupReward, plan), tiny and on CPU."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("the dry run is the CPU path")
    assert script.main(["--dry-run", "--work-dir", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out[out.index("\n[") + 1:])
    (row,) = rows
    assert row["status"] == "ok" and row["backend"] == "transformers"
    assert row["generated_tokens"] == 2 * 4 * 8  # 2 steps x G=4 x 8 tokens: completions forced to full length
    assert row["chunk_size"] * row["steps_per_generation"] == 4
    assert row["prompt_tokens"] > 10 and row["estimate_bytes"] > 0
    assert not (tmp_path / "tiny-dry-run").exists()  # checkpoint removed without --keep
