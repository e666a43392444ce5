"""A tiny synthetic arithmetic set with GSM8K-style answers, for the CPU accuracy experiment (GSM8K itself:
:mod:`gapo_lite.data.gsm8k`).

Synthetic problems are "What is 3 + 4 ?" (single-digit operands, + and -, never negative). Three
solution formats are correct, each with a distinct number-masked *signature*:

    bare      "7"                  signature "N"
    equation  "3 + 4 = 7"          signature "N + N = N"
    sentence  "The answer is 7"    signature "The answer is N"

:func:`strict_answer` is the experiment's checker: the final number of a completion written in one of
these formats (an equation must also be arithmetically true), else ``None``; anything else ("7 7",
"+ 7") is wrong even when its last number is right. :func:`format_clusterer` groups correct solutions by
signature: an exact, deterministic stand-in for the sentence-embedding clustering a real task would use.
"""
from __future__ import annotations

import random
import re
from collections.abc import Sequence

OPS: tuple[str, ...] = ("+", "-")
FORMATS: dict[str, str] = {"bare": "{c}", "equation": "{a} {op} {b} = {c}", "sentence": "The answer is {c}"}
QUESTION = "What is {a} {op} {b} ?"
_INT = re.compile(r"-?\d+")
_EQUATION = re.compile(r"(-?\d+) ([+\-*]) (-?\d+) = (-?\d+)")
_SENTENCE = re.compile(r"The answer is (-?\d+)")

Problem = tuple[int, str, int]


def solve(a: int, op: str, b: int) -> int:
    """The value of ``a op b``."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    raise ValueError(f"unknown operator {op!r}; expected '+', '-' or '*'")


def problems(max_operand: int = 9, ops: Sequence[str] = OPS) -> list[Problem]:
    """Every (a, op, b) with 0 <= a, b <= max_operand (a >= b for '-', so no answer is negative)."""
    if max_operand < 1:
        raise ValueError(f"max_operand must be >= 1, got {max_operand}")
    if not ops:
        raise ValueError("ops is empty; give at least one operator")
    for op in ops:
        solve(1, op, 1)  # raises for an unknown operator
    return [(a, op, b) for op in ops for a in range(max_operand + 1) for b in range(max_operand + 1) if op != "-" or a >= b]


def question(problem: Problem) -> str:
    a, op, b = problem
    return QUESTION.format(a=a, op=op, b=b)


def solution(problem: Problem, fmt: str) -> str:
    """The correct solution of ``problem`` written in format ``fmt``."""
    if fmt not in FORMATS:
        raise KeyError(f"unknown solution format {fmt!r}; known: {', '.join(FORMATS)}")
    a, op, b = problem
    return FORMATS[fmt].format(a=a, op=op, b=b, c=solve(a, op, b))


def format_of(text: str) -> str | None:
    """Which well-formed format ``text`` is written in (an equation must be true), or ``None``."""
    text = " ".join(text.split())
    if _INT.fullmatch(text):
        return "bare"
    m = _EQUATION.fullmatch(text)
    if m:
        a, op, b, c = m.groups()
        return "equation" if solve(int(a), op, int(b)) == int(c) else None
    if _SENTENCE.fullmatch(text):
        return "sentence"
    return None


def strict_answer(text: str) -> float | None:
    """The final number of a well-formed solution, ``None`` for anything else (the experiment's checker)."""
    return float(_INT.findall(text)[-1]) if format_of(text) is not None else None


def format_signature(text: str) -> str:
    """The solution's shape: whitespace-normalised, every integer replaced by ``N`` ("3 + 4 = 7" -> "N + N = N")."""
    return _INT.sub("N", " ".join(text.split()))


def format_clusterer(texts: list[str]) -> list[str]:
    """Cluster labels for :class:`~gapo_lite.rewards.AccuracyDiversityScorer`: one cluster per signature."""
    return [format_signature(t) for t in texts]


def arithmetic_words(max_operand: int = 9, ops: Sequence[str] = OPS) -> list[str]:
    """Every token the questions and the three formats use (for a word-level tiny tokenizer)."""
    answers = {solve(a, op, b) for a, op, b in problems(max_operand, ops)}
    numbers = {str(n) for n in range(max_operand + 1)} | {str(n) for n in answers}
    words = {"What", "is", "?", "=", "The", "answer", *ops}
    return sorted(words | numbers)


def build_arithmetic_dataset(
    num_prompts: int,
    *,
    max_operand: int = 9,
    ops: Sequence[str] = OPS,
    pool: Sequence[Problem] | None = None,
    seed: int = 0,
):
    """A ``datasets.Dataset`` of arithmetic prompts: ``prompt`` (chat messages), ``question``, ``answer``
    (the reference, an int), ``prompt_id`` (unique per row). Rows cycle through ``pool`` (default every
    problem) in seeded shuffled passes."""
    from datasets import Dataset

    if num_prompts < 1:
        raise ValueError(f"num_prompts must be >= 1, got {num_prompts}")
    pool = list(pool) if pool is not None else problems(max_operand, ops)
    if not pool:
        raise ValueError("the problem pool is empty")
    rng = random.Random(f"gapo-lite/arithmetic/{seed}")
    rows, order = [], []
    for i in range(num_prompts):
        if not order:
            order = rng.sample(pool, len(pool))
        problem = order.pop()
        rows.append(
            {
                "prompt": [{"role": "user", "content": question(problem)}],
                "question": question(problem),
                "answer": solve(*problem),
                "prompt_id": f"arith-{seed}-{i:06d}",
            }
        )
    return Dataset.from_list(rows)
