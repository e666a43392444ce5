"""The pad token differs from the end-of-sequence token wherever the vocabulary allows (Unsloth's loss drops every
pad-id token), and on TRL's path which token pads changes nothing: padded positions are masked."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from test_chunking import GradCapture

from gapo_lite import sampling
from gapo_lite.models import load_tokenizer

LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]


def save_word_tokenizer(folder, specials, words, eos, unk=None):
    """A word-level tokenizer over ``specials`` and ``words`` with no pad token, saved as PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(dict.fromkeys([*specials, *([unk] if unk else []), *words]))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk or eos))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=eos, unk_token=unk,
                                        additional_special_tokens=[t for t in specials if t not in (eos, unk)])
    assert tokenizer.pad_token is None
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("extra, pad", [
    (["<|reserved_special_token_0|>", "<|reserved_special_token_1|>"], "<|reserved_special_token_0|>"),  # Llama 3.0
    (["<|finetune_right_pad_id|>", "<|reserved_special_token_0|>"], "<|finetune_right_pad_id|>"),  # Llama 3.1
])
def test_llama3_style_folder_without_pad_gets_a_pad_that_is_not_eos(tmp_path, extra, pad):
    folder = save_word_tokenizer(tmp_path / "tok", [*LLAMA3_SPECIALS, *extra], ["pad", "Owl", "Fox"], eos="<|eot_id|>")
    tokenizer = load_tokenizer(folder)
    assert tokenizer.pad_token == pad and tokenizer.pad_token_id != tokenizer.eos_token_id


def test_an_ordinary_word_never_pads_and_the_unknown_token_does(tmp_path):
    folder = save_word_tokenizer(tmp_path / "tok", ["<|im_end|>"], ["pad", "padding", "Owl"], eos="<|im_end|>", unk="<unk>")
    assert load_tokenizer(folder).pad_token == "<unk>"


def test_no_token_but_eos_pads_with_eos_and_the_unsloth_loader_refuses(tmp_path, monkeypatch):
    import types

    from gapo_lite.models import LoraSettings, _load_unsloth
    from gapo_lite.runplan import RunPlan

    folder = save_word_tokenizer(tmp_path / "tok", ["<|im_end|>"], ["Owl", "Fox"], eos="<|im_end|>")
    tokenizer = load_tokenizer(folder)
    assert tokenizer.pad_token == tokenizer.eos_token  # harmless on TRL's path (see the tests below)

    class FastLanguageModel:  # stands in for Unsloth's loader (no GPU here)
        @staticmethod
        def from_pretrained(**kwargs):
            return torch.nn.Module(), None

    monkeypatch.setitem(sys.modules, "unsloth", types.SimpleNamespace(FastLanguageModel=FastLanguageModel))
    plan = RunPlan(cuda=True, world_size=1, backend="unsloth", backend_reason="test", precision="unsloth", optim="adamw_8bit",
                   gradient_checkpointing=True, load_in_4bit=True)
    with pytest.raises(ValueError, match="no token to pad with.*'<\\|im_end\\|>'.*Unsloth's GRPO loss drops every pad-id token"):
        _load_unsloth(str(folder), plan, 256, LoraSettings(), 0.5, 0)


