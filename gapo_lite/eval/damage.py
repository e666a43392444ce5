"""Did training damage the model? The form of its replies and its guard accuracy, before against after.

Diversity suites read what a model answers; this reads whether it still answers well at all: per suite the
share of replies that end their turn, the mean reply length in words and the valid rate, and the guard
suite's accuracy. A figure is flagged when the trained model is worse than the reference by more than the
noise: by more than ``SE_MULTIPLE`` standard errors of the difference (binomial for a rate, from the
replies' spread for a length) AND by more than a floor (``RATE_FLOOR`` for a rate, ``WORDS_FLOOR`` of the
reference's length), so that a large sample does not flag a trivial change.

>>> before = {"lists": {"end_rate": 0.95, "replies": 1000, "mean_words": 1.2, "sd_words": 0.5, "mean_valid_rate": 0.85}}
>>> after = {"lists": {"end_rate": 0.40, "replies": 1000, "mean_words": 6.0, "sd_words": 3.0, "mean_valid_rate": 0.86}}
>>> [f.metric for f in damage(before, after) if f.worse]
['lists: replies that end their turn', 'lists: mean reply length (words)']
>>> [f.metric for f in damage(before, before) if f.worse]
[]
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SE_MULTIPLE = 2.0  # about the 95% two-sided band of a normal difference
RATE_FLOOR = 0.02  # a rate must drop by more than 2 points
WORDS_FLOOR = 0.2  # a mean length must grow by more than 20% of the reference's


@dataclass(frozen=True)
class Check:
    """One figure of a suite's results: where it is, what it is called, which way is worse and its kind."""

    suite: str
    key: str
    metric: str
    worse: str  # "down": lower is worse; "up": higher is worse
    kind: str  # "rate" (binomial over ``count_key``) or "mean" (with ``sd_key``)
    count_key: str = "replies"
    sd_key: str = "sd_words"


CHECKS: tuple[Check, ...] = (
    Check("lists", "end_rate", "lists: replies that end their turn", "down", "rate"),
    Check("lists", "mean_words", "lists: mean reply length (words)", "up", "mean"),
    Check("lists", "mean_valid_rate", "lists: valid rate", "down", "rate"),
    Check("open", "mean_end_rate", "open: replies that end their turn", "down", "rate"),
    Check("open", "mean_words", "open: mean reply length (words)", "up", "mean"),
    Check("open", "mean_valid_rate", "open: valid rate", "down", "rate"),
    Check("guard", "accuracy", "guard: accuracy", "down", "rate", count_key="n"),
    Check("guard", "end_rate", "guard: replies that end their turn", "down", "rate", count_key="n"),
)


@dataclass(frozen=True)
class Finding:
    """One figure before and after, the noise threshold it was held to, and whether it got worse beyond it."""

    metric: str
    before: float
    after: float
    threshold: float
    worse: bool

    def line(self) -> str:
        change = self.after - self.before
        verdict = "WORSE beyond the noise" if self.worse else "within the noise" if abs(change) <= self.threshold else "changed"
        return f"{self.metric}: {self.before:.3f} -> {self.after:.3f} ({change:+.3f}; noise threshold {self.threshold:.3f}): {verdict}"


def _finite(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def _threshold(check: Check, before: dict[str, Any], after: dict[str, Any]) -> float | None:
    b, a = before[check.key], after[check.key]
    nb, na = before.get(check.count_key), after.get(check.count_key)
    if not _finite(nb, na) or nb < 1 or na < 1:
        return None
    if check.kind == "rate":
        se = math.sqrt(b * (1 - b) / nb + a * (1 - a) / na)
        return max(SE_MULTIPLE * se, RATE_FLOOR)
    sb, sa = before.get(check.sd_key), after.get(check.sd_key)
    if not _finite(sb, sa):
        return None
    return max(SE_MULTIPLE * math.sqrt(sb * sb / nb + sa * sa / na), WORDS_FLOOR * abs(b))


def damage(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[Finding]:
    """Every check both result sets carry (``suite -> that suite's results``), reference ``before``."""
    findings = []
    for check in CHECKS:
        b, a = before.get(check.suite), after.get(check.suite)
        if not isinstance(b, dict) or not isinstance(a, dict) or not _finite(b.get(check.key), a.get(check.key)):
            continue
        threshold = _threshold(check, b, a)
        if threshold is None:
            continue
        change = a[check.key] - b[check.key]
        worse = (-change if check.worse == "down" else change) > threshold
        findings.append(Finding(check.metric, float(b[check.key]), float(a[check.key]), threshold, worse))
    return findings


def warning_lines(findings: list[Finding], label: str = "the trained model") -> list[str]:
    """Plain warnings for the findings that got worse beyond the noise (none when nothing did)."""
    worse = [f for f in findings if f.worse]
    if not worse:
        return []
    return [f"WARNING: {label} is worse than the reference beyond the noise on {len(worse)} check(s):"] + [f"  {f.line()}" for f in worse]
