"""The run plan: one place decides backend, precision, optimizer, checkpointing; GPU facts are faked here.

A T4 (compute capability 7.5) emulates bf16, so ``torch.cuda.is_bf16_supported()`` says True there; the fake
below answers as torch 2.13 does: True with emulation counted, True without only from capability 8.0.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from gapo_lite.runplan import RunPlan, run_plan_for
from gapo_lite.training import TrainConfig
from gapo_lite.training.trl_config import OBJECTIVE_FIELDS, grpo_kwargs, objective_kwargs


@pytest.fixture
def fake_gpu(monkeypatch):
    """A CUDA GPU of a chosen compute capability, as torch would describe it."""

    def install(major: int, minor: int) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (major, minor))
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (70 * 2**30, 80 * 2**30))

        def is_bf16_supported(including_emulation: bool = True) -> bool:
            return True if including_emulation else major >= 8

        monkeypatch.setattr(torch.cuda, "is_bf16_supported", is_bf16_supported)
        import gapo_lite.probes

        monkeypatch.setattr(gapo_lite.probes, "bitsandbytes_4bit_problem", lambda device: None)  # its bitsandbytes runs NF4

    return install


def cfg(**kw) -> TrainConfig:
    return TrainConfig(output_dir="/tmp/gapo-hw", num_generations=4, prompts_per_step=2, **kw)


@pytest.mark.parametrize("capability, precision", [((7, 5), "fp16"), ((8, 0), "bf16"), ((9, 0), "bf16")])
def test_transformers_backend_precision_follows_native_bf16(fake_gpu, capability, precision):
    fake_gpu(*capability)
    hw = run_plan_for(cfg(backend="transformers"))
    assert hw.cuda and hw.backend == "transformers" and hw.precision == precision
    flags = grpo_kwargs(cfg(backend="transformers"), hw, 8)
    assert (flags["bf16"], flags["fp16"]) == (precision == "bf16", precision == "fp16")
    assert flags["use_cpu"] is False


@pytest.mark.parametrize("capability", [(7, 5), (8, 0)])
def test_unsloth_backend_sets_neither_flag(fake_gpu, capability):
    """Unsloth loads fp16 below capability 8 and refuses bf16=True then; with both flags False it picks itself."""
    fake_gpu(*capability)
    hw = run_plan_for(cfg(backend="unsloth"), has_unsloth=True)
    assert hw.backend == "unsloth" and hw.precision == "unsloth"
    kwargs = grpo_kwargs(cfg(backend="unsloth"), hw, 8)
    assert kwargs["bf16"] is False and kwargs["fp16"] is False


def test_auto_backend_on_a_gpu_with_unsloth_is_unsloth(fake_gpu):
    fake_gpu(7, 5)
    hw = run_plan_for(cfg(), has_unsloth=True)
    assert (hw.backend, hw.precision, hw.optim, hw.gradient_checkpointing, hw.load_in_4bit) == ("unsloth", "unsloth", "adamw_8bit", True, True)
    assert hw.planner_optimizer == "adamw_8bit" and hw.quantization == "4bit"
    no_unsloth = run_plan_for(cfg(), has_unsloth=False)
    assert no_unsloth.backend == "transformers" and "not installed" in no_unsloth.backend_reason and no_unsloth.precision == "fp16"


def test_fp32_is_refused_on_unsloth_on_a_gpu_and_kept_on_transformers(fake_gpu):
    """With bf16 = fp16 = False Unsloth's trainer switches autocast on itself, so fp32 would not be what runs."""
    fake_gpu(9, 0)
    for backend in ("unsloth", "auto"):
        with pytest.raises(ValueError, match="precision 'fp32' cannot hold on the Unsloth backend.*backend='transformers'"):
            run_plan_for(cfg(backend=backend, precision="fp32"), has_unsloth=True)
    hw = run_plan_for(cfg(backend="transformers", precision="fp32", load_in_4bit=False), has_unsloth=True)
    assert (hw.precision, hw.torch_dtype, hw.quantization) == ("fp32", torch.float32, "32bit")
    assert grpo_kwargs(cfg(backend="transformers", precision="fp32"), hw, 8)["bf16"] is False


