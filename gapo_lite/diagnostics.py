"""Will GAPO spread this model? The mode pressure of the frequency-aware reward, from a model's answer shares.

In a large group, the most frequent valid answer (share ``d`` of the valid answers) scores
``1 - (d - 1/L)`` (:func:`~gapo_lite.rewards.frequency.gapo_reward`) while the group's mean reward is
``v (1 + 1/L - S) + (1 - v) r_inv`` (:func:`~gapo_lite.rewards.frequency.expected_reward`; ``v`` the valid
rate, ``S`` the sum of squared shares, ``r_inv`` the reward of an invalid answer). GRPO's advantage of the
favourite has the sign of their difference, the *mode pressure*: negative, GAPO pushes the favourite down
and spreads the model; positive, the penalty for invalid answers makes the safe favourite the winning
answer and GAPO sharpens the mode. With ``invalid_margin`` m (``TrainConfig.invalid_margin``) an invalid answer
scores the favourite's reward minus m, and the pressure is ``v (S - d) + (1 - v) m``: below zero at any valid
rate when m = 0.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gapo_lite.rewards.frequency import expected_reward, gapo_reward
from gapo_lite.rewards.invalid import lifted

_TOLERANCE = 1e-6


def _check(shares: Sequence[float], num_valid: int) -> None:
    if not shares:
        raise ValueError("shares is empty; give the share of at least one valid answer")
    if any(s < 0 or not math.isfinite(s) for s in shares):
        raise ValueError(f"shares must be finite and >= 0, got {list(shares)}")
    if abs(sum(shares) - 1.0) > _TOLERANCE:
        raise ValueError(f"shares must sum to 1 (tolerance {_TOLERANCE}), got {sum(shares):.9f}")
    if num_valid < len(shares):
        raise ValueError(f"num_valid (L) = {num_valid} is smaller than the number of shares ({len(shares)})")


def _invalid(favourite: float, invalid_reward: float, invalid_margin: float | None) -> float:
    """What an invalid answer scores: the constant, or as the reward scores it under a margin (the favourite's
    reward minus the margin, never below the constant; :func:`lifted`)."""
    if invalid_margin is None:
        return invalid_reward
    if invalid_margin < 0:
        raise ValueError(f"invalid_margin must be >= 0 or None, got {invalid_margin}")
    return lifted(invalid_reward, favourite, invalid_margin)


def mode_pressure(shares: Sequence[float], valid_rate: float, num_valid: int, invalid_reward: float = -1.0,
                  invalid_margin: float | None = None) -> float:
    """Reward of the most frequent valid answer minus the group's expected reward (large-group limit).

    Negative: GAPO pushes the favourite down (it can spread the model). Positive: it reinforces the favourite.

    >>> round(mode_pressure([0.6, 0.3, 0.1], 0.7, 3), 3), round(mode_pressure([0.6, 0.3, 0.1], 0.7, 3, invalid_margin=0.0), 3)
    (0.422, -0.098)
    """
    _check(shares, num_valid)
    if not 0.0 <= valid_rate <= 1.0:
        raise ValueError(f"valid_rate must be in [0, 1], got {valid_rate}")
    favourite = gapo_reward(max(shares), num_valid)
    invalid = _invalid(favourite, invalid_reward, invalid_margin)
    mean = valid_rate * expected_reward(shares, num_valid) + (1.0 - valid_rate) * invalid
    return favourite - mean


def validity_threshold(shares: Sequence[float], num_valid: int, invalid_reward: float = -1.0, invalid_margin: float | None = None) -> float:
    """The valid rate above which :func:`mode_pressure` is negative (``inf`` when no valid rate makes it so).

    ``(1 + 1/L - d - r_inv) / (1 + 1/L - S - r_inv)``; about 0.93 for d = 0.9, L = 8, r_inv = -1. A value
    above 1 means even an always-valid model is not spread (e.g. a single answer with all the mass). With
    ``invalid_margin`` m it is ``m / (d - S + m)`` while the favourite's reward minus m stays above ``r_inv``: 0 for m = 0.
    """
    _check(shares, num_valid)
    favourite = gapo_reward(max(shares), num_valid)
    invalid_reward = _invalid(favourite, invalid_reward, invalid_margin)
    slope = expected_reward(shares, num_valid) - invalid_reward
    if slope <= 0:
        return math.inf
    return (favourite - invalid_reward) / slope


@dataclass(frozen=True)
class PressureReading:
    """The mode-pressure diagnostic for one prompt (or the mean over prompts)."""

    valid_rate: float
    dominant_share: float
    pressure: float
    threshold: float

    @property
    def spreads(self) -> bool:
        """True when GAPO is expected to push the favourite down."""
        return self.pressure < 0


def read_pressure(counts: Sequence[int], num_invalid: int, invalid_reward: float = -1.0, invalid_margin: float | None = None) -> PressureReading | None:
    """The diagnostic from sampled answer counts (one count per valid item, zeros included) and the invalid count.

    ``None`` when no sampled answer was valid (there are no shares to read).
    """
    if any(c < 0 for c in counts) or num_invalid < 0:
        raise ValueError(f"counts must be >= 0, got {list(counts)} and num_invalid={num_invalid}")
    valid = sum(counts)
    if valid == 0:
        return None
    shares = [c / valid for c in counts]
    rate = valid / (valid + num_invalid)
    return PressureReading(
        valid_rate=rate,
        dominant_share=max(shares),
        pressure=mode_pressure(shares, rate, len(counts), invalid_reward, invalid_margin),
        threshold=validity_threshold(shares, len(counts), invalid_reward, invalid_margin),
    )


def mean_reading(readings: Sequence[PressureReading]) -> PressureReading:
    """Mean of every field over prompts (the overall line of a report)."""
    if not readings:
        raise ValueError("mean_reading of no readings")
    n = len(readings)
    return PressureReading(
        valid_rate=sum(r.valid_rate for r in readings) / n,
        dominant_share=sum(r.dominant_share for r in readings) / n,
        pressure=sum(r.pressure for r in readings) / n,
        threshold=sum(r.threshold for r in readings) / n,
    )


def verdict(reading: PressureReading) -> str:
    """One sentence: is GAPO expected to spread this model?"""
    if reading.spreads:
        return (f"GAPO is expected to spread this model: mode pressure {reading.pressure:+.3f} < 0 "
                f"(valid rate {reading.valid_rate:.3f} is above the threshold {reading.threshold:.3f} at dominant share {reading.dominant_share:.3f}).")
    return (f"GAPO is expected to SHARPEN this model's mode: mode pressure {reading.pressure:+.3f} >= 0 "
            f"(valid rate {reading.valid_rate:.3f} is below the threshold {reading.threshold:.3f} at dominant share {reading.dominant_share:.3f}); "
            "raise validity first (clearer prompt, a short supervised warm-up on the answer format).")
