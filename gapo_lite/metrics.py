"""Diversity metrics over sampled answers: JSD to uniform, Unique@N, valid rate, entropy, position bias."""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence


def _valid(choices: Sequence[Hashable | None], items: Sequence[Hashable]) -> list[Hashable]:
    allowed = set(items)
    return [c for c in choices if c is not None and c in allowed]


def valid_rate(choices: Sequence[Hashable | None], items: Sequence[Hashable] | None = None) -> float:
    """Share of choices that are valid (not ``None`` and, when ``items`` is given, one of them)."""
    if not choices:
        raise ValueError("valid_rate of an empty sample")
    ok = [c for c in choices if c is not None] if items is None else _valid(choices, items)
    return len(ok) / len(choices)


def choice_distribution(choices: Sequence[Hashable | None], items: Sequence[Hashable]) -> list[float]:
    """Empirical share of each item (in ``items`` order) among the valid choices; all zeros if none is valid."""
    valid = _valid(choices, items)
    counts = Counter(valid)
    return [counts[i] / len(valid) if valid else 0.0 for i in dict.fromkeys(items)]


def jsd_to_uniform(choices: Sequence[Hashable | None], items: Sequence[Hashable]) -> float:
    """Jensen-Shannon divergence (base 2, in [0, 1]) between the valid choices' distribution and uniform over ``items``.

    Invalid choices are ignored (report :func:`valid_rate` beside it); with no valid choice it is ``nan``.
    """
    unique_items = list(dict.fromkeys(items))
    if not unique_items:
        raise ValueError("jsd_to_uniform needs at least one item")
    if not _valid(choices, unique_items):
        return math.nan
    p = choice_distribution(choices, unique_items)
    q = 1.0 / len(unique_items)

    def kl_to_mid(a: float, b: float) -> float:
        return a * math.log2(a / ((a + b) / 2)) if a > 0 else 0.0

    js = 0.5 * sum(kl_to_mid(pi, q) for pi in p) + 0.5 * sum(kl_to_mid(q, pi) for pi in p)
    return min(1.0, max(0.0, js))


def entropy(answers: Sequence[Hashable], base: float = math.e) -> float:
    """Shannon entropy of the empirical distribution of ``answers`` in log ``base`` (0 for an empty list).

    The one entropy of the kit: the hook's group entropy (bits), the lists suite's normalised entropy and
    the accuracy experiment's format entropy all call it.
    """
    n = len(answers)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log(c / n, base) for c in Counter(answers).values())


def normalized_entropy(choices: Sequence[Hashable | None], items: Sequence[Hashable]) -> float:
    """Entropy of the valid choices divided by log(L): 1 for uniform over ``items``, 0 for one answer."""
    unique_items = list(dict.fromkeys(items))
    if len(unique_items) < 2:
        raise ValueError("normalized_entropy needs at least two items")
    return entropy(_valid(choices, unique_items), base=len(unique_items))


def unique_at_n(answers: Sequence[Hashable | None], n: int | None = None) -> int:
    """Number of distinct non-``None`` answers among the first ``n`` (all when ``n`` is None)."""
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    head = answers if n is None else answers[:n]
    return len({a for a in head if a is not None})


def position_bias(choices: Sequence[Hashable | None], shown: Sequence[Sequence[Hashable]]) -> list[float]:
    """Share of valid choices at each list position, given the order each sample's list was shown in.

    ``shown[k]`` is the list shown for ``choices[k]``. With the same items shown in shuffled orders an
    unbiased sampler gives about 1/L at every position; a model that always answers the first item gives
    ``[1, 0, ...]``. The result has one entry per position of the longest list.
    """
    if len(choices) != len(shown):
        raise ValueError(f"got {len(choices)} choices but {len(shown)} shown lists")
    width = max((len(s) for s in shown), default=0)
    counts = [0] * width
    total = 0
    for choice, order in zip(choices, shown):
        if choice is None or choice not in order:
            continue
        counts[list(order).index(choice)] += 1
        total += 1
    return [c / total if total else 0.0 for c in counts]