def test_load_dtype_on_a_t4_is_fp16(fake_gpu):
    """load_model loads in the run plan's dtype; a T4 emulates bf16, so the plan says fp16 there."""
    fake_gpu(7, 5)
    assert run_plan_for(cfg(backend="transformers")).torch_dtype == torch.float16
    fake_gpu(8, 0)
    assert run_plan_for(cfg(backend="transformers")).torch_dtype == torch.bfloat16


def test_cpu_precision_follows_the_config_and_the_cpu(monkeypatch):
    """On a CPU: fp32; bf16 autocast over fp32 weights when the config asks for it and the CPU has native bf16."""
    import gapo_lite._bootstrap as bootstrap

    monkeypatch.delenv("GAPO_LITE_CPU_PRECISION", raising=False)
    monkeypatch.setattr(bootstrap, "cpu_bf16_native", lambda: False)
    hw = run_plan_for(cfg())
    assert hw.precision == "fp32" and grpo_kwargs(cfg(), hw, 8)["bf16"] is False and "precision fp32" in hw.describe()
    with pytest.raises(ValueError, match="native bf16"):
        run_plan_for(cfg(precision="bf16"))
    monkeypatch.setattr(bootstrap, "cpu_bf16_native", lambda: True)
    monkeypatch.setattr(bootstrap, "measured_bf16_ratio", lambda: 1.34)  # an AMX Xeon's SmolLM2 step: bf16 slower
    assert run_plan_for(cfg()).precision == "fp32"
    hw = run_plan_for(cfg(precision="bf16"))
    kwargs = grpo_kwargs(cfg(precision="bf16"), hw, 8)
    assert hw.precision == "bf16" and kwargs["bf16"] is True and kwargs["use_cpu"] is True  # transformers autocasts on CPU
    assert hw.torch_dtype == torch.float32 and "bf16 autocast" in hw.describe()
    assert run_plan_for(cfg(precision="fp32")).precision == "fp32"
    with pytest.raises(ValueError, match="precision"):
        cfg(precision="fp16")


def test_batch_divisibility_is_one_rule():
    """The config, the run plan, TRL's kwargs and the planner refuse the same splits."""
    from gapo_lite.training.planning import plan_settings

    config = cfg()  # 2 prompts x G=4
    hw = dataclasses.replace(run_plan_for(config), world_size=2)
    assert hw.per_process_batch(config) == 4 and hw.passes(config, 2) == 2
    for call in (lambda: hw.passes(config, 3), lambda: grpo_kwargs(config, hw, 3), lambda: cfg(chunk_size=3)):
        with pytest.raises(ValueError, match="must divide"):
            call()
    three = dataclasses.replace(hw, world_size=3)
    for call in (lambda: three.per_process_batch(config), lambda: plan_settings(config, three)):
        with pytest.raises(ValueError, match="does not split over 3 processes"):
            call()


def test_cpu_plan():
    hw = run_plan_for(cfg(), processes=1)
    assert (hw.cuda, hw.backend, hw.precision, hw.optim, hw.gradient_checkpointing, hw.load_in_4bit) == (
        False, "transformers", "fp32", "adamw_torch", False, False)
    assert hw.planner_optimizer == "adamw" and hw.quantization == "32bit"
    assert run_plan_for(cfg(optim="sgd", gradient_checkpointing=True)).optim == "sgd"


def test_plan_line_says_where_prompts_are_shared(fake_gpu):
    """The transformers backend computes each group's prompt once, with checkpointing on or off; Unsloth does not."""
    for checkpointing in (False, True):
        hw = run_plan_for(cfg(gradient_checkpointing=checkpointing))
        assert hw.share_prompts and "each prompt computed once per group" in hw.describe()
    fake_gpu(8, 0)
    hw = run_plan_for(cfg(), has_unsloth=True)
    assert hw.backend == "unsloth" and not hw.share_prompts and "once per group" not in hw.describe()


