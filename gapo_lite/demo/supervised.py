"""The one supervised training loop of the miniature experiments: warm-up-cosine AdamW over ``steps``
batches, each batch's loss given by a callback; returns the loss per step.

:func:`supervised_pretrain` (teacher-forced completions of drawn chat prompts) and the demo's
``gapo_lite.demo.pretrain.pretrain_collapsed`` (soft targets over a list's items) both run on it.
"""
from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

Messages = list[dict[str, str]]
Draw = Callable[[random.Random], tuple[Messages, str]]
BatchLoss = Callable[[random.Random], Any]  # rng -> a scalar torch loss for one batch


@dataclass(frozen=True)
class SupervisedMiniature:
    """The settings every supervised-pretrained miniature (open-ended, accuracy) shares: the tiny model, the
    supervised pretraining into its collapsed start, G completions per prompt in RL, the measurement and how
    it runs. An experiment's settings subclass this, add its own fields and restate the defaults it changes."""

    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 8
    num_kv_heads: int = 8
    pretrain_steps: int = 300
    pretrain_batch: int = 64
    pretrain_lr: float = 3e-3
    rl_steps: int = 400
    prompts_per_step: int = 8
    num_generations: int = 16
    rl_lr: float = 3e-4
    rl_temperature: float = 1.0
    baseline: bool = True  # also the baseline RL run from the same start
    eval_samples: int = 100
    eval_temperatures: tuple[float, ...] = (0.7, 1.0)
    threads: int = 1
    seed: int = 0

    QUICK = {"hidden_size": 32, "num_heads": 4, "num_kv_heads": 4, "pretrain_steps": 20, "pretrain_batch": 16, "rl_steps": 2,
             "prompts_per_step": 2, "num_generations": 4, "eval_samples": 8, "eval_temperatures": (1.0,)}

    @classmethod
    def quick(cls):
        """A seconds-long variant for tests (figures meaningless): ``QUICK`` of the class and its bases."""
        return replace(cls(), **{k: v for klass in reversed(cls.__mro__) for k, v in vars(klass).get("QUICK", {}).items()})


def adamw_warmup_cosine(model: Any, learning_rate: float, steps: int):
    """AdamW over the trainable parameters; lr warms up over 5% of ``steps``, then a half cosine to 10%."""
    import torch

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=learning_rate, weight_decay=0.0)
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda i: min(1.0, (i + 1) / warmup) * (0.55 + 0.45 * math.cos(math.pi * min(1.0, i / steps)))
    )
    return optimizer, schedule


def train_steps(
    model: Any,
    batch_loss: BatchLoss,
    *,
    steps: int,
    learning_rate: float,
    seed: int = 0,
    desc: str = "pretraining",
    progress: bool = True,
    bar: Any = None,
) -> list[float]:
    """``steps`` optimizer steps on ``batch_loss(rng)``; the learning rate warms up over 5% of the steps, then
    decays on a half cosine to 10% of ``learning_rate``. Seeds python and torch; leaves the model in eval mode.
    The steps advance ``bar`` (a tqdm bar) when given, so that phases of one stage share a bar; else their own."""
    import torch
    from tqdm.auto import tqdm

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    rng = random.Random(seed)
    torch.manual_seed(seed)
    optimizer, schedule = adamw_warmup_cosine(model, learning_rate, steps)
    model.train()
    losses: list[float] = []
    with contextlib.nullcontext(bar) if bar is not None else tqdm(total=steps, desc=desc, unit="step", disable=not progress) as shown:
        for _ in range(steps):
            loss = batch_loss(rng)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(float(loss.detach()))
            shown.update(1)
            if len(losses) % 50 == 0:
                shown.set_postfix_str(f"loss {sum(losses[-50:]) / 50:.3f}", refresh=False)
    model.eval()
    return losses


def completion_batch(tokenizer: Any, examples: list[tuple[Messages, str]]):
    """Right-padded ``(input_ids, attention_mask, labels)`` for (prompt, completion) pairs: the labels are the
    completion's tokens and the end-of-turn token after them (the prompt is not trained)."""
    import torch

    from gapo_lite.sampling import ensure_pad_token, render_prompt

    ensure_pad_token(tokenizer)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    prompts = tokenizer([render_prompt(tokenizer, m) for m, _ in examples], add_special_tokens=False)["input_ids"]
    answers = tokenizer([c for _, c in examples], add_special_tokens=False)["input_ids"]
    rows = [(p, a + [eos]) for p, a in zip(prompts, answers)]
    width = max(len(p) + len(a) for p, a in rows)
    ids = torch.full((len(rows), width), pad)
    labels = torch.full((len(rows), width), -100)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (p, a) in enumerate(rows):  # right padding: positions start at 0 for every row
        ids[i, : len(p) + len(a)] = torch.tensor(p + a)
        labels[i, len(p) : len(p) + len(a)] = torch.tensor(a)
        mask[i, : len(p) + len(a)] = 1
    return ids, mask, labels


def supervised_pretrain(
    model: Any,
    tokenizer: Any,
    draw: Draw,
    *,
    steps: int,
    batch_size: int = 64,
    learning_rate: float = 3e-3,
    seed: int = 0,
    progress: bool = True,
    desc: str = "pretraining",
) -> list[float]:
    """Teacher-forced training on ``draw(rng) -> (chat messages, completion)`` examples; returns the loss per step.

    The loss is the cross-entropy of the completion's tokens and the end-of-turn token after them (the prompt
    is not trained). Completions drawn from a skewed distribution make a skewed (collapsed) model.
    """
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got steps={steps}, batch_size={batch_size}")

    def batch_loss(rng: random.Random):
        ids, mask, labels = completion_batch(tokenizer, [draw(rng) for _ in range(batch_size)])
        return model(input_ids=ids, attention_mask=mask, labels=labels).loss

    return train_steps(model, batch_loss, steps=steps, learning_rate=learning_rate, seed=seed, desc=desc, progress=progress)
