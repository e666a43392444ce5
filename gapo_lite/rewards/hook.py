"""``GroupReward``: turns a group-level scorer into the per-completion reward function TRL expects."""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from gapo_lite.rewards.group import Group, GroupScorer, as_group_scorer, group_metrics
from gapo_lite.rewards.list_scorer import FrequencyScorer

# TRL passes these to every reward function; they are not dataset columns.
_TRL_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments", "completion_ids"})


def completion_text(completion: Any) -> str:
    """Text of a TRL completion: a plain string, or chat messages (the assistant turns are joined)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content") or "")
    if isinstance(completion, (list, tuple)):
        return "".join(completion_text(m) for m in completion if not isinstance(m, dict) or m.get("role", "assistant") == "assistant")
    raise TypeError(f"completion of type {type(completion).__name__} is neither text nor chat messages")


def _key_of(prompt_id: Any, prompt: Any) -> str:
    if prompt_id is not None:
        return str(prompt_id)
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)


def _process_info() -> tuple[int, int]:
    """(rank, world size) of the torch.distributed job, or (0, 1) outside one."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return 0, 1
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _all_gather(obj: Any, world: int) -> list[Any]:
    import torch.distributed as dist

    out: list[Any] = [None] * world
    dist.all_gather_object(out, obj)
    return out


