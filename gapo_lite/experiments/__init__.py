"""Miniature CPU experiments beyond list selection (open-ended naming, accuracy with diversity).

Each experiment collapses a tiny model with a short supervised pretraining (:func:`supervised_pretrain`),
trains it with a group scorer through :func:`gapo_lite.training.train`, and measures it before and after.
Run one with ``python -m gapo_lite.experiments.open_ended --out runs/exp_open`` (or ``.accuracy``).
"""
from __future__ import annotations

import argparse
import contextlib
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gapo_lite.overrides import apply_overrides

Messages = list[dict[str, str]]
Draw = Callable[[random.Random], tuple[Messages, str]]
__all__ = ["add_common_arguments", "apply_overrides", "supervised_pretrain", "table", "torch_threads"]


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
    is not trained). Completions drawn from a skewed distribution make a skewed (collapsed) model. The
    learning rate warms up over 5% of the steps, then decays on a half cosine to 10% of ``learning_rate``.
    """
    import torch
    from tqdm.auto import tqdm

    from gapo_lite.sampling import render_prompt

    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got steps={steps}, batch_size={batch_size}")
    from gapo_lite.pretrain import adamw_warmup_cosine

    rng = random.Random(seed)
    torch.manual_seed(seed)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    optimizer, schedule = adamw_warmup_cosine(model, learning_rate, steps)
    model.train()
    losses: list[float] = []
    for _ in tqdm(range(steps), desc=desc, disable=not progress):
        examples = [draw(rng) for _ in range(batch_size)]
        prompts = tokenizer([render_prompt(tokenizer, m) for m, _ in examples], add_special_tokens=False)["input_ids"]
        answers = tokenizer([c for _, c in examples], add_special_tokens=False)["input_ids"]
        rows = [(p, a + [eos]) for p, a in zip(prompts, answers)]
        width = max(len(p) + len(a) for p, a in rows)
        ids = torch.full((batch_size, width), pad)
        labels = torch.full((batch_size, width), -100)
        mask = torch.zeros((batch_size, width), dtype=torch.long)
        for i, (p, a) in enumerate(rows):  # right padding: positions start at 0 for every row
            ids[i, : len(p) + len(a)] = torch.tensor(p + a)
            labels[i, len(p) : len(p) + len(a)] = torch.tensor(a)
            mask[i, : len(p) + len(a)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run with ``n`` torch threads, then restore the previous count.

    The experiments use 1: their matrices are tiny, so a second thread mostly waits on the first, and on a
    shared 2-core machine 2 threads measured about 7x slower per step than 1 (thread hand-offs stall
    whenever another process holds a core).
    """
    import torch

    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def add_common_arguments(parser: argparse.ArgumentParser, default_out: str) -> None:
    parser.add_argument("--out", default=default_out, help=f"output folder (default {default_out})")
    parser.add_argument("--quick", action="store_true", help="seconds-long smoke version (tiny sizes; figures meaningless)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="override a setting")


def table(rows: Sequence[tuple[str, Sequence[float]]], columns: Sequence[str], *, width: int = 22, label_width: int = 40) -> str:
    """A plain-text table: one label and one formatted value per column on each row."""
    header = f"{'metric':{label_width}s}" + "".join(f"{c:>{width}s}" for c in columns)
    lines = [header, "-" * len(header)]
    for label, values in rows:
        lines.append(f"{label:{label_width}s}" + "".join(f"{v:{width}.3f}" for v in values))
    return "\n".join(lines)
