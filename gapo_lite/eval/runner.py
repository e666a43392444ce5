"""``evaluate`` in three steps: :func:`prepare_evaluation` (check the options, decide variants, sampling
settings and benchmarks; loads nothing), :func:`run_evaluation` (load each model once, run the suites) and
:func:`report` (write results.json, report.md and PNGs)."""
from __future__ import annotations

import contextlib
import gc
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gapo_lite._bootstrap import EVAL_BACKEND, REQUESTED_PRECISIONS, cpu_precision, cuda_available
from gapo_lite.errors import UserError, UserFileNotFoundError
from gapo_lite.eval.bench import BenchItem
from gapo_lite.eval.settings import SampleSettings
from gapo_lite.eval.sweep import DEFAULT_TEMPERATURES

SUITES: tuple[str, ...] = ("lists", "open", "creative", "guard", "bench")
DEFAULT_N = {"lists": 100, "open": 500, "creative": 100, "guard": 1}  # the guard's instructions are answered once, greedily
DEFAULT_MAX_NEW_TOKENS = {"lists": 24, "open": 16, "creative": 256, "guard": 16}


@dataclass(frozen=True)
class Variant:
    """One thing evaluated: a model folder (or hub name) and an optional adapter on it."""

    label: str
    model: str
    adapter: str | None = None


def _is_adapter(path: str | Path) -> bool:
    return (Path(path) / "adapter_config.json").is_file()


def plan_variants(model: str, adapter: str | None = None, compare: str | None = None) -> list[Variant]:
    """What to evaluate, first variant = reference of the side-by-side.

    No adapter, no compare: the model alone ("base"). ``adapter``: "base" (no adapter) vs "adapter".
    ``compare``: the model (with ``adapter`` if given) vs "compare", which is an adapter on the same base
    when its folder has ``adapter_config.json``, otherwise another model.
    """
    model = str(model)
    if adapter is not None and not _is_adapter(adapter):
        raise UserFileNotFoundError(f"adapter {adapter!r} is not a PEFT adapter folder (no adapter_config.json in it)")
    if compare is None:
        return [Variant("base", model)] + ([Variant("adapter", model, str(adapter))] if adapter else [])
    first = Variant("adapter", model, str(adapter)) if adapter else Variant("base", model)
    second = Variant("compare", model, str(compare)) if _is_adapter(compare) else Variant("compare", str(compare))
    if (second.model, second.adapter) == (first.model, first.adapter):
        raise UserError(f"--compare {compare!r} is the same as what is evaluated already")
    return [first, second]


class ModelPool:
    """Loads each base model once; adapters are attached to it by name and switched (or disabled) per variant."""

    def __init__(self, backend: str = EVAL_BACKEND, load_in_4bit: bool = False) -> None:
        self.backend = backend
        self.load_in_4bit = load_in_4bit
        self._models: dict[str, dict[str, Any]] = {}

    def _entry(self, path: str) -> dict[str, Any]:
        if path not in self._models:
            from gapo_lite.models import load_model

            try:
                model, tokenizer = load_model(path, backend=self.backend, load_in_4bit=self.load_in_4bit, lora=None)  # type: ignore[arg-type]
            except FileNotFoundError as err:  # no such folder, or a hub name that cannot be fetched
                raise UserFileNotFoundError(str(err)) from err
            self._models[path] = {"model": model, "tokenizer": tokenizer, "peft": None, "adapters": {}}
        return self._models[path]

    @contextlib.contextmanager
    def use(self, variant: Variant) -> Iterator[tuple[Any, Any]]:
        """(model, tokenizer) for ``variant``: the base with its adapters disabled, or with one adapter active."""
        entry = self._entry(variant.model)
        if variant.adapter is None:
            if entry["peft"] is None:
                yield entry["model"], entry["tokenizer"]
            else:
                with entry["peft"].disable_adapter():
                    yield entry["peft"], entry["tokenizer"]
            return
        name = entry["adapters"].get(variant.adapter)
        if name is None:
            name = f"eval{len(entry['adapters'])}"
            if entry["peft"] is None:
                from peft import PeftModel

                entry["peft"] = PeftModel.from_pretrained(entry["model"], variant.adapter, adapter_name=name, is_trainable=False)
            else:
                entry["peft"].load_adapter(variant.adapter, adapter_name=name, is_trainable=False)
            entry["adapters"][variant.adapter] = name
        entry["peft"].set_adapter(name)
        yield entry["peft"], entry["tokenizer"]

    def release(self, path: str) -> None:
        """Free a loaded model (and its GPU memory)."""
        if self._models.pop(path, None) is not None:
            gc.collect()
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()


