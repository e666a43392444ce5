"""Accuracy with diversity in miniature: arithmetic with three correct solution formats.

1. build a tiny Qwen2 whose word-level vocabulary holds the questions' and answers' tokens;
2. pretrain it on "What is 3 + 4 ?" with always-correct solutions, written ``format_shares`` of the time as
   "7" / "3 + 4 = 7" / "The answer is 7" (so it mostly uses one format);
3. train it with GAPO's accuracy-first scorer (:class:`~gapo_lite.rewards.AccuracyDiversityScorer`: wrong
   answers -1, correct ones the frequency reward over solution clusters) and, from the same start, with a
   plain per-sample accuracy reward (:class:`~gapo_lite.rewards.AccuracyScorer`: 1 correct, 0 wrong; ``baseline=True``);
4. measure accuracy and the diversity of the correct solutions at T = 0.7 and 1.0.

Clustering uses the number-masked format signature (:func:`lab.arithmetic.format_clusterer`),
not MiniLM: it is exact for these three formats and costs nothing on a CPU. The checker is strict
(:func:`lab.arithmetic.strict_answer`: one of the three formats, true equations only); the
usual GSM8K last-number check is reported beside it as "lenient accuracy".

    python -m lab.accuracy --out runs/exp_accuracy
"""
from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gapo_lite.demo.stages import LAB_PRECISION, Experiment, RLRun, experiment_main, run_staged, table, tiny_rl_config
from gapo_lite.demo.supervised import SupervisedMiniature

SHAPES = {"N": "bare", "N + N = N": "equation", "N - N = N": "equation", "The answer is N": "sentence"}
LABELS = {"before": "before (pretrained)", "gapo": "GAPO accuracy+diversity", "baseline": "GRPO accuracy only"}


@dataclass(frozen=True)
class AccuracySettings(SupervisedMiniature):
    """The shared miniature settings, with the arithmetic problems, their formats and this experiment's schedule."""

    max_operand: int = 9
    format_shares: tuple[float, ...] = (0.8, 0.1, 0.1)  # bare, equation, sentence
    pretrain_steps: int = 1200
    max_completion_length: int = 6
    eval_problems: int = 40
    eval_samples: int = 50

    QUICK = {"max_operand": 3, "eval_problems": 4}


def pretrain_draw(s: AccuracySettings):
    """``draw(rng)``: a random problem and its correct solution in a format drawn with ``format_shares``."""
    from lab.arithmetic import FORMATS, problems, question, solution

    names = list(FORMATS)
    if len(s.format_shares) != len(names) or any(w < 0 for w in s.format_shares) or sum(s.format_shares) <= 0:
        raise ValueError(f"format_shares must be {len(names)} non-negative weights ({', '.join(names)}), got {s.format_shares}")
    pool = problems(s.max_operand)

    def draw(rng):
        problem = rng.choice(pool)
        fmt = rng.choices(names, weights=s.format_shares)[0]
        return [{"role": "user", "content": question(problem)}], solution(problem, fmt)

    return draw


def gapo_scorer():
    """GAPO accuracy-first: strict checker, clusters = format signatures."""
    from gapo_lite.rewards import AccuracyDiversityScorer
    from lab.arithmetic import format_clusterer, strict_answer

    return AccuracyDiversityScorer(extract_answer=strict_answer, cluster=format_clusterer)


def eval_pool(s: AccuracySettings) -> list[tuple[int, str, int]]:
    """A fixed, seeded sample of ``eval_problems`` problems."""
    from lab.arithmetic import problems

    pool = problems(s.max_operand)
    return random.Random(f"gapo-lite/accuracy-eval/{s.seed}").sample(pool, min(s.eval_problems, len(pool)))


def score_samples(problem_samples: list[tuple[int, list[str]]]) -> dict[str, Any]:
    """Accuracy and diversity of correct solutions over (reference, samples) pairs.

    ``formats_per_problem``: distinct formats among a problem's correct samples (0-3), averaged;
    ``format_entropy``: per problem, the entropy of those formats divided by log 3 (0: one format, 1: even),
    averaged over problems with a correct sample; ``format_shares``: shares of all correct samples;
    ``attempt_shares``: shares of all samples written in each format's shape, right or wrong, and
    ``format_accuracy``: the share of those attempts that are correct.
    """
    from gapo_lite.answers import answers_match, extract_number
    from gapo_lite.metrics import entropy
    from lab.arithmetic import FORMATS, format_of, format_signature, strict_answer

    if not problem_samples:
        raise ValueError("score_samples needs at least one problem")
    total = correct_n = lenient_n = 0
    per_problem_formats: list[int] = []
    entropies: list[float] = []
    shares: Counter[str] = Counter()
    attempts: Counter[str] = Counter()
    attempts_ok: Counter[str] = Counter()
    for reference, texts in problem_samples:
        for t in texts:
            shape = SHAPES.get(format_signature(t))
            if shape is not None:
                attempts[shape] += 1
                attempts_ok[shape] += answers_match(strict_answer(t), reference)
        formats = [format_of(t) for t in texts if answers_match(strict_answer(t), reference)]
        total += len(texts)
        correct_n += len(formats)
        lenient_n += sum(answers_match(extract_number(t), reference) for t in texts)
        counts = Counter(formats)
        shares.update(counts)
        per_problem_formats.append(len(counts))
        if formats:
            entropies.append(entropy(formats, base=len(FORMATS)))
    return {
        "accuracy": correct_n / total,
        "lenient_accuracy": lenient_n / total,
        "formats_per_problem": sum(per_problem_formats) / len(per_problem_formats),
        "format_entropy": sum(entropies) / len(entropies) if entropies else 0.0,
        "format_shares": {f: shares[f] / correct_n if correct_n else 0.0 for f in FORMATS},
        "attempt_shares": {f: attempts[f] / total for f in FORMATS},
        "format_accuracy": {f: attempts_ok[f] / attempts[f] if attempts[f] else math.nan for f in FORMATS},
    }


