"""Diversity metrics against hand-computed values."""
import math

import pytest

from gapo_lite.metrics import choice_distribution, entropy, jsd_to_uniform, normalized_entropy, position_bias, unique_at_n, valid_rate

ITEMS = ["a", "b", "c", "d"]


def test_jsd_uniform_is_zero_and_point_mass_hand_computed():
    assert jsd_to_uniform(ITEMS * 5, ITEMS) == pytest.approx(0.0, abs=1e-12)
    # p = (1,0,0,0), q = 1/4 each, m = (5/8, 1/8, 1/8, 1/8):
    # KL(p||m) = log2(8/5); KL(q||m) = 1/4 log2(2/5) + 3/4 log2(2) ; JSD = mean of the two.
    expected = 0.5 * math.log2(8 / 5) + 0.5 * (0.25 * math.log2(0.25 / 0.625) + 0.75 * math.log2(0.25 / 0.125))
    assert jsd_to_uniform(["a"] * 10, ITEMS) == pytest.approx(expected)
    # the same by hand to four places: 0.5 * 0.67807 + 0.5 * (0.25 * -1.32193 + 0.75) = 0.33904 + 0.20976
    assert jsd_to_uniform(["a"] * 10, ITEMS) == pytest.approx(0.5488, abs=1e-4)


def test_jsd_ignores_invalid_and_nan_without_valid():
    assert jsd_to_uniform(["a", "b", "c", "d", None, "zz"], ITEMS) == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(jsd_to_uniform([None, "zz"], ITEMS))


def test_jsd_two_items_half():
    # p = (1/2, 1/2, 0, 0) vs uniform over 4: m = (3/8, 3/8, 1/8, 1/8)
    kl_p = 2 * 0.5 * math.log2(0.5 / 0.375)
    kl_q = 2 * 0.25 * math.log2(0.25 / 0.375) + 2 * 0.25 * math.log2(0.25 / 0.125)
    assert jsd_to_uniform(["a", "b"], ITEMS) == pytest.approx(0.5 * kl_p + 0.5 * kl_q)


def test_valid_rate_and_distribution():
    assert valid_rate(["a", None, "zz", "b"], ITEMS) == 0.5
    assert valid_rate(["a", None, "zz", "b"]) == 0.75
    assert choice_distribution(["a", "a", "b", None], ITEMS) == pytest.approx([2 / 3, 1 / 3, 0, 0])
    with pytest.raises(ValueError):
        valid_rate([], ITEMS)


def test_normalized_entropy():
    assert normalized_entropy(ITEMS, ITEMS) == pytest.approx(1.0)
    assert normalized_entropy(["a", "a"], ITEMS) == pytest.approx(0.0)
    assert normalized_entropy(["a", "b"], ITEMS) == pytest.approx(math.log(2) / math.log(4))


def test_unique_at_n():
    answers = ["x", "y", "x", None, "z"]
    assert unique_at_n(answers) == 3
    assert unique_at_n(answers, 3) == 2
    assert unique_at_n(answers, 0) == 0


def test_position_bias():
    shown = [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "c", "b"]]
    first = [s[0] for s in shown]
    assert position_bias(first, shown) == [1.0, 0.0, 0.0]
    choices = ["a", "a", "a", None]  # positions 0, 2, 1; the invalid one is skipped
    assert position_bias(choices, shown) == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    with pytest.raises(ValueError):
        position_bias(["a"], shown)


def test_entropy_hand_computed():
    assert entropy([]) == 0.0 and entropy(["a", "a"]) == 0.0
    assert entropy(["a", "b"], base=2) == pytest.approx(1.0)
    assert entropy(["a", "b", "c", "d"], base=2) == pytest.approx(2.0)
    # shares (1/2, 1/4, 1/4): 1/2 * 1 + 2 * 1/4 * 2 = 1.5 bits = 1.5 * ln 2 nats
    assert entropy(["x", "x", "y", "z"], base=2) == pytest.approx(1.5)
    assert entropy(["x", "x", "y", "z"]) == pytest.approx(1.5 * math.log(2))
    assert entropy([1, 2, 3], base=3) == pytest.approx(1.0)
