"""Bench suite: GSM8K, MATH, HumanEval and MMLU-Pro through lm-evaluation-harness, on an already loaded model.

Each benchmark is first loaded (which downloads its data set); when that fails, for example on a machine
without hub access, the benchmark is reported as skipped with the error's own message. Nothing is estimated.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gapo_lite._bootstrap import environment

# Suite key -> lm-eval task (MATH: the 500-problem MATH subset, Minerva prompt and answer checking).
BENCHMARKS: dict[str, str] = {"gsm8k": "gsm8k", "math": "minerva_math500", "humaneval": "humaneval", "mmlu_pro": "mmlu_pro"}
DEFAULT_BENCHMARKS: tuple[str, ...] = tuple(BENCHMARKS)
WHOLE_SET = {"humaneval"}  # evaluated in full, never subset (as in the paper)
EXECUTES_CODE = {"humaneval", "humaneval_plus", "humaneval_instruct", "mbpp"}
LOCAL_TASKS = Path(__file__).resolve().parent / "tasks"


@dataclass
class BenchItem:
    """One benchmark in the plan: ready to run, or skipped with the reason."""

    key: str
    task: str
    limit_per_task: int | None = None
    subtasks: list[str] = field(default_factory=list)
    status: str = "ready"
    reason: str = ""


def resolve(names: Sequence[str]) -> list[tuple[str, str]]:
    """(key, lm-eval task) for each name: a key of :data:`BENCHMARKS` or any lm-eval task name as is."""
    if not names:
        raise ValueError("no benchmark named; use e.g. gsm8k,math,humaneval,mmlu_pro")
    return [(name, BENCHMARKS.get(name, name)) for name in names]


def task_manager(include_path: Sequence[str | Path] = (), names: Sequence[str] | None = None):
    """An lm-eval TaskManager that also knows this package's local tasks (``gapo_lite/eval/tasks``).

    When every one of ``names`` is a local task (or in ``include_path``), lm-eval's own few thousand task
    files are not indexed, which saves many seconds.
    """
    from lm_eval.tasks import TaskManager

    paths = [str(LOCAL_TASKS), *map(str, include_path)]
    if names:
        local = TaskManager(include_path=paths, include_defaults=False)
        if all(task in local.all_tasks for _, task in resolve(names)):
            return local
    return TaskManager(include_path=paths)


def plan(names: Sequence[str], *, limit: int | None = 200, allow_code_exec: bool = False, manager=None) -> list[BenchItem]:
    """Load each benchmark once to check its data and count its subtasks; ``limit`` is split over a group's subtasks.

    A group (MMLU-Pro has 14 subjects) gets ``ceil(limit / subtasks)`` questions per subject, so about ``limit``
    in all. Loading errors (no hub access, unknown task) become ``status="skipped"`` with the error message.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"bench limit must be >= 1 (or None for whole sets), got {limit}")
    manager = manager or task_manager()
    items = []
    for key, task in resolve(names):
        item = BenchItem(key, task)
        items.append(item)
        if task in EXECUTES_CODE and not allow_code_exec:
            item.status = "skipped"
            item.reason = f"{task} runs the model's code to grade it; pass --allow-code-exec to run it"
            continue
        try:
            loaded = manager.load([task])
        except Exception as err:  # noqa: BLE001 - any loading failure is reported, never hidden
            item.status = "skipped"
            item.reason = f"could not load {task!r}: {type(err).__name__}: {err}"
            continue
        item.subtasks = sorted(loaded["tasks"])
        if limit is not None and key not in WHOLE_SET and task not in WHOLE_SET:
            item.limit_per_task = math.ceil(limit / max(1, len(item.subtasks)))
    return items


def _code_eval_allowed(allowed: bool):
    return environment("HF_ALLOW_CODE_EVAL", "1" if allowed else None)


def _numeric_metrics(entry: dict[str, Any]) -> dict[str, float]:
    """``metric,filter`` -> value for the numeric, non-stderr entries of one lm-eval result row."""
    out = {}
    for name, value in entry.items():
        if "," not in name or "_stderr" in name:
            continue
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            continue
    return out


def run(
    model,
    tokenizer,
    items: Sequence[BenchItem],
    *,
    batch_size: int = 8,
    apply_chat_template: bool = False,
    allow_code_exec: bool = False,
    manager=None,
) -> dict[str, Any]:
    """Evaluate ``model`` (a transformers or peft model object) on every ready item; errors are reported per item."""
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM

    manager = manager or task_manager()
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size)
    out: dict[str, Any] = {}
    for item in items:
        if item.status != "ready":
            out[item.key] = {"task": item.task, "status": item.status, "reason": item.reason}
            continue
        try:
            with _code_eval_allowed(allow_code_exec and item.task in EXECUTES_CODE):
                results = simple_evaluate(
                    model=lm,
                    tasks=[item.task],
                    task_manager=manager,
                    limit=item.limit_per_task,
                    bootstrap_iters=0,
                    log_samples=False,
                    apply_chat_template=apply_chat_template,
                    confirm_run_unsafe_code=allow_code_exec,
                )
        except Exception as err:  # noqa: BLE001
            out[item.key] = {"task": item.task, "status": "error", "reason": f"{type(err).__name__}: {err}"}
            continue
        rows = {**results.get("groups", {}), **results["results"]}
        n_samples = results.get("n-samples", {})
        out[item.key] = {
            "task": item.task,
            "status": "ok",
            "metrics": _numeric_metrics(rows.get(item.task, {})),
            "subtasks": {name: _numeric_metrics(rows[name]) for name in item.subtasks if name != item.task and name in rows},
            "limit_per_task": item.limit_per_task,
            "questions": int(sum(v.get("effective", 0) for v in n_samples.values())),
        }
    return out