def measure(model: Any, tokenizer: Any, s: AccuracySettings) -> dict[str, Any]:
    """:func:`score_samples` at each evaluation temperature on :func:`eval_pool`."""
    from gapo_lite.sampling import sample_completions
    from lab.arithmetic import question, solve

    pool = eval_pool(s)
    prompts = [[{"role": "user", "content": question(p)}] for p in pool]
    out: dict[str, Any] = {}
    for temperature in s.eval_temperatures:
        samples = sample_completions(model, tokenizer, prompts, n=s.eval_samples, temperature=temperature,
                                     max_new_tokens=s.max_completion_length, batch_size=1024, seed=s.seed + 29, progress=False,
                                     precision=LAB_PRECISION)
        scored = score_samples([(solve(*p), texts) for p, texts in zip(pool, samples)])
        scored["examples"] = samples[0][:8]
        out[f"T{temperature:g}"] = scored
    return out


def experiment(s: AccuracySettings) -> Experiment:
    """The stages of this experiment for :func:`~gapo_lite.demo.stages.run_staged`."""
    from gapo_lite.demo.supervised import supervised_pretrain
    from gapo_lite.demo.tiny import build_tiny_model
    from gapo_lite.rewards import AccuracyScorer
    from lab.arithmetic import arithmetic_words, build_arithmetic_dataset, format_signature, strict_answer

    def data():
        return build_arithmetic_dataset(s.rl_steps * s.prompts_per_step, max_operand=s.max_operand, seed=s.seed)

    runs = [RLRun("gapo", LABELS["gapo"], gapo_scorer, data)]
    if s.baseline:
        runs.append(RLRun("baseline", LABELS["baseline"], lambda: AccuracyScorer(strict_answer, label=format_signature), data))
    return Experiment(
        settings=s,
        build_model=lambda path: build_tiny_model(path, words=arithmetic_words(s.max_operand), hidden_size=s.hidden_size,
                                                  num_layers=s.num_layers, num_heads=s.num_heads, num_kv_heads=s.num_kv_heads, seed=s.seed),
        pretrain=lambda model, tok: supervised_pretrain(model, tok, pretrain_draw(s), steps=s.pretrain_steps, batch_size=s.pretrain_batch,
                                                        learning_rate=s.pretrain_lr, seed=s.seed, desc="pretraining (arithmetic)"),
        runs=runs,
        rl_config=lambda start, out, run: tiny_rl_config(s, start, out, max_completion_length=s.max_completion_length, logging_steps=max(1, s.rl_steps // 10)),
        measure=lambda model, tok: measure(model, tok, s),
        format_table=format_table,
        pretrain_message="building and pretraining a tiny arithmetic model (one dominant solution format)",
    )


def run_experiment(out_dir: str | Path = "runs/exp_accuracy", settings: AccuracySettings | None = None, command: str | None = None) -> dict[str, Any]:
    """Every stage; prints the table and writes ``results.json``."""
    return run_staged(experiment(settings or AccuracySettings()), out_dir, command)


def format_table(results: dict[str, Any]) -> str:
    """One row per metric and temperature; one column per model."""
    from lab.arithmetic import FORMATS

    models = [m for m in LABELS if m in results]
    rows = []
    for key in results["before"]:
        t = f"T={key[1:]}"
        rows.append((f"accuracy, strict ({t})", [results[m][key]["accuracy"] for m in models]))
        rows.append((f"accuracy, last number ({t})", [results[m][key]["lenient_accuracy"] for m in models]))
        rows.append((f"formats per problem, of 3 ({t})", [results[m][key]["formats_per_problem"] for m in models]))
        rows.append((f"format entropy / log 3 ({t})", [results[m][key]["format_entropy"] for m in models]))
        for f in FORMATS:
            rows.append((f"share '{f}' among correct ({t})", [results[m][key]["format_shares"][f] for m in models]))
        for f in FORMATS:
            rows.append((f"accuracy of '{f}' attempts ({t})", [results[m][key]["format_accuracy"][f] for m in models]))
    return table(rows, [LABELS[m] for m in models], width=26, label_width=40)


def main(argv: list[str] | None = None) -> int:
    return experiment_main("python -m lab.accuracy", __doc__.split("\n")[0], "runs/exp_accuracy", AccuracySettings, run_experiment, argv)


if __name__ == "__main__":
    raise SystemExit(main())
