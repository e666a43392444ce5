"""The staged runner every miniature CPU experiment shares.

Stages: build a tiny model -> pretrain it (the same start for every RL run) -> measure it -> each RL run
from that start -> measure each -> ``results.json``, the plain-text table and optional plots. An
experiment supplies only what differs (:class:`Experiment`); its settings dataclass needs ``seed`` and
``threads`` and is recorded whole. The demo, the experiments and (one run per start) the regime map all
run on it.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gapo_lite.overrides import apply_overrides

# The lab's recorded figures were computed in fp32; its runs keep it whatever the CPU's "auto" would choose.
LAB_PRECISION = "fp32"


@dataclass(frozen=True)
class RLRun:
    """One RL run from the pretrained start: results key, table column, and how it is rewarded.

    ``scorer`` and ``train_dataset`` are built lazily (``make_scorer()``, ``make_dataset()``) so that a run
    that is switched off costs nothing; with no scorer the config's ``reward`` decides (list prompts).
    """

    name: str
    label: str
    make_scorer: Callable[[], Any] | None = None
    make_dataset: Callable[[], Any] | None = None


@dataclass
class Experiment:
    """What one miniature experiment supplies to :func:`run_staged`."""

    settings: Any
    build_model: Callable[[Path], Path]
    pretrain: Callable[[Any, Any], list[float]]
    runs: Sequence[RLRun]
    rl_config: Callable[[Path, Path, RLRun], Any]
    measure: Callable[[Any, Any], dict[str, Any]]
    format_table: Callable[[dict[str, Any]], str]
    pretrain_message: str = "building and pretraining a tiny model"
    run_message: str = ""
    plot: Callable[[dict[str, Any], Path], Path | list[Path]] | None = None  # (results, output folder) -> the file(s) written
    extra_results: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda results: {})
    on_start: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # reads the measured start before RL; adds to the results
    summary: Callable[[dict[str, Any]], str] | None = None  # one measured model in a few words, for the line that ends its stage


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run with ``n`` torch threads, then restore the previous count.

    More threads pay off only on idle cores (``benchmarks/threads.py`` measures it): a thread that waits for
    a core another process holds stalls the others. The figures depend slightly on the count, so each
    experiment records it in its settings.
    """
    import torch

    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def run_staged(experiment: Experiment, out_dir: str | Path, command: str | None = None) -> dict[str, Any]:
    """Every stage of ``experiment``; prints the table, writes ``results.json`` (and the plot) and returns the results.

    The terminal gets one progress bar and one closing line per stage, then the table; what the libraries print
    on the way (model loads, the trainer's set-up) goes to ``log.txt`` in the output folder (:func:`to_log`)."""
    from gapo_lite.quiet import quiet_libraries

    quiet_libraries(progress_bars=False)  # before transformers is imported: its import brings torchao's noise
    from transformers import logging as hf_logging

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hf_logging.set_verbosity_error()
    with torch_threads(experiment.settings.threads):
        return _run_stages(experiment, out, command)


@contextlib.contextmanager
def to_log(path: Path) -> Iterator[None]:
    """Send what is printed (stdout) inside the block to the end of ``path``; progress bars write to stderr and stay."""
    with open(path, "a") as log, contextlib.redirect_stdout(log):
        yield


def ended(summary: Callable[[dict[str, Any]], str] | None, measured: dict[str, Any], seconds: float) -> str:
    """The line that closes a stage: the measured model in the experiment's words, and the stage's time."""
    return f"      {summary(measured) + '; ' if summary else ''}{seconds:.0f} s"


class StageStore:
    """Each finished stage's results as ``stages/<name>.json`` in the output folder, written atomically the
    moment the stage ends, so an interrupted experiment reruns only what had not finished. The settings are
    recorded first: a folder holding a run with other settings is refused rather than mixed into. Settings
    that say how to run, not what (``HOW_TO_RUN``), may change between sessions; each stage records its own."""

    HOW_TO_RUN = ("threads",)  # the thread count moves figures only within the RL noise (it changes the order of sums)

    def __init__(self, out: Path, settings: dict[str, Any]) -> None:
        self.dir = out / "stages"
        self.dir.mkdir(parents=True, exist_ok=True)
        settings = json.loads(json.dumps(settings))
        recorded = self.get("settings")
        changed = sorted(k for k in set(recorded or {}) | set(settings) if k not in self.HOW_TO_RUN and (recorded or {}).get(k) != settings.get(k))
        if recorded is not None and changed:
            from gapo_lite.errors import UserError

            raise UserError(f"{out} holds an experiment run with other settings ({', '.join(changed)}); use another --out or delete the folder")
        self.how = {k: settings.get(k) for k in self.HOW_TO_RUN}
        self.put("settings", settings)

    def get(self, name: str) -> Any:
        path = self.dir / f"{name}.json"
        return json.loads(path.read_text()) if path.is_file() else None

    def put(self, name: str, value: Any) -> None:
        path = self.dir / f"{name}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(value, indent=2))
        tmp.replace(path)


