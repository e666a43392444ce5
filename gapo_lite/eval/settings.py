"""Sampling settings shared by the suites."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SampleSettings:
    """How one suite samples: ``n`` completions per prompt at ``temperature``, seeded."""

    n: int
    temperature: float = 0.7
    max_new_tokens: int = 32
    batch_size: int = 64
    seed: int = 0
    progress: bool = True
    precision: str = "auto"  # CPU only: "auto" (measured, _bootstrap.cpu_precision), "bf16" (autocast, native bf16 only) or "fp32"

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n (samples per prompt) must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")


def sample(model, tokenizer, prompts, settings: SampleSettings, *, n: int | None = None, seed_offset: int = 0, return_ended: bool = False):
    """``gapo_lite.sampling.sample_completions`` with ``settings`` (``n`` overrides ``settings.n``); with
    ``return_ended``, ``(texts, ended)``."""
    from gapo_lite.sampling import sample_completions

    return sample_completions(
        model,
        tokenizer,
        list(prompts),
        n=settings.n if n is None else n,
        temperature=settings.temperature,
        max_new_tokens=settings.max_new_tokens,
        batch_size=settings.batch_size,
        seed=settings.seed + seed_offset,
        progress=settings.progress,
        precision=settings.precision,
        return_ended=return_ended,
    )
