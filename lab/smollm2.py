"""GAPO on a real instruct LLM on the CPU: SmolLM2-135M-Instruct (recipe ``smollm2_lists``), against the
GRPO + validity baseline from the same start, measured before and after with the lists suite.

    path=$(bash scripts/get_smollm2.sh)
    python -m lab.smollm2 --out runs/smollm2_raw                               # its own start
    python -m lab.smollm2 --out runs/smollm2_warm --set warmup_steps=24         # warm-up first

SmolLM2 names one list item in only about a third of its replies, far below the validity GAPO needs (see
"Before you train" in the README). The remedy a user would try is ``warmup_steps > 0``: sample the model
on TRAINING-category list prompts, keep the replies that name exactly one item, and fine-tune it on those
items as bare answers. The answer format is taught while the choices stay the model's own (its
favourites and position habits are kept), so the warmed-up start is still collapsed, just valid more often.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gapo_lite._bootstrap import REQUESTED_PRECISIONS
from gapo_lite.demo.stages import Experiment, RLRun, module_main, run_staged, settings_from_args, table

REWARDS = {"gapo": "gapo", "gapo_lists": "gapo", "grpo_baseline": "validity", "gapo_naming": "gapo", "grpo_naming": "validity"}
LABELS = {"before": "start", "before_nf4": "start, NF4", "gapo_lists": "GAPO, lists only", "gapo": "GAPO", "grpo_baseline": "GRPO + validity reward",
          "gapo_naming": "GAPO on the naming prompts", "grpo_naming": "GRPO + validity on the naming prompts"}
NAMING = ("gapo_naming", "grpo_naming")  # runs that train on recipes/smollm2_naming.py's prompts and reward (the open suite's own prompts)
LISTS_ONLY = ("gapo_lists",)  # runs that train on list prompts alone (the paper's recipe) whatever open_share says
RL_LISTS = ("train", "fixed", "measured")


@dataclass(frozen=True)
class SmolSettings:
    """Sizes of the experiment; the RL runs take the rest of their settings from ``recipes/smollm2_lists.py``."""

    model: str = ""  # "" -> gapo_lite.gguf.smollm2_path(): $SMOLLM2_GGUF or where scripts/get_smollm2.sh puts it
    warmup_steps: int = 0  # 0: RL from the model as it is
    warmup_prompts: int = 48
    warmup_samples: int = 8
    warmup_batch: int = 8
    warmup_lr: float = 2e-5
    rl_steps: int = 60
    runs: tuple[str, ...] = ("gapo", "grpo_baseline")  # which RL runs, from the same start (also "gapo_lists": GAPO on list prompts only)
    # RL settings that differ from the recipe's (None: the recipe's value)
    invalid_reward: float | None = None  # the reward of an invalid answer, for both runs; the paper's is -1
    invalid_margin: float | None = None  # GAPO runs: an invalid answer scores the group's lowest valid reward minus this (TrainConfig.invalid_margin)
    num_generations: int | None = None
    prompts_per_step: int | None = None
    learning_rate: float | None = None
    rl_temperature: float | None = None
    rl_schedule: str | None = None  # the learning-rate schedule (TrainConfig.lr_scheduler_type); a resumed run follows it from its step
    beta: float | None = None  # KL to the start (TrainConfig.beta; the paper's and the recipe's is 0): keeps what the lists do not train
    lora_r: int | None = None  # the adapter's shape (the recipe's: r 16, alpha 32, no dropout; the paper's: r 64, alpha 32, dropout 0.1)
    lora_alpha: int | None = None
    lora_dropout: float | None = None
    # The list prompts RL trains on: "train" (a fresh list of the training categories each prompt, the paper's protocol); "fixed"
    # (``fixed_lists`` lists of the training categories, each in 4 orders, over and over: does a spread learnt thoroughly carry
    # over?); "measured" (the held-out lists the lists suite measures: can GAPO spread them at all when nothing has to carry
    # over? never a transfer result).
    rl_lists: str = "train"
    fixed_lists: int = 1
    open_share: float = 0.0  # share of open naming prompts (categories outside the open suite) in the gapo and baseline runs' data
    open_vocabulary: str = "word_lists"  # valid answers to those prompts (TrainConfig.open_vocabulary); the recorded runs' before "wordnet" existed
    clean_answers: bool = True  # reward and measurements: an answer counts only when the reply ended its turn and is that answer alone
    reward_clean_answers: bool | None = None  # the reward's rule alone (None: clean_answers); False: the lenient reward, measured by the clean rule
    eval_lists: int = 10
    eval_samples: int = 100
    eval_temperature: float = 0.7
    completion_tokens: int = 16  # RL's max_completion_length and the lists suite's: room for a natural answer to end inside
    warmup_tokens: int = 8  # the warm-up's own replies (the recorded starts were warmed on 8-token replies)
    warmup_temperature: float | None = None  # sampling the warm-up's replies (None: eval_temperature, the recorded starts'); 1.0: the model's own choices
    open_samples: int = 0  # > 0: the open-ended suite (10 prompts) with this many samples each, after every stage
    open_tokens: int = 16
    open_validator: str = "open"  # the open suite's vocabularies: "open" (any real city / country), "wordnet" (and WordNet's nouns), "word_lists", "short"
    guard: bool = True  # the guard suite (90 ordinary instructions, greedy) after every stage
    lists_suite: bool = True  # the held-out lists suite after every stage (the naming runs leave it out: not what they train)
    reworded_samples: int = 0  # > 0: the open suite's rewordings (gapo_lite.eval.open_suite.REWORDINGS) with this many samples each
    measure_every: int = 0  # > 0: each RL run is also measured every this many steps (stages "<run>@<step>"), resumed in between
    seed: int = 0
    rl_seed: int | None = None  # the RL runs' own seed (their samples, prompt order, LoRA init); None: seed. Lists and measurements follow seed
    threads: int = 2
    load_in_4bit: bool = False  # RL on the start quantized to NF4 (bitsandbytes) with LoRA on top; the start is measured again in NF4
    precision: str = "fp32"  # RL and sampling: "fp32" (the recorded runs'), "bf16" (autocast) or "auto" (measured: _bootstrap.cpu_precision); the warm-up runs in fp32

    def __post_init__(self) -> None:
        if self.precision not in REQUESTED_PRECISIONS:
            raise ValueError(f"precision must be 'auto', 'bf16' or 'fp32', got {self.precision!r}")
        if self.rl_lists not in RL_LISTS:
            raise ValueError(f"rl_lists must be one of {RL_LISTS}, got {self.rl_lists!r}")
        if self.rl_lists != "train" and self.open_share > 0:
            raise ValueError(f"rl_lists={self.rl_lists!r} trains on its lists alone; set open_share=0")
        if self.fixed_lists < 1:
            raise ValueError(f"fixed_lists must be >= 1, got {self.fixed_lists}")
        if not 0.0 <= self.open_share <= 1.0:
            raise ValueError(f"open_share must be in [0, 1], got {self.open_share}")
        from gapo_lite.data.open_prompts import VOCABULARIES
        from gapo_lite.eval.open_suite import VALIDATORS

        if self.open_vocabulary not in VOCABULARIES:
            raise ValueError(f"open_vocabulary must be one of {VOCABULARIES}, got {self.open_vocabulary!r}")

        if self.open_validator not in VALIDATORS:
            raise ValueError(f"open_validator must be one of {VALIDATORS}, got {self.open_validator!r}")

    @classmethod
    def quick(cls) -> "SmolSettings":
        return cls(warmup_prompts=4, warmup_samples=2, warmup_batch=2, rl_steps=1, eval_lists=2, eval_samples=4, open_samples=2)

    @property
    def trained_invalid_reward(self) -> float:
        """The invalid-answer reward the RL runs train with (the recipe's unless set)."""
        return -1.0 if self.invalid_reward is None else self.invalid_reward


def recorded_settings(folder: str | Path) -> SmolSettings:
    """The settings an experiment folder ran with (its ``stages/settings.json``), for scripts that measure its
    models again by the same protocol."""
    import json

    return SmolSettings(**json.loads((Path(folder) / "stages" / "settings.json").read_text()))


def own_valid_answers(model: Any, tokenizer: Any, s: SmolSettings) -> tuple[list[tuple[list[dict[str, str]], str]], float]:
    """(prompt, item) pairs from the model's own replies on training-category lists that name exactly one
    item, and the share of replies that did."""
    from gapo_lite.answers import parse_choice
    from gapo_lite.data import build_list_dataset
    from gapo_lite.eval.settings import SampleSettings, sample

    rows = build_list_dataset(s.warmup_prompts, split="train", max_items=8, seed=s.seed + 7)
    temperature = s.eval_temperature if s.warmup_temperature is None else s.warmup_temperature
    settings = SampleSettings(n=s.warmup_samples, temperature=temperature, max_new_tokens=s.warmup_tokens, batch_size=64, seed=s.seed,
                              progress=True, precision=s.precision)
    replies = sample(model, tokenizer, [r["prompt"] for r in rows], settings, seed_offset=7)
    pairs = [(r["prompt"], choice) for r, texts in zip(rows, replies) for choice in (parse_choice(t, r["items"]) for t in texts) if choice is not None]
    return pairs, len(pairs) / (len(rows) * s.warmup_samples)


def warm_up(model: Any, tokenizer: Any, s: SmolSettings) -> list[float]:
    """Fine-tune on the model's own valid answers (bare item, then end-of-turn); no-op when ``warmup_steps == 0``."""
    from gapo_lite.demo.supervised import supervised_pretrain
    from gapo_lite.errors import UserError

    if s.warmup_steps == 0:
        return []
    pairs, share = own_valid_answers(model, tokenizer, s)
    print(f"      warm-up: {len(pairs)} own valid answers ({share:.2f} of {s.warmup_prompts * s.warmup_samples} replies)")
    if not pairs:
        raise UserError("warm-up: the model named exactly one list item in none of its replies; nothing to fine-tune on")
    return supervised_pretrain(model, tokenizer, lambda rng: rng.choice(pairs), steps=s.warmup_steps, batch_size=s.warmup_batch,
                               learning_rate=s.warmup_lr, seed=s.seed, desc="warm-up on own valid answers")


def lists_suite(model: Any, tokenizer: Any, s: SmolSettings, split: str = "heldout") -> dict[str, Any]:
    """The lists suite by the experiment's protocol (``eval_lists`` lists, ``eval_samples`` answers each at
    ``eval_temperature``, ``clean_answers``' rule), on held-out categories (the paper's) or, with ``split="train"``,
    on the categories RL trains on (``lab/scripts/smollm2_train_lists.py``)."""
    from gapo_lite.eval.list_suite import run_lists
    from gapo_lite.eval.settings import SampleSettings

    settings = SampleSettings(n=s.eval_samples, temperature=s.eval_temperature, max_new_tokens=s.completion_tokens, batch_size=64, seed=s.seed, precision=s.precision)
    return run_lists(model, tokenizer, settings, num_lists=s.eval_lists, clean=s.clean_answers, split=split)


def measure(model: Any, tokenizer: Any, s: SmolSettings) -> dict[str, Any]:
    """The lists suite on held-out categories (the paper's protocol) at ``eval_temperature``; the open suite and
    the guard suite when asked for. ``clean_answers`` picks the rule the figures count by; the lists' and the
    open suite's figures by the rule of the records made before (first answer found, the kit's word lists)
    are kept beside them (``lenient``, ``open.old_rule``)."""
    from gapo_lite.eval.open_suite import REWORDINGS, run_open
    from gapo_lite.eval.settings import SampleSettings

    def open_suite(samples: int, **options: Any) -> dict[str, Any]:  # the open suite, or its rewordings, by the experiment's protocol
        settings = SampleSettings(n=samples, temperature=s.eval_temperature, max_new_tokens=s.open_tokens, batch_size=64, seed=s.seed, precision=s.precision)
        return run_open(model, tokenizer, settings, validator=s.open_validator, clean=s.clean_answers, **options)

    measured = lists_measures(model, tokenizer, s) if s.lists_suite else {}
    if s.open_samples > 0:
        o = open_suite(s.open_samples)
        measured["open"] = open_record(o, o["completions"], o["ended"], s.open_validator)
    if s.reworded_samples > 0:
        measured["reworded"] = reworded_record(open_suite(s.reworded_samples, prompts=REWORDINGS, seed_offset=303))
    if s.guard:
        from gapo_lite.eval.guard_suite import run_guard

        measured["guard"] = run_guard(model, tokenizer, precision=s.precision, progress=False)
    return measured


def reworded_record(scored: dict[str, Any]) -> dict[str, Any]:
    """What a stage keeps of the rewordings: the means, each prompt's figures and the replies with their end flags."""
    keys = ("mean_unique_valid", "mean_valid_rate", "mean_unique", "mean_end_rate", "mean_words", "sd_words", "replies")
    return {**{k: scored[k] for k in keys}, "validator": scored["validator"], "clean": scored["clean"],
            "prompts": {k: {key: v[key] for key in ("prompt", "unique_valid", "valid_rate", "end_rate", "top_valid")} for k, v in scored["prompts"].items()},
            "completions": scored["completions"], "ended": scored["ended"]}


def lists_measures(model: Any, tokenizer: Any, s: SmolSettings) -> dict[str, Any]:
    """The held-out lists suite's figures of one stage."""
    from gapo_lite.eval.list_suite import pressure_by_prompt

    r = lists_suite(model, tokenizer, s)
    mean = r["pressure"]["mean"] or {}  # None when no answer was valid; the paper's reward (-1 for an invalid answer)
    trained = pressure_by_prompt(r["lists"], r["samples"], invalid_reward=s.trained_invalid_reward, invalid_margin=s.invalid_margin)["mean"] or {}
    invalid = [x["completion"] for x in r["samples"] if x["choice"] is None]
    measured = {
        "heldout_jsd": r["mean_jsd"],
        "heldout_valid_rate": r["mean_valid_rate"],
        "heldout_end_rate": r["end_rate"],
        "heldout_mean_words": r["mean_words"],
        "heldout_sd_words": r["sd_words"],
        "heldout_replies": r["replies"],
        "lenient": r["lenient"],
        "heldout_position_tv": r["position_tv"],
        "heldout_position_shares": r["position_shares"],
        "pressure": mean.get("pressure", math.nan),
        "threshold": mean.get("threshold", math.nan),
        "dominant_share": mean.get("dominant_share", math.nan),
        "verdict": r["pressure"]["verdict"],
        "trained_invalid_reward": s.trained_invalid_reward,
        "trained_invalid_margin": s.invalid_margin,
        "trained_pressure": trained.get("pressure", math.nan),
        "trained_threshold": trained.get("threshold", math.nan),
        "heldout_choices": [x["choice"] for x in r["samples"]],
        "heldout_completions": [x["completion"] for x in r["samples"]],
        "heldout_ended": [x["ended"] for x in r["samples"]],
        "invalid_examples": invalid[:: max(1, len(invalid) // 12)][:12],
    }
    return measured


def rl_prompts(s: SmolSettings) -> int:
    """How many prompts an RL run of ``rl_steps`` draws (the recipe's prompts a step unless set)."""
    from gapo_lite.training.recipes import load_recipe

    return s.rl_steps * (s.prompts_per_step or load_recipe("smollm2_lists").prompts_per_step)


def fixed_lists_dataset(s: SmolSettings, num_prompts: int):
    """The list prompts of ``rl_lists="fixed"`` or ``"measured"``, in rounds of a seeded shuffle until ``num_prompts``
    rows: ``fixed_lists`` lists of the training categories, or the lists the lists suite measures (its held-out
    lists, ``eval_lists`` of them), each in its 4 orders, in the suite's wording.

    >>> rows = fixed_lists_dataset(SmolSettings(rl_lists="measured"), 100)
    >>> len(rows), len({r["prompt_id"] for r in rows}), sorted(rows[0]) == ["category", "items", "prompt", "prompt_id"]
    (100, 40, True)
    >>> len({r["prompt_id"] for r in fixed_lists_dataset(SmolSettings(rl_lists="fixed", fixed_lists=2), 100)})
    8
    """
    import random

    from datasets import Dataset

    from gapo_lite.data import make_example
    from gapo_lite.eval.list_suite import DEFAULT_TEMPLATE, make_eval_lists

    if s.rl_lists not in ("fixed", "measured"):
        raise ValueError(f"rl_lists={s.rl_lists!r} draws a fresh list each prompt; no fixed lists to build")
    split, count = ("train", s.fixed_lists) if s.rl_lists == "fixed" else ("heldout", s.eval_lists)
    shown = [make_example(list(order), lst.category, DEFAULT_TEMPLATE, f"{'train-' if split == 'train' else ''}{lst.list_id}-order{k}")
             for lst in make_eval_lists(count, seed=s.seed, split=split) for k, order in enumerate(lst.orders)]
    rng = random.Random(f"gapo-lite/{s.rl_lists}-lists/{s.seed if s.rl_seed is None else s.rl_seed}")  # "measured": the recorded runs' order
    rows: list[dict[str, Any]] = []
    while len(rows) < num_prompts:
        rng.shuffle(shown)
        rows += shown
    return Dataset.from_list(rows[:num_prompts])


def suites_of(measured: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One stage's measurement as the eval's suite results (``lists``, ``open``, ``guard``), for
    :func:`gapo_lite.eval.damage.damage`; a record made before the clean-answer rule has no reply form to read."""
    suites: dict[str, dict[str, Any]] = {}
    if "heldout_end_rate" in measured:
        suites["lists"] = {"end_rate": measured["heldout_end_rate"], "mean_words": measured["heldout_mean_words"], "sd_words": measured["heldout_sd_words"],
                           "replies": measured["heldout_replies"], "mean_valid_rate": measured["heldout_valid_rate"]}
    for name in ("open", "guard"):
        if name in measured and ("mean_end_rate" in measured[name] or name == "guard"):
            suites[name] = measured[name]
    return suites


def rl_config(s: SmolSettings, start: Path, out: Path, run: RLRun):
    """The recipe's config from ``start``, with this run's reward and ``rl_steps``."""
    import dataclasses

    from gapo_lite.training.recipes import load_recipe

    base = load_recipe("smollm2_naming" if run.name in NAMING else "smollm2_lists")
    rl_seed = s.seed if s.rl_seed is None else s.rl_seed
    changed = {"invalid_reward": s.invalid_reward, "num_generations": s.num_generations, "prompts_per_step": s.prompts_per_step,
               "learning_rate": s.learning_rate, "temperature": s.rl_temperature, "lr_scheduler_type": s.rl_schedule,
               "beta": s.beta, "invalid_margin": s.invalid_margin if REWARDS[run.name] == "gapo" else None,
               "lora_r": s.lora_r, "lora_alpha": s.lora_alpha, "lora_dropout": s.lora_dropout}
    return dataclasses.replace(base, model=str(start), reward=REWARDS[run.name], max_steps=s.rl_steps, save_steps=max(1, min(25, s.rl_steps // 2)),
                               save_total_limit=1, max_completion_length=s.completion_tokens, output_dir=str(out), seed=rl_seed, data_seed=rl_seed, precision=s.precision,
                               clean_answers=s.clean_answers if s.reward_clean_answers is None else s.reward_clean_answers,
                               open_share=0.0 if run.name in LISTS_ONLY else s.open_share, open_vocabulary=s.open_vocabulary, load_in_4bit=s.load_in_4bit,
                               **{k: v for k, v in changed.items() if v is not None})


ROWS = (("heldout_valid_rate", "held-out valid rate"), ("heldout_jsd", "held-out JSD"), ("heldout_position_tv", "position bias (TV)"),
        ("dominant_share", "dominant share per prompt"), ("pressure", "mode pressure (< 0: GAPO spreads)"), ("threshold", "validity threshold"))
# Rows only newer runs record: the diagnostic for the reward trained with, and the open-ended suite.
EXTRA_ROWS = (("heldout_end_rate", "held-out: replies that end their turn"), ("heldout_mean_words", "held-out: mean reply length (words)"),
              ("lenient.mean_jsd", "held-out JSD, first item found"), ("lenient.mean_valid_rate", "held-out valid, first item found"),
              ("trained_pressure", "pressure, reward trained with"), ("trained_threshold", "threshold, reward trained with"),
              ("open.mean_unique_valid", "open: valid Unique@N per prompt"), ("open.mean_valid_rate", "open: valid rate"),
              ("open.mean_end_rate", "open: replies that end their turn"), ("open.mean_words", "open: mean reply length (words)"),
              ("open.old_rule.mean_unique_valid", "open: valid Unique@N, old rule"), ("open.old_rule.mean_valid_rate", "open: valid rate, old rule"),
              ("open.mean_unique", "open: distinct replies per prompt"), ("guard.accuracy", "guard: accuracy (90 instructions)"))


NAMING_ROWS = (("reworded.mean_unique_valid", "rewordings: valid Unique@N per prompt"), ("reworded.mean_valid_rate", "rewordings: valid rate"),
               ("reworded.mean_end_rate", "rewordings: replies that end their turn"))


def open_record(scored: dict[str, Any], completions: list[list[str]], ended: list[list[bool]], validator: str) -> dict[str, Any]:
    """What a stage keeps of the open suite: ``scored`` (:func:`~gapo_lite.eval.open_suite.score_open` of the
    replies by ``validator``), the figures by the rule of the records made before (first answer found, the kit's
    word lists), and the replies with their end flags, so that they can be scored again without resampling."""
    from gapo_lite.eval.open_suite import PROMPTS, score_open

    old = score_open(dict(zip(PROMPTS, completions)), PROMPTS, validator="word_lists", clean=False)
    keys = ("mean_unique_valid", "mean_valid_rate", "mean_unique", "mean_end_rate", "mean_words", "sd_words", "replies", "mean_lenient_unique_valid",
            "mean_lenient_valid_rate")
    return {
        **{k: scored[k] for k in keys}, "validator": validator, "clean": scored["clean"],
        "old_rule": {"mean_unique_valid": old["mean_unique_valid"], "mean_valid_rate": old["mean_valid_rate"]},
        "prompts": {k: {key: v[key] for key in ("unique", "unique_valid", "valid_rate", "end_rate", "mean_words", "validator", "top_valid")}
                    for k, v in scored["prompts"].items()},
        "completions": completions,
        "ended": ended,
    }


def _value(measured: dict[str, Any], key: str) -> Any:
    for part in key.split("."):
        if not isinstance(measured, dict) or part not in measured:
            return None
        measured = measured[part]
    return measured


def format_table(results: dict[str, Any]) -> str:
    """Start / GAPO / baseline side by side (held-out lists, T = eval_temperature; open prompts when measured)."""
    names = [n for n in LABELS if isinstance(results.get(n), dict)]
    rows = [(label, [_value(results[n], key) for n in names]) for key, label in (*ROWS, *EXTRA_ROWS, *NAMING_ROWS)
            if all(_value(results[n], key) is not None for n in names)]
    return table(rows, [LABELS[n] for n in names], width=26, label_width=36)


def run(out_dir: str | Path, s: SmolSettings, command: str | None = None) -> dict[str, Any]:
    """Every stage: convert (once) and load the GGUF, warm up (optional), measure, GAPO and baseline, measure."""
    from gapo_lite.errors import UserError, UserFileNotFoundError
    from gapo_lite.gguf import smollm2_path
    from gapo_lite.models import check_model_path

    unknown = [name for name in s.runs if name not in REWARDS]
    if unknown or not s.runs:
        raise UserError(f"runs must name some of {list(REWARDS)}, got {list(s.runs)}")

    def build(_: Path) -> Path:
        path = s.model or smollm2_path()
        if not Path(path).expanduser().exists():
            raise UserFileNotFoundError(f"SmolLM2 not found at {path}; fetch it with `bash scripts/get_smollm2.sh` (or --set model=PATH)")
        return Path(check_model_path(path))

    def on_start(results: dict[str, Any]) -> dict[str, Any]:
        if "verdict" in results["before"]:
            print(f"      start (held-out, T={s.eval_temperature:g}): {results['before']['verdict']}")
        return {}

    def naming_part(part: str, run: RLRun) -> Any:
        """The naming recipe's scorer or dataset, built for this run's config (its reward, steps and seed)."""
        from gapo_lite.training.recipes import load_recipe_file

        return load_recipe_file("smollm2_naming").build(part, rl_config(s, Path(out_dir) / "pretrained", Path(out_dir) / run.name, run))

    def make_run(name: str) -> RLRun:
        run = RLRun(name, LABELS[name])
        if name in NAMING:
            return dataclasses.replace(run, make_scorer=lambda: naming_part("scorer", run), make_dataset=lambda: naming_part("train_dataset", run))
        return dataclasses.replace(run, make_dataset=None if s.rl_lists == "train" else lambda: fixed_lists_dataset(s, rl_prompts(s)))

    experiment = Experiment(
        settings=s, build_model=build, pretrain=lambda model, tok: warm_up(model, tok, s),
        runs=[make_run(name) for name in s.runs],
        rl_config=lambda start, out, r: rl_config(s, start, out, r),
        measure=lambda model, tok: measure(model, tok, s), format_table=format_table,
        pretrain_message=f"loading SmolLM2-135M-Instruct{'' if s.warmup_steps == 0 else f' and warming it up ({s.warmup_steps} steps on its own valid answers)'}",
        run_message={"train": " (LoRA, training categories)", "fixed": f" (LoRA, {s.fixed_lists} fixed training list(s))",
                     "measured": " (LoRA, on the lists the suite measures)"}[s.rl_lists], on_start=on_start,
    )
    return run_staged(experiment, out_dir, command=command)


def main(argv: list[str] | None = None) -> int:
    def go(args: Any) -> int:
        run(args.out, settings_from_args(SmolSettings, args), command=args.command)
        return 0

    return module_main("python -m lab.smollm2", "GAPO vs the validity baseline on SmolLM2-135M-Instruct (CPU)", "runs/smollm2", go, argv)


if __name__ == "__main__":
    raise SystemExit(main())
