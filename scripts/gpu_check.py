"""GPU check: every figure a GPU user needs, in one command that fits one 10-minute call, most important first.

For one NVIDIA GPU and no internet (through scripts/offline_gpu_check.sh, docs/gpu.md has the exact device call):

    scripts/gpu_check.sh                    # the stages below, within --time-budget-s (default 450 s)
    python scripts/gpu_check.py --dry-run   # CPU: the same stages, tiny models; those that need CUDA say "skipped"
    python scripts/gpu_check.py --only learn --dry-run   # one stage (or a comma-separated few)

Stages, in order (``plan``; each in its own process, ``scripts/gpu_check_worker.py``, with its own time budget,
``BUDGET_S``, cut to what is left of the whole):

(a) ``versions`` (``scripts/gpu_versions.py``: printed first; one outside the tested range stops the check in one
    line) and ``errors`` (no model: what a first matrix product raises on a full GPU);
(b) ``7B/transformers/pair``: a random-initialised Qwen2.5-7B-shaped model through ``build_trainer`` (4-bit, peft):
    ``--steps`` steps of G=32 with 256-token completions forced to full length: peak VRAM next to the plan, step
    time, generated tokens/s, and ``probes``;
(c) ``7B/unsloth/pair``: the same on Unsloth;
(d) ``learn`` on Unsloth, then on transformers: the demo's collapsed tiny model (built on the CPU beforehand,
    ``scripts/gpu_check_learn.py build``, and carried) trained with GAPO and with the GRPO + validity baseline:
    held-out JSD before and after, valid rate, step time, the demo's targets;
(e) ``train``: ``train()`` end to end on that start, a checkpoint, then ``resume=True`` from it;
(f) as time allows: recipe ``qwen7b_lists`` through ``train()`` on the 7B (``recipe``), a Llama-3.1-8B from its
    published config (``pair``), the 7B on Unsloth at ``max_seq_length`` 384 (``short``), the 32B.

What survives a failure: each worker writes every figure the moment it exists to ``PARTIAL`` beside ``--json-out``
(atomically); the orchestrator merges those figures into the stage's row when the stage ends, times out or
crashes, with the last 2,000 characters of a failed stage's traceback, and rewrites ``--json-out`` after every
stage. A kill of the whole command leaves the finished rows, the stage in flight and its figures so far;
``scripts/gpu_table.py`` reads both files into the docs' table.

Peak VRAM is ``torch.cuda.max_memory_allocated``; the planner's estimate also counts 1 GiB of CUDA context."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, REPO / "scripts"):  # the kit, and gpu_versions / gpu_check_learn beside this file
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
# The orchestrating process never trains: keep `import gapo_lite` from importing unsloth here. Workers get
# their backend through the environment (see _worker_env), which this default does not override.
os.environ.setdefault("GAPO_LITE_BACKEND", "transformers")

import gpu_versions  # noqa: E402

from gapo_lite._bootstrap import LOADERS  # noqa: E402  (no torch at import)
from gapo_lite.memory.specs import ModelSpec, count_parameters  # noqa: E402

GIB = 1024**3
TRACEBACK_CHARS = 2000  # what a failed stage's row keeps of its traceback
MODELS = {"7b": "qwen2.5-7b", "llama8b": "Llama-3.1-8B", "32b": "qwen2.5-32b"}
# meta-llama/Llama-3.1-8B's published config.json (the shapes and rope; ids come from the check's tokenizer).
LLAMA31_8B_CONFIG: dict[str, Any] = dict(
    model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
    rope_theta=500000.0, rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192),
    hidden_act="silu", attention_bias=False, mlp_bias=False, tie_word_embeddings=False, initializer_range=0.02,
)
LLAMA_STEPS = 1  # one step: the point is that the path runs and what it holds, not a speed figure
# The dry run's stand-in for the Llama stage: the same config with tiny shapes (same rope, untied head, no biases).
DRY_RUN_LLAMA = dict(LLAMA31_8B_CONFIG, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=16, vocab_size=1024)
DRY_RUN_SHAPES = dict(num_layers=2, hidden_size=64, num_heads=4, num_kv_heads=2, intermediate_size=128, vocab_size=1024, tie_word_embeddings=True)


# Each stage's time budget in seconds (building its model included), most important first. On a GPU, (a)-(e) add
# up to ESSENTIAL_S, which with the wheel install must leave a minute of a 10-minute call (tests/test_gpu_check.py);
# an (f) stage starts only when its whole budget is left. The dry run's budgets are its own (a CPU trains the tiny
# model for the demo's 250 steps; the learning stage dominates).
BUDGET_S = {"errors": 20, "pair": 105, "learn/unsloth": 100, "learn/transformers": 80, "train": 35, "recipe": 120, "short": 90, "llama": 100}
DRY_BUDGET_S = {"errors": 25, "pair": 60, "learn/unsloth": 30, "learn/transformers": 330, "train": 60, "recipe": 60, "short": 60, "llama": 60}
LEARN_OVERHEAD_S = 45  # of a learning stage's budget on a GPU: imports, Unsloth's compile, loading and measuring (a guess)
DEFAULT_START = REPO / "runs" / "gpu_check_start"
PARTIAL = "gpu_check_partial.json"  # beside --json-out: the stage in flight's figures so far


@dataclass(frozen=True)
class Stage:
    """One stage of the plan: its model (a ``MODELS`` key, ``start`` for the carried tiny model, ``-`` for none),
    backend, name, time budget, and whether it is one of (a)-(e) (always started) or (f) (only with its budget left)."""

    key: str
    backend: str
    name: str
    budget_s: float
    essential: bool = True


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU: tiny models; the stages that need CUDA are reported as skipped")
    parser.add_argument("--quick", action="store_true", help="1 step per pair stage and no (f) stages")
    parser.add_argument("--only", default=None, help="comma-separated stage names to run (errors, pair, learn, train, recipe, llama, short, 32b)")
    parser.add_argument("--skip-32b", action="store_true", help="leave the 32B out of (f)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--num-generations", type=int, default=32)
    parser.add_argument("--prompts-per-step", type=int, default=1, help="prompts per step of the pair stages (the recipe stage keeps the recipe's 8)")
    parser.add_argument("--completion-tokens", type=int, default=256)
    parser.add_argument("--lora-rank", type=int, default=64)
    parser.add_argument("--start", type=Path, default=DEFAULT_START, help="the prepared collapsed start (scripts/gpu_check_learn.py build)")
    parser.add_argument("--learn-steps", type=int, default=None, help="RL steps of each learning run (default: the demo's 250, or a time limit on a GPU)")
    parser.add_argument("--tokenizer", type=Path, default=None, help="local folder with a real Qwen tokenizer (optional)")
    parser.add_argument("--work-dir", type=Path, default=None, help="where checkpoints go (default /dev/shm/gapo_gpu_check, else /tmp)")
    parser.add_argument("--time-budget-s", type=float, default=450.0, help="the whole check's limit; stages are cut to what is left of it")
    parser.add_argument("--budget-scale", type=float, default=1.0,
                        help="multiply every budget, the whole's too (a dry run on a CPU shared with other jobs; recorded with the run)")
    parser.add_argument("--train-budget-gb", type=float, default=40.0, help="memory_budget_gb of the recipe stage (a cap below the GPU's memory)")
    parser.add_argument("--keep", action="store_true", help="keep the built checkpoints")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    parser.add_argument("--json-out", type=Path, default=None, help="write the run as JSON to this file after every stage (atomically)")
    parser.add_argument("--versions", action="store_true", help="print the versions of the packages the check uses and exit (3 when one is out of range)")
    parser.add_argument("--ignore-versions", action="store_true", help="run even when a version is outside the tested range")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps = 1
    if args.dry_run:
        args.num_generations = min(args.num_generations, 4)
        args.completion_tokens = min(args.completion_tokens, 8)
        args.lora_rank = min(args.lora_rank, 4)
        args.prompts_per_step = min(args.prompts_per_step, 2)
    for key in ("steps", "num_generations", "prompts_per_step", "completion_tokens", "lora_rank"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')} must be >= 1")
    if args.num_generations < 2:
        parser.error("--num-generations must be >= 2")
    if args.budget_scale <= 0:
        parser.error("--budget-scale must be > 0")
    args.time_budget_s *= args.budget_scale
    args.argv = list(sys.argv[1:] if argv is None else argv)  # recorded as the run's command
    args.only_list = None if args.only is None else [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in args.only_list or [] if s not in ONLY_NAMES]
    if unknown:
        parser.error(f"unknown stage {', '.join(unknown)}; stages: {', '.join(ONLY_NAMES)}")
    return args


ONLY_NAMES = ("errors", "pair", "learn", "train", "recipe", "llama", "short", "32b")


def plan(args: argparse.Namespace) -> list[Stage]:
    """The stages in running order, (a)-(e) then (f), each with its budget (see ``BUDGET_S``)."""
    budget = {k: v * args.budget_scale for k, v in (DRY_BUDGET_S if args.dry_run else BUDGET_S).items()}
    big, llama = ("tiny", "tiny-llama") if args.dry_run else ("7b", "llama8b")
    stages = [
        Stage("-", "-", "errors", budget["errors"]),
        Stage(big, "transformers", "pair", budget["pair"]),
        Stage(big, "unsloth", "pair", budget["pair"]),
        Stage("start", "unsloth", "learn", budget["learn/unsloth"]),
        Stage("start", "transformers", "learn", budget["learn/transformers"]),
        Stage("start", "auto", "train", budget["train"]),
    ]
    if not args.quick:
        stages += [
            Stage(big, "unsloth" if not args.dry_run else "transformers", "recipe", budget["recipe"], essential=False),
            Stage(llama, "unsloth" if not args.dry_run else "transformers", "pair", budget["llama"], essential=False),
            Stage(big, "unsloth", "short", budget["short"], essential=False),
        ]
        if not args.dry_run and not args.skip_32b:
            stages += [Stage("32b", backend, "pair", budget["pair"], essential=False) for backend in LOADERS]
    if args.only_list is not None:
        def named(s: Stage) -> str:
            return "llama" if is_llama(s.key) else "32b" if s.key == "32b" else s.name

        stages = [s for s in stages if named(s) in args.only_list]
    return stages


def needs_cuda(stage: Stage) -> str | None:
    """Why ``stage`` cannot run without a CUDA GPU (None when it can)."""
    if stage.name == "errors":
        return "needs CUDA (what a full GPU raises)"
    if stage.backend == "unsloth":
        return "needs CUDA (Unsloth's patched GRPOTrainer)"
    return None


def is_llama(model: str) -> bool:
    return model in ("llama8b", "tiny-llama")


def llama_config_dict(model: str) -> dict[str, Any]:
    return dict(LLAMA31_8B_CONFIG if model == "llama8b" else DRY_RUN_LLAMA)


def spec_for(model: str) -> ModelSpec:
    """The ModelSpec of a --models entry (``tiny`` and ``tiny-llama`` are the dry run's models).

    A Llama's spec comes from its config dict through the planner's own ``ModelSpec.from_config``, as it
    would from the saved folder's config.json."""
    if model == "tiny":
        return ModelSpec(name="tiny-dry-run", num_params=count_parameters(**DRY_RUN_SHAPES), **DRY_RUN_SHAPES)
    if is_llama(model):
        return ModelSpec.from_config(llama_config_dict(model), name="Llama-3.1-8B" if model == "llama8b" else "tiny-llama-dry-run")
    return ModelSpec.builtin(MODELS[model])


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed over it: a reader (or a kill) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def qwen2_config_kwargs(spec: ModelSpec, *, pad_token_id: int, eos_token_id: int, max_positions: int = 4096) -> dict[str, Any]:
    """Keyword arguments for ``transformers.Qwen2Config`` reproducing ``spec``'s shapes."""
    return dict(
        vocab_size=spec.vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=spec.tie_word_embeddings,
        rms_norm_eps=1e-6,
        rope_theta=1_000_000.0,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        bos_token_id=None,
    )


def filler_words(vocab_size: int) -> list[str]:
    """List-data words plus generated ``tok<i>`` words so that ``build_tokenizer`` has exactly ``vocab_size`` entries."""
    from gapo_lite.data import vocabulary
    from gapo_lite.demo.tiny import _BASE_WORDS, SPECIAL_TOKENS

    reserved = set(SPECIAL_TOKENS) | set(_BASE_WORDS)
    words = [w for w in dict.fromkeys(vocabulary()) if w not in reserved]
    room = vocab_size - len(reserved)
    if room < len(words):
        raise ValueError(f"vocabulary of {vocab_size} cannot hold the {len(words)} list-data words plus {len(reserved)} specials")
    taken = set(words) | reserved
    i = 0
    while len(words) < room:
        word = f"tok{i}"
        i += 1
        if word not in taken:
            words.append(word)
    return words


def build_tokenizer_for(spec: ModelSpec, tokenizer_dir: Path | None = None):
    """A real tokenizer from ``tokenizer_dir``, or a word-level one padded to the vocabulary size."""
    if tokenizer_dir is not None:
        from gapo_lite.models import load_tokenizer

        tokenizer = load_tokenizer(tokenizer_dir)
        if len(tokenizer) > spec.vocab_size:
            raise ValueError(f"tokenizer in {tokenizer_dir} has {len(tokenizer)} tokens, more than the model's vocabulary {spec.vocab_size}")
        return tokenizer
    from gapo_lite.demo.tiny import build_tokenizer

    tokenizer = build_tokenizer(filler_words(spec.vocab_size))
    assert len(tokenizer) == spec.vocab_size, (len(tokenizer), spec.vocab_size)
    return tokenizer


def checkpoint_bytes(spec: ModelSpec) -> int:
    """Disk space of the bf16 checkpoint (5% slack for headers and the tokenizer)."""
    return int(spec.num_params * 2 * 1.05)


def default_work_dir(needed_bytes: int) -> Path:
    """``/dev/shm/gapo_gpu_check`` if it has room for ``needed_bytes``, else ``/tmp/gapo_gpu_check``."""
    shm = Path("/dev/shm")
    if shm.is_dir() and shutil.disk_usage(shm).free > needed_bytes:
        return shm / "gapo_gpu_check"
    return Path("/tmp/gapo_gpu_check")


def build_checkpoint(spec: ModelSpec, out_dir: Path, tokenizer_dir: Path | None = None, llama: dict[str, Any] | None = None) -> Path:
    """Save a randomly initialised Qwen2 with ``spec``'s shapes (or, given ``llama``, a Llama from that config
    dict) in bf16 on CUDA, fp32 on CPU, and a tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    free = shutil.disk_usage(out_dir.parent if out_dir.parent.exists() else Path("/")).free
    if free < checkpoint_bytes(spec):
        raise RuntimeError(f"{out_dir.parent} has {free / GIB:.1f} GiB free; the {spec.name} checkpoint needs {checkpoint_bytes(spec) / GIB:.1f} GiB")
    tokenizer = build_tokenizer_for(spec, tokenizer_dir)
    if llama is not None:
        fields = {k: v for k, v in llama.items() if k not in ("model_type", "architectures")}
        config = LlamaConfig(**fields, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    else:
        config = Qwen2Config(**qwen2_config_kwargs(spec, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id))
    cuda = torch.cuda.is_available()
    dtype = torch.bfloat16 if cuda else torch.float32
    torch.manual_seed(0)
    with torch.device("cuda" if cuda else "cpu"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, max_shard_size="5GB")
    tokenizer.save_pretrained(out_dir)
    del model
    if cuda:
        torch.cuda.empty_cache()
    return out_dir


def format_results(rows: list[dict[str, Any]]) -> str:
    """The results table: model, backend, stage, peak VRAM, planner estimate, ratio, chunk, step time, generated tokens/s."""

    def gib(value: Any) -> str:
        return f"{value / GIB:.2f}" if isinstance(value, (int, float)) else "-"

    header = f"{'model':<20}{'backend':<14}{'stage':<7}{'peak VRAM GiB':>14}{'plan GiB':>10}{'plan/peak':>10}{'chunk':>7}{'step s':>9}{'gen tok/s':>11}  status"
    lines = [header, "-" * len(header)]
    for r in rows:
        peak, est = r.get("peak_vram_bytes"), r.get("estimate_bytes")
        ratio = f"{est / peak:.2f}" if isinstance(peak, (int, float)) and peak and isinstance(est, (int, float)) else "-"
        step = f"{r['step_seconds']:.1f}" if isinstance(r.get("step_seconds"), (int, float)) else "-"
        tps = f"{r['tokens_per_second']:.0f}" if isinstance(r.get("tokens_per_second"), (int, float)) else "-"
        chunk = str(r.get("chunk_size", "-"))
        name = f"{r['model']:<20}{r['backend']:<14}{r.get('stage', 'pair'):<7}"
        lines.append(f"{name}{gib(peak):>14}{gib(est):>10}{ratio:>10}{chunk:>7}{step:>9}{tps:>11}  {r.get('status', '')}")
    return "\n".join(lines)


WORKER = Path(__file__).resolve().parent / "gpu_check_worker.py"


def worker_env(backend: str, work_dir: Path) -> dict[str, str]:
    return dict(
        os.environ,
        GAPO_LITE_BACKEND=backend,
        UNSLOTH_COMPILE_LOCATION=str(work_dir / "unsloth_compiled_cache"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
    )


def worker_command(stage: Stage, model_dir: Path, model_name: str, args: argparse.Namespace, result_file: Path, partial_file: Path,
                   timeout: float) -> list[str]:
    steps = LLAMA_STEPS if is_llama(stage.key) else args.steps
    cmd = [
        sys.executable, str(WORKER), "--stage", stage.name, "--model-dir", str(model_dir), "--model-name", model_name, "--backend", stage.backend,
        "--result-file", str(result_file), "--partial-file", str(partial_file),
        "--out-dir", str(result_file.with_name(result_file.stem.replace("result-", "out-", 1))),
        "--steps", str(steps), "--num-generations", str(args.num_generations), "--prompts-per-step", str(args.prompts_per_step),
        "--completion-tokens", str(args.completion_tokens), "--lora-rank", str(args.lora_rank), "--train-budget-gb", str(args.train_budget_gb),
    ]
    if stage.name == "learn":
        if args.learn_steps is not None:
            cmd += ["--learn-steps", str(args.learn_steps)]
        elif not args.dry_run:  # on a GPU each run trains for its share of the stage's time (steps unknown until measured)
            cmd += ["--run-seconds", f"{max(5.0, (timeout - LEARN_OVERHEAD_S) / len(LEARN_RUNS)):.0f}"]
    return cmd


LEARN_RUNS = ("gapo", "grpo_baseline")  # the learning stage's runs (scripts/gpu_check_learn.py RUNS)


def run_streaming(cmd: list[str], env: dict[str, str], timeout: float, prefix: str) -> tuple[int | None, list[str]]:
    """Run ``cmd``, echoing its output line by line as it comes (flushed); stop it after ``timeout`` seconds.

    Returns the exit code (None when stopped) and the output lines."""
    lines: list[str] = []
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            print(f"{prefix}{line.rstrip()}", flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        code: int | None = proc.wait(timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = None
    reader.join(timeout=10)
    return code, lines


def failure_text(lines: list[str], partial: dict[str, Any]) -> str:
    """The last ``TRACEBACK_CHARS`` of a failed stage's own traceback, else of its output (a crash below Python)."""
    return str(partial.get("traceback") or "\n".join(lines))[-TRACEBACK_CHARS:]


def run_stage(stage: Stage, model_dir: Path, model_name: str, args: argparse.Namespace, timeout: float, partial_file: Path,
              work_dir: Path) -> dict[str, Any]:
    """One stage in a worker process, its output streamed; its row. A stage that times out or fails keeps the figures
    it had written to ``partial_file`` (and a failure its traceback's last ``TRACEBACK_CHARS``)."""
    slug = "-".join(part.replace(" ", "_") for part in (model_name, stage.backend, stage.name))
    result_file = work_dir / f"result-{slug}.json"
    result_file.unlink(missing_ok=True)
    partial_file.unlink(missing_ok=True)
    base = {"stage": stage.name, "model": model_name, "backend": stage.backend}
    print(f"gpu_check: stage {model_name}/{stage.backend}/{stage.name} (budget {timeout:.0f} s)", flush=True)
    code, lines = run_streaming(worker_command(stage, model_dir, model_name, args, result_file, partial_file, timeout),
                                worker_env(stage.backend, work_dir), timeout, prefix="  | ")
    if code == 0 and result_file.is_file():
        return json.loads(result_file.read_text())
    partial = read_partial(partial_file)
    figures = {k: v for k, v in partial.items() if k not in ("traceback", "error")}
    if code is None:
        return {**base, **figures, "status": f"timed out after {timeout:.0f}s" + (" (partial figures kept)" if figures else "")}
    text = failure_text(lines, partial)
    last = partial.get("error") or ([line for line in text.splitlines() if line.strip()][-1:] or ["no output"])[0]
    return {**base, **figures, "status": f"failed (rc {code}): {last[:200]}", "traceback": text}


def read_partial(path: Path) -> dict[str, Any]:
    """A worker's figures so far (empty when it wrote none)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def room_for(spec: ModelSpec, work_dir: Path) -> str | None:
    """Why ``spec``'s bf16 weights do not fit on disk or on the GPU here, or None when they do."""
    needed = checkpoint_bytes(spec)
    free_disk = shutil.disk_usage(work_dir).free
    if free_disk < needed:
        return f"{work_dir} has {free_disk / GIB:.1f} GiB free, its {needed / GIB:.1f} GiB of weights do not fit"
    import torch

    if torch.cuda.is_available():
        free_gpu = torch.cuda.mem_get_info()[0]
        if free_gpu < spec.num_params * 2:
            return f"the GPU has {free_gpu / GIB:.1f} GiB free, building its {spec.num_params * 2 / GIB:.1f} GiB of bf16 weights does not fit"
    return None


def print_row(row: dict[str, Any]) -> None:
    print("gpu_check: RESULT " + format_results([row]).splitlines()[-1], flush=True)


def run_record(args: argparse.Namespace, gpu: str, versions: dict[str, str | None], rows: list[dict[str, Any]], running: str | None,
               started: float, stopped: str | None = None) -> dict[str, Any]:
    """What ``--json-out`` holds: the run's setting, every finished row, the stage in flight (None when done)."""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)), "gpu": gpu, "versions": versions,
        "python": sys.version.split()[0], "dry_run": bool(args.dry_run), "command": command_line(args),
        "settings": {"steps": args.steps, "llama_steps": LLAMA_STEPS, "prompts_per_step": args.prompts_per_step, "num_generations": args.num_generations,
                     "completion_tokens": args.completion_tokens, "lora_rank": args.lora_rank, "time_budget_s": args.time_budget_s,
                     "budget_scale": args.budget_scale},
        "rows": rows, "running": running, "complete": running is None, "stopped": stopped, "summary": summary(rows, stopped),
        "seconds": round(time.time() - started, 1),
        "note": "peak_vram_bytes is torch.cuda.max_memory_allocated; estimate_bytes (the plan's) also counts 1 GiB of CUDA context",
    }


