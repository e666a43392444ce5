"""The clean-answer rule (``gapo_lite.answers.clean``): a reply counts only when it ended its turn and is the
answer alone, in every group scorer, in the GRPO hook and in the suites; the mixed list + open training data."""
from __future__ import annotations

import doctest

import pytest

import gapo_lite.answers.clean
import gapo_lite.eval.damage
import gapo_lite.eval.guard_suite
import gapo_lite.rewards.list_scorer
import gapo_lite.rewards.tasks
from gapo_lite.answers.clean import clean_choice, single_answer
from gapo_lite.rewards import (
    CategoryScorer,
    FrequencyScorer,
    Group,
    GroupReward,
    OpenEndedFrequencyScorer,
    TaskScorer,
    ValidityScorer,
)

ITEMS = ["Owl", "Cat", "Sea lion"]


@pytest.mark.parametrize("module", [gapo_lite.answers.clean, gapo_lite.rewards.list_scorer, gapo_lite.rewards.tasks, gapo_lite.eval.damage, gapo_lite.eval.guard_suite])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize(("reply", "expected"), [
    ("Owl", "Owl"), ("owl.", "Owl"), ("**Owl**", "Owl"), ("Sure! Owl", "Owl"), ("I'll pick: Owl.", "Owl"), ("Owls", "Owl"), ("Sea lion", "Sea lion"),
    ("Cat Cat Cat Cat", None),            # the item repeated
    ("Owl, Cat", None), ("Owl and Cat", None),  # further items
    ("Owl is my choice", None), ("Owl (a bird)", None), ("Owl - it hoots", None),  # chatter past the answer
    ("Owl\n\nThe owl is a bird.", None),  # a second line with content
    ("Sea", None), ("", None),
])
def test_clean_choice_is_the_item_alone(reply, expected):
    assert clean_choice(reply, ITEMS) == expected


def test_single_answer_keeps_lead_ins_and_refuses_the_rest():
    assert single_answer("The city I'm referring to is Nova Haven.", "city") == "Nova Haven"
    assert single_answer("Canada, Canada\n\n\nThis country is Canada", "country") is None
    assert single_answer("China, India, Nepal India", "country") is None
    assert single_answer('The answer to this question is "Kristen Bell" by Nikolai', "celebrity") is None
    assert single_answer("I'm sorry, as an AI I cannot") is None
    with pytest.raises(TypeError):
        single_answer(None)  # type: ignore[arg-type]


def _group(completions, ended=None, **columns):
    return Group("p0", "prompt", list(completions), {"items": ITEMS, **columns}, ended)


def test_every_scorer_refuses_what_is_more_than_one_answer():
    replies = ["Owl", "Owl, Owl", "Cat. Cat is nice", "Cat"]
    assert FrequencyScorer()(_group(replies)) == pytest.approx([1 - 1 / 2 + 1 / 3, -1, -1, 1 - 1 / 2 + 1 / 3])
    assert FrequencyScorer(clean=False).answers(_group(replies)) == ["Owl", "Owl", "Cat", "Cat"]
    assert ValidityScorer()(_group(replies)) == [1.0, -1.0, -1.0, 1.0]
    open_scorer = OpenEndedFrequencyScorer(["Apple", "Pear"])
    assert open_scorer.answers(_group(["Apple.", "Apple, Pear", "Sure! Pear", "Pear Pear"])) == ["apple", None, "pear", None]
    assert OpenEndedFrequencyScorer(["Apple", "Pear"], clean=False).answers(_group(["Apple. Pear is nice"])) == ["apple"]
    assert open_scorer.answers(_group(["Apple. Pear is nice"])) == [None]
    by_category = CategoryScorer({"fruits": ["Apple", "Pear"]})
    assert by_category.answers(_group(["Pear", "Pear, Apple"], category="fruits")) == ["pear", None]
    tasks = TaskScorer({"list": FrequencyScorer(), "open": open_scorer})
    assert tasks.answers(_group(["Owl", "Owl Owl"], task="list")) == ["Owl", None]
    with pytest.raises(KeyError, match="no scorer for task"):
        tasks(_group(["Owl"], task="poem"))


