"""Open-ended GAPO in miniature: "Name a fruit." with no list in the prompt.

1. build a tiny Qwen2 whose word-level vocabulary holds every prompt word and every category item;
2. pretrain it on "Name a(n) <noun>." for ALL categories to answer one favourite item (the category's first)
   with probability ``favourite_share`` and the other items evenly (mode collapse);
3. train it with GAPO (:class:`~gapo_lite.rewards.CategoryScorer`: one
   :class:`~gapo_lite.rewards.OpenEndedFrequencyScorer` per category, validator = the category's word list)
   on the TRAINING categories only; optionally, from the same start, plain GRPO with a per-sample
   validity reward (:class:`~gapo_lite.rewards.ValidityScorer`, ``baseline=True``);
4. measure Unique@N (N samples per prompt), valid rate and the favourite's share on training and
   held-out categories at T = 0.7 and 1.0.

    python -m lab.open_ended --out runs/exp_open
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gapo_lite.demo.stages import LAB_PRECISION, Experiment, RLRun, experiment_main, run_staged, table, tiny_rl_config
from gapo_lite.demo.supervised import SupervisedMiniature

LABELS = {"before": "before (collapsed)", "gapo": "GAPO", "baseline": "GRPO + validity"}


@dataclass(frozen=True)
class OpenSettings(SupervisedMiniature):
    """The shared miniature settings, with this experiment's collapse and schedule."""

    favourite_share: float = 0.8  # the collapsed start names the category's first item this often
    rl_steps: int = 800
    baseline: bool = False


def favourite(category: str) -> str:
    """The item a collapsed model names for ``category``: the first of its word list."""
    from gapo_lite.data.open_prompts import vocabularies

    return vocabularies("all")[category][0]


def pretrain_draw(share: float):
    """``draw(rng)`` for :func:`~gapo_lite.demo.supervised.supervised_pretrain`: a prompt of any category and its
    favourite item with probability ``share``, else another item of the category, uniformly."""
    from gapo_lite.data.open_prompts import open_prompt, vocabularies

    if not 0.0 < share <= 1.0:
        raise ValueError(f"favourite_share must be in (0, 1], got {share}")
    pool = vocabularies("all")
    names = sorted(pool)

    def draw(rng):
        category = rng.choice(names)
        items = pool[category]
        answer = items[0] if rng.random() < share else rng.choice(items[1:])
        return [{"role": "user", "content": open_prompt(category)}], answer

    return draw


def measure(model: Any, tokenizer: Any, s: OpenSettings) -> dict[str, Any]:
    """Per split and temperature: mean Unique@N, valid rate and favourite share over the split's categories."""
    from gapo_lite.data.open_prompts import open_prompt, vocabularies
    from gapo_lite.metrics import unique_at_n
    from gapo_lite.rewards import Group, open_ended_scorer
    from gapo_lite.sampling import sample_completions

    scorer = open_ended_scorer("all", clean=False)
    out: dict[str, Any] = {}
    for temperature in s.eval_temperatures:
        for split in ("train", "heldout"):
            names = sorted(vocabularies(split))
            prompts = [[{"role": "user", "content": open_prompt(c)}] for c in names]
            samples = sample_completions(model, tokenizer, prompts, n=s.eval_samples, temperature=temperature, max_new_tokens=3,
                                         batch_size=1024, seed=s.seed + 17, progress=False, precision=LAB_PRECISION)
            per: dict[str, Any] = {}
            for category, texts in zip(names, samples):
                answers = scorer.answers(Group(category, prompts[0], texts, {"category": category}))
                fav = scorer.scorers[category].canonical(favourite(category))
                per[category] = {
                    "unique": unique_at_n(answers, s.eval_samples),
                    "valid_rate": sum(a is not None for a in answers) / len(answers),
                    "favourite_share": sum(a == fav for a in answers) / len(answers),
                    "vocabulary_size": len(scorer.scorers[category].vocabulary or ()),
                }
            key = f"T{temperature:g}/{split}"
            out[key] = {m: sum(p[m] for p in per.values()) / len(per) for m in ("unique", "valid_rate", "favourite_share")}
            out[key]["per_category"] = per
    return out


def experiment(s: OpenSettings) -> Experiment:
    """The stages of this experiment for :func:`~gapo_lite.demo.stages.run_staged`."""
    from gapo_lite.data.open_prompts import build_open_ended_dataset, prompt_words
    from gapo_lite.demo.supervised import supervised_pretrain
    from gapo_lite.demo.tiny import build_tiny_model
    from gapo_lite.rewards import ValidityScorer, open_ended_scorer

    def data():
        return build_open_ended_dataset(s.rl_steps * s.prompts_per_step, split="train", seed=s.seed)

    runs = [RLRun("gapo", LABELS["gapo"], lambda: open_ended_scorer("train", clean=False), data)]
    if s.baseline:
        runs.append(RLRun("baseline", LABELS["baseline"], lambda: ValidityScorer(open_ended_scorer("train", clean=False)), data))
    return Experiment(
        settings=s,
        build_model=lambda path: build_tiny_model(path, words=prompt_words("all"), hidden_size=s.hidden_size, num_layers=s.num_layers,
                                                  num_heads=s.num_heads, num_kv_heads=s.num_kv_heads, seed=s.seed),
        pretrain=lambda model, tok: supervised_pretrain(model, tok, pretrain_draw(s.favourite_share), steps=s.pretrain_steps,
                                                        batch_size=s.pretrain_batch, learning_rate=s.pretrain_lr, seed=s.seed,
                                                        desc="pretraining (collapse)"),
        runs=runs,
        rl_config=lambda start, out, run: tiny_rl_config(s, start, out, max_completion_length=2, logging_steps=max(1, s.rl_steps // 10)),
        measure=lambda model, tok: measure(model, tok, s),
        format_table=format_table,
        pretrain_message="building and pretraining a collapsed tiny model (all categories)",
        run_message=" on the training categories",
    )


def run_experiment(out_dir: str | Path = "runs/exp_open", settings: OpenSettings | None = None, command: str | None = None) -> dict[str, Any]:
    """Every stage; prints the table and writes ``results.json``."""
    return run_staged(experiment(settings or OpenSettings()), out_dir, command)


def format_table(results: dict[str, Any]) -> str:
    """One row per split, metric and temperature; one column per model."""
    models = [m for m in LABELS if m in results]
    n = results["settings"]["eval_samples"]
    rows = []
    for key in results["before"]:
        temp, split = key.split("/")
        where = f"{'train' if split == 'train' else 'held-out'} categories, T={temp[1:]}"
        rows.append((f"Unique@{n} ({where})", [results[m][key]["unique"] for m in models]))
        rows.append((f"valid rate ({where})", [results[m][key]["valid_rate"] for m in models]))
        rows.append((f"favourite share ({where})", [results[m][key]["favourite_share"] for m in models]))
    return table(rows, [LABELS[m] for m in models], label_width=52)


def main(argv: list[str] | None = None) -> int:
    return experiment_main("python -m lab.open_ended", __doc__.split("\n")[0], "runs/exp_open", OpenSettings, run_experiment, argv)


if __name__ == "__main__":
    raise SystemExit(main())
