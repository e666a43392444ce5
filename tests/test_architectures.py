"""Any causal LM: tiny random Llama, Qwen3, Gemma 2, Mistral and Phi-3 models (built locally from transformers'
config classes, a few hundred thousand parameters each) go through ``train()`` for one GAPO step on CPU and
through ``gapo-lite plan``; the planner counts each one's parameters exactly as the model does."""
from __future__ import annotations

import json

import pytest

from gapo_lite.memory import GIB, ModelSpec

SHAPES = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
ARCHITECTURES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 16}),  # head_dim != hidden / heads, as in Qwen3
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 16, "query_pre_attn_scalar": 16}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 64}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {"original_max_position_embeddings": 128}),  # fused qkv_proj / gate_up_proj
}


def build(path, arch: str):
    import torch
    import transformers

    from gapo_lite.data import vocabulary
    from gapo_lite.demo.tiny import build_tokenizer

    config_name, model_name, extra = ARCHITECTURES[arch]
    tokenizer = build_tokenizer(vocabulary())
    config = getattr(transformers, config_name)(
        vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
        tie_word_embeddings=arch in ("gemma2", "qwen3"), **SHAPES, **extra,
    )
    torch.manual_seed(0)
    model = getattr(transformers, model_name)(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path, sum(p.numel() for p in model.parameters())


@pytest.fixture(scope="module", params=list(ARCHITECTURES))
def tiny(request, tmp_path_factory):
    path, params = build(tmp_path_factory.mktemp(request.param) / "model", request.param)
    return request.param, path, params


def test_planner_counts_the_parameters_the_model_has(tiny):
    arch, path, params = tiny
    assert ModelSpec.from_config(path).num_params == params, arch


def test_planner_counts_the_lora_parameters_the_adapter_has(tiny):
    """Phi-3's fused qkv_proj / gate_up_proj carry one adapter each: the seven-projection count would be 3 * hidden too many per layer."""
    from gapo_lite.memory.planner import lora_parameter_count
    from gapo_lite.models import LoraSettings, load_model

    arch, path, _ = tiny
    model, _ = load_model(path, backend="transformers", lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert lora_parameter_count(ModelSpec.from_config(path), 4) == trainable, arch


def test_one_gapo_step(tiny, tmp_path):
    from gapo_lite.training import TrainConfig, train

    arch, path, _ = tiny
    config = TrainConfig(model=str(path), backend="transformers", num_generations=2, prompts_per_step=2, max_completion_length=2,
                         max_steps=1, num_prompts=2, lora_r=4, lora_alpha=8, lora_dropout=0.0, learning_rate=1e-3, save_steps=100,
                         output_dir=str(tmp_path / "run"))
    result = train(config)
    assert result.global_step == 1, arch
    adapter = json.loads((result.adapter_dir / "adapter_config.json").read_text())
    expected = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"} if arch == "phi3" else set(TrainConfig().lora_target_modules)
    assert set(adapter["target_modules"]) == expected, arch


def test_plan_from_folder_and_from_the_loaded_model(tiny, capsys):
    from gapo_lite.cli import main
    from gapo_lite.models import load_model
    from gapo_lite.runplan import resolve_run_plan
    from gapo_lite.training import TrainConfig
    from gapo_lite.training.planning import plan_for_config

    arch, path, params = tiny
    assert main(["plan", "--model", str(path), "--budget-gb", "4", "--json"]) == 0
    from_folder = json.loads(capsys.readouterr().out)
    assert from_folder["fits"], arch
    model, _ = load_model(path, backend="transformers", lora=None)
    config = TrainConfig(model="any-org/not-a-known-name", memory_budget_gb=4)  # planned from the model, never by name
    plan = plan_for_config(config, run_plan=resolve_run_plan(backend="unsloth", cuda=True, has_unsloth=True), model=model)
    assert plan.terms == from_folder["terms"] and plan.estimated_peak_bytes < 4 * GIB, arch
