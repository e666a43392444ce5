"""Memory planner: term formulas against hand-computed values, plan invariants, monotonicity, errors, CLI."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gapo_lite.memory import GIB, MemoryPlanError, ModelSpec, PlanSettings, estimate_terms, minimum_budget_bytes, plan_memory
from gapo_lite.memory.planner import candidate_chunk_sizes, lora_parameter_count, phase_bytes
from gapo_lite.memory.specs import count_parameters

TOY_SHAPES = dict(num_layers=3, hidden_size=8, num_heads=2, num_kv_heads=1, intermediate_size=16, vocab_size=100, tie_word_embeddings=True)
TOY = ModelSpec(name="toy", num_params=count_parameters(**TOY_SHAPES), **TOY_SHAPES)


def paper(**changes) -> PlanSettings:
    """The planner's settings for the paper's TrainConfig on a CUDA GPU with Unsloth (as train() derives them), changed."""
    from gapo_lite.runplan import run_plan_for
    from gapo_lite.training import TrainConfig
    from gapo_lite.training.planning import plan_settings

    config = TrainConfig()
    return dataclasses.replace(plan_settings(config, run_plan_for(config, cuda=True, has_unsloth=True, processes=1)), **changes)


def toy_settings(**overrides) -> PlanSettings:
    base = dict(quantization="32bit", lora_rank=2, num_generations=2, prompts_per_step=2, prompt_tokens=3, completion_tokens=5,
                backend="transformers", optimizer="adamw")
    return paper(**{**base, **overrides})


# Expected values below are worked out by hand from the toy's shapes (L=3 layers, h=8, 2 heads of 4, 1 KV head:
# kv=4, I=16, V=100, tied), never by calling the planner's helpers: 4 sequences (2 prompts x G=2) of
# P=3 + C=5 = 8 tokens; a micro-batch of 2 completions is 16 tokens.


def test_toy_shapes_by_hand():
    # Per layer: q 8*8+8 = 72, k 8*4+4 = 36, v 36, o 64, mlp 3*8*16 = 384, norms 16 -> 608; + final norm 8 + embedding 800.
    assert TOY.num_params == 2632
    assert TOY.linear_params == 1728  # 3 * (64 + 32 + 32 + 64 + 384)
    # LoRA r=2 per layer: q 2*(8+8)=32, k 2*(8+4)=24, v 24, o 32, gate 2*(8+16)=48, up 48, down 48 -> 256; x 3 layers
    assert lora_parameter_count(TOY, 2) == 768


def test_terms_by_hand_transformers_32bit():
    terms = estimate_terms(TOY, toy_settings(), chunk_size=2)
    assert terms["weights"] == 10528  # 2632 params x 4 bytes
    assert terms["lora_params_and_optimizer"] == 12288  # 768 x (param 4 + grad 4 + two fp32 states 8)
    # 16 tokens; one recomputed layer saves 160+12+80+14 = 266 elements/token, its backward 16+32 = 48 more:
    # 16*314*4 = 20096; three checkpointed layer inputs 3*16*8*4 = 1536; final norm + last hidden 2*16*8*4 = 1024
    assert terms["activations"] == 22656
    # logits of 2 completions x 6 kept positions x 100 and their gradient (4 bytes): 9600; one fp32 log-softmax workspace 2*5*100*4 = 4000
    assert terms["logits_and_logprobs"] == 13600
    # 4 sequences x 8 rows x 3 layers x (K and V) x 4 x 4 bytes
    assert terms["kv_cache"] == 3072
    # prefill 4*3*(48+32)*4 = 3840 minus the 5 completion rows not cached yet (1920) = 1920;
    # decode: one layer's KV copy 1024 + 3 * 4 seqs * 100 * 4 = 4800 -> 5824 (the larger)
    assert terms["generation_transient"] == 5824
    assert terms["vllm_pool"] == 0
    assert terms["cuda_overhead"] == GIB
    phases = phase_bytes(terms)
    assert phases["peak"] == 10528 + 12288 + GIB + 36256  # training 22656 + 13600 = 36256 beats generation 8896


def test_terms_by_hand_other_settings():
    no_ckpt = estimate_terms(TOY, toy_settings(gradient_checkpointing=False), chunk_size=2)
    assert no_ckpt["activations"] == 55168  # 3 layers * 16 * 266 * 4 = 51072, backward 16*48*4 = 3072, final 1024
    unsloth32 = estimate_terms(TOY, toy_settings(backend="unsloth"), chunk_size=2)
    assert unsloth32["activations"] == 22144  # 20096 + only 2 layer inputs on the GPU (1024) + final 1024
    # below max_seq_length 512 Unsloth checkpoints without offloading: all 3 layer inputs stay (1536), as on transformers
    assert estimate_terms(TOY, toy_settings(backend="unsloth", max_seq_length=511), chunk_size=2)["activations"] == 22656
    assert estimate_terms(TOY, toy_settings(backend="unsloth", max_seq_length=512), chunk_size=2)["activations"] == 22144
    q4u = estimate_terms(TOY, toy_settings(quantization="4bit", backend="unsloth"), chunk_size=2)
    # NF4 per matrix of n weights: n/2 bytes + a byte per 64 + 4 per 256 blocks (at least one) + 1092 of codes:
    # q and o (64): 32+1+4+1092 = 1129, k and v (32): 1113, gate/up/down (128): 64+2+4+1092 = 1162 -> 7970 a layer, 23910
    # for 3; the 904 other params in 16-bit: 1808
    assert q4u["weights"] == 23910 + 1808
    # completion hidden + grad 2*2*5*8*2 = 320; a chunk of min(10 rows, max(ceil(5/4), 512)) = 10 rows x 100 x 8 bytes = 8000
    assert q4u["logits_and_logprobs"] == 8320
    q4t = estimate_terms(TOY, toy_settings(quantization="4bit"), chunk_size=2)
    assert q4t["weights"] == 23910 + 3616  # peft casts the 904 unquantized params to fp32
    assert q4t["kv_cache"] == 1536  # 16-bit KV: half of 3072
    eight_bit = estimate_terms(TOY, toy_settings(optimizer="adamw_8bit"), chunk_size=2)
    assert eight_bit["lora_params_and_optimizer"] == 7680  # 768 x (4 + 4 + 1 + 1)


def test_unsloth_kv_cache_is_its_decode_buffer():
    # Unsloth's decode buffer: 512 + P + 1 = 516 rows per sequence (not P + C = 8): 4 seqs x 516 x 3 x 2 x 4 x 4 bytes
    terms = estimate_terms(TOY, toy_settings(backend="unsloth"), chunk_size=2)
    assert terms["kv_cache"] == 198144
    # its buffer appears at the first decode step, so prefill holds only the 3 prompt rows (1152 bytes):
    # decode transient = that prompt cache 1152 + last-position logits 4800
    assert terms["generation_transient"] == 5952
    # 600 completion tokens overflow the first 512 rows once: 3 + 1 + 2*512 = 1028 rows
    long = estimate_terms(TOY, toy_settings(backend="unsloth", completion_tokens=600), chunk_size=1)
    assert long["kv_cache"] == 4 * 1028 * 3 * 2 * 4 * 4
    # Qwen2.5-7B, 256 sequences, P = C = 256: 769 rows x 28 layers x 2 x 512 x 2 bytes
    plan = plan_memory(ModelSpec.builtin("qwen2.5-7b"), paper(), budget_bytes=80 * GIB)
    assert plan.terms["kv_cache"] == 11_288_969_216


def test_vllm_pool_replaces_generation_terms():
    s = toy_settings(backend="unsloth", fast_inference=True, gpu_memory_utilization=0.5, gpu_total_bytes=1_000_000)
    terms = estimate_terms(TOY, s, chunk_size=2)
    assert terms["kv_cache"] == terms["generation_transient"] == 0  # generation happens inside vLLM's reservation
    assert terms["vllm_pool"] == 500_000 - 10528  # half of 1 MB, minus the weights it shares with training
    assert phase_bytes(terms)["resident"] == 500_000 + 12288 + GIB
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        estimate_terms(TOY, toy_settings(backend="unsloth", fast_inference=True, gpu_total_bytes=10_000), chunk_size=2)
    with pytest.raises(ValueError, match="unsloth"):
        toy_settings(fast_inference=True)


def test_minimum_budget_is_the_chunk_one_peak():
    s = toy_settings()
    smallest = minimum_budget_bytes(TOY, s)
    # chunk 1: 8 tokens; activations 8*314*4 + 3*8*8*4 + 2*8*8*4 = 10048 + 768 + 512 = 11328;
    # logits 2*1*6*100*4 + 4000 = 8800 -> training 20128 > generation 8896
    assert smallest == 10528 + 12288 + GIB + 20128
    assert plan_memory(TOY, s, budget_bytes=smallest).chunk_size == 1
    with pytest.raises(MemoryPlanError):
        plan_memory(TOY, s, budget_bytes=smallest - 1)


def test_qwen_builtins_match_public_counts():
    assert ModelSpec.builtin("qwen2.5-0.5b").num_params == 494_032_768
    assert ModelSpec.builtin("Qwen/Qwen2.5-7B-Instruct").num_params == 7_615_616_512
    assert ModelSpec.builtin("unsloth/Qwen2.5-32B-Instruct-bnb-4bit").num_params == 32_763_876_352
    for name in ("qwen2.5-0.5b", "Qwen2.5-1.5B", "qwen2.5-3b"):
        assert ModelSpec.builtin(name).tie_word_embeddings
    for name in ("qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b"):
        spec = ModelSpec.builtin(name)
        assert not spec.tie_word_embeddings and spec.vocab_size == 152064


@pytest.mark.parametrize("name", ["llama-7b", "qwen2.5-8b", "Qwen2.5-Coder-7B", ""])
def test_unknown_model_lists_known(name):
    with pytest.raises(ValueError, match="nearest known: .*local folder"):
        ModelSpec.builtin(name)


def test_qwen7b_is_physically_sensible():
    spec = ModelSpec.builtin("qwen2.5-7b")
    plan = plan_memory(spec, paper(completion_tokens=256), budget_bytes=24 * GIB)
    assert 4.5e9 < plan.terms["weights"] < 6.0e9  # ~0.5 byte/param for 6.5B projection weights + 16-bit embeddings/head
    assert plan.fits and 1 <= plan.chunk_size <= 64
    assert plan.estimated_peak_bytes <= 24 * GIB
    # transformers backend: 256 sequences x 512 tokens x 28 layers x (K, V) x 4 kv heads x 128 x 2 bytes = 7 GiB exactly
    transformers = plan_memory(spec, paper(backend="transformers", completion_tokens=256), budget_bytes=24 * GIB)
    assert transformers.terms["kv_cache"] == 7 * GIB


def test_plan_chooses_largest_fitting_divisor():
    spec = ModelSpec.builtin("qwen2.5-1.5b")
    plan = plan_memory(spec, paper(backend="transformers"), budget_bytes=16 * GIB)
    s = paper(backend="transformers")
    sizes = candidate_chunk_sizes(s)
    assert plan.fits and 256 % plan.chunk_size == 0
    assert 1 < plan.chunk_size < 256  # the budget is chosen so that a divisor both above and below exists
    next_up = min(c for c in sizes if c > plan.chunk_size)
    assert phase_bytes(estimate_terms(spec, s, next_up))["peak"] > 16 * GIB


@settings(max_examples=60, deadline=None)
@given(
    num_generations=st.integers(2, 48),
    prompts=st.integers(1, 12),
    world=st.sampled_from([1, 2, 4]),
    budget_gib=st.floats(4, 200),
    backend=st.sampled_from(["unsloth", "transformers"]),
    quantization=st.sampled_from(["4bit", "16bit"]),
)
def test_invariants(num_generations, prompts, world, budget_gib, backend, quantization):
    prompts *= world  # whole groups per process
    spec = ModelSpec.builtin("qwen2.5-1.5b")
    try:
        asked = paper(num_generations=num_generations, prompts_per_step=prompts, world_size=world, backend=backend, quantization=quantization,
                      completion_tokens=128, prompt_tokens=64)
        plan = plan_memory(spec, asked, budget_bytes=int(budget_gib * GIB))
    except MemoryPlanError as err:
        assert not err.plan.fits and err.plan.estimated_peak_bytes > int(budget_gib * GIB)
        return
    gen, chunk = plan.generation_batch_size, plan.chunk_size
    assert gen == prompts * num_generations
    assert gen % num_generations == 0
    assert gen % (chunk * world) == 0
    assert chunk * world * plan.steps_per_generation == gen
    assert (gen // world) % num_generations == 0  # each process generates whole groups
    assert plan.gradient_accumulation_steps == plan.steps_per_generation
    assert plan.fits and plan.estimated_peak_bytes <= plan.budget_bytes
    if backend == "unsloth":
        # Unsloth cuts each log-prob call into unsloth_grpo_mini_batch slices of ceil(rows / slices) rows:
        # a training micro-batch of chunk_size rows stays in one forward pass
        assert plan.unsloth_grpo_mini_batch == 1 and math.ceil(chunk / plan.unsloth_grpo_mini_batch) == chunk


@settings(max_examples=40, deadline=None)
@given(low=st.floats(8, 120), extra=st.floats(0, 120), model=st.sampled_from(["qwen2.5-0.5b", "qwen2.5-7b"]))
def test_bigger_budget_never_smaller_chunk(low, extra, model):
    spec = ModelSpec.builtin(model)

    def chunk(budget_gib: float) -> int:
        try:
            return plan_memory(spec, paper(), budget_bytes=int(budget_gib * GIB)).chunk_size
        except MemoryPlanError:
            return 0

    assert chunk(low) <= chunk(low + extra)


def test_too_small_budget_raises_with_table():
    with pytest.raises(MemoryPlanError) as info:
        plan_memory(ModelSpec.builtin("qwen2.5-32b"), paper(), budget_bytes=24 * GIB)
    err = info.value
    assert isinstance(err, ValueError)
    assert "does not fit" in str(err) and "kv_cache" in str(err) and "generation phase" in str(err)
    assert not err.plan.fits and err.plan.chunk_size == 1


def test_bad_settings_are_named():
    spec = ModelSpec.builtin("qwen2.5-0.5b")
    with pytest.raises(ValueError, match="num_generations"):
        plan_memory(spec, paper(num_generations=1), budget_bytes=GIB)
    with pytest.raises(ValueError, match="does not split over 2 processes"):
        plan_memory(spec, paper(prompts_per_step=3, num_generations=3, world_size=2), budget_bytes=GIB)
    with pytest.raises(ValueError, match="quantization"):
        plan_memory(spec, paper(quantization="8bit"), budget_bytes=GIB)
    with pytest.raises(ValueError, match="backend"):
        plan_memory(spec, paper(backend="vllm"), budget_bytes=GIB)


def test_no_gpu_and_no_budget_asks_for_budget(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="budget-gb"):
        plan_memory(ModelSpec.builtin("qwen2.5-0.5b"), paper())


def test_from_config_counts_real_parameters(tmp_path):
    from gapo_lite.demo.tiny import build_tiny_model
    from gapo_lite.models import load_model

    path = build_tiny_model(tmp_path / "tiny", hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2)
    spec = ModelSpec.from_config(path)
    model, _ = load_model(path, backend="transformers", lora=None)
    assert spec.num_params == sum(p.numel() for p in model.parameters())
    assert (spec.num_layers, spec.hidden_size, spec.num_kv_heads, spec.tie_word_embeddings) == (2, 32, 2, True)
    assert ModelSpec.resolve(str(path)) == spec
    untied = ModelSpec.from_config({**json.loads((path / "config.json").read_text()), "tie_word_embeddings": False})
    assert untied.num_params == spec.num_params + spec.vocab_size * spec.hidden_size


def test_from_config_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        ModelSpec.from_config(tmp_path)
    with pytest.raises(ValueError, match="hidden_size"):
        ModelSpec.from_config({"num_hidden_layers": 2, "vocab_size": 10})


def test_grpo_kwargs_build_a_trl_config(tmp_path):
    from trl import GRPOConfig

    plan = plan_memory(ModelSpec.builtin("qwen2.5-0.5b"), paper(backend="transformers", prompts_per_step=4, num_generations=8), budget_bytes=12 * GIB)
    kwargs = plan.grpo_kwargs()
    assert "generation_batch_size" not in kwargs and "unsloth_grpo_mini_batch" not in kwargs
    config = GRPOConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, **kwargs)
    assert config.generation_batch_size == plan.generation_batch_size == 32
    assert config.per_device_train_batch_size == plan.chunk_size
    unsloth_plan = plan_memory(ModelSpec.builtin("qwen2.5-0.5b"), paper(prompts_per_step=4, num_generations=8), budget_bytes=12 * GIB)
    assert unsloth_plan.grpo_kwargs()["unsloth_grpo_mini_batch"] == 1


def test_cli_json_contract(capsys):
    from gapo_lite.cli import main

    assert main(["plan", "--model", "qwen2.5-7b", "--budget-gb", "24", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("fits", "chunk_size", "steps_per_generation", "generation_batch_size", "estimated_peak_bytes", "terms"):
        assert key in data
    assert data["fits"] is True and data["generation_batch_size"] == 256
    assert data["chunk_size"] * data["steps_per_generation"] == 256
    assert data["estimated_peak_bytes"] <= 24 * GIB
    assert set(data["terms"]) >= {"weights", "lora_params_and_optimizer", "activations", "logits_and_logprobs", "kv_cache", "cuda_overhead"}


def test_cli_table_and_failure(capsys):
    from gapo_lite.cli import main

    assert main(["plan", "--model", "qwen2.5-7b", "--budget-gb", "24"]) == 0
    out = capsys.readouterr().out
    assert "estimated peak" in out and "chunk_size" in out
    assert main(["plan", "--model", "qwen2.5-32b", "--budget-gb", "24"]) == 1
    captured = capsys.readouterr()
    assert "kv_cache" in captured.out and "fits: NO" in captured.out
    assert "does not fit" in captured.err
    assert main(["plan", "--model", "nonesuch-3b", "--budget-gb", "24"]) == 2
    assert "nearest known" in capsys.readouterr().err


def test_cli_plans_the_optimizer_and_vllm_that_run(capsys):
    from gapo_lite.cli import main

    spec = ModelSpec.builtin("qwen2.5-7b")
    assert main(["plan", "--model", "qwen2.5-7b", "--budget-gb", "80", "--json"]) == 0
    default = json.loads(capsys.readouterr().out)
    # train() uses adamw_8bit on CUDA, so the plan does by default: fp32 param + grad (8 bytes) + two 1-byte states
    assert default["terms"]["lora_params_and_optimizer"] == lora_parameter_count(spec, 64) * 10
    assert main(["plan", "--model", "qwen2.5-7b", "--budget-gb", "80", "--fast-inference", "--gpu-memory-utilization", "0.5", "--json"]) == 0
    vllm = json.loads(capsys.readouterr().out)
    assert vllm["terms"]["kv_cache"] == vllm["terms"]["generation_transient"] == 0
    assert vllm["terms"]["vllm_pool"] == 40 * GIB - vllm["terms"]["weights"]  # half of 80 GiB, less the weights vLLM shares
    assert main(["plan", "--model", "qwen2.5-7b", "--budget-gb", "80", "--fast-inference", "--backend", "transformers"]) == 2
    assert "unsloth" in capsys.readouterr().err
