"""List prompts mixed with open-ended naming prompts, for training a model that keeps its answers short and
spread on prompts with no list to copy from.

The open prompts ("Name a fruit. Answer with the name only.") are worded like the open-ended evaluation
suite's, but their categories are the training categories the suite does NOT ask about
(:data:`~gapo_lite.data.open_prompts.EVAL_SUITE_OVERLAP` is left out), so the suite still measures prompts RL
never saw. Each open category's word list is its vocabulary (the reward's validator and its L).
"""
from __future__ import annotations

from gapo_lite.data.list_prompts import Split, build_list_dataset, categories
from gapo_lite.data.open_prompts import ANSWER_ONLY, EVAL_SUITE_OVERLAP, build_open_ended_dataset

TASK_COLUMN = "task"  # "list" or "open": which scorer a row's group goes to (gapo_lite.rewards.TaskScorer)


def open_training_categories(split: Split = "train") -> list[str]:
    """The categories of ``split`` that open prompts may ask about: all but the open-ended suite's."""
    return sorted(set(categories(split)) - set(EVAL_SUITE_OVERLAP))


def is_open_row(i: int, open_share: float) -> bool:
    """Whether row ``i`` of a mix is an open prompt: the open rows are spread evenly, ``open_share`` of every run of rows."""
    return int((i + 1) * open_share + 1e-9) > int(i * open_share + 1e-9)


def build_mixed_dataset(
    num_prompts: int,
    *,
    open_share: float,
    split: Split = "train",
    min_items: int = 4,
    max_items: int = 12,
    seed: int = 0,
):
    """A ``datasets.Dataset`` of ``num_prompts`` rows, ``open_share`` of them open prompts (evenly spread), the
    rest list prompts as :func:`~gapo_lite.data.build_list_dataset` makes them. Columns: ``prompt``,
    ``task`` ("list" / "open"), ``items`` (None on open rows), ``category``, ``prompt_id`` (unique).

    TRL's sampler shuffles the rows, so ``open_share`` is each step's share on average, not exactly.
    """
    from datasets import Dataset

    if not 0.0 <= open_share <= 1.0:
        raise ValueError(f"open_share must be in [0, 1], got {open_share}")
    if num_prompts < 1:
        raise ValueError(f"num_prompts must be >= 1, got {num_prompts}")
    kinds = [is_open_row(i, open_share) for i in range(num_prompts)]
    n_open = sum(kinds)
    lists = iter(build_list_dataset(num_prompts - n_open, split=split, min_items=min_items, max_items=max_items, seed=seed)) if n_open < num_prompts else iter(())
    opens = iter(build_open_ended_dataset(n_open, split=split, names=open_training_categories(split), suffix=ANSWER_ONLY, seed=seed)) if n_open else iter(())
    rows = []
    for is_open in kinds:
        row = dict(next(opens) if is_open else next(lists))
        rows.append({"prompt": row["prompt"], TASK_COLUMN: "open" if is_open else "list", "items": row.get("items"),
                     "category": row["category"], "prompt_id": row["prompt_id"]})
    return Dataset.from_list(rows)