def _run_stages(e: Experiment, out: Path, command: str | None) -> dict[str, Any]:
    import torch

    from gapo_lite.models import load_model
    from gapo_lite.training import train
    from gapo_lite.training.callbacks import ProgressBarCallback

    s = e.settings
    store = StageStore(out, dataclasses.asdict(s))
    total = len(e.runs) + 2
    torch.manual_seed(s.seed)
    t0 = time.perf_counter()
    start = out / "pretrained"
    log = out / "log.txt"

    first = store.get("start")
    if first is not None and (start / "config.json").is_file():
        print(f"[1/{total}] {e.pretrain_message}: done earlier ({store.dir / 'start.json'})")
    else:
        print(f"[1/{total}] {e.pretrain_message}")
        with to_log(log):
            model, tok = load_model(e.build_model(out / "base_model"), lora=None)
            losses = e.pretrain(model, tok)
            model.save_pretrained(start)
            tok.save_pretrained(start)
            seconds = time.perf_counter() - t0
            before = e.measure(model, tok)
        first = {"before": before, "pretrain_final_loss": losses[-1] if losses else None, "seconds": seconds, "wall": time.perf_counter() - t0, **store.how}
        print(ended(e.summary, before, first["wall"]))
        if e.on_start is not None:
            first.update(e.on_start(first))
        store.put("start", first)
        del model
    results: dict[str, Any] = {k: v for k, v in first.items() if k not in ("seconds", "wall", *StageStore.HOW_TO_RUN)}
    ran_with = {"start": {k: first.get(k) for k in StageStore.HOW_TO_RUN}}
    stages: dict[str, float] = {"pretrain": first["seconds"]}
    walls = [first["wall"]]  # each stage with its measurement, whichever session ran it
    if getattr(s, "load_in_4bit", False):  # RL trains on the start quantized to NF4: its own start is that model
        quantized = store.get("start_nf4")
        if quantized is None:
            print("      the start again, its weights in NF4 (bitsandbytes)")
            t = time.perf_counter()
            with to_log(log):
                model, tok = load_model(start, lora=None, load_in_4bit=True)
                quantized = {"measured": e.measure(model, tok), "wall": time.perf_counter() - t, **store.how}
            store.put("start_nf4", quantized)
            del model
        results["before_nf4"] = quantized["measured"]
        walls.append(quantized["wall"])

    every = getattr(s, "measure_every", 0)
    for step, run in enumerate(e.runs, start=2):
        # (stage name, steps trained): every `measure_every` steps when asked, then the run's last step under its own name
        marks = [(f"{run.name}@{k}", k) for k in range(every, s.rl_steps, every)] if every > 0 else []
        extras: dict[str, Any] | None = None
        for name, steps in [*marks, (run.name, s.rl_steps)]:
            done = store.get(name)
            if done is not None:
                print(f"[{step}/{total}] {run.label}, {steps} steps: done earlier ({store.dir / (name + '.json')})")
            else:
                print(f"[{step}/{total}] {run.label}: {steps} steps{e.run_message}")
                t = time.perf_counter()
                if extras is None:  # built once, for the whole run: a run resumed to a later mark reads the same data
                    extras = {k: f() for k, f in (("scorer", run.make_scorer), ("train_dataset", run.make_dataset)) if f is not None}
                config = dataclasses.replace(e.rl_config(start, out / run.name, run), resume=True)  # from its last complete checkpoint, if any
                if steps != s.rl_steps:  # a mark before the run's end: train up to it; the next mark resumes from its checkpoint
                    if steps % config.save_steps:
                        raise ValueError(f"measure_every={every} is not a multiple of the checkpoint interval ({config.save_steps} steps)")
                    config = dataclasses.replace(config, max_steps=steps)
                with to_log(log):
                    result = train(config, **extras, callbacks=[ProgressBarCallback(run.label)])
                    seconds = time.perf_counter() - t
                    trained, trained_tok = load_trained(result.adapter_dir, start, load_in_4bit=getattr(config, "load_in_4bit", None) is True)
                    done = {"measured": e.measure(trained, trained_tok), "seconds": seconds, "wall": time.perf_counter() - t, "steps": steps, **store.how}
                store.put(name, done)
                print(ended(e.summary, done["measured"], done["wall"]))
                del trained
            results[name] = done["measured"]
            stages[name] = done["seconds"]
            walls.append(done["wall"])
            ran_with[name] = {k: done.get(k) for k in StageStore.HOW_TO_RUN}
    results["wall_seconds"] = sum(walls)
    results["stage_seconds"] = stages
    results["stage_ran_with"] = ran_with  # e.g. the thread count of each stage, when sessions differed
    results["settings"] = dataclasses.asdict(s)
    results["command"] = command
    results.update(e.extra_results(results))
    (out / "results.json").write_text(json.dumps(results, indent=2))
    written = [out / "results.json"]
    if e.plot is not None:
        plotted = e.plot(results, out)
        written += plotted if isinstance(plotted, list) else [plotted]
    print(f"[{total}/{total}] results")
    print(e.format_table(results))
    print(f"wrote {' and '.join(str(p) for p in written)} in {time.perf_counter() - t0:.0f} s")
    return results