def test_hook_scores_a_completion_that_did_not_end_as_no_answer():
    """TRL's completion ids end with the eos id when the turn ended; without it the completion was cut off."""
    eos, pad = 2, 0
    hook = GroupReward(FrequencyScorer(), num_generations=4, end_token_ids=[eos, pad])
    completions = ["Owl", "Owl", "Cat", "Cat"]
    ids = [[11, eos], [11, 12, 13], [14, eos], [14, eos]]  # the second "Owl" ran into the length limit
    logged = {}
    rewards = hook(prompts=["p"] * 4, completions=completions, completion_ids=ids, items=[ITEMS] * 4, prompt_id=["p0"] * 4,
                   log_metric=lambda k, v: logged.__setitem__(k, v))
    # valid: one Owl, two Cats (L = 3): Owl 1 - 1/3 + 1/3, Cat 1 - 2/3 + 1/3; the cut-off Owl is invalid
    assert rewards == pytest.approx([1.0, -1.0, 2 / 3, 2 / 3])
    assert logged["gapo_frequency/end_rate"] == pytest.approx(3 / 4)
    blind = GroupReward(FrequencyScorer(), num_generations=4)  # no end ids: every completion taken as it is
    assert blind(prompts=["p"] * 4, completions=completions, completion_ids=ids, items=[ITEMS] * 4, prompt_id=["p0"] * 4) == pytest.approx([5 / 6] * 4)


def test_trainer_wires_the_rule_from_the_config():
    from gapo_lite.training import TrainConfig
    from gapo_lite.training.trainer import make_scorer

    lists = make_scorer(TrainConfig(model="m", invalid_reward=0.0))
    assert isinstance(lists, FrequencyScorer) and lists.parse is clean_choice and lists.invalid_reward == 0.0
    assert make_scorer(TrainConfig(model="m", clean_answers=False)).answers(_group(["Owl Owl"])) == ["Owl"]
    mixed = make_scorer(TrainConfig(model="m", open_share=0.5))
    assert isinstance(mixed, TaskScorer) and set(mixed.scorers) == {"list", "open"}
    baseline = make_scorer(TrainConfig(model="m", open_share=0.5, reward="validity"))
    assert baseline(_group(["Apple", "Apple, Pear"], task="open", category="fruits")) == [1.0, -1.0]
    with pytest.raises(ValueError, match="open_share"):
        TrainConfig(model="m", open_share=1.5)


def test_mixed_data_keeps_the_open_suites_categories_out():
    from gapo_lite.data.list_prompts import categories
    from gapo_lite.data.mixed import build_mixed_dataset, is_open_row, open_training_categories
    from gapo_lite.data.open_prompts import EVAL_SUITE_OVERLAP
    from gapo_lite.eval.open_suite import WORD_LISTS

    assert set(WORD_LISTS.values()) <= set(EVAL_SUITE_OVERLAP)  # every word list the open suite validates with is an eval category
    cats = open_training_categories()
    assert cats and not set(cats) & set(EVAL_SUITE_OVERLAP) and set(cats) <= set(categories("train"))
    rows = list(build_mixed_dataset(40, open_share=0.25, seed=3))
    opens = [r for r in rows if r["task"] == "open"]
    assert len(opens) == 10 and [is_open_row(i, 0.25) for i in range(4)] == [False, False, False, True]
    assert {r["category"] for r in opens} <= set(cats) and all(r["items"] is None for r in opens)
    assert all(r["prompt"][0]["content"].endswith("Answer with the name only.") for r in opens)
    assert all(r["items"] and r["category"] in categories("train") for r in rows if r["task"] == "list")
    assert len({r["prompt_id"] for r in rows}) == 40
    assert list(build_mixed_dataset(40, open_share=0.25, seed=3)) == rows  # the same arguments give the same rows
    assert all(r["task"] == "list" for r in build_mixed_dataset(5, open_share=0.0))
    with pytest.raises(ValueError, match="open_share"):
        build_mixed_dataset(4, open_share=-0.1)
