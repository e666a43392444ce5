"""Eval metrics with hand-computed values: lists, open-ended, creative, sweep coherence, report helpers."""
import json
import math
import random

import pytest

from gapo_lite.eval.creative import mean_pairwise_cosine_distance, score_texts, self_bleu
from gapo_lite.eval.list_suite import make_eval_lists, position_bias_tv, score_list, split_counts, summarize
from gapo_lite.eval.open_suite import PROMPTS, score_answers
from gapo_lite.eval.report import comparison, headline, jsonable
from gapo_lite.eval.runner import plan_variants
from gapo_lite.eval.sweep import parse_temperatures

# ------------------------------------------------------------------------------------------------ lists


def test_score_list_hand_values():
    items = ("A", "B")
    choices = ["A", "A", "B", None]
    shown = [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]
    r = score_list(choices, shown, items)
    assert r["counts"] == {"A": 2, "B": 1}
    assert r["invalid"] == 1
    assert r["valid_rate"] == pytest.approx(0.75)
    # p = (2/3, 1/3), uniform q = (1/2, 1/2), m = (7/12, 5/12); JSD in bits
    kl_pm = 2 / 3 * math.log2(8 / 7) + 1 / 3 * math.log2(4 / 5)
    kl_qm = 0.5 * math.log2(6 / 7) + 0.5 * math.log2(6 / 5)
    assert r["jsd"] == pytest.approx(0.5 * kl_pm + 0.5 * kl_qm)
    assert r["jsd"] == pytest.approx(0.020721, abs=1e-6)
    # positions: A first (0), A second (1), B second (1) -> shares (1/3, 2/3), TV = 1/6
    assert r["position_shares"] == pytest.approx([1 / 3, 2 / 3])
    assert r["position_tv"] == pytest.approx(1 / 6)
    # entropy of (2/3, 1/3) over log 2
    assert r["entropy"] == pytest.approx(-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)) / math.log(2))


def test_score_list_uniform_and_collapsed():
    items = ("A", "B", "C", "D")
    orders = [("A", "B", "C", "D"), ("D", "C", "B", "A")]
    uniform = score_list(["A", "B", "C", "D"] * 2, [orders[0]] * 4 + [orders[1]] * 4, items)
    assert uniform["jsd"] == pytest.approx(0.0, abs=1e-12)
    assert uniform["position_tv"] == pytest.approx(0.0)
    collapsed = score_list(["A"] * 8, [orders[0]] * 8, items)
    # JSD of a point mass vs uniform over 4: 1/2 KL(p||m) + 1/2 KL(q||m), m = (5/8, 1/8, 1/8, 1/8)
    expected = 0.5 * math.log2(8 / 5) + 0.5 * (0.25 * math.log2(0.25 / (5 / 8)) + 3 * 0.25 * math.log2(2))
    assert collapsed["jsd"] == pytest.approx(expected)
    assert collapsed["position_tv"] == pytest.approx(0.75)  # always first: 1 - 1/L


