"""load_model: backend choice, the tokenizer trap, LoRA attachment, clear errors, and Unsloth's CPU fallback."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from gapo_lite.models import LoraSettings, load_model, load_tokenizer
from gapo_lite.runplan import resolve_run_plan


def test_auto_backend_on_cpu_is_transformers_and_says_why():
    plan = resolve_run_plan(backend="auto")
    assert plan.backend == "transformers" and "no CUDA GPU" in plan.backend_reason and not plan.load_in_4bit


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        resolve_run_plan(backend="vllm")


def test_tokenizer_loads_with_its_own_class(tiny_model_path):
    from transformers import AutoTokenizer

    tok = load_tokenizer(tiny_model_path)
    text = "<|im_start|>user\nPick one item from this list at random: Owl, Saturn.<|im_end|>\n"
    ids = tok(text)["input_ids"]
    assert tok.unk_token_id not in ids
    assert tok.decode(ids, skip_special_tokens=True).split() == "user Pick one item from this list at random : Owl , Saturn .".split()
    # the trap this guards against: AutoTokenizer picks Qwen2Tokenizer for a qwen2 folder and mangles the text
    assert AutoTokenizer.from_pretrained(str(tiny_model_path))(text)["input_ids"] != ids


def test_load_attaches_paper_lora_to_all_seven_projections(tiny_model_path, capsys):
    model, tok = load_model(tiny_model_path)  # paper defaults: r=64, alpha=32, dropout=0.1
    assert "backend=transformers" in capsys.readouterr().out
    cfg = model.peft_config["default"]
    assert (cfg.r, cfg.lora_alpha, cfg.lora_dropout) == (64, 32, 0.1)
    assert set(cfg.target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    assert next(model.parameters()).dtype == torch.float32


def test_no_adapter(tiny_model_path):
    model, _ = load_model(tiny_model_path, lora=None)
    assert not hasattr(model, "peft_config")


def test_missing_path_and_folder_without_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_model(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_model(tmp_path)


def test_fast_inference_refused_on_cpu(tiny_model_path):
    with pytest.raises(ValueError, match="CUDA"):
        load_model(tiny_model_path, fast_inference=True)


def test_bad_lora_settings():
    with pytest.raises(ValueError, match="rank"):
        LoraSettings(r=0)
    with pytest.raises(ValueError, match="dropout"):
        LoraSettings(dropout=1.5)


@pytest.mark.parametrize("checkpointing", [False, True])
def test_4bit_transformers_path_follows_the_plans_checkpointing(tiny_model_path, monkeypatch, checkpointing):
    """peft's prepare_model_for_kbit_training turns gradient checkpointing on unless told not to; the plan decides.
    Real bitsandbytes NF4 on the CPU; the one GPU fact faked is the device the plan puts the model on."""
    pytest.importorskip("bitsandbytes")
    from gapo_lite.runplan import RunPlan

    monkeypatch.setattr(torch.cuda, "current_device", lambda: "cpu")
    plan = RunPlan(cuda=True, world_size=1, backend="transformers", backend_reason="test", precision="bf16", optim="adamw_torch",
                   gradient_checkpointing=checkpointing, load_in_4bit=True)
    model, _ = load_model(tiny_model_path, run_plan=plan, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    assert getattr(model, "is_loaded_in_4bit", False)
    assert model.is_gradient_checkpointing is checkpointing
    assert ("gradient checkpointing on" in plan.describe()) is checkpointing


def test_unsloth_backend_cpu_fallback_imports_first_and_trains(tiny_model_path, tmp_path):
    """Unsloth 2026.10.9's CPU fallback, for real (load, backward, 2 GAPO steps), in a fresh process so the import order is honest."""
    script = textwrap.dedent(
        f"""
        import json, sys
        import gapo_lite  # imports unsloth first because GAPO_LITE_BACKEND=unsloth
        order = [m for m in ("unsloth", "trl", "transformers", "peft") if m in sys.modules]
        from gapo_lite.models import LoraSettings, load_model
        model, tok = load_model({str(tiny_model_path)!r}, backend="unsloth", lora=LoraSettings(r=4, alpha=8, dropout=0.0))
        import torch
        names = [n for n, p in model.named_parameters() if p.requires_grad]
        ids = tok("<|im_start|>user\\nPick one item<|im_end|>", return_tensors="pt")
        model.train()
        out = model(**ids, labels=ids["input_ids"])
        out.loss.backward()
        grads = [float(p.grad.abs().sum()) for n, p in model.named_parameters() if p.requires_grad and p.grad is not None]
        model.zero_grad()
        from gapo_lite.training import TrainConfig, train
        result = train(TrainConfig(model={str(tiny_model_path)!r}, backend="unsloth", num_generations=4, prompts_per_step=2,
                                   max_completion_length=2, max_steps=2, save_steps=100, learning_rate=1e-3, lora_r=4, lora_alpha=8,
                                   lora_dropout=0.0, output_dir="run"), model=model, tokenizer=tok)
        print("RESULT " + json.dumps({{"first": order[0], "trainable": len(names), "all_lora": all("lora_" in n for n in names),
              "tok": type(tok).__name__, "grad": sum(grads), "unk": tok.unk_token_id in ids["input_ids"][0].tolist(),
              "grpo_steps": result.global_step}}))
        """
    )
    env = {**os.environ, "GAPO_LITE_BACKEND": "unsloth", "UNSLOTH_COMPILE_LOCATION": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][7:])
    assert result["first"] == "unsloth"
    assert result["trainable"] > 0 and result["all_lora"]
    assert result["tok"] != "Qwen2Tokenizer" and not result["unk"]
    assert result["grad"] > 0
    assert result["grpo_steps"] == 2  # GAPO through TRL's GRPOTrainer on the Unsloth-loaded model


