"""Temperature sweep: diversity (mean Unique@N on the open-ended prompts) against coherence under the base model.

Coherence is the mean per-token log-likelihood of the samples under the BASE model (the evaluated model
without adapter): for each sample, the mean log-probability of its completion tokens given the prompt, then
the mean over samples. Higher (closer to 0) means the base model finds the text more likely.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gapo_lite.eval.settings import SampleSettings

DEFAULT_TEMPERATURES: tuple[float, ...] = (0.5, 0.7, 0.9, 1.1, 1.3)


def token_logprobs(model, tokenizer, prompts: Sequence[Any], completions: Sequence[str], *, batch_size: int = 16) -> list[float | None]:
    """Mean log-probability per completion token of each ``completions[k]`` after ``prompts[k]``; ``None`` if it has no token.

    Prompt and completion are tokenized separately (no special tokens added) and concatenated, so the score
    is of the text as another model would see it, whichever model wrote it.
    """
    import torch

    from gapo_lite.sampling import render_prompt

    if len(prompts) != len(completions):
        raise ValueError(f"got {len(prompts)} prompts but {len(completions)} completions")
    device = next(model.parameters()).device
    rows: list[tuple[list[int], int]] = []
    for prompt, completion in zip(prompts, completions):
        p_ids = tokenizer(render_prompt(tokenizer, prompt), add_special_tokens=False)["input_ids"]
        c_ids = tokenizer(completion, add_special_tokens=False)["input_ids"] if completion.strip() else []
        rows.append((p_ids + c_ids, len(c_ids)))
    scores: list[float | None] = [None] * len(rows)
    order = [k for k, (_, n_c) in enumerate(rows) if n_c > 0]
    was_training = model.training
    model.eval()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    try:
        with torch.no_grad():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                width = max(len(rows[k][0]) for k in chunk)
                ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for r, k in enumerate(chunk):  # right padding: positions stay 0..len-1
                    seq = rows[k][0]
                    ids[r, : len(seq)] = torch.tensor(seq)
                    mask[r, : len(seq)] = 1
                logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
                for r, k in enumerate(chunk):
                    seq, n_c = rows[k]
                    # logits at position t predict token t + 1: the completion's tokens are predicted from
                    # positions len(seq) - n_c - 1 .. len(seq) - 2.
                    window = logits[r, len(seq) - n_c - 1 : len(seq) - 1].float()
                    targets = torch.tensor(seq[len(seq) - n_c :], device=window.device)
                    logp = torch.log_softmax(window, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                    scores[k] = float(logp.mean())
    finally:
        if was_training:
            model.train()
    return scores


def coherence(model, tokenizer, prompts: Sequence[Any], completions: Sequence[Sequence[str]], *, batch_size: int = 16) -> float | None:
    """Mean over samples of their mean per-token log-likelihood; ``completions[i]`` are the samples for ``prompts[i]``."""
    flat_prompts = [p for p, texts in zip(prompts, completions) for _ in texts]
    flat = [t for texts in completions for t in texts]
    scores = [s for s in token_logprobs(model, tokenizer, flat_prompts, flat, batch_size=batch_size) if s is not None]
    return sum(scores) / len(scores) if scores else None


def sample_sweep(model, tokenizer, settings: SampleSettings, temperatures: Sequence[float], *, fold_plurals: bool = False) -> list[dict[str, Any]]:
    """For each temperature: open-ended samples and their mean Unique@N (coherence is filled in later)."""
    from dataclasses import replace

    from gapo_lite.eval.open_suite import run_open

    if not temperatures:
        raise ValueError("the temperature sweep needs at least one temperature")
    points = []
    for k, temperature in enumerate(temperatures):
        result = run_open(model, tokenizer, replace(settings, temperature=float(temperature)), fold_plurals=fold_plurals, seed_offset=404 + k)
        points.append({
            "temperature": float(temperature),
            "diversity": result["mean_unique"],
            "valid_rate": result["mean_valid_rate"],
            "completions": result["completions"],
            "prompts": [[{"role": "user", "content": p["prompt"]}] for p in result["prompts"].values()],
        })
    return points


def score_sweep(base_model, tokenizer, points: list[dict[str, Any]], *, batch_size: int = 16) -> list[dict[str, Any]]:
    """Add ``coherence`` (base-model mean per-token log-likelihood) to each point; drop the raw texts."""
    out = []
    for point in points:
        value = coherence(base_model, tokenizer, point["prompts"], point["completions"], batch_size=batch_size)
        out.append({k: v for k, v in point.items() if k not in ("completions", "prompts")} | {"coherence": value})
    return out


def parse_temperatures(text: str) -> tuple[float, ...]:
    """"0.5,0.7,0.9" -> (0.5, 0.7, 0.9), rejecting empty, non-numeric or negative entries."""
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError as err:
            raise ValueError(f"temperature {part!r} is not a number") from err
        if value < 0:
            raise ValueError(f"temperature must be >= 0, got {value}")
        values.append(value)
    if not values:
        raise ValueError(f"no temperature in {text!r}")
    return tuple(values)
