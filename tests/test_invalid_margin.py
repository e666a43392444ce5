"""An invalid answer scored at the group's lowest valid reward minus a margin (TrainConfig.invalid_margin)."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapo_lite.diagnostics import mode_pressure, validity_threshold
from gapo_lite.rewards import FrequencyScorer, Group, InvalidBelowMode, OpenEndedFrequencyScorer, TaskScorer
from gapo_lite.training import TrainConfig

ITEMS = ["Owl", "Cat", "Dog", "Fox"]
INVALID = ["Bat", "Owl, Cat", "Owl Owl", ""]  # a wrong item, a run-on, the item repeated, a reply cut off


def _group(completions, **columns):
    return Group("p0", "Pick one: Owl, Cat, Dog, Fox.", completions, {"items": ITEMS, **columns})


def _centred(rewards):
    # GRPO's group-normalised advantages divide these by the group's std: the signs are the same
    mean = sum(rewards) / len(rewards)
    return [r - mean for r in rewards]


def test_an_invalid_answer_scores_the_favourites_reward_minus_the_margin():
    group = _group(["Owl", "Owl", "Owl", "Cat", *INVALID])  # L = 4; f(Owl) = 3/4, f(Cat) = 1/4
    plain = FrequencyScorer(invalid_reward=-1.0)(group)
    assert plain[4:] == [-1.0] * len(INVALID)
    scored = InvalidBelowMode(FrequencyScorer(invalid_reward=-1.0), margin=0.1)(group)
    assert scored[:4] == pytest.approx(plain[:4])  # valid answers keep the paper's reward
    assert scored[4:] == pytest.approx([1 - (3 / 4 - 1 / 4) - 0.1] * len(INVALID))


def test_a_group_with_no_valid_answer_keeps_the_scorers_rewards():
    assert InvalidBelowMode(FrequencyScorer(invalid_reward=-1.0), margin=0.0)(_group(["Bat", "Owl, Cat"])) == [-1.0, -1.0]


def test_a_negative_margin_is_refused():
    with pytest.raises(ValueError, match="margin must be >= 0"):
        InvalidBelowMode(FrequencyScorer(), margin=-0.1)
    with pytest.raises(ValueError, match="invalid_margin must be >= 0"):
        TrainConfig(model="m", invalid_margin=-0.5)


@given(st.lists(st.sampled_from(ITEMS + INVALID), min_size=2, max_size=40), st.floats(0.0, 3.0))
def test_never_above_a_valid_answer_never_below_the_constant_and_at_margin_0_the_favourite_loses(completions, margin):
    group = _group(completions)
    answers = FrequencyScorer().answers(group)
    rewards = InvalidBelowMode(FrequencyScorer(invalid_reward=-1.0), margin=margin)(group)
    valid = [r for r, a in zip(rewards, answers) if a is not None]
    invalid = [r for r, a in zip(rewards, answers) if a is None]
    if valid and invalid:
        assert max(invalid) <= min(valid) - margin + 1e-12 or max(invalid) == -1.0
        assert min(invalid) >= -1.0
    # margin 0: wherever the group has two distinct valid answers, the most frequent one's advantage is below zero,
    # whatever the valid rate (the constant -1 pays it for being valid: its advantage can be positive)
    counts = {a: answers.count(a) for a in answers if a is not None}
    if len(counts) >= 2 and max(counts.values()) > min(counts.values()):
        tied = _centred(InvalidBelowMode(FrequencyScorer(), margin=0.0)(group))
        assert all(tied[i] < 0 for i, a in enumerate(answers) if a is not None and counts[a] == max(counts.values()))


def test_the_constant_pays_the_favourite_where_the_margin_does_not():
    # 6 of 10 valid (valid rate 0.6): Owl x4, Cat x2; 4 invalid. Constant -1: Owl scores 1 - (4/6 - 1/4) = 0.583 against
    # a group mean of 0.6 * (1.25 - 20/36) - 0.4 = 0.017: the favourite gains. Margin 0: it loses.
    group = _group(["Owl"] * 4 + ["Cat"] * 2 + ["Bat"] * 4)
    assert _centred(FrequencyScorer(invalid_reward=-1.0)(group))[0] > 0
    assert _centred(InvalidBelowMode(FrequencyScorer(), margin=0.0)(group))[0] < 0


def test_the_diagnostic_reads_the_margin():
    # v (S - d) + (1 - v) m: 0.6 * (0.5 - 0.6) + 0.4 * m with shares (0.6, 0.2, 0.2), L = 4, any constant
    shares = [0.6, 0.2, 0.2, 0.0]
    for m in (0.0, 0.1, 0.25):
        assert mode_pressure(shares, 0.6, 4, invalid_margin=m) == pytest.approx(0.6 * (0.44 - 0.6) + 0.4 * m)
        assert validity_threshold(shares, 4, invalid_margin=m) == pytest.approx(m / (0.6 - 0.44 + m))
    assert mode_pressure(shares, 0.6, 4) > 0 > mode_pressure(shares, 0.6, 4, invalid_margin=0.0)
    with pytest.raises(ValueError, match="invalid_margin"):
        mode_pressure(shares, 0.6, 4, invalid_margin=-1.0)


def test_the_diagnostic_scores_an_invalid_answer_as_the_reward_does_when_the_margin_is_large():
    """A margin wider than the favourite's reward above the constant leaves an invalid answer at the constant, in
    the reward and in the diagnostic alike."""
    from gapo_lite.diagnostics import mode_pressure
    from gapo_lite.rewards import FrequencyScorer, Group, InvalidBelowMode

    group = Group("p0", "Pick one: Owl, Cat, Dog.", ["Owl", "Owl", "Owl", "Cat", "Bat"], {"items": ["Owl", "Cat", "Dog"]})
    assert InvalidBelowMode(FrequencyScorer(invalid_reward=-1.0), margin=5.0)(group)[-1] == -1.0
    shares = [0.75, 0.25, 0.0]
    assert mode_pressure(shares, 0.8, 3, invalid_margin=5.0) == pytest.approx(mode_pressure(shares, 0.8, 3))


def test_the_trainer_wraps_gapo_scorers_and_leaves_the_validity_baseline_alone():
    from gapo_lite.training.trainer import make_scorer

    lists = make_scorer(TrainConfig(model="m", invalid_margin=0.25))
    assert isinstance(lists, InvalidBelowMode) and lists.name == "gapo_frequency"
    assert lists(_group(["Owl", "Owl", "Cat", "Bat"]))[3] == pytest.approx(1 - (2 / 3 - 1 / 4) - 0.25)
    mixed = make_scorer(TrainConfig(model="m", invalid_margin=0.0, open_share=0.5))
    assert isinstance(mixed, InvalidBelowMode) and isinstance(mixed.scorer, TaskScorer)
    opened = mixed(Group("p1", "Name a fruit.", ["Apple", "Apple", "Pear", "Xyzzy"], {"task": "open", "category": "fruits"}))
    assert opened[3] == pytest.approx(opened[0])  # margin 0: the invalid reply ties the favourite
    assert not isinstance(make_scorer(TrainConfig(model="m", invalid_margin=0.0, reward="validity")), InvalidBelowMode)
    assert make_scorer(TrainConfig(model="m")).__class__ is FrequencyScorer  # None: the paper's constant


def test_open_ended_scorers_work_under_it():
    scorer = InvalidBelowMode(OpenEndedFrequencyScorer(["Apple", "Pear", "Plum"]), margin=0.5)
    rewards = scorer(Group("p0", "Name a fruit.", ["Apple", "apple", "Pear", "Banana"]))
    assert rewards[3] == pytest.approx(rewards[0] - 0.5)