def test_vllm_wiring_reaches_unsloth_like_its_notebooks(tiny_model_path, monkeypatch):
    """fast_inference and gpu_memory_utilization (TrainConfig fields) reach FastLanguageModel.from_pretrained; a stand-in
    Unsloth records the call (no GPU, no vLLM here)."""
    import dataclasses
    import types

    from gapo_lite.runplan import run_plan_for
    from gapo_lite.training import TrainConfig
    from gapo_lite.training.trainer import load_for_config

    calls = {}

    class FastLanguageModel:
        @staticmethod
        def from_pretrained(**kwargs):
            calls["load"] = kwargs
            stand_in = torch.nn.Module()
            stand_in.q_proj, stand_in.v_proj = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
            return stand_in, None

        @staticmethod
        def get_peft_model(model, **kwargs):
            calls["peft"] = kwargs
            return model

    monkeypatch.setitem(sys.modules, "unsloth", types.SimpleNamespace(FastLanguageModel=FastLanguageModel))
    config = TrainConfig(model=str(tiny_model_path), backend="unsloth", fast_inference=True, gpu_memory_utilization=0.7)
    hw = dataclasses.replace(run_plan_for(config, cuda=True, has_unsloth=True), gradient_checkpointing=False)
    load_for_config(config, hw)
    assert calls["load"]["fast_inference"] is True and calls["load"]["gpu_memory_utilization"] == 0.7
    assert calls["load"]["load_in_4bit"] is True and calls["load"]["max_lora_rank"] == 64
    assert calls["peft"]["use_gradient_checkpointing"] is False  # the run plan's choice, not a fixed "unsloth"
    assert calls["peft"]["target_modules"] == ["q_proj", "v_proj"]  # read from the model's own module names
    hw_on = dataclasses.replace(hw, gradient_checkpointing=True)
    load_for_config(config, hw_on)
    assert calls["peft"]["use_gradient_checkpointing"] == "unsloth"


def test_vllm_is_an_optional_extra():
    from pathlib import Path

    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert any(req.split("=")[0].split("[")[0].strip() == "vllm" for req in extras["vllm"])
    assert not any("vllm" in req for req in project["dependencies"])
