"""The frequency-aware reward: exact values and properties."""
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapo_lite.rewards import expected_reward, frequency_aware_rewards

ITEMS = ["a", "b", "c", "d"]


def test_hand_computed_values():
    # L = 4; valid answers: a a a b (n_valid = 4), one invalid (None) and one off-list ("z").
    r = frequency_aware_rewards(["a", "a", "a", "b", None, "z"], ITEMS)
    assert r[0] == pytest.approx(1 - (3 / 4 - 1 / 4))  # 0.5
    assert r[3] == pytest.approx(1 - (1 / 4 - 1 / 4))  # 1.0
    assert r[4] == -1.0 and r[5] == -1.0


def test_rare_answer_scores_above_one_no_absolute_value():
    # L = 4, group a a a a b b c: f(c) = 1/7 < 1/4 so c scores above 1 (an |.| would put it below 1).
    r = frequency_aware_rewards(list("aaaabbc"), ITEMS)
    assert r[-1] == pytest.approx(1 - (1 / 7 - 1 / 4))
    assert r[-1] > 1.0 > r[0]


def test_all_invalid_group_and_custom_invalid_reward():
    assert frequency_aware_rewards([None, "x"], ITEMS) == [-1.0, -1.0]
    assert frequency_aware_rewards([None, "a"], ITEMS, invalid_reward=-2.5)[0] == -2.5


def test_duplicate_valid_items_count_once_for_L():
    r = frequency_aware_rewards(["a", "b"], ["a", "b", "b"])  # L = 2, uniform group
    assert r == [pytest.approx(1.0), pytest.approx(1.0)]


@pytest.mark.parametrize("answers, valid", [([], ITEMS), (["a"], []), (["a"], set())])
def test_empty_group_or_valid_set_is_an_error(answers, valid):
    with pytest.raises(ValueError, match="empty"):
        frequency_aware_rewards(answers, valid)


def test_expected_reward_matches_mean():
    answers = list("aaabbc")
    r = frequency_aware_rewards(answers, ITEMS)
    shares = [3 / 6, 2 / 6, 1 / 6]
    assert sum(r) / len(r) == pytest.approx(expected_reward(shares, 4))


groups = st.lists(st.sampled_from(ITEMS + ["zz", None]), min_size=1, max_size=40)


@given(groups, st.randoms())
def test_permutation_invariant(answers, rnd):
    perm = list(range(len(answers)))
    rnd.shuffle(perm)
    r = frequency_aware_rewards(answers, ITEMS)
    r_perm = frequency_aware_rewards([answers[i] for i in perm], ITEMS)
    assert [r[i] for i in perm] == pytest.approx(r_perm)


@given(st.integers(1, 12), st.integers(1, 5))
def test_uniform_group_scores_one(num_items, copies):
    items = [f"w{i}" for i in range(num_items)]
    answers = items * copies
    random.Random(0).shuffle(answers)
    assert frequency_aware_rewards(answers, items) == pytest.approx([1.0] * len(answers))


@given(groups)
def test_rarer_never_scores_below_more_frequent(answers):
    r = frequency_aware_rewards(answers, ITEMS)
    valid = [(answers.count(a), x) for a, x in zip(answers, r) if a in ITEMS]
    for count_i, r_i in valid:
        for count_j, r_j in valid:
            if count_i < count_j:
                assert r_i > r_j
    assert all(math.isfinite(x) for x in r)


def _group_advantages(rewards):
    # TRL's GRPO advantages with scale_rewards="group": (r - group mean) / group std (Bessel's correction); TRL adds
    # 1e-4 to the std, which moves an advantage by under 1e-4 / std relative and is left out here
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1))
    return [(r - mean) / std for r in rewards]


@given(st.lists(st.sampled_from(ITEMS + [None]), min_size=2, max_size=40), st.floats(1.1, 4.0), st.sampled_from([-1.0, -0.5, 0.0]))
def test_a_weight_on_the_frequency_term_is_an_invalid_reward_in_disguise(answers, k, r):
    # docs/reward.md: a valid answer scoring 1 - k (f - 1/L) gives GRPO the advantages of the paper's reward with
    # invalid_reward = 1 - (1 - r) / k, so the kit has no such weight
    weighted = [1 - k * (1 - x) if a is not None else r for a, x in zip(answers, frequency_aware_rewards(answers, ITEMS))]
    same = frequency_aware_rewards(answers, ITEMS, invalid_reward=1 - (1 - r) / k)
    if max(same) - min(same) < 1e-9:
        return  # a group with one reward has no gradient either way
    assert _group_advantages(weighted) == pytest.approx(_group_advantages(same), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("module", ["gapo_lite.rewards.frequency", "gapo_lite.rewards.invalid", "gapo_lite.rewards.validity", "gapo_lite.diagnostics"])
def test_doctests_of_the_formula_and_its_readers(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
