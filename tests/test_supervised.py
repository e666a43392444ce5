"""``gapo_lite.demo.supervised``: the experiments' one pretraining loop and its teacher-forced batches."""
from __future__ import annotations

import random

import pytest
import torch

from gapo_lite.demo.supervised import completion_batch, supervised_pretrain, train_steps
from gapo_lite.models import load_model
from gapo_lite.sampling import render_prompt

MESSAGES = [{"role": "user", "content": "Pick one item from this list at random: Cat, Dog. Answer with the item only."}]


def test_completion_batch_trains_only_the_completion_and_end_of_turn(small_vocab_model):
    _, tok = load_model(small_vocab_model[0], lora=None)
    ids, mask, labels = completion_batch(tok, [(MESSAGES, "Cat"), (MESSAGES, "Owl Dog")])
    prompt = tok(render_prompt(tok, MESSAGES), add_special_tokens=False)["input_ids"]
    cat, owl_dog = tok("Cat", add_special_tokens=False)["input_ids"], tok("Owl Dog", add_special_tokens=False)["input_ids"]
    p = len(prompt)
    assert ids.shape == mask.shape == labels.shape == (2, p + len(owl_dog) + 1)
    assert ids[0, : p + len(cat) + 1].tolist() == prompt + cat + [tok.eos_token_id]
    assert labels[0].tolist() == [-100] * p + cat + [tok.eos_token_id] + [-100] * (len(owl_dog) - len(cat))
    assert labels[1].tolist() == [-100] * p + owl_dog + [tok.eos_token_id]
    assert mask[0].tolist() == [1] * (p + len(cat) + 1) + [0] * (len(owl_dog) - len(cat))


def test_train_steps_schedule_and_losses(monkeypatch):
    """A one-parameter model: the loss it reports is the callback's, and the learning rate follows warm-up then cosine."""
    weight = torch.nn.Parameter(torch.tensor(3.0))
    model = torch.nn.Module()
    model.w = weight
    seen_lr: list[float] = []

    def batch_loss(rng: random.Random):
        return (model.w - 1.0) ** 2

    import gapo_lite.demo.supervised as supervised

    original = supervised.adamw_warmup_cosine

    def recording(m, lr, steps):
        optimizer, schedule = original(m, lr, steps)
        step = optimizer.step

        def record(*a, **k):
            seen_lr.append(optimizer.param_groups[0]["lr"])
            return step(*a, **k)

        optimizer.step = record
        return optimizer, schedule

    monkeypatch.setattr(supervised, "adamw_warmup_cosine", recording)
    losses = train_steps(model, batch_loss, steps=40, learning_rate=0.1, seed=0, progress=False)
    assert len(losses) == 40 and losses[0] == pytest.approx(4.0) and losses[-1] < losses[0]
    assert seen_lr[0] == pytest.approx(0.05) and seen_lr[1] == pytest.approx(0.1 * (0.55 + 0.45 * 0.99692), rel=1e-4)  # 40 // 20 = 2 warm-up steps
    assert seen_lr[-1] == pytest.approx(0.1 * (0.55 + 0.45 * -0.99692), rel=1e-4)  # cos(pi * 39/40): near the 10% floor
    assert not model.training


def test_supervised_pretrain_learns_and_repeats(small_vocab_model):
    def draw(rng: random.Random):
        return MESSAGES, rng.choice(["Cat", "Dog"])

    runs = []
    for _ in range(2):
        model, tok = load_model(small_vocab_model[0], lora=None)
        runs.append(supervised_pretrain(model, tok, draw, steps=15, batch_size=8, learning_rate=1e-2, seed=3, progress=False))
    assert runs[0] == runs[1]  # same seed, same losses
    assert sum(runs[0][-3:]) < sum(runs[0][:3])  # it learns
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        supervised_pretrain(model, tok, draw, steps=1, batch_size=0)
