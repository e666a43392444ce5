"""A plan that does not fit: ``gapo-lite plan`` says what would, offline, and ``gapo-lite train`` on CUDA stops
with that table before the first step (CUDA faked: the run plan says CUDA, the model loads on the CPU)."""
from __future__ import annotations

import json

from gapo_lite.memory import GIB


def test_llama_8b_at_24_gib_offline_says_what_fits(capsys):
    from gapo_lite.cli import main

    rc = main(["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--budget-gb", "24"])
    out, err = capsys.readouterr()
    assert rc == 1 and "memory plan: Llama-3.1-8B" in out and "fits: NO" in out and "does not fit" in err
    assert "what would fit" in out and "prompts_per_step=" in out and "fast_inference=True" in out and "a budget of at least" in out
    assert main(["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--budget-gb", "24", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    ways = {s["change"]: s for s in data["suggestions"]}
    assert set(ways) == {"prompts_per_step", "max_completion_length", "fast_inference", "memory_budget_gb"}
    fewer = ways["prompts_per_step"]
    assert fewer["fits"] and fewer["value"] < 8 and fewer["estimated_peak_bytes"] <= 24 * GIB
    # the largest: one more prompt per step does not fit at the same G
    assert main(["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--budget-gb", "24", "--prompts-per-step", str(fewer["value"] + 1)]) == 1
    assert main(["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--budget-gb", "24", "--prompts-per-step", str(fewer["value"])]) == 0
    capsys.readouterr()
    assert ways["memory_budget_gb"]["value"] * GIB >= data["estimated_peak_bytes"]


def test_train_on_cuda_stops_before_training_with_the_table(tiny_model_path, tmp_path, monkeypatch, capsys):
    import torch

    import gapo_lite.training.trainer as trainer
    from gapo_lite.cli import main
    from gapo_lite.models import load_model
    from gapo_lite.runplan import RunPlan

    gpu = RunPlan(cuda=True, world_size=1, backend="transformers", backend_reason="faked", precision="fp32", optim="adamw_torch",
                  gradient_checkpointing=False, load_in_4bit=False)
    import gapo_lite.runplan

    monkeypatch.setattr(gapo_lite.runplan, "run_plan_for", lambda config: gpu)  # what gapo-lite train resolves before the recipe builds
    monkeypatch.setattr(trainer, "run_plan_for", lambda config: gpu)
    monkeypatch.setattr(trainer, "load_for_config", lambda config, hw: load_model(config.model, backend="transformers", lora=config.lora_settings()))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a, **k: 0)
    out_dir = tmp_path / "run"
    recipe = tmp_path / "tight.py"
    recipe.write_text(
        "from gapo_lite.training import TrainConfig\n"
        f"config = TrainConfig(model={str(tiny_model_path)!r}, num_generations=4, prompts_per_step=2, max_steps=1, lora_r=4, "
        f"memory_budget_gb=0.5, output_dir={str(out_dir)!r})\n"
    )
    assert main(["train", "--recipe", str(recipe)]) == 1
    out, err = capsys.readouterr()
    assert "fits: NO" in out and "what would fit" in out and "a budget of at least" in out
    assert "gapo-lite train: does not fit" in err
    assert not (out_dir / "metrics.jsonl").exists() and not list(out_dir.glob("checkpoint-*"))
