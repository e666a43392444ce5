"""GPU check: the GPU path on random-initialised Qwen2.5-7B / 32B, stage by stage, figures printed as measured.

For a machine with one NVIDIA GPU and no internet (run through scripts/gpu_check.sh):

    scripts/gpu_check.sh                    # default: ends within 7 minutes (see --time-budget-s)
    scripts/gpu_check.sh --quick            # 7B, unsloth only, 1 step, no train() stage
    scripts/gpu_check.sh --models 7b --backends transformers
    python scripts/gpu_check.py --dry-run   # CPU: a tiny model through the same stages (backend transformers)

Each model is built from its ModelSpec (transformers ``Qwen2Config``), randomly initialised on the GPU in
bf16 and saved with a tokenizer to a work folder (``/dev/shm`` when it has room). The tokenizer is a
word-level ``gapo_lite.demo.tiny.build_tokenizer`` over the list-data vocabulary padded with generated words to
the model's vocabulary size, unless ``--tokenizer`` names a local folder with a real Qwen tokenizer. Random
weights make the text meaningless; the check is about memory, speed and the code path.

Stages, each in its own subprocess (``scripts/gpu_check_worker.py``) with its own timeout
(``--stage-timeout-s``, cut to what is left of ``--time-budget-s``), in this order:

1. ``7B/unsloth/pair``: ``build_trainer`` (run plan, measured prompts, memory plan, GAPOTrainer),
   ``--steps`` steps of G=32 with 256-token completions forced to full length: peak VRAM next to the plan's
   estimate, step time, generated tokens/s;
2. ``7B/unsloth/train``: recipe ``qwen7b_lists`` through the real ``train()`` (2 steps, ``memory_budget_gb``
   capped at ``--train-budget-gb``, a checkpoint and the adapter saved and checked);
3. ``Llama-3.1-8B/unsloth/pair``: a random-initialised Llama-3.1-8B built from its published config
   (``LLAMA31_8B_CONFIG``, a plain dict: no hub) through the same ``build_trainer`` path for one step, so the
   planner-from-config meets a model that is not Qwen; skipped, saying so, when less than ``--llama-min-s``
   is left;
4. ``7B/transformers/pair``;
5. ``7B/unsloth/short``: the pair stage at ``max_seq_length`` 384, where Unsloth checkpoints without offloading
   and the planner counts every layer's input;
6. the 32B pairs, only when there is room for its 65 GB of weights (disk and GPU) and time left; otherwise
   the table says why they were skipped.

Before them, on a GPU, ``errors`` (no model, seconds): what a first matrix product raises on a full GPU and whether
the OOM back-off takes it for memory. The pair stages also record ``probes`` (``scripts/gpu_check_worker.py``).

Every figure is printed (and flushed) the moment it is measured, and each stage's row as soon as it ends, so
a timeout keeps what was printed. ``--json-out FILE`` also writes the run (GPU, versions, date, every row so far
and the stage in flight) to FILE after each stage, atomically (a temporary file renamed over it), so a run cut
short keeps every finished stage's figures; ``scripts/gpu_table.py`` turns it into the docs' table.

Peak VRAM is ``torch.cuda.max_memory_allocated``; the planner's estimate also counts 1 GiB of CUDA context
that this does not see."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
# The orchestrating process never trains: keep `import gapo_lite` from importing unsloth here. Workers get
# their backend through the environment (see _worker_env), which this default does not override.
os.environ.setdefault("GAPO_LITE_BACKEND", "transformers")

from gapo_lite._bootstrap import LOADERS  # noqa: E402  (no torch at import)
from gapo_lite.memory.specs import ModelSpec, count_parameters  # noqa: E402

GIB = 1024**3
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
# What the check reports versions of (importlib.metadata: nothing is imported to read them).
VERSIONED = ("torch", "transformers", "trl", "unsloth", "unsloth_zoo", "peft", "accelerate", "bitsandbytes", "datasets", "xformers", "triton")
BACKENDS = LOADERS  # a stage runs one of the backends "auto" resolves to, in this order
DRY_RUN_SHAPES = dict(num_layers=2, hidden_size=64, num_heads=4, num_kv_heads=2, intermediate_size=128, vocab_size=1024, tie_word_embeddings=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="7b,llama8b,32b", help="comma-separated: 7b, llama8b, 32b")
    parser.add_argument("--backends", default="unsloth,transformers", help="comma-separated: unsloth, transformers")
    parser.add_argument("--skip-32b", action="store_true", help="same as leaving 32b out of --models")
    parser.add_argument("--quick", action="store_true", help="7B only, unsloth only, 1 step, no train() stage")
    parser.add_argument("--dry-run", action="store_true", help="CPU: tiny model, backend transformers, few short completions")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--num-generations", type=int, default=32)
    parser.add_argument("--prompts-per-step", type=int, default=1, help="prompts per step of the plan-check stages (the train() stage keeps the recipe's 8)")
    parser.add_argument("--completion-tokens", type=int, default=256)
    parser.add_argument("--lora-rank", type=int, default=64)
    parser.add_argument("--tokenizer", type=Path, default=None, help="local folder with a real Qwen tokenizer (optional)")
    parser.add_argument("--work-dir", type=Path, default=None, help="where checkpoints go (default /dev/shm/gapo_gpu_check, else /tmp)")
    parser.add_argument("--time-budget-s", type=float, default=390.0, help="overall limit (default: the run ends within 7 minutes); later stages are skipped")
    parser.add_argument("--stage-timeout-s", type=float, default=200.0, help="limit per stage (a stage past it is stopped; what it printed stays)")
    parser.add_argument("--train-budget-gb", type=float, default=40.0, help="memory_budget_gb of the train() stage (a cap below the GPU's memory)")
    parser.add_argument("--no-train-stage", dest="train_stage", action="store_false", help="skip the train() stage")
    parser.add_argument("--no-short-stage", dest="short_stage", action="store_false",
                        help="skip the 7B Unsloth stage at max_seq_length 384 (below Unsloth's offloading threshold)")
    parser.add_argument("--no-errors-stage", dest="errors_stage", action="store_false",
                        help="skip the first stage: what a matrix product raises on a full GPU")
    parser.add_argument("--keep", action="store_true", help="keep the built checkpoints")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    parser.add_argument("--json-out", type=Path, default=None, help="write the run as JSON to this file after every stage (atomically)")
    parser.add_argument("--llama-min-s", type=float, default=150.0, help="skip the Llama-3.1-8B stage when less than this is left of the time budget")
    parser.add_argument("--versions", action="store_true", help="print the versions of the packages the check uses and exit")
    args = parser.parse_args(argv)
    models = [m.strip().lower() for m in args.models.split(",") if m.strip()]
    backends = [b.strip().lower() for b in args.backends.split(",") if b.strip()]
    unknown = [m for m in models if m not in MODELS] + [b for b in backends if b not in BACKENDS]
    if unknown:
        parser.error(f"unknown model/backend {', '.join(unknown)}; models: {', '.join(MODELS)}; backends: {', '.join(BACKENDS)}")
    if args.skip_32b:
        models = [m for m in models if m != "32b"]
    if args.quick:
        models, backends, args.steps, args.train_stage, args.short_stage = ["7b"], ["unsloth"], 1, False, False
    if args.dry_run:
        models, backends = ["tiny", "tiny-llama"], ["transformers"]
        args.num_generations = min(args.num_generations, 4)
        args.completion_tokens = min(args.completion_tokens, 8)
        args.lora_rank = min(args.lora_rank, 4)
        args.prompts_per_step = min(args.prompts_per_step, 2)
    if not models or not backends:
        parser.error("nothing to run: no models or no backends left")
    for key in ("steps", "num_generations", "prompts_per_step", "completion_tokens", "lora_rank"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')} must be >= 1")
    if args.num_generations < 2:
        parser.error("--num-generations must be >= 2")
    args.model_list, args.backend_list = models, backends
    return args


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


def package_versions() -> dict[str, str | None]:
    """Installed versions of ``VERSIONED`` (None when missing), read from their metadata."""
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


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


def worker_command(stage: str, model_dir: Path, model_name: str, backend: str, args: argparse.Namespace, result_file: Path) -> list[str]:
    steps = LLAMA_STEPS if model_name.startswith(("Llama", "tiny-llama")) else args.steps
    return [
        sys.executable, str(WORKER), "--stage", stage, "--model-dir", str(model_dir), "--model-name", model_name, "--backend", backend,
        "--result-file", str(result_file), "--out-dir", str(model_dir.parent / f"out-{model_name}-{backend}-{stage}"),
        "--steps", str(steps), "--num-generations", str(args.num_generations), "--prompts-per-step", str(args.prompts_per_step),
        "--completion-tokens", str(args.completion_tokens), "--lora-rank", str(args.lora_rank), "--train-budget-gb", str(args.train_budget_gb),
    ]


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


def run_stage(stage: str, model_dir: Path, model_name: str, backend: str, args: argparse.Namespace, timeout: float) -> dict[str, Any]:
    """One stage in a worker process, its output streamed; its row (or why there is none)."""
    result_file = model_dir.parent / f"result-{model_name}-{backend}-{stage}.json"
    result_file.unlink(missing_ok=True)
    base = {"stage": stage, "model": model_name, "backend": backend}
    print(f"gpu_check: stage {model_name}/{backend}/{stage} (timeout {timeout:.0f} s)", flush=True)
    code, lines = run_streaming(worker_command(stage, model_dir, model_name, backend, args, result_file),
                                worker_env(backend, model_dir.parent), timeout, prefix="  | ")
    if code is None:
        return {**base, "status": f"timed out after {timeout:.0f}s (figures above)"}
    if code != 0 or not result_file.is_file():
        tail = [line for line in lines if line.strip()][-1:] or ["no output"]
        return {**base, "status": f"failed (rc {code}): {tail[0][:120]}"}
    return json.loads(result_file.read_text())


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


def plan_stages(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(model key, backend, stage) in running order: unsloth pair, train(), other backends, then the next model.

    A Llama gets one pair stage on the first backend (Unsloth unless left out): it checks the path, not speed.
    It runs right after the previous model's first-backend stages, before that model's other backends, so a
    short run reaches it."""
    stages: list[tuple[str, str, str]] = []
    later: list[tuple[str, str, str]] = []  # the previous model's other-backend stages, run after a following Llama
    for model in args.model_list:
        if is_llama(model):
            stages.append((model, args.backend_list[0], "pair"))
            continue
        stages += later
        later = []
        for i, backend in enumerate(args.backend_list):
            if i == 0:
                stages.append((model, backend, "pair"))
                if model in ("7b", "tiny") and args.train_stage:
                    stages.append((model, backend, "train"))
            else:
                later.append((model, backend, "pair"))
        if model == "7b" and "unsloth" in args.backend_list and args.short_stage:
            later.append((model, "unsloth", "short"))  # the planner below Unsloth's offloading threshold
    return stages + later