def test_several_gpus_in_one_process_are_refused_before_loading(fake_gpu, monkeypatch):
    """Without torchrun / accelerate, transformers' Trainer would wrap the model in DataParallel over every visible GPU."""
    from gapo_lite.training import build_trainer

    fake_gpu(9, 0)
    hw = run_plan_for(cfg(backend="transformers"))
    hw.check_one_gpu_per_process(gpus=1)
    dataclasses.replace(hw, world_size=2).check_one_gpu_per_process(gpus=2)  # one process per GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ValueError, match="2 GPUs are visible to one training process.*DataParallel.*CUDA_VISIBLE_DEVICES=0"):
        build_trainer(cfg(backend="transformers", model="/nonexistent/model"), run_plan=hw)  # before anything loads


def test_world_size_is_read_once_and_checked(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    hw = run_plan_for(cfg())
    assert hw.world_size == 2
    kwargs = grpo_kwargs(cfg(), hw, 2)  # 8 completions over 2 processes: 4 each, 2 per pass
    assert kwargs["gradient_accumulation_steps"] == kwargs["steps_per_generation"] == 2
    monkeypatch.setenv("WORLD_SIZE", "zero")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        run_plan_for(cfg())
    with pytest.raises(ValueError, match="does not split over 3"):
        grpo_kwargs(cfg(), dataclasses.replace(hw, world_size=3), 1)


def test_fast_inference_needs_unsloth_on_cuda(fake_gpu):
    with pytest.raises(ValueError, match="CUDA"):
        run_plan_for(cfg(fast_inference=True))
    fake_gpu(8, 0)
    with pytest.raises(ValueError, match="unsloth"):
        run_plan_for(cfg(fast_inference=True, backend="transformers"))
    assert run_plan_for(cfg(fast_inference=True), has_unsloth=True).fast_inference


def test_planner_is_asked_about_what_runs(fake_gpu):
    """plan_for_config plans the run plan's backend, optimizer and checkpointing (not fixed defaults)."""
    from gapo_lite.training.planning import plan_for_config

    fake_gpu(8, 0)
    config = TrainConfig(model="qwen2.5-7b", memory_budget_gb=40, backend="transformers")
    hw = run_plan_for(config)
    plan = plan_for_config(config, prompt_tokens=90, run_plan=hw)
    assert plan.backend == "transformers" and plan.settings["optimizer"] == "adamw_8bit"
    assert plan.settings["prompt_tokens"] == 90 and plan.settings["gradient_checkpointing"] is True
    fp32_states = plan_for_config(dataclasses.replace(config, optim="adamw_torch"), prompt_tokens=90,
                                  run_plan=dataclasses.replace(hw, optim="adamw_torch"))
    assert fp32_states.terms["lora_params_and_optimizer"] == plan.terms["lora_params_and_optimizer"] * 16 // 10
    unsloth = dataclasses.replace(hw, backend="unsloth", precision="unsloth")
    offloaded, plain = (plan_for_config(dataclasses.replace(config, backend="unsloth", max_seq_length=n), prompt_tokens=90, run_plan=unsloth)
                        for n in (1024, 384))  # Unsloth offloads checkpointed layer inputs only from max_seq_length 512
    assert (offloaded.settings["max_seq_length"], plain.settings["max_seq_length"]) == (1024, 384)
    from gapo_lite.memory import ModelSpec, PlanSettings, estimate_terms

    spec, chunk = ModelSpec.builtin("qwen2.5-7b"), offloaded.chunk_size
    assert (estimate_terms(spec, PlanSettings(**plain.settings), chunk)["activations"]
            > estimate_terms(spec, PlanSettings(**offloaded.settings), chunk)["activations"])


def test_objective_fields_are_all_set_explicitly():
    """Unsloth fills in only unset (None) fields; every objective field is given a value, so there is nothing to fill."""
    kwargs = objective_kwargs(TrainConfig())
    assert set(kwargs) == set(OBJECTIVE_FIELDS)
    assert all(value is not None for value in kwargs.values())
    # the paper's GRPO: symmetric PPO clip, truncated completions kept, no KL
    assert (kwargs["epsilon"], kwargs["epsilon_high"], kwargs["mask_truncated_completions"], kwargs["beta"]) == (0.2, 0.2, False, 0.0)
    assert objective_kwargs(TrainConfig(loss_type="cispo"))["epsilon_high"] == 5.0
    assert objective_kwargs(TrainConfig(epsilon_high=0.28))["epsilon_high"] == 0.28
    with pytest.raises(ValueError, match="dr_grpo"):
        TrainConfig(loss_type="dr_grpo")
    assert TrainConfig(loss_type="dr_grpo", scale_rewards="none").scale_rewards == "none"
    with pytest.raises(ValueError, match="scale_rewards"):
        TrainConfig(scale_rewards="yes")


UNSLOTH_CONFIG_SCRIPT = textwrap.dedent(
    """
    import dataclasses, json, pathlib, sys
    import unsloth  # CPU fallback: TRL stays unpatched, so build Unsloth's patched config class explicitly
    from unsloth.models.rl import _patch_trl_rl_trainers
    _patch_trl_rl_trainers("grpo_trainer")
    cache = pathlib.Path(sys.argv[1])
    sys.path.insert(0, str(cache))
    import UnslothGRPOTrainer as patched
    unsloth_cls = patched.UnslothGRPOConfig
    trl_cls = unsloth_cls.__mro__[1]  # TRL's own GRPOConfig
    from gapo_lite.training import TrainConfig
    from gapo_lite.runplan import run_plan_for
    from gapo_lite.training.trl_config import OBJECTIVE_FIELDS, grpo_kwargs
    out = {}
    for loss in ("dapo", "grpo", "cispo", "bnpo"):
        config = TrainConfig(output_dir=str(cache / "o"), num_generations=4, prompts_per_step=2, loss_type=loss)
        kwargs = grpo_kwargs(config, run_plan_for(config), 4)
        resolved = {}
        for name, cls in (("unsloth", unsloth_cls), ("trl", trl_cls)):
            args = cls(**kwargs)
            resolved[name] = {f: getattr(args, f) for f in OBJECTIVE_FIELDS}
        out[loss] = resolved
    print("RESULT " + json.dumps(out, default=str))
    """
)


@pytest.mark.slow
def test_resolved_objective_is_identical_on_both_backends(tmp_path):
    """Unsloth's patched GRPOConfig (built on CPU from unsloth 2026.10.9) and TRL's resolve to the same objective."""
    pytest.importorskip("unsloth")
    env = {**os.environ, "UNSLOTH_COMPILE_LOCATION": str(tmp_path / "cache"), "GAPO_LITE_BACKEND": "transformers"}
    proc = subprocess.run([sys.executable, "-c", UNSLOTH_CONFIG_SCRIPT, str(tmp_path / "cache")], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=400)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][7:])
    for loss, resolved in result.items():
        assert resolved["unsloth"] == resolved["trl"], loss
        assert resolved["trl"]["loss_type"] == loss
    assert result["dapo"]["unsloth"]["mask_truncated_completions"] is False and result["dapo"]["unsloth"]["epsilon_high"] == 0.2


def test_hardware_plan_rejects_nonsense():
    with pytest.raises(ValueError, match="backend"):
        RunPlan(cuda=False, world_size=1, backend="auto", backend_reason="", precision="fp32", optim="adamw_torch",
                     gradient_checkpointing=False, load_in_4bit=False)
    with pytest.raises(ValueError, match="precision"):
        RunPlan(cuda=False, world_size=1, backend="transformers", backend_reason="", precision="fp8", optim="adamw_torch",
                     gradient_checkpointing=False, load_in_4bit=False)
