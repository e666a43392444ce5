"""Guard suite: the 90 ordinary instructions of :mod:`gapo_lite.data.guard_set`, answered greedily. What is graded
is capability, not the answer-only format: "The capital of France is Paris." and "27 + 14 = 41" are read as
their last statement ("Paris", "41"). A reply is right when that answer is the reference and the reply ended
its turn (``accuracy``); ``lenient_accuracy`` drops the second condition. A drop here after training means
diversity was bought with capability.

>>> guard_answer("The capital of France is Paris. It is lovely."), guard_answer("27 + 14 = 41"), guard_answer("The answer is 'B'")
('Paris', '41', "'B'")
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from gapo_lite.answers.canonical import canonicalize
from gapo_lite.data.guard_set import GuardItem, guard_items
from gapo_lite.eval.settings import SampleSettings, sample

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_STATEMENT = re.compile(r"\s(?:is|are|was|equals)\s|=|:")


def guard_answer(reply: str) -> str | None:
    """The answer a reply states: its first sentence with content, after its last "is" / "=" / ":" if any."""
    for line in reply.splitlines():
        sentence = _SENTENCE_END.split(line.strip(), maxsplit=1)[0]
        if any(ch.isalnum() for ch in sentence):
            return _STATEMENT.split(sentence)[-1].strip() or None
    return None


def is_right(reply: str | None, answer: str) -> bool:
    """``reply`` (an extracted answer, or None) says ``answer``: equal once canonical (case, accents, punctuation)."""
    return reply is not None and canonicalize(reply) == canonicalize(answer)


def score_guard(items: list[GuardItem], replies: list[str], ended: list[bool]) -> dict[str, Any]:
    """Accuracy of ``replies`` to ``items``: ``accuracy`` (right and ended), ``lenient_accuracy`` (right), per
    kind, with the binomial standard error of ``accuracy`` and how the replies look."""
    if not items or len(items) != len(replies) or len(replies) != len(ended):
        raise ValueError(f"score_guard needs one reply and one end flag per item, got {len(items)} items, {len(replies)} replies, {len(ended)} flags")
    lenient = [is_right(guard_answer(r), item.answer) for item, r in zip(items, replies)]
    clean = [e and right for e, right in zip(ended, lenient)]
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for item, right in zip(items, clean):
        by_kind[item.kind].append(right)
    n = len(items)
    accuracy = sum(clean) / n
    words = [len(r.split()) for r in replies]
    mean_words = sum(words) / n
    return {
        "n": n,
        "accuracy": accuracy,
        "accuracy_se": math.sqrt(accuracy * (1 - accuracy) / n),
        "lenient_accuracy": sum(lenient) / n,
        "by_kind": {kind: sum(v) / len(v) for kind, v in by_kind.items()},
        "end_rate": sum(ended) / n,
        "mean_words": mean_words,
        "sd_words": math.sqrt(sum((w - mean_words) ** 2 for w in words) / n),
        "samples": [{"kind": i.kind, "prompt": i.prompt, "answer": i.answer, "reply": r, "ended": e, "right": c}
                    for i, r, e, c in zip(items, replies, ended, clean)],
    }


def run_guard(model: Any, tokenizer: Any, *, max_new_tokens: int = 16, batch_size: int = 64, precision: str = "auto", progress: bool = True) -> dict[str, Any]:
    """Greedy replies to the guard instructions (one each), scored by :func:`score_guard`."""
    items = guard_items()
    settings = SampleSettings(n=1, temperature=0.0, max_new_tokens=max_new_tokens, batch_size=batch_size, progress=progress, precision=precision)
    replies, ended = sample(model, tokenizer, [[{"role": "user", "content": i.prompt}] for i in items], settings, return_ended=True)
    return score_guard(items, [r[0] for r in replies], [e[0] for e in ended])
