"""GroupReward: regrouping TRL's rows, size checks, chat/text completions, metrics, two processes."""
import os
import socket

import pytest
import torch.multiprocessing as mp

from gapo_lite.rewards import Group, GroupReward, frequency_aware_rewards

ITEMS = ["Owl", "Cat", "Dog"]


def trl_call(answers_by_group, chat=True):
    """Build TRL-style kwargs: rows in generation order, one group after another."""
    prompts, completions, ids, items = [], [], [], []
    for g, answers in enumerate(answers_by_group):
        prompt = [{"role": "user", "content": f"prompt {g}"}]
        for a in answers:
            prompts.append(prompt)
            completions.append([{"role": "assistant", "content": a}] if chat else a)
            ids.append(f"p{g}")
            items.append(ITEMS)
    return dict(prompts=prompts, completions=completions, prompt_id=ids, items=items)


def test_rewards_equal_per_group_frequency_rewards():
    groups = [["Owl", "Owl", "Cat", "nope"], ["Dog", "Dog", "Dog", "Dog"]]
    hook = GroupReward(num_generations=4)
    got = hook(**trl_call(groups))
    expected = frequency_aware_rewards(["Owl", "Owl", "Cat", None], ITEMS) + frequency_aware_rewards(["Dog"] * 4, ITEMS)
    assert got == pytest.approx(expected)
    assert hook(**trl_call(groups, chat=False)) == pytest.approx(expected)


def test_fallback_groups_by_prompt_text():
    kwargs = trl_call([["Owl", "Cat"], ["Owl", "Owl"]])
    del kwargs["prompt_id"]
    got = GroupReward(num_generations=2)(**kwargs)
    assert got == pytest.approx([1 - (1 / 2 - 1 / 3)] * 2 + [1 - (1 - 1 / 3)] * 2)


def test_wrong_group_size_names_sizes():
    with pytest.raises(ValueError, match=r"exactly 4 .*sizes: 3 x1, 4 x1"):
        GroupReward(num_generations=4)(**trl_call([["Owl"] * 4, ["Cat"] * 3]))
    with pytest.raises(ValueError, match="sizes"):
        GroupReward()(**trl_call([["Owl"] * 2, ["Cat"] * 3]))


def test_a_group_of_two_prompts_is_an_error():
    kwargs = trl_call([["Owl", "Cat"], ["Dog", "Dog"]])
    kwargs["prompt_id"] = ["p0", "p1", "p1", "p0"]
    with pytest.raises(ValueError, match=r"rows 0-1 should be one prompt's 2 completions but hold 2 prompts"):
        GroupReward(num_generations=2)(**kwargs)
    with pytest.raises(ValueError, match="unique per prompt"):  # without num_generations a group is a run of one prompt
        GroupReward()(**kwargs)


@pytest.mark.parametrize("ids", [["p0", "p0", "p1"], ["p0", "p1", "p0"]])
def test_a_prompt_drawn_twice_in_one_batch_is_two_groups_as_in_trl(ids):
    """TRL draws dataset rows, so a dataset that holds one prompt twice (one instruction repeated, or the same
    list shown again) can put both copies in one batch, side by side or apart: each copy is its own group of
    num_generations, scored alone, as TRL's advantages group them."""
    groups = [["Owl", "Owl"], ["Cat", "Owl"], ["Dog", "Dog"]]
    kwargs = trl_call(groups)
    kwargs["prompt_id"] = [i for i in ids for _ in range(2)]
    kwargs["prompts"] = [[{"role": "user", "content": i}] for i in kwargs["prompt_id"]]
    expected = [r for g in groups for r in frequency_aware_rewards(g, ITEMS)]
    assert GroupReward(num_generations=2)(**kwargs) == pytest.approx(expected)
    del kwargs["prompt_id"]  # keyed by the prompt's text
    assert GroupReward(num_generations=2)(**kwargs) == pytest.approx(expected)


def test_custom_scorer_sees_whole_groups_and_columns():
    seen = []

    def scorer(group: Group):
        seen.append((group.key, len(group.completions), group.columns["items"]))
        return [float(len(c)) for c in group.completions]

    got = GroupReward(scorer, num_generations=2, name="lengths")(**trl_call([["Owl", "Cat!"], ["Dog", "x"]]))
    assert got == [3.0, 4.0, 3.0, 1.0]
    assert seen == [("p0", 2, ITEMS), ("p1", 2, ITEMS)]


def test_scorer_returning_wrong_count_is_an_error():
    with pytest.raises(ValueError, match="returned 1 rewards"):
        GroupReward(lambda g: [0.0], num_generations=2)(**trl_call([["Owl", "Cat"]]))


