"""GAPO's frequency-aware reward (Anschel et al., 2025) for one group of answers.

The formula is :func:`gapo_reward`; every scorer of the kit and :mod:`gapo_lite.diagnostics` reach it through
the functions here."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Hashable, Sequence


def gapo_reward(share: float, num_valid: int) -> float:
    """The paper's reward of a valid answer: ``1 - (f - 1/L)``, f its share of the group's valid answers and L the
    number of valid answers for the prompt. No absolute value: a rare answer (f < 1/L) scores above 1.

    >>> gapo_reward(2 / 3, 3), gapo_reward(1 / 3, 3)
    (0.6666666666666667, 1.0)
    """
    return 1.0 - (share - 1.0 / num_valid)


def frequency_aware_rewards(
    answers: Sequence[Hashable | None],
    valid: Collection[Hashable],
    *,
    invalid_reward: float = -1.0,
) -> list[float]:
    """Reward every answer of ONE group by how over-represented it is among the group's valid answers.

    With L distinct valid answers for the prompt and f(v) the share of the group's *valid* answers equal
    to v, a valid answer o scores :func:`gapo_reward` ``(f(o), L)``: exactly 1 when the group is uniform over the
    valid set, above 1 for rare answers, below 1 for frequent ones. An answer that is ``None`` or not in
    ``valid`` scores ``invalid_reward``.
    """
    if len(answers) == 0:
        raise ValueError("frequency_aware_rewards: the group is empty; a group needs at least one answer")
    valid_set = set(valid)
    if not valid_set:
        raise ValueError("frequency_aware_rewards: the valid set is empty; L (the number of valid answers) must be >= 1")
    counts = Counter(a for a in answers if a is not None and a in valid_set)
    n_valid = sum(counts.values())
    rewards = []
    for answer in answers:
        if answer is None or answer not in valid_set:
            rewards.append(float(invalid_reward))
        else:
            rewards.append(gapo_reward(counts[answer] / n_valid, len(valid_set)))
    return rewards


def expected_reward(shares: Sequence[float], num_valid: int) -> float:
    """Expected reward of a group whose valid answers have the given shares: the mean of :func:`gapo_reward` over
    them, ``sum f (1 - f + 1/L) = 1 + 1/L - sum f^2`` (the shares sum to 1)."""
    return 1.0 + 1.0 / num_valid - sum(f * f for f in shares)


def frequency_rewards_with_L(
    answers: Sequence[Hashable | None],
    num_valid: int,
    is_valid: Callable[[Hashable], bool] | None = None,
    *,
    invalid_reward: float = -1.0,
) -> list[float]:
    """The frequency-aware reward with an explicit L: valid o gets :func:`gapo_reward` ``(f(o), num_valid)``.

    ``is_valid`` (default: every non-``None`` answer is valid) decides validity; f is the share among the
    group's valid answers. Delegates to :func:`frequency_aware_rewards` (so the formula lives in one place)
    with the observed distinct valid answers as the valid set, then moves its constant 1/L_observed to
    1/num_valid. Raises if ``num_valid`` is below the number of distinct valid answers the group shows.
    """
    if len(answers) == 0:
        raise ValueError("frequency_rewards_with_L: the group is empty; a group needs at least one answer")
    if num_valid < 1:
        raise ValueError(f"frequency_rewards_with_L: num_valid (L) must be >= 1, got {num_valid}")
    masked = [a if a is not None and (is_valid is None or is_valid(a)) else None for a in answers]
    observed = {a for a in masked if a is not None}
    if not observed:
        return [float(invalid_reward)] * len(answers)
    if len(observed) > num_valid:
        raise ValueError(
            f"frequency_rewards_with_L: num_valid={num_valid} but the group shows {len(observed)} distinct "
            "valid answers; L must be at least the number of distinct valid answers"
        )
    base = frequency_aware_rewards(masked, observed, invalid_reward=invalid_reward)
    shift = 1.0 / num_valid - 1.0 / len(observed)
    return [r + shift if a is not None else r for r, a in zip(base, masked)]
