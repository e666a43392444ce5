"""Mode pressure and validity threshold: hand-computed cases, errors, and monotonicity in the valid rate."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapo_lite.diagnostics import PressureReading, mean_reading, mode_pressure, read_pressure, validity_threshold, verdict

D90 = [0.9] + [0.1 / 7] * 7  # favourite 0.9, the rest spread over 7 other items


def test_pressure_by_hand():
    # L = 2, shares (0.5, 0.5), v = 0.5: favourite 1 - (0.5 - 0.5) = 1; mean 0.5 * (1 + 0.5 - 0.5) + 0.5 * (-1) = 0
    assert mode_pressure([0.5, 0.5], 0.5, 2) == pytest.approx(1.0)
    # one answer holds everything, always valid, L = 2: favourite 1 - (1 - 0.5) = 0.5; mean 1 + 0.5 - 1 = 0.5
    assert mode_pressure([1.0], 1.0, 2) == pytest.approx(0.0)
    # d = 0.9, L = 8, v = 1: favourite 1 - (0.9 - 0.125) = 0.225; S = 0.81 + 0.01 / 7; mean 1.125 - S
    assert mode_pressure(D90, 1.0, 8) == pytest.approx(0.225 - (1.125 - 0.81 - 0.01 / 7))
    # v = 0.8 with invalid reward 0: mean 0.8 * (1.125 - S)
    assert mode_pressure(D90, 0.8, 8, invalid_reward=0.0) == pytest.approx(0.225 - 0.8 * (1.125 - 0.81 - 0.01 / 7))


def test_threshold_by_hand():
    # (2 + 1/8 - 0.9) / (2 + 1/8 - S) with S = 0.81 + 0.01/7: 1.225 / 1.3135714... = 0.93257
    assert validity_threshold(D90, 8) == pytest.approx(1.225 / (2.125 - 0.81 - 0.01 / 7))
    assert validity_threshold(D90, 8) == pytest.approx(0.93257, abs=1e-5)
    # the guide: v > ~0.90 at d = 0.8 (rest spread evenly over 7), L = 8
    assert validity_threshold([0.8] + [0.2 / 7] * 7, 8) == pytest.approx(1.325 / (2.125 - 0.64 - 0.04 / 7))  # 0.8957
    # uniform shares: the favourite is exactly average only at v = 1
    assert validity_threshold([0.25] * 4, 4) == pytest.approx(1.0)
    # a reward that no valid rate can make negative
    assert validity_threshold([1.0], 2, invalid_reward=1.0) == math.inf


@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12).filter(lambda w: sum(w) > 1e-3),
    st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.sampled_from([-1.0, -0.5, 0.0]),
)
def test_pressure_falls_as_valid_rate_rises(weights, v1, v2, invalid_reward):
    shares = [w / sum(weights) for w in weights]
    low, high = sorted((v1, v2))
    p_low, p_high = mode_pressure(shares, low, 12, invalid_reward), mode_pressure(shares, high, 12, invalid_reward)
    assert p_high <= p_low + 1e-12
    if high - low > 1e-6:
        assert p_high < p_low
    threshold = validity_threshold(shares, 12, invalid_reward)
    if 0.0 <= threshold <= 1.0:  # the threshold is where the pressure crosses zero
        assert mode_pressure(shares, threshold, 12, invalid_reward) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    "shares, valid_rate, num_valid, message",
    [
        ([0.5, 0.4], 1.0, 2, "sum to 1"),
        ([1.2, -0.2], 1.0, 2, ">= 0"),
        ([0.5, 0.5], 1.0, 1, "smaller than the number of shares"),
        ([0.5, 0.5], 1.5, 2, r"valid_rate must be in \[0, 1\]"),
        ([], 1.0, 2, "empty"),
    ],
)
def test_bad_input_is_named(shares, valid_rate, num_valid, message):
    with pytest.raises(ValueError, match=message):
        mode_pressure(shares, valid_rate, num_valid)


def test_reading_from_counts():
    # 90 of 100 valid answers on one item of 8, 10 on another, 0 elsewhere; 5 invalid answers out of 105
    r = read_pressure([90, 10, 0, 0, 0, 0, 0, 0], 5)
    assert r.valid_rate == pytest.approx(100 / 105)
    assert r.dominant_share == pytest.approx(0.9)
    s = 0.81 + 0.01
    assert r.threshold == pytest.approx((2.125 - 0.9) / (2.125 - s))
    assert r.pressure == pytest.approx((1.125 - 0.9) - (100 / 105 * (1.125 - s) - 5 / 105))
    assert r.spreads == (r.valid_rate > r.threshold)
    assert read_pressure([0, 0, 0], 7) is None
    with pytest.raises(ValueError, match=">= 0"):
        read_pressure([1, -1], 0)


def test_mean_and_verdict():
    a, b = PressureReading(1.0, 0.9, -0.1, 0.9), PressureReading(0.8, 0.7, 0.3, 0.95)
    m = mean_reading([a, b])
    assert (m.valid_rate, m.dominant_share, m.pressure, m.threshold) == pytest.approx((0.9, 0.8, 0.1, 0.925))
    assert verdict(a).startswith("GAPO is expected to spread") and "0.900" in verdict(a)
    assert "SHARPEN" in verdict(b)
    with pytest.raises(ValueError, match="no readings"):
        mean_reading([])


@pytest.mark.parametrize("margin", [None, 0.0, 0.25])
def test_the_diagnostic_reads_the_reward_the_scorers_train_with(margin):
    """A group whose counts realise the shares exactly: the diagnostic's pressure is the group's own favourite reward
    minus its mean reward, as GAPO's scorer (and InvalidBelowMode under a margin) score it."""
    from gapo_lite.rewards import FrequencyScorer, Group, InvalidBelowMode
    from gapo_lite.rewards.group import favourite_pressure

    replies = ["Owl"] * 6 + ["Cat"] * 3 + ["Dog"] + ["Bat"] * 10  # shares 0.6 / 0.3 / 0.1 of the valid half, L = 4
    group = Group("p0", "Pick one.", replies, {"items": ["Owl", "Cat", "Dog", "Emu"]})
    scorer = FrequencyScorer() if margin is None else InvalidBelowMode(FrequencyScorer(), margin)
    observed = favourite_pressure(scorer.answers(group), scorer(group))
    assert mode_pressure([0.6, 0.3, 0.1, 0.0], 0.5, 4, invalid_margin=margin) == pytest.approx(observed, abs=1e-12)
