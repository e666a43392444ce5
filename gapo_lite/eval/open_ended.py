"""Open-ended suite: "Name a city." and nine more prompts, many samples each; Unique@N after canonicalisation."""
from __future__ import annotations

from collections import Counter
from typing import Any

from gapo_lite.answers.canonical import canonicalize
from gapo_lite.eval.settings import SampleSettings, sample

SUFFIX = " Answer with the name only."
PROMPTS: dict[str, str] = {
    "city": "Name a city.",
    "country": "Name a country.",
    "celebrity": "Name a celebrity.",
    "animal": "Name an animal.",
    "food": "Name a food.",
    "colour": "Name a colour.",
    "first_name": "Name a first name.",
    "profession": "Name a profession.",
    "sport": "Name a sport.",
    "movie": "Name a movie.",
}


def score_answers(completions: list[str], *, fold_plurals: bool = False, top_k: int = 10) -> dict[str, Any]:
    """Unique@N (N = len(completions)) of canonical answers, valid rate (non-empty answers), top answers with shares.

    Shares are of all N samples, so the top shares plus the empty ones need not sum to one.
    """
    from gapo_lite.metrics import unique_at_n

    if not completions:
        raise ValueError("score_answers got no completions")
    answers = [canonicalize(c, fold_plurals=fold_plurals) for c in completions]
    counts = Counter(a for a in answers if a is not None)
    n = len(answers)
    return {
        "n": n,
        "unique": unique_at_n(answers, n),
        "valid_rate": sum(1 for a in answers if a is not None) / n,
        "top": [{"answer": a, "count": c, "share": c / n} for a, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k]],
        "answers": answers,
    }


def run_open(model, tokenizer, settings: SampleSettings, *, prompts: dict[str, str] | None = None, fold_plurals: bool = False, seed_offset: int = 202) -> dict[str, Any]:
    """Sample ``settings.n`` answers to each prompt; per-prompt and mean Unique@N."""
    prompts = PROMPTS if prompts is None else prompts
    if not prompts:
        raise ValueError("run_open needs at least one prompt")
    names = list(prompts)
    messages = [[{"role": "user", "content": prompts[name] + SUFFIX}] for name in names]
    completions = sample(model, tokenizer, messages, settings, seed_offset=seed_offset)
    per_prompt, samples = {}, []
    for name, texts in zip(names, completions):
        scored = score_answers(texts, fold_plurals=fold_plurals)
        answers = scored.pop("answers")
        per_prompt[name] = {"prompt": prompts[name] + SUFFIX, **scored}
        samples.extend({"prompt": name, "completion": t, "answer": a} for t, a in zip(texts, answers))
    return {
        "prompts": per_prompt,
        "mean_unique": sum(p["unique"] for p in per_prompt.values()) / len(per_prompt),
        "mean_valid_rate": sum(p["valid_rate"] for p in per_prompt.values()) / len(per_prompt),
        "n": settings.n,
        "fold_plurals": fold_plurals,
        "samples": samples,
        "completions": completions,
    }
