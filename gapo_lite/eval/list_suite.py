"""Lists suite: unseen 8-item lists, sampled many times; JSD to uniform, valid rate, histograms, position bias."""
from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from gapo_lite.data.list_prompts import TEMPLATES
from gapo_lite.eval.settings import SampleSettings, sample

DEFAULT_TEMPLATE = TEMPLATES[0]  # the first training wording


@dataclass(frozen=True)
class EvalList:
    """One evaluation list: its items (canonical order) and the shuffled orders it is shown in."""

    list_id: str
    category: str
    items: tuple[str, ...]
    orders: tuple[tuple[str, ...], ...]


def make_eval_lists(num_lists: int = 10, list_size: int = 8, num_orders: int = 4, seed: int = 0, split: str = "heldout") -> list[EvalList]:
    """``num_lists`` lists of ``list_size`` items from the held-out categories, each shown in ``num_orders`` orders.

    Categories are used in a seeded shuffled cycle (10 lists over 8 held-out categories: two categories come
    back with a fresh draw of items). The first order is the drawn order; the others are seeded shuffles.
    """
    from gapo_lite.data import categories

    if num_lists < 1 or num_orders < 1:
        raise ValueError(f"num_lists and num_orders must be >= 1, got {num_lists} and {num_orders}")
    pool = categories(split)  # type: ignore[arg-type]
    too_small = [name for name, items in pool.items() if len(items) < list_size]
    if list_size < 2 or too_small:
        raise ValueError(f"list_size={list_size} must be >= 2 and fit every {split} category (too small: {too_small})")
    rng = random.Random(f"gapo-lite/eval-lists/{seed}")
    names = sorted(pool)
    rng.shuffle(names)
    lists = []
    for i in range(num_lists):
        category = names[i % len(names)]
        items = rng.sample(pool[category], list_size)
        orders = [tuple(items)]
        for _ in range(num_orders - 1):
            shuffled = list(items)
            rng.shuffle(shuffled)
            orders.append(tuple(shuffled))
        lists.append(EvalList(f"list-{i:02d}", category, tuple(items), tuple(orders)))
    return lists


def split_counts(n: int, parts: int) -> list[int]:
    """``n`` split into ``parts`` near-equal counts, the larger ones first: split_counts(10, 4) == [3, 3, 2, 2]."""
    if n < 0 or parts < 1:
        raise ValueError(f"need n >= 0 and parts >= 1, got n={n}, parts={parts}")
    base, extra = divmod(n, parts)
    return [base + (1 if k < extra else 0) for k in range(parts)]


def position_bias_tv(position_shares: list[float]) -> float:
    """Total-variation distance of position shares from uniform: 0 unbiased, 1 - 1/L always the same position."""
    if not position_shares or not math.isclose(sum(position_shares), 1.0, abs_tol=1e-9):
        return math.nan
    uniform = 1.0 / len(position_shares)
    return 0.5 * sum(abs(p - uniform) for p in position_shares)


def score_list(choices: list[str | None], shown: list[tuple[str, ...]], items: tuple[str, ...]) -> dict[str, Any]:
    """Metrics for one list's parsed choices; ``shown[k]`` is the order sample ``k`` saw."""
    from gapo_lite import metrics

    counts = Counter(c for c in choices if c is not None)
    positions = metrics.position_bias(choices, shown)
    return {
        "n": len(choices),
        "jsd": metrics.jsd_to_uniform(choices, items),
        "valid_rate": metrics.valid_rate(choices, items),
        "entropy": metrics.normalized_entropy(choices, items) + 0.0,  # + 0.0 turns -0.0 into 0.0
        "counts": {item: counts.get(item, 0) for item in items},
        "invalid": sum(1 for c in choices if c is None or c not in items),
        "position_shares": positions,
        "position_tv": position_bias_tv(positions),
    }