def print_row(row: dict[str, Any]) -> None:
    print("gpu_check: RESULT " + format_results([row]).splitlines()[-1], flush=True)


def run_record(args: argparse.Namespace, gpu: str, rows: list[dict[str, Any]], running: str | None, started: float) -> dict[str, Any]:
    """What ``--json-out`` holds: the run's setting, every finished row, the stage in flight (None when done)."""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)), "gpu": gpu, "versions": package_versions(),
        "python": sys.version.split()[0], "dry_run": bool(args.dry_run),
        "settings": {"steps": args.steps, "llama_steps": LLAMA_STEPS, "prompts_per_step": args.prompts_per_step, "num_generations": args.num_generations,
                     "completion_tokens": args.completion_tokens, "lora_rank": args.lora_rank, "time_budget_s": args.time_budget_s},
        "rows": rows, "running": running, "complete": running is None,
        "note": "peak_vram_bytes is torch.cuda.max_memory_allocated; estimate_bytes (the plan's) also counts 1 GiB of CUDA context",
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.versions:
        for name, ver in package_versions().items():
            print(f"{name:<14}{ver or 'missing'}")
        return 0
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.dry_run:
        print("gpu_check: no CUDA GPU here; use --dry-run for the CPU path", file=sys.stderr)
        return 2
    specs = {m: spec_for(m) for m in args.model_list}
    work_dir = args.work_dir or default_work_dir(max(checkpoint_bytes(s) for s in specs.values()))
    work_dir.mkdir(parents=True, exist_ok=True)
    gpu = f"{torch.cuda.get_device_name(0)}, {torch.cuda.mem_get_info()[1] / GIB:.0f} GiB" if cuda else "no GPU (dry run)"
    print(f"gpu_check: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {gpu}; torch {torch.__version__}; "
          f"{args.steps} steps of {args.prompts_per_step} prompt(s) x G={args.num_generations}, {args.completion_tokens}-token completions; "
          f"time budget {args.time_budget_s:.0f} s; work dir {work_dir}", flush=True)
    start, started = time.perf_counter(), time.time()
    rows: list[dict[str, Any]] = []
    built: dict[str, Path | str] = {}

    def record(running: str | None) -> None:
        if args.json_out is not None:
            write_json_atomic(args.json_out, run_record(args, gpu, rows, running, started))

    if cuda and args.errors_stage:  # no model: seconds, so it goes first
        record("errors")
        rows.append(run_stage("errors", work_dir / "no-model", "-", "-", args, timeout=min(args.stage_timeout_s, 60.0)))
        print_row(rows[-1])
    stages = plan_stages(args)
    for index, (key, backend, stage) in enumerate(stages):
        spec = specs[key]
        base = {"stage": stage, "model": spec.name, "backend": backend}
        remaining = args.time_budget_s - (time.perf_counter() - start)
        if key not in built:
            why = room_for(spec, work_dir) if key == "32b" else None
            if why is None and remaining <= 0:
                why = "time budget"
            if why is None and key == "llama8b" and remaining < args.llama_min_s:
                why = f"time budget: {remaining:.0f} s left, the Llama stage needs about {args.llama_min_s:.0f} s (--llama-min-s)"
            if why is None:
                record(f"{spec.name}: building")
                try:
                    t0 = time.perf_counter()
                    built[key] = build_checkpoint(spec, work_dir / spec.name, args.tokenizer, llama=llama_config_dict(key) if is_llama(key) else None)
                    print(f"gpu_check: built {spec.name} ({spec.num_params / 1e9:.2f}B params) in {time.perf_counter() - t0:.0f} s", flush=True)
                except (RuntimeError, ValueError) as err:
                    why = f"not built: {err}"
            if why is not None:
                built[key] = why
                print(f"gpu_check: skipping {spec.name}: {why}", flush=True)
        if isinstance(built[key], str):
            row = {**base, "status": f"skipped: {built[key]}"}
        else:
            remaining = args.time_budget_s - (time.perf_counter() - start)
            if remaining <= 0:
                row = {**base, "status": "skipped: time budget"}
            else:
                record(f"{spec.name}/{backend}/{stage}")
                row = run_stage(stage, built[key], spec.name, backend, args, timeout=min(args.stage_timeout_s, remaining))
        if is_llama(key):
            row.setdefault("config", "Llama-3.1-8B published config (random weights)" if key == "llama8b" else "Llama-3.1-8B config, tiny shapes")
        rows.append(row)
        print_row(row)
        record("between stages")
        last_of_model = all(k != key for k, _, _ in stages[index + 1:])
        if last_of_model and isinstance(built[key], Path) and not args.keep:
            shutil.rmtree(built[key], ignore_errors=True)
    record(None)
    print()
    print(format_results(rows))
    print(f"\ntotal {time.perf_counter() - start:.0f}s; the plan's estimate includes 1 GiB CUDA context not seen by max_memory_allocated")
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0 if all(r.get("status") == "ok" or str(r.get("status", "")).startswith("skipped") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