def test_position_bias_tv_values():
    assert position_bias_tv([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.75)
    assert position_bias_tv([0.25] * 4) == pytest.approx(0.0)
    assert position_bias_tv([0.5, 0.5, 0.0, 0.0]) == pytest.approx(0.5)
    assert math.isnan(position_bias_tv([0.0, 0.0]))  # no valid choice


def test_summarize_weights_positions_by_valid_count():
    a = {"n": 4, "invalid": 0, "jsd": 0.2, "valid_rate": 1.0, "entropy": 0.5, "position_shares": [1.0, 0.0]}
    b = {"n": 4, "invalid": 2, "jsd": 0.4, "valid_rate": 0.5, "entropy": 1.0, "position_shares": [0.0, 1.0]}
    c = {"n": 4, "invalid": 4, "jsd": math.nan, "valid_rate": 0.0, "entropy": 0.0, "position_shares": [0.0, 0.0]}
    s = summarize([a, b, c])
    assert s["mean_jsd"] == pytest.approx(0.3)  # lists without a valid answer are left out of the JSD mean
    assert s["lists_with_valid"] == 2
    assert s["mean_valid_rate"] == pytest.approx(0.5)
    assert s["position_shares"] == pytest.approx([4 / 6, 2 / 6])
    assert s["position_tv"] == pytest.approx(1 / 6)


def test_split_counts():
    assert split_counts(10, 4) == [3, 3, 2, 2]
    assert split_counts(8, 4) == [2, 2, 2, 2]
    assert split_counts(3, 4) == [1, 1, 1, 0]
    assert sum(split_counts(100, 4)) == 100
    with pytest.raises(ValueError):
        split_counts(5, 0)


def test_eval_lists_are_heldout_deterministic_and_shuffled():
    from gapo_lite.data import categories

    heldout = categories("heldout")
    lists = make_eval_lists(10, 8, 4, seed=0)
    assert len(lists) == 10
    assert {lst.category for lst in lists[:8]} == set(heldout)  # every held-out category before any repeats
    for lst in lists:
        assert len(lst.items) == 8 and len(set(lst.items)) == 8
        assert set(lst.items) <= set(heldout[lst.category])
        assert len(lst.orders) == 4
        assert all(sorted(order) == sorted(lst.items) for order in lst.orders)
    assert len({o for lst in lists for o in lst.orders}) > 10  # orders really differ
    assert make_eval_lists(10, 8, 4, seed=0) == lists
    assert make_eval_lists(10, 8, 4, seed=1) != lists
    with pytest.raises(ValueError, match="list_size"):
        make_eval_lists(2, 99, 4)


# ------------------------------------------------------------------------------------------------ open-ended


def test_score_answers_hand_values():
    r = score_answers(["Paris", "paris.", "Sure! London", "", "**Rome**"])
    assert r["n"] == 5
    assert r["unique"] == 3
    assert r["answer_rate"] == r["valid_rate"] == pytest.approx(0.8)
    assert r["unique_valid"] == 3
    assert r["top"] == [
        {"answer": "paris", "count": 2, "share": 0.4},
        {"answer": "london", "count": 1, "share": 0.2},
        {"answer": "rome", "count": 1, "share": 0.2},
    ]
    assert score_answers(["cats", "Cat"], fold_plurals=True)["unique"] == 1
    assert score_answers(["cats", "Cat"])["unique"] == 2
    with pytest.raises(ValueError):
        score_answers([])


def test_ten_open_prompts():
    assert len(PROMPTS) == 10
    assert {"city", "country", "celebrity", "animal", "food", "colour", "first_name", "profession", "sport", "movie"} == set(PROMPTS)


# ------------------------------------------------------------------------------------------------ creative


def _fixed(vectors):
    def embed(texts):
        assert len(texts) == len(vectors)
        return vectors

    return embed


def test_cosine_distance_on_hand_vectors():
    # pairs: (e1, e2) cos 0 -> 1; (e1, e3) and (e2, e3) cos 1/sqrt2 -> 1 - 0.70711
    d = mean_pairwise_cosine_distance(["a", "b", "c"], _fixed([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    assert d == pytest.approx((1 + 2 * (1 - 1 / math.sqrt(2))) / 3)
    assert d == pytest.approx(0.528595, abs=1e-6)
    assert mean_pairwise_cosine_distance(["a", "b"], _fixed([[2.0, 1.0], [4.0, 2.0]])) == pytest.approx(0.0, abs=1e-12)
    assert mean_pairwise_cosine_distance(["a", "b"], _fixed([[1.0, 0.0], [-3.0, 0.0]])) == pytest.approx(2.0)


def test_cosine_distance_rejects_bad_input():
    with pytest.raises(ValueError, match="two texts"):
        mean_pairwise_cosine_distance(["only"], _fixed([[1.0]]))
    with pytest.raises(ValueError, match="zero vector"):
        mean_pairwise_cosine_distance(["a", "b"], _fixed([[0.0, 0.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        mean_pairwise_cosine_distance(["a", "b"], lambda texts: [[1.0, 0.0]])


def test_self_bleu_hand_values():
    assert self_bleu(["the cat sat on the mat"] * 3) == pytest.approx(1.0)
    assert self_bleu(["alpha beta gamma", "delta epsilon zeta"]) == pytest.approx(0.0)
    # "a b c d" vs "a b c e": precisions 3/4, 2/3, 1/2 and 0/1 -> exp smoothing 1/(2*1); equal lengths, BP = 1
    assert self_bleu(["a b c d", "a b c e"]) == pytest.approx((0.75 * (2 / 3) * 0.5 * 0.5) ** 0.25)


def test_self_bleu_matches_sacrebleu_sentence_bleu():
    import sacrebleu

    rng = random.Random(0)
    words = "the cat sat on a mat dog ran far away in the park sun moon star".split()
    for _ in range(15):
        texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(2, 6))]
        naive = sum(sacrebleu.sentence_bleu(t, texts[:i] + texts[i + 1 :]).score for i, t in enumerate(texts)) / len(texts) / 100
        assert self_bleu(texts) == pytest.approx(naive, abs=1e-12)


def test_score_texts_identical_vs_distinct():
    same = score_texts(["a b c"] * 3, _fixed([[1.0, 2.0]] * 3))
    assert same["embedding_distance"] == pytest.approx(0.0, abs=1e-12)
    assert same["one_minus_self_bleu"] == pytest.approx(0.0, abs=1e-12)
    distinct = score_texts(["red fox runs", "blue whale swims", "green frog jumps"], _fixed([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    assert distinct["embedding_distance"] > 0.5
    assert distinct["one_minus_self_bleu"] == pytest.approx(1.0)
    assert distinct["mean_words"] == pytest.approx(3.0)


# ------------------------------------------------------------------------------------------------ sweep


class _NextTokenModel:
    """A stand-in causal LM that is certain the next token id is the current id + 1."""

    def __init__(self, vocab: int):
        import torch

        self.vocab = vocab
        self.training = False
        self._p = torch.nn.Parameter(torch.zeros(1))

    def parameters(self):
        yield self._p

    def eval(self):
        return self

    def __call__(self, input_ids, attention_mask):
        import torch

        logits = torch.full((*input_ids.shape, self.vocab), -30.0)
        logits.scatter_(-1, ((input_ids + 1) % self.vocab).unsqueeze(-1), 0.0)
        return type("Out", (), {"logits": logits})()


def test_token_logprobs_alignment():
    from gapo_lite.demo.tiny import build_tokenizer
    from gapo_lite.eval.sweep import coherence, token_logprobs

    tok = build_tokenizer(["w0", "w1", "w2", "w3", "w4", "w5"])
    ids = tok.convert_tokens_to_ids(["w0", "w1", "w2", "w3", "w4", "w5"])
    assert ids == list(range(ids[0], ids[0] + 6))
    model = _NextTokenModel(len(tok))
    prompts = ["w0 w1", "w0 w1", "w0 w1", "w2"]
    completions = ["w2 w3 w4", "w3 w2", "", "w3 w4 w5"]
    scores = token_logprobs(model, tok, prompts, completions, batch_size=3)
    wrong = -30.0 - math.log(1 + (len(tok) - 1) * math.exp(-30.0))  # log-softmax of a -30 logit
    assert scores[0] == pytest.approx(0.0, abs=1e-6)  # every completion token is the predicted one
    assert scores[1] == pytest.approx(wrong, abs=1e-4)  # w3 after w1, w2 after w3: both wrong
    assert scores[2] is None  # empty completion: no token to score
    assert scores[3] == pytest.approx(0.0, abs=1e-6)  # different prompt length in the same batch
    assert coherence(model, tok, ["w0 w1", "w2"], [["w2 w3 w4", "w3 w2"], [""]]) == pytest.approx(wrong / 2, abs=1e-4)


def test_parse_temperatures():
    assert parse_temperatures("0.5,0.7, 0.9,1.1,1.3") == (0.5, 0.7, 0.9, 1.1, 1.3)
    for bad in ("", "a,b", "-0.1"):
        with pytest.raises(ValueError):
            parse_temperatures(bad)


# ------------------------------------------------------------------------------------------------ report / variants


def test_jsonable_is_strict_json():
    import numpy as np

    data = jsonable({"a": np.float32(0.5), "b": float("nan"), "c": (1, np.int64(2)), "d": [float("inf")]})
    assert data == {"a": 0.5, "b": None, "c": [1, 2], "d": [None]}
    json.dumps(data, allow_nan=False)


def test_comparison_deltas():
    results = {
        "variants": {
            "base": {"open": {"n": 4, "mean_unique": 2.0, "mean_answer_rate": 1.0, "mean_unique_valid": 1.0, "mean_valid_rate": 0.5}},
            "adapter": {"open": {"n": 4, "mean_unique": 3.5, "mean_answer_rate": 0.75, "mean_unique_valid": 3.0, "mean_valid_rate": 0.75}},
        }
    }
    rows = {r["metric"]: r for r in comparison(results)["rows"]}
    assert rows["Open: mean Unique@4 (raw replies)"]["delta"] == pytest.approx(1.5)
    assert rows["Open: non-empty answer rate"]["delta"] == pytest.approx(-0.25)
    assert rows["Open: mean Unique@4 over valid answers"]["delta"] == pytest.approx(2.0)
    assert rows["Open: valid answer rate"]["delta"] == pytest.approx(0.25)
    bench = headline({"bench": {"gsm8k": {"status": "skipped", "reason": "no hub"}}})
    assert bench == [("Bench gsm8k", "skipped", "")]


def test_plan_variants(tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    other = tmp_path / "other"
    other.mkdir()
    assert [v.label for v in plan_variants("m")] == ["base"]
    base, tuned = plan_variants("m", str(adapter))
    assert (base.adapter, tuned.adapter) == (None, str(adapter))
    first, second = plan_variants("m", compare=str(other))
    assert (first.label, second.label, second.model, second.adapter) == ("base", "compare", str(other), None)
    first, second = plan_variants("m", compare=str(adapter))
    assert (second.model, second.adapter) == ("m", str(adapter))
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        plan_variants("m", str(other))
    with pytest.raises(ValueError, match="same"):
        plan_variants("m", str(adapter), compare=str(adapter))