class GroupReward:
    """A TRL reward function that scores completions a whole group at a time.

    TRL calls reward functions with one row per completion, each prompt's ``num_generations`` rows side by side.
    ``GroupReward`` cuts the rows into groups where TRL's advantages do (every ``num_generations`` rows, checking
    that each group holds one prompt, by the ``prompt_id`` column or the prompt itself), so a prompt the dataset
    holds twice is two groups as in TRL; without ``num_generations`` a group is a run of equal prompts. It hands
    every group to ``scorer`` (a :class:`~gapo_lite.rewards.group.GroupScorer`, or a plain function ``group ->
    rewards``) and returns the rewards in TRL's row order. Under
    ``torch.distributed`` it gathers the whole generation batch first, so a group split across processes
    is scored whole and every process gets exactly the rewards a single process would.
    """

    def __init__(
        self,
        scorer: GroupScorer | Callable[[Group], Sequence[float]] | None = None,
        *,
        num_generations: int | None = None,
        group_column: str = "prompt_id",
        name: str | None = None,
        log_metrics: bool = True,
        end_token_ids: Sequence[int] | None = None,
    ) -> None:
        if scorer is None:
            scorer = FrequencyScorer()
        if num_generations is not None and num_generations < 1:
            raise ValueError(f"num_generations must be >= 1, got {num_generations}")
        self.scorer = as_group_scorer(scorer)
        self.num_generations = num_generations
        self.group_column = group_column
        self.log_metrics = log_metrics
        self.end_token_ids = None if end_token_ids is None else frozenset(int(i) for i in end_token_ids)
        self.__name__ = name or self.scorer.name  # TRL logs each reward function by its __name__

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        if len(prompts) != len(completions):
            raise ValueError(f"got {len(prompts)} prompts but {len(completions)} completions")
        rows = self._local_rows(prompts, completions, kwargs)
        rank, world = _process_info()
        parts = _all_gather(rows, world) if world > 1 else [rows]
        all_rows = [r for part in parts for r in part]
        offset = sum(len(part) for part in parts[:rank])
        groups = self._split_groups(all_rows)
        local = range(offset, offset + len(rows))
        rewards: list[float] = [math.nan] * len(rows)
        metrics_groups: list[tuple[Group, list[Hashable | None], list[float]]] = []
        for start, group in groups:
            stop = start + len(group.completions)
            if stop <= local.start or start >= local.stop:
                continue  # another process returns these rewards
            scores = list(self.scorer(group))
            if len(scores) != len(group.completions):
                raise ValueError(
                    f"scorer {self.__name__!r} returned {len(scores)} rewards for group {group.key!r} "
                    f"of {len(group.completions)} completions"
                )
            for i, s in enumerate(scores, start):
                if i in local:
                    rewards[i - offset] = float(s)
            if self.log_metrics:
                metrics_groups.append((group, list(self.scorer.answers(group)), [float(x) for x in scores]))
        log_metric = kwargs.get("log_metric")
        if log_metric is not None and metrics_groups:
            for name, value in group_metrics([a for _, a, _ in metrics_groups], [r for _, _, r in metrics_groups]).items():
                log_metric(f"{self.__name__}/{name}", value)
            ends = [e for g, _, _ in metrics_groups if g.ended is not None for e in g.ended]
            if ends:
                log_metric(f"{self.__name__}/end_rate", sum(ends) / len(ends))
        return rewards

    def _ended(self, completion_ids: Any) -> list[bool] | None:
        """Per row: did the completion end its turn (its last id an end token)? ``None`` when not known."""
        if self.end_token_ids is None or completion_ids is None:
            return None
        return [bool(len(ids)) and int(ids[-1]) in self.end_token_ids for ids in completion_ids]

    def _local_rows(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        columns = {k: v for k, v in kwargs.items() if k not in _TRL_KWARGS and isinstance(v, (list, tuple)) and len(v) == len(prompts)}
        ids = columns.get(self.group_column)
        ended = self._ended(kwargs.get("completion_ids"))
        rows = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions)):
            rows.append(
                {
                    "key": _key_of(ids[i] if ids is not None else None, prompt),
                    "prompt": prompt,
                    "completion": completion_text(completion),
                    "ended": None if ended is None else ended[i],
                    "columns": {k: v[i] for k, v in columns.items()},
                }
            )
        return rows

    def _split_groups(self, rows: list[dict[str, Any]]) -> list[tuple[int, Group]]:
        """(start index, group) for each group of ``rows``: every ``num_generations`` rows when it is known (TRL's
        grouping), else contiguous runs of equal keys; checks sizes and that each group holds one prompt."""
        if self.num_generations is not None:
            bounds = [(start, min(start + self.num_generations, len(rows))) for start in range(0, len(rows), self.num_generations)]
            for start, stop in bounds:
                keys = list(dict.fromkeys(r["key"] for r in rows[start:stop]))
                if len(keys) > 1:
                    raise ValueError(
                        f"rows {start}-{stop - 1} should be one prompt's {self.num_generations} completions but hold {len(keys)} prompts "
                        f"({keys[0]!r}, {keys[1]!r}, ...); is num_generations the trainer's?"
                    )
        else:
            bounds, seen, start = [], set(), 0
            while start < len(rows):
                key = rows[start]["key"]
                if key in seen:
                    raise ValueError(
                        f"prompt {key!r} appears in two separate runs of the batch; TRL keeps each group contiguous, "
                        f"so the '{self.group_column}' column must be unique per prompt (or give num_generations)"
                    )
                seen.add(key)
                stop = start
                while stop < len(rows) and rows[stop]["key"] == key:
                    stop += 1
                bounds.append((start, stop))
                start = stop
        groups: list[tuple[int, Group]] = []
        for start, stop in bounds:
            first, members = rows[start], rows[start:stop]
            known = all(r["ended"] is not None for r in members)
            ended = tuple(r["ended"] for r in members) if known else None
            texts = [r["completion"] if not known or r["ended"] else "" for r in members]
            groups.append((start, Group(key=first["key"], prompt=first["prompt"], completions=texts, columns=first["columns"], ended=ended)))
        sizes = [len(g.completions) for _, g in groups]
        expected = self.num_generations if self.num_generations is not None else sizes[0] if sizes else 0
        if any(s != expected for s in sizes):
            counts = ", ".join(f"{s} x{c}" for s, c in sorted(Counter(sizes).items()))
            raise ValueError(
                f"GroupReward expects every group to have exactly {expected} completions (num_generations), "
                f"but saw group sizes: {counts}. The generation batch must split into whole groups."
            )
        return groups