def _write_samples(out: Path, label: str, suite: str, samples: list[dict[str, Any]]) -> str:
    folder = out / "samples"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{label}_{suite}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for row in samples:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return str(path.relative_to(out))


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("gapo-lite", "torch", "transformers", "peft", "lm_eval", "sentence-transformers", "sacrebleu"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


@dataclass(frozen=True)
class EvalOptions:
    """Everything :func:`evaluate` takes besides the model, adapter and comparison (see its docstring)."""

    suites: Sequence[str] = SUITES
    out_dir: str | Path = "eval_out"
    n: int | None = None
    temperature: float = 0.7
    seed: int = 0
    max_new_tokens: int | None = None
    batch_size: int = 64
    sweep: bool = False
    sweep_temperatures: Sequence[float] = DEFAULT_TEMPERATURES
    sweep_n: int = 100
    bench_tasks: Sequence[str] | None = None
    bench_limit: int | None = 200
    bench_batch_size: int = 8
    bench_include_path: Sequence[str] = ()
    bench_chat_template: bool = False
    allow_code_exec: bool = False
    fold_plurals: bool = False
    num_lists: int = 10
    list_size: int = 8
    num_orders: int = 4
    backend: str = EVAL_BACKEND
    load_in_4bit: bool = False
    embed: Any = None
    progress: bool = True
    precision: str = "auto"  # sampling on a CPU: "auto" (measured, _bootstrap.cpu_precision), "bf16" (autocast, native bf16 only), "fp32"


@dataclass
class EvalJob:
    """What :func:`run_evaluation` does: the variants, the suites in order, their sampling settings and benchmarks."""

    model: str
    adapter: str | None
    compare: str | None
    options: EvalOptions
    variants: list[Variant]
    suites: list[str]
    out: Path
    settings: dict[str, SampleSettings] = field(default_factory=dict)
    sweep_settings: SampleSettings | None = None
    bench_items: list[BenchItem] | None = None
    bench_manager: Any = None  # lm-eval's TaskManager


@dataclass
class EvalRun:
    """What :func:`run_evaluation` measured: per-variant suite results, sweep points (scored) and timings."""

    per_variant: dict[str, dict[str, Any]]
    sweep_points: dict[str, list[dict[str, Any]]]
    seconds: dict[str, float]


def prepare_evaluation(model: str, adapter: str | None = None, compare: str | None = None, options: EvalOptions | None = None) -> EvalJob:
    """Check the options and decide what to run; loads no model (the benchmarks may load lm-eval task configs)."""
    from gapo_lite.eval import bench as bench_mod

    o = options or EvalOptions()
    suites = list(dict.fromkeys(o.suites))
    unknown = [s for s in suites if s not in SUITES]
    if unknown or not suites:
        raise UserError(f"unknown suite(s) {unknown or suites}; choose from {', '.join(SUITES)}")
    if o.n is not None and o.n < 1:
        raise UserError(f"n must be >= 1, got {o.n}")
    if o.sweep and o.sweep_n < 1:
        raise UserError(f"sweep_n must be >= 1, got {o.sweep_n}")
    if o.precision not in REQUESTED_PRECISIONS:
        raise UserError(f"precision must be 'auto', 'bf16' or 'fp32', got {o.precision!r}")
    if o.precision == "bf16" and not cuda_available():
        try:
            cpu_precision("bf16")
        except ValueError as error:
            raise UserError(str(error)) from None
    job = EvalJob(str(model), adapter, compare, o, plan_variants(model, adapter, compare), suites, Path(o.out_dir))

    def sample_settings(n: int, suite: str) -> SampleSettings:
        return SampleSettings(n=n, temperature=o.temperature, max_new_tokens=o.max_new_tokens or DEFAULT_MAX_NEW_TOKENS[suite],
                              batch_size=o.batch_size, seed=o.seed, progress=o.progress, precision=o.precision)

    job.settings = {s: sample_settings(o.n or DEFAULT_N[s], s) for s in suites if s not in ("bench", "guard")}
    if "guard" in suites:
        job.settings["guard"] = SampleSettings(n=1, temperature=0.0, max_new_tokens=o.max_new_tokens or DEFAULT_MAX_NEW_TOKENS["guard"],
                                                batch_size=o.batch_size, progress=o.progress, precision=o.precision)
    job.sweep_settings = sample_settings(o.sweep_n, "open") if o.sweep else None
    if "bench" in suites:
        names = list(o.bench_tasks or bench_mod.DEFAULT_BENCHMARKS)
        job.bench_manager = bench_mod.task_manager(o.bench_include_path, names)
        job.bench_items = bench_mod.plan(names, limit=o.bench_limit, allow_code_exec=o.allow_code_exec, manager=job.bench_manager)
        for item in job.bench_items:
            if item.status != "ready":
                print(f"gapo-lite eval: bench {item.key} skipped: {item.reason}")
    return job


def run_suite(job: EvalJob, suite: str, model: Any, tokenizer: Any) -> dict[str, Any]:
    """One suite on one loaded model; samples are written to ``samples/`` by the caller."""
    from gapo_lite.eval import bench as bench_mod
    from gapo_lite.eval.creative import run_creative
    from gapo_lite.eval.list_suite import run_lists
    from gapo_lite.eval.open_suite import run_open

    o = job.options
    if suite == "lists":
        return run_lists(model, tokenizer, job.settings[suite], num_lists=o.num_lists, list_size=o.list_size, num_orders=o.num_orders)
    if suite == "open":
        # The widest vocabularies: a real model's "Snake" or "Dublin" is an animal or a city though the kit's 25-word lists lack it.
        result = run_open(model, tokenizer, job.settings[suite], fold_plurals=o.fold_plurals, validator="wordnet")
        result.pop("completions")
        result.pop("ended")
        return result
    if suite == "guard":
        from gapo_lite.eval.guard_suite import run_guard

        settings = job.settings[suite]
        return run_guard(model, tokenizer, max_new_tokens=settings.max_new_tokens, batch_size=settings.batch_size, precision=settings.precision,
                         progress=settings.progress)
    if suite == "creative":
        return run_creative(model, tokenizer, job.settings[suite], embed=o.embed)
    return bench_mod.run(model, tokenizer, job.bench_items or [], batch_size=o.bench_batch_size, apply_chat_template=o.bench_chat_template,
                         allow_code_exec=o.allow_code_exec, manager=job.bench_manager)


def run_evaluation(job: EvalJob) -> EvalRun:
    """Load each model once, run every suite (and the sweep) for every variant, score the sweep under the base."""
    from gapo_lite.eval.sweep import sample_sweep, score_sweep

    o = job.options
    job.out.mkdir(parents=True, exist_ok=True)
    pool = ModelPool(backend=o.backend, load_in_4bit=o.load_in_4bit)
    run = EvalRun({}, {}, {})
    for variant in job.variants:
        results: dict[str, Any] = {}
        with pool.use(variant) as (m, tok):
            for suite in job.suites:
                print(f"gapo-lite eval: {variant.label}: {suite}")
                start = time.perf_counter()
                r = run_suite(job, suite, m, tok)
                if "samples" in r:
                    r["samples_file"] = _write_samples(job.out, variant.label, suite, r.pop("samples"))
                results[suite] = r
                run.seconds[f"{variant.label}/{suite}"] = time.perf_counter() - start
            if job.sweep_settings is not None:
                print(f"gapo-lite eval: {variant.label}: temperature sweep {list(o.sweep_temperatures)}")
                run.sweep_points[variant.label] = sample_sweep(m, tok, job.sweep_settings, o.sweep_temperatures, fold_plurals=o.fold_plurals)
        run.per_variant[variant.label] = results
        if variant.model != job.model:
            pool.release(variant.model)
    if job.sweep_settings is not None:
        with pool.use(Variant("base", job.model)) as (base, tok):
            batch = max(1, min(o.batch_size, 16))
            run.sweep_points = {label: score_sweep(base, tok, points, batch_size=batch) for label, points in run.sweep_points.items()}
    return run


def report(job: EvalJob, run: EvalRun) -> dict[str, Any]:
    """The results as written to results.json (with report.md and the PNGs beside it)."""
    from gapo_lite.eval.report import write_report

    o = job.options
    sample_suites = list(job.settings)
    config = {
        "model": job.model, "adapter": job.adapter, "compare": job.compare,
        "variants": [{"label": v.label, "model": v.model, "adapter": v.adapter} for v in job.variants],
        "suites": job.suites, "temperature": o.temperature, "seed": o.seed,
        "n": {s: job.settings[s].n for s in sample_suites} | ({"sweep": o.sweep_n} if o.sweep else {}),
        "max_new_tokens": {s: job.settings[s].max_new_tokens for s in sample_suites},
        "batch_size": o.batch_size, "backend": o.backend, "load_in_4bit": o.load_in_4bit, "fold_plurals": o.fold_plurals,
        "bench_limit": o.bench_limit if "bench" in job.suites else None,
        "bench_tasks": [i.task for i in job.bench_items] if job.bench_items else None,
        "versions": _versions(), "seconds": run.seconds,
    }
    results: dict[str, Any] = {"config": config, "variants": run.per_variant}
    if job.sweep_settings is not None:
        results["sweep"] = {
            "n": o.sweep_n,
            "temperatures": [float(t) for t in o.sweep_temperatures],
            "diversity": f"mean Unique@{o.sweep_n} over the open-ended prompts",
            "coherence": (
                f"mean per-token log-likelihood of the samples under the BASE model ({job.model}, no adapter): per sample the mean "
                "log-probability of its completion tokens given the prompt, then the mean over samples"
            ),
            "points": run.sweep_points,
        }
    return write_report(results, job.out)


def evaluate(model: str, adapter: str | None = None, compare: str | None = None, **options: Any) -> dict[str, Any]:
    """Evaluate ``model`` (with ``adapter``; beside ``compare``) and write the report; ``options`` are the
    fields of :class:`EvalOptions`.

    ``n`` and ``max_new_tokens`` override every suite's default (lists 100 / open 500 / creative 100 samples
    per prompt; 24 / 16 / 256 new tokens). ``sweep`` adds the temperature sweep (``sweep_n`` samples per
    open-ended prompt at each of ``sweep_temperatures``). Returns the results as written to results.json.
    """
    known = {f.name for f in fields(EvalOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"evaluate() got unknown option(s) {unknown}; known: {', '.join(sorted(known))}")
    job = prepare_evaluation(model, adapter, compare, EvalOptions(**options))
    return report(job, run_evaluation(job))