UNSLOTH_MASK_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import unsloth  # unsloth_zoo needs it imported first
    from unsloth_zoo.rl_replacements import create_completion_attention_mask
    import torch
    from gapo_lite.models import load_tokenizer
    tok = load_tokenizer(sys.argv[1])
    owl, fox, eot = tok.convert_tokens_to_ids(["Owl", "Fox", "<|eot_id|>"])
    def mask(pad):  # two completions, the second one token shorter and padded
        ids = torch.tensor([[owl, fox, eot], [owl, eot, pad]])
        return create_completion_attention_mask(ids, torch.tensor([0, 0]), 0, pad).int().tolist()
    print("RESULT " + json.dumps({"ours": mask(tok.pad_token_id), "pad_is_eos": mask(eot)}))
    """
)


def test_the_end_of_turn_token_stays_in_unsloths_loss(tmp_path):
    """unsloth_zoo's own completion mask (GRPO loss), in a fresh process: with our pad the closing <|eot_id|> is kept."""
    pytest.importorskip("unsloth")
    folder = save_word_tokenizer(tmp_path / "tok", [*LLAMA3_SPECIALS, "<|reserved_special_token_0|>"], ["Owl", "Fox"], eos="<|eot_id|>")
    repo = str(Path(__file__).resolve().parents[1])  # this checkout's gapo_lite, whatever is installed
    env = {**os.environ, "UNSLOTH_COMPILE_LOCATION": str(tmp_path / "cache"), "GAPO_LITE_BACKEND": "transformers",
           "PYTHONPATH": os.pathsep.join([repo, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", UNSLOTH_MASK_SCRIPT, str(folder)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][7:])
    assert result["ours"] == [[1, 1, 1], [1, 1, 0]]
    assert result["pad_is_eos"] == [[1, 1, 0], [1, 0, 0]]  # what pad = eos did: each completion's last token out of the loss


@pytest.fixture
def pad_is_eos(monkeypatch):
    """Switch the kit back to pad = eos (SmolLM2's converted tokenizer, and the rule before): no candidate pads."""

    candidates = sampling.pad_candidates

    def switch(on: bool) -> None:
        monkeypatch.setattr(sampling, "pad_candidates", (lambda tokenizer: []) if on else candidates)

    return switch


def with_pad(tokenizer, eos_pads: bool, switch):
    """The tokenizer as SmolLM2's arrives (pad = eos), after ensure_pad_token with the old or the new rule."""
    switch(eos_pads)
    tokenizer.pad_token = tokenizer.eos_token
    sampling.ensure_pad_token(tokenizer)
    assert (tokenizer.pad_token == tokenizer.eos_token) is eos_pads
    return tokenizer


def test_sampled_completions_are_the_same_with_either_pad(small_vocab_model, pad_is_eos):
    from gapo_lite.models import LoraSettings, load_model

    path, dataset = small_vocab_model
    model, tok = load_model(path, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    prompts = [row["prompt"] for row in dataset.select(range(3))]
    runs = []
    for eos_pads in (True, False):
        with_pad(tok, eos_pads, pad_is_eos)
        runs.append(sampling.sample_completions(model, tok, prompts, n=16, temperature=1.0, max_new_tokens=6, seed=0, progress=False,
                                                batch_size=8))
    assert runs[0] == runs[1]
    assert len({len(text.split()) for group in runs[0] for text in group}) > 1  # some stopped early: there was padding


def test_a_gapo_step_is_the_same_with_either_pad(small_vocab_model, pad_is_eos, tmp_path):
    """Completions, their mask, advantages and the update of one GAPO step on TRL's path, pad = eos against a distinct pad."""
    from gapo_lite.models import LoraSettings, load_model
    from gapo_lite.training import TrainConfig, build_trainer

    path, dataset = small_vocab_model
    runs = []
    for eos_pads in (True, False):
        model, tok = load_model(path, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
        torch.manual_seed(0)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if "lora_B" in name:
                    param.normal_(0, 0.05)
        with_pad(tok, eos_pads, pad_is_eos)
        config = TrainConfig(model=str(path), num_generations=8, prompts_per_step=2, max_completion_length=6, max_steps=1,
                             learning_rate=1e-4, max_grad_norm=0.0, save_steps=100, output_dir=str(tmp_path / f"run{eos_pads}"))
        capture = GradCapture()
        trainer = build_trainer(config, model=model, tokenizer=tok, train_dataset=dataset, callbacks=[capture])
        assert trainer.processing_class.pad_token_id == tok.pad_token_id
        batches = []
        generate = trainer.generate_and_score
        trainer.generate_and_score = lambda inputs: batches.append(generate(inputs)) or batches[-1]
        trainer.train()
        runs.append((batches[0], capture.grads, tok.pad_token_id))
    (eos_batch, eos_grads, eos_pad), (pad_batch, pad_grads, distinct_pad) = runs
    assert eos_pad != distinct_pad
    mask = eos_batch["completion_mask"].bool()
    assert torch.equal(mask, pad_batch["completion_mask"].bool()) and not mask.all()  # some completions ended early
    assert torch.equal(eos_batch["completion_ids"][mask], pad_batch["completion_ids"][mask])
    assert (pad_batch["completion_ids"][~mask] == distinct_pad).all()  # padded with the distinct pad...
    assert torch.equal(eos_batch["advantages"], pad_batch["advantages"])
    assert set(eos_grads) == set(pad_grads) and all(torch.equal(eos_grads[n], pad_grads[n]) for n in eos_grads)  # ...and masked