def command_line(args: argparse.Namespace) -> str:
    """How this run was started, for the table's "command" (the offline wrapper sets GPU_CHECK_COMMAND to its own)."""
    return os.environ.get("GPU_CHECK_COMMAND") or " ".join(["python scripts/gpu_check.py", *args.argv])


def summary(rows: list[dict[str, Any]], stopped: str | None = None) -> str:
    """One line: did GAPO spread the model on each backend that ran, and how many stages are ok."""
    if stopped:
        return stopped
    learned = [r.get("verdict") or f"{r.get('backend')}: learning {r.get('status')}" for r in rows if r.get("stage") == "learn"
               and not str(r.get("status", "")).startswith("skipped")]
    ok = sum(1 for r in rows if r.get("status") == "ok")
    skipped = sum(1 for r in rows if str(r.get("status", "")).startswith("skipped"))
    return "; ".join(learned or ["no learning stage ran"]) + f"; {ok} of {len(rows)} stages ok, {skipped} skipped"


def model_name(stage: Stage) -> str:
    return {"-": "-", "start": START_NAME}.get(stage.key) or spec_for(stage.key).name


START_NAME = "demo start"  # the learning and train() stages' model: the demo's collapsed tiny model


def model_for(stage: Stage, args: argparse.Namespace, work_dir: Path, specs: dict[str, ModelSpec], built: dict[str, Path | str],
              record: Any) -> tuple[str, Path | str]:
    """(name, folder) of the stage's model, built on first use; the folder is a string saying why when there is none."""
    if stage.key == "-":
        (work_dir / "no-model").mkdir(parents=True, exist_ok=True)
        return "-", work_dir / "no-model"
    if stage.key == "start":
        import gpu_check_learn

        try:
            gpu_check_learn.read_start(args.start)
        except FileNotFoundError as err:
            return START_NAME, str(err)
        return START_NAME, args.start
    spec = specs.setdefault(stage.key, spec_for(stage.key))
    if stage.key not in built:
        why = room_for(spec, work_dir) if stage.key == "32b" else None
        if why is None:
            record(f"{spec.name}: building")
            try:
                t0 = time.perf_counter()
                built[stage.key] = build_checkpoint(spec, work_dir / spec.name, args.tokenizer, llama=llama_config_dict(stage.key) if is_llama(stage.key) else None)
                print(f"gpu_check: built {spec.name} ({spec.num_params / 1e9:.2f}B params) in {time.perf_counter() - t0:.0f} s", flush=True)
            except (RuntimeError, ValueError) as err:
                why = f"not built: {err}"
        if why is not None:
            built[stage.key] = why
    return spec.name, built[stage.key]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    versions, problems = gpu_versions.check()
    if args.versions:
        for name, version in versions.items():
            print(f"{name:<16}{version or 'missing'}")
        for problem in problems:
            print(f"out of range: {problem}")
        return 3 if problems else 0
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.dry_run:
        print("gpu_check: no CUDA GPU here; use --dry-run for the CPU path", file=sys.stderr)
        return 2
    gpu = f"{torch.cuda.get_device_name(0)}, {torch.cuda.mem_get_info()[1] / GIB:.0f} GiB" if cuda else "no GPU (dry run)"
    started = time.time()
    rows: list[dict[str, Any]] = []
    partial_file = (args.json_out.parent if args.json_out else Path(tempfile.gettempdir())) / PARTIAL

    def record(running: str | None, stopped: str | None = None) -> None:
        if args.json_out is not None:
            write_json_atomic(args.json_out, run_record(args, gpu, versions, rows, running, started, stopped))

    print("gpu_check: versions: " + ", ".join(f"{n} {v or 'missing'}" for n, v in versions.items()), flush=True)
    if problems and not args.ignore_versions:
        line = gpu_versions.stop_line(problems)
        print(line, flush=True)
        record(None, stopped=line)
        return 3
    stages = plan(args)
    specs: dict[str, ModelSpec] = {}
    work_dir = args.work_dir or default_work_dir(max([checkpoint_bytes(spec_for(s.key)) for s in stages if s.key in MODELS] or [0]))
    work_dir.mkdir(parents=True, exist_ok=True)
    print(f"gpu_check: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {gpu}; {len(stages)} stages within {args.time_budget_s:.0f} s; "
          f"work dir {work_dir}", flush=True)
    start = time.perf_counter()
    built: dict[str, Path | str] = {}
    for index, stage in enumerate(stages):
        left = args.time_budget_s - (time.perf_counter() - start)
        base = {"stage": stage.name, "model": model_name(stage), "backend": stage.backend}
        why = None if cuda else needs_cuda(stage)
        if why is None and (left <= 0 or (not stage.essential and left < stage.budget_s)):
            why = f"time budget: {max(0.0, left):.0f} s left" + ("" if stage.essential else f", the stage needs {stage.budget_s:.0f} s")
        if why is None:
            stage_start = time.perf_counter()
            name, folder = model_for(stage, args, work_dir, specs, built, record)
            base["model"] = name
            if isinstance(folder, str):
                why = folder
        if why is not None:
            row = {**base, "status": f"skipped: {why}"}
        else:
            timeout = min(stage.budget_s, left) - (time.perf_counter() - stage_start)  # building the model counts against the stage
            record(f"{name}/{stage.backend}/{stage.name}")
            row = run_stage(stage, folder, name, args, max(timeout, 1.0), partial_file, work_dir)
            row["budget_s"] = stage.budget_s
            row["seconds"] = round(time.perf_counter() - stage_start, 1)
        if is_llama(stage.key):
            row.setdefault("config", "Llama-3.1-8B published config (random weights)" if stage.key == "llama8b" else "Llama-3.1-8B config, tiny shapes")
        rows.append(row)
        print_row(row)
        record("between stages")
        last_of_model = all(s.key != stage.key for s in stages[index + 1:])
        if last_of_model and isinstance(built.get(stage.key), Path) and not args.keep:
            shutil.rmtree(built[stage.key], ignore_errors=True)
    partial_file.unlink(missing_ok=True)
    record(None)
    print()
    print(format_results(rows))
    print(f"\ntotal {time.perf_counter() - start:.0f}s; the plan's estimate includes 1 GiB CUDA context not seen by max_memory_allocated")
    print(f"gpu_check: SUMMARY {summary(rows)}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0 if all(r.get("status") == "ok" or str(r.get("status", "")).startswith("skipped") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
