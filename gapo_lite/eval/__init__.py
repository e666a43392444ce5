"""Evaluation the way the GAPO paper does it: lists (JSD), open-ended (Unique@N), creative (embedding distance,
Self-BLEU), benchmarks (lm-evaluation-harness) and a temperature sweep, with a side-by-side report.

Importing this package is cheap; torch, transformers and lm-eval load only when something runs.
"""
from __future__ import annotations

from typing import Any

__all__ = ["evaluate"]


def evaluate(model: str, adapter: str | None = None, compare: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """See :func:`gapo_lite.eval.runner.evaluate`."""
    from gapo_lite.eval.runner import evaluate as _evaluate

    return _evaluate(model, adapter, compare, **kwargs)
