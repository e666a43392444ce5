"""GAPO's frequency-aware reward (Anschel et al., 2025) for one group of answers."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Hashable, Sequence


def frequency_aware_rewards(
    answers: Sequence[Hashable | None],
    valid: Collection[Hashable],
    *,
    invalid_reward: float = -1.0,
) -> list[float]:
    """Reward every answer of ONE group by how over-represented it is among the group's valid answers.

    With L distinct valid answers for the prompt and f(v) the share of the group's *valid* answers equal
    to v, a valid answer o scores ``1 - (f(o) - 1/L)``: exactly 1 when the group is uniform over the valid
    set, above 1 for rare answers, below 1 for frequent ones. An answer that is ``None`` or not in
    ``valid`` scores ``invalid_reward``.
    """
    if len(answers) == 0:
        raise ValueError("frequency_aware_rewards: the group is empty; a group needs at least one answer")
    valid_set = set(valid)
    if not valid_set:
        raise ValueError("frequency_aware_rewards: the valid set is empty; L (the number of valid answers) must be >= 1")
    inverse_l = 1.0 / len(valid_set)
    counts = Counter(a for a in answers if a is not None and a in valid_set)
    n_valid = sum(counts.values())
    rewards = []
    for answer in answers:
        if answer is None or answer not in valid_set:
            rewards.append(float(invalid_reward))
        else:
            rewards.append(1.0 - (counts[answer] / n_valid - inverse_l))
    return rewards


def expected_reward(shares: Sequence[float], num_valid: int) -> float:
    """Expected reward of a group whose valid answers have the given shares: ``1 + 1/L - sum f^2``."""
    return 1.0 + 1.0 / num_valid - sum(f * f for f in shares)


def frequency_rewards_with_L(
    answers: Sequence[Hashable | None],
    num_valid: int,
    is_valid: Callable[[Hashable], bool] | None = None,
    *,
    invalid_reward: float = -1.0,
) -> list[float]:
    """The frequency-aware reward with an explicit L: valid o gets ``1 - (f(o) - 1/num_valid)``.

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