def summarize(per_list: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over lists (JSD over lists with a valid answer) and position shares pooled over all valid choices."""
    jsds = [r["jsd"] for r in per_list if not math.isnan(r["jsd"])]
    width = max(len(r["position_shares"]) for r in per_list)
    pooled = [0.0] * width
    total_valid = 0
    for r in per_list:
        valid = r["n"] - r["invalid"]
        total_valid += valid
        for k, share in enumerate(r["position_shares"]):
            pooled[k] += share * valid
    pooled = [p / total_valid if total_valid else 0.0 for p in pooled]
    return {
        "mean_jsd": sum(jsds) / len(jsds) if jsds else math.nan,
        "lists_with_valid": len(jsds),
        "mean_valid_rate": sum(r["valid_rate"] for r in per_list) / len(per_list),
        "mean_entropy": sum(r["entropy"] for r in per_list) / len(per_list),
        "position_shares": pooled,
        "position_tv": position_bias_tv(pooled) if total_valid else math.nan,
    }


def reply_form(texts: list[str], ended: list[bool]) -> dict[str, float]:
    """How replies look, whatever they say: the share that ended their turn (``end_rate``), their mean length in
    words and its standard deviation (``mean_words``, ``sd_words``), and how many there were (``replies``)."""
    n = len(texts)
    if not n:
        return {"end_rate": math.nan, "mean_words": math.nan, "sd_words": math.nan, "replies": 0}
    words = [len(t.split()) for t in texts]
    mean = sum(words) / n
    return {"end_rate": sum(ended) / n, "mean_words": mean, "sd_words": math.sqrt(sum((w - mean) ** 2 for w in words) / n), "replies": n}


def run_lists(
    model, tokenizer, settings: SampleSettings, *, num_lists: int = 10, list_size: int = 8, num_orders: int = 4,
    template: str = DEFAULT_TEMPLATE, split: str = "heldout", clean: bool = True,
) -> dict[str, Any]:
    """Sample ``settings.n`` answers per list, spread over its orders, and score them. Returns metrics and samples.

    ``split`` picks the categories: ``heldout`` (the paper's protocol) or ``train``. ``clean`` (the rule the
    GAPO reward trains with, ``gapo_lite.answers.clean``): a reply counts as its item only when it ended its
    turn within ``settings.max_new_tokens`` and is the item alone; ``lenient`` beside it holds JSD and valid
    rate by the first item found (the rule of records made before, and of ``clean=False``)."""
    from gapo_lite.answers import parse_choice
    from gapo_lite.answers.clean import clean_choice
    from gapo_lite.data import format_prompt

    lists = make_eval_lists(num_lists, list_size, num_orders, settings.seed, split=split)
    counts = split_counts(settings.n, num_orders)
    per_order = max(counts)
    prompts = [[{"role": "user", "content": format_prompt(list(order), lst.category, template)}] for lst in lists for order in lst.orders]
    completions, finished = sample(model, tokenizer, prompts, settings, n=per_order, seed_offset=101, return_ended=True)
    per_list, lenient, samples = [], [], []
    for i, lst in enumerate(lists):
        choices: list[str | None] = []
        first_found: list[str | None] = []
        shown: list[tuple[str, ...]] = []
        for k, order in enumerate(lst.orders):
            row = i * num_orders + k
            for text, ended in zip(completions[row][: counts[k]], finished[row][: counts[k]]):
                found = parse_choice(text, lst.items)
                choice = (clean_choice(text, lst.items) if ended else None) if clean else found
                choices.append(choice)
                first_found.append(found)
                shown.append(order)
                samples.append({"list_id": lst.list_id, "order": k, "completion": text, "ended": ended, "choice": choice, "lenient_choice": found})
        per_list.append(
            {
                "list_id": lst.list_id,
                "category": lst.category,
                "items": list(lst.items),
                "orders": [list(o) for o in lst.orders],
                **score_list(choices, shown, lst.items),
            }
        )
        lenient.append(score_list(first_found, shown, lst.items))
    pressure = pressure_by_prompt(per_list, samples)
    form = reply_form([x["completion"] for x in samples], [x["ended"] for x in samples])
    old = summarize(lenient)
    return {"lists": per_list, **summarize(per_list), **form, "clean": clean, "lenient": {"mean_jsd": old["mean_jsd"], "mean_valid_rate": old["mean_valid_rate"]},
            "pressure": pressure, "template": template, "num_orders": num_orders, "samples": samples}


def pressure_by_prompt(per_list: list[dict[str, Any]], samples: list[dict[str, Any]], invalid_reward: float = -1.0,
                       invalid_margin: float | None = None) -> dict[str, Any]:
    """The mode-pressure diagnostic (:mod:`gapo_lite.diagnostics`) per list and overall.

    GAPO's groups are the samples of ONE prompt, so the pressure is read per shown prompt (a list in one
    order: a model that always answers the first position has a different favourite in each order), then
    averaged over a list's orders and over lists. ``invalid_margin``: an invalid answer scored at the favourite's
    reward minus it (``TrainConfig.invalid_margin``) instead of ``invalid_reward``."""
    from gapo_lite.diagnostics import mean_reading, read_pressure, verdict

    by_prompt: dict[str, dict[int, list[str | None]]] = {}
    for s in samples:
        by_prompt.setdefault(s["list_id"], {}).setdefault(s["order"], []).append(s["choice"])
    lists_out, readings = [], []
    for lst in per_list:
        items = lst["items"]
        mine, tallies = [], []
        for _, choices in sorted(by_prompt.get(lst["list_id"], {}).items()):
            counts = [sum(c == item for c in choices) for item in items]
            tallies.append({"counts": counts, "invalid": len(choices) - sum(counts)})
            reading = read_pressure(counts, len(choices) - sum(counts), invalid_reward, invalid_margin)
            if reading is not None:
                mine.append(reading)
        readings += mine
        mean = mean_reading(mine).__dict__ if mine else None
        lists_out.append({"list_id": lst["list_id"], "prompts_spreading": sum(r.spreads for r in mine), "prompts": len(mine), "tallies": tallies, **(mean or {})})
    overall = mean_reading(readings) if readings else None
    return {
        "invalid_reward": invalid_reward,
        "invalid_margin": invalid_margin,
        "lists": lists_out,
        "mean": overall.__dict__ if overall else None,
        "prompts_spreading": sum(r.spreads for r in readings),
        "prompts": len(readings),
        "verdict": verdict(overall) if overall else "No valid answer was sampled: GAPO has nothing to spread (every completion scores the invalid reward).",
    }