def test_logs_group_metrics():
    logged = {}
    hook = GroupReward(num_generations=4)
    hook(**trl_call([["Owl", "Owl", "Cat", "zz"], ["Dog"] * 4]), log_metric=lambda k, v: logged.setdefault(k, v))
    assert logged["gapo_frequency/valid_rate"] == pytest.approx(7 / 8)
    assert logged["gapo_frequency/distinct_per_group"] == pytest.approx((2 + 1) / 2)
    # entropy of (2/3, 1/3) in bits, and 0 for the all-Dog group
    import math

    h = -(2 / 3) * math.log2(2 / 3) - (1 / 3) * math.log2(1 / 3)
    assert logged["gapo_frequency/group_entropy"] == pytest.approx(h / 2)
    # the favourite's reward minus the group's mean: Owl 1 - (2/3 - 1/3) against (2 Owl + Cat 1 + zz -1) / 4 in the
    # first group (the -1 makes the favourite pay: positive), 0 in the all-Dog group
    owl = 1 - (2 / 3 - 1 / 3)
    assert logged["gapo_frequency/mode_pressure"] == pytest.approx((owl - (2 * owl + 1 - 1) / 4 + 0) / 2)


def test_logged_mode_pressure_is_negative_when_gapo_spreads():
    logged = {}
    GroupReward(num_generations=4)(**trl_call([["Owl", "Owl", "Cat", "Dog"]]), log_metric=lambda k, v: logged.setdefault(k, v))
    assert logged["gapo_frequency/mode_pressure"] == pytest.approx(0.75 - (2 * 0.75 + 1 + 1) / 4)


GROUPS = [["Owl", "Owl", "Cat"], ["Dog", "zz", "Dog"], ["Cat", "Owl", "Dog"], ["Owl"] * 3]


def _worker(rank, world, port, lo, hi, out):
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        full = trl_call(GROUPS)
        local = {k: v[lo[rank] : hi[rank]] for k, v in full.items()}
        out[rank] = GroupReward(num_generations=3)(**local)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow  # spawns two torch processes: ~13 s of the default run's 3-minute budget
def test_two_processes_split_groups_get_single_process_rewards():
    # 12 rows over 2 processes: rank 0 rows 0-5 and rank 1 rows 6-11 -> groups 1 and 3 of size 3 are intact,
    # but use an uneven 5/7 split too so a group straddles the boundary.
    single = GroupReward(num_generations=3)(**trl_call(GROUPS))
    for split in (6, 5, 4):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        manager = mp.Manager()
        out = manager.dict()
        mp.spawn(_worker, args=(2, port, [0, split], [split, 12], out), nprocs=2, join=True)
        assert out[0] + out[1] == pytest.approx(single), split


def test_every_scorer_is_a_group_scorer_with_a_name_of_its_own():
    """One protocol, GroupScorer: each scorer scores one group and says its answers; the hook logs under its name."""
    import numpy as np

    from gapo_lite.rewards import (
        AccuracyDiversityScorer,
        AccuracyScorer,
        CategoryScorer,
        FrequencyScorer,
        GroupScorer,
        InvalidBelowMode,
        OpenEndedFrequencyScorer,
        SemanticScorer,
        TaskScorer,
        ValidityScorer,
    )

    own = [FrequencyScorer(), ValidityScorer(), OpenEndedFrequencyScorer(["Apple"]), CategoryScorer({"fruit": ["Apple"]}),
           SemanticScorer(embed=lambda texts: np.eye(len(texts))), AccuracyScorer(), AccuracyDiversityScorer(cluster=lambda texts: list(range(len(texts)))),
           TaskScorer({"list": FrequencyScorer()})]
    assert all(isinstance(s, GroupScorer) for s in [*own, InvalidBelowMode(FrequencyScorer())])
    names = [s.name for s in own]
    assert len(set(names)) == len(names), names
    group = Group("p0", "Pick one.", ["Owl", "Owl", "Bat"], {"items": ITEMS})
    assert ValidityScorer()(group) == [1.0, 1.0, -1.0] and list(ValidityScorer().answers(group)) == ["Owl", "Owl", None]


def test_a_scorer_without_name_or_answers_is_wrapped_and_keeps_what_it_has():
    class SameAnswer:  # answers, but no name
        def __call__(self, group):
            return [0.0] * len(group.completions)

        def answers(self, group):
            return ["same"] * len(group.completions)

    logged = {}
    hook = GroupReward(SameAnswer(), num_generations=2)
    hook(**trl_call([["Owl", "Cat"]]), log_metric=lambda k, v: logged.setdefault(k, v))
    assert hook.__name__ == "gapo" and logged["gapo/distinct_per_group"] == 1.0
    logged.clear()
    GroupReward(lambda g: [0.0, 0.0], num_generations=2)(**trl_call([["Owl", "Cat"]]), log_metric=lambda k, v: logged.setdefault(k, v))
    assert logged["gapo/distinct_per_group"] == 2.0  # a plain function's answers: the replies' text