def load_trained(trained_dir: Path, start: Path, load_in_4bit: bool = False) -> tuple[Any, Any]:
    """What an RL run saved: a full model folder, or a LoRA adapter (``adapter_config.json``) put on ``start``
    (in NF4 when the run trained on a 4-bit base, so that what is measured is what was trained)."""
    from gapo_lite.models import load_model

    if not (Path(trained_dir) / "adapter_config.json").is_file():
        return load_model(trained_dir, lora=None)
    from peft import PeftModel

    model, tokenizer = load_model(start, lora=None, load_in_4bit=load_in_4bit)
    return PeftModel.from_pretrained(model, str(trained_dir), is_trainable=False), tokenizer


def tiny_rl_config(s: Any, start: Path, out: Path, **fields: Any):
    """The TrainConfig of an RL stage: full fine-tuning of a tiny model on the CPU from ``start``, with the
    settings' ``rl_steps``, ``rl_lr``, ``rl_temperature``, ``prompts_per_step``, ``num_generations`` and
    ``seed``, one checkpoint kept; ``fields`` sets what an experiment decides itself (reward, completion
    length, schedule, checkpoint and logging steps)."""
    from gapo_lite.training import TrainConfig

    base: dict[str, Any] = {
        "model": str(start), "backend": "transformers", "load_in_4bit": False, "use_lora": False, "num_generations": s.num_generations,
        "prompts_per_step": s.prompts_per_step, "temperature": s.rl_temperature, "learning_rate": s.rl_lr, "max_steps": s.rl_steps,
        "save_steps": s.rl_steps, "save_total_limit": 1, "seed": s.seed, "output_dir": str(out), "optim": "adamw_torch",
        # The miniatures' word-level models answer in 1-3 tokens and were recorded reading the first answer found.
        "clean_answers": False,
        "precision": LAB_PRECISION,
    }
    return TrainConfig(**{**base, **fields})


def table(rows: Sequence[tuple[str, Sequence[float]]], columns: Sequence[str], *, width: int = 22, label_width: int = 40) -> str:
    """A plain-text table: one label and one formatted value per column on each row."""
    header = f"{'metric':{label_width}s}" + "".join(f"{c:>{width}s}" for c in columns)
    lines = [header, "-" * len(header)]
    for label, values in rows:
        lines.append(f"{label:{label_width}s}" + "".join(f"{v:{width}.3f}" for v in values))
    return "\n".join(lines)


def add_common_arguments(parser: argparse.ArgumentParser, default_out: str) -> None:
    """``--out``, ``--quick`` and ``--set KEY=VALUE`` (parsed by :func:`gapo_lite.overrides.apply_overrides`)."""
    parser.add_argument("--out", default=default_out, help=f"output folder (default {default_out})")
    parser.add_argument("--quick", action="store_true", help="seconds-long smoke version (tiny sizes; figures meaningless)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="override a setting")


def settings_from_args(settings_class: Any, args: argparse.Namespace, what: str = "setting") -> Any:
    """The settings an experiment runs with: ``quick()`` or the defaults, then the ``--set`` overrides."""
    return apply_overrides(settings_class.quick() if args.quick else settings_class(), args.overrides, what=what)


def module_main(prog: str, description: str, default_out: str, run: Callable[[argparse.Namespace], int], argv: list[str] | None) -> int:
    """``python -m <prog>``: parse the common arguments, record the command line, run; a bad ``--set`` is one
    line on stderr and exit code 2, as in ``gapo-lite``."""
    from gapo_lite.errors import UserError

    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_common_arguments(parser, default_out)
    args = parser.parse_args(argv)
    args.command = " ".join([prog, *(sys.argv[1:] if argv is None else argv)])
    try:
        return run(args)
    except UserError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2


def experiment_main(prog: str, description: str, default_out: str, settings_class: Any, run: Callable[..., Any], argv: list[str] | None,
                    what: str = "setting") -> int:
    """:func:`module_main` for an experiment run by ``run(out_dir, settings, command=...)``, its settings from
    :func:`settings_from_args` (``what`` names a key in messages)."""

    def go(args: argparse.Namespace) -> int:
        run(args.out, settings_from_args(settings_class, args, what=what), command=args.command)
        return 0

    return module_main(prog, description, default_out, go, argv)
