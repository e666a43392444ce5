"""``evaluate``: load the model (and adapter / comparison), run the suites, write results.json, report.md and PNGs."""
from __future__ import annotations

import contextlib
import gc
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gapo_lite.errors import UserError, UserFileNotFoundError
from gapo_lite.eval.sweep import DEFAULT_TEMPERATURES

SUITES: tuple[str, ...] = ("lists", "open", "creative", "bench")
DEFAULT_N = {"lists": 100, "open": 500, "creative": 100}
DEFAULT_MAX_NEW_TOKENS = {"lists": 24, "open": 16, "creative": 256}


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

    def __init__(self, backend: str = "transformers", load_in_4bit: bool = False) -> None:
        self.backend = backend
        self.load_in_4bit = load_in_4bit
        self._models: dict[str, dict[str, Any]] = {}

    def _entry(self, path: str) -> dict[str, Any]:
        if path not in self._models:
            from gapo_lite.models import load_model

            model, tokenizer = load_model(path, backend=self.backend, load_in_4bit=self.load_in_4bit, lora=None)  # type: ignore[arg-type]
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


def evaluate(
    model: str,
    adapter: str | None = None,
    compare: str | None = None,
    suites: Sequence[str] = SUITES,
    out_dir: str | Path = "eval_out",
    n: int | None = None,
    temperature: float = 0.7,
    seed: int = 0,
    max_new_tokens: int | None = None,
    batch_size: int = 64,
    *,
    sweep: bool = False,
    sweep_temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    sweep_n: int = 100,
    bench_tasks: Sequence[str] | None = None,
    bench_limit: int | None = 200,
    bench_batch_size: int = 8,
    bench_include_path: Sequence[str] = (),
    bench_chat_template: bool = False,
    allow_code_exec: bool = False,
    fold_plurals: bool = False,
    num_lists: int = 10,
    list_size: int = 8,
    num_orders: int = 4,
    backend: str = "transformers",
    load_in_4bit: bool = False,
    embed=None,
    progress: bool = True,
) -> dict[str, Any]:
    """Evaluate ``model`` (with ``adapter``; beside ``compare``) on ``suites``; write the report to ``out_dir``.

    ``n`` and ``max_new_tokens`` override every suite's default (lists 100 / open 500 / creative 100 samples
    per prompt; 24 / 16 / 256 new tokens). ``sweep`` adds the temperature sweep (``sweep_n`` samples per
    open-ended prompt at each of ``sweep_temperatures``). Returns the results as written to results.json.
    """
    from gapo_lite.eval import bench as bench_mod
    from gapo_lite.eval.creative import run_creative
    from gapo_lite.eval.lists import run_lists
    from gapo_lite.eval.open_ended import run_open
    from gapo_lite.eval.report import write_report
    from gapo_lite.eval.settings import SampleSettings
    from gapo_lite.eval.sweep import sample_sweep, score_sweep

    suites = list(dict.fromkeys(suites))
    unknown = [s for s in suites if s not in SUITES]
    if unknown or not suites:
        raise UserError(f"unknown suite(s) {unknown or suites}; choose from {', '.join(SUITES)}")
    if n is not None and n < 1:
        raise UserError(f"n must be >= 1, got {n}")
    if sweep and sweep_n < 1:
        raise UserError(f"sweep_n must be >= 1, got {sweep_n}")
    variants = plan_variants(model, adapter, compare)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sample_suites = [s for s in suites if s != "bench"]
    settings = {
        s: SampleSettings(
            n=n or DEFAULT_N[s], temperature=temperature, max_new_tokens=max_new_tokens or DEFAULT_MAX_NEW_TOKENS[s],
            batch_size=batch_size, seed=seed, progress=progress,
        )
        for s in sample_suites
    }
    sweep_settings = SampleSettings(n=sweep_n, temperature=temperature, max_new_tokens=max_new_tokens or DEFAULT_MAX_NEW_TOKENS["open"], batch_size=batch_size, seed=seed, progress=progress) if sweep else None
    bench_manager = bench_items = None
    if "bench" in suites:
        names = list(bench_tasks or bench_mod.DEFAULT_BENCHMARKS)
        bench_manager = bench_mod.task_manager(bench_include_path, names)
        bench_items = bench_mod.plan(names, limit=bench_limit, allow_code_exec=allow_code_exec, manager=bench_manager)
        for item in bench_items:
            if item.status != "ready":
                print(f"gapo-lite eval: bench {item.key} skipped: {item.reason}")

    pool = ModelPool(backend=backend, load_in_4bit=load_in_4bit)
    per_variant: dict[str, dict[str, Any]] = {}
    sweep_points: dict[str, list[dict[str, Any]]] = {}
    timings: dict[str, float] = {}
    for variant in variants:
        results: dict[str, Any] = {}
        with pool.use(variant) as (m, tok):
            for suite in suites:
                print(f"gapo-lite eval: {variant.label}: {suite}")
                start = time.perf_counter()
                if suite == "lists":
                    r = run_lists(m, tok, settings[suite], num_lists=num_lists, list_size=list_size, num_orders=num_orders)
                elif suite == "open":
                    r = run_open(m, tok, settings[suite], fold_plurals=fold_plurals)
                    r.pop("completions")
                elif suite == "creative":
                    r = run_creative(m, tok, settings[suite], embed=embed)
                else:
                    r = bench_mod.run(m, tok, bench_items, batch_size=bench_batch_size, apply_chat_template=bench_chat_template, allow_code_exec=allow_code_exec, manager=bench_manager)
                if "samples" in r:
                    r["samples_file"] = _write_samples(out, variant.label, suite, r.pop("samples"))
                results[suite] = r
                timings[f"{variant.label}/{suite}"] = time.perf_counter() - start
            if sweep_settings is not None:
                print(f"gapo-lite eval: {variant.label}: temperature sweep {list(sweep_temperatures)}")
                sweep_points[variant.label] = sample_sweep(m, tok, sweep_settings, sweep_temperatures, fold_plurals=fold_plurals)
        per_variant[variant.label] = results
        if variant.model != str(model):
            pool.release(variant.model)
    sweep_result = None
    if sweep_settings is not None:
        with pool.use(Variant("base", str(model))) as (base, tok):
            scored = {label: score_sweep(base, tok, points, batch_size=max(1, min(batch_size, 16))) for label, points in sweep_points.items()}
        sweep_result = {
            "n": sweep_n,
            "temperatures": [float(t) for t in sweep_temperatures],
            "diversity": f"mean Unique@{sweep_n} over the open-ended prompts",
            "coherence": f"mean per-token log-likelihood of the samples under the BASE model ({model}, no adapter): per sample the mean log-probability of its completion tokens given the prompt, then the mean over samples",
            "points": scored,
        }
    config = {
        "model": str(model), "adapter": adapter, "compare": compare,
        "variants": [{"label": v.label, "model": v.model, "adapter": v.adapter} for v in variants],
        "suites": suites, "temperature": temperature, "seed": seed,
        "n": {s: settings[s].n for s in sample_suites} | ({"sweep": sweep_n} if sweep else {}),
        "max_new_tokens": {s: settings[s].max_new_tokens for s in sample_suites},
        "batch_size": batch_size, "backend": backend, "load_in_4bit": load_in_4bit, "fold_plurals": fold_plurals,
        "bench_limit": bench_limit if "bench" in suites else None,
        "bench_tasks": [i.task for i in bench_items] if bench_items else None,
        "versions": _versions(), "seconds": timings,
    }
    results = {"config": config, "variants": per_variant}
    if sweep_result:
        results["sweep"] = sweep_result
    return write_report(results, out)
