"""GPU check: 2 GAPO steps on random-initialised Qwen2.5-7B / 32B through both backends, against the memory planner.

For a machine with one NVIDIA GPU and no internet (run through scripts/gpu_check.sh):

    scripts/gpu_check.sh                    # 7B and 32B, backends unsloth and transformers
    scripts/gpu_check.sh --quick            # 7B, unsloth only, 1 step
    scripts/gpu_check.sh --models 7b --backends transformers
    python scripts/gpu_check.py --dry-run   # CPU: a tiny model through the same code path (backend transformers)

Each model is built from its ModelSpec (transformers ``Qwen2Config``), randomly initialised on the GPU in
bf16 and saved with a tokenizer to a work folder (``/dev/shm`` when it has room: the 32B checkpoint is
65 GB). The tokenizer is a word-level ``gapo_lite.tiny.build_tokenizer`` over the list-data vocabulary
padded with generated words to the model's vocabulary size, unless ``--tokenizer`` names a local folder
with a real Qwen tokenizer (used as is; its length must not exceed the vocabulary). Random weights make
the text meaningless; the check is about memory and speed. Completions are forced to full length
(``min_new_tokens`` = ``max_completion_length``), so EOS never ends them early.

Every (model, backend) pair runs in its own subprocess (fresh CUDA context, and Unsloth's patching of
TRL stays out of the transformers run): ``gapo_lite.models.load_model(..., load_in_4bit=True)``, a plan
from ``gapo_lite.memory.plan_memory`` with the free GPU memory before loading as budget, TRL's
GRPOTrainer with ``gapo_lite.rewards.GroupReward`` and ``GRPOConfig(**plan.grpo_kwargs(), max_steps=2)``.
It reports peak VRAM (``torch.cuda.max_memory_allocated``; the planner's estimate also counts 1 GiB of
CUDA context that this does not see), the planner's estimate, mean step time and generated tokens/s
(completion tokens over the time spent inside generation). ``--time-budget-s`` (default 480) bounds
the whole run: a pair still running then is stopped, later ones are skipped, and the table says so.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
# The orchestrating process never trains: keep `import gapo_lite` from importing unsloth here. Workers get
# their backend through the environment (see _worker_env), which this default does not override.
os.environ.setdefault("GAPO_LITE_BACKEND", "transformers")

from gapo_lite.memory.specs import ModelSpec, count_parameters  # noqa: E402  (no torch at import)

GIB = 1024**3
MODELS = {"7b": "qwen2.5-7b", "32b": "qwen2.5-32b"}
BACKENDS = ("unsloth", "transformers")
DRY_RUN_SHAPES = dict(num_layers=2, hidden_size=64, num_heads=4, num_kv_heads=2, intermediate_size=128, vocab_size=1024, tie_word_embeddings=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="7b,32b", help="comma-separated: 7b, 32b")
    parser.add_argument("--backends", default="unsloth,transformers", help="comma-separated: unsloth, transformers")
    parser.add_argument("--skip-32b", action="store_true", help="same as leaving 32b out of --models")
    parser.add_argument("--quick", action="store_true", help="7B only, unsloth only, 1 step")
    parser.add_argument("--dry-run", action="store_true", help="CPU: tiny model, backend transformers, few short completions")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--num-generations", type=int, default=32)
    parser.add_argument("--prompts-per-step", type=int, default=1, help="prompts per step (1 keeps the 32B run within minutes)")
    parser.add_argument("--completion-tokens", type=int, default=256)
    parser.add_argument("--lora-rank", type=int, default=64)
    parser.add_argument("--tokenizer", type=Path, default=None, help="local folder with a real Qwen tokenizer (optional)")
    parser.add_argument("--work-dir", type=Path, default=None, help="where checkpoints go (default /dev/shm/gapo_gpu_check, else /tmp)")
    parser.add_argument("--time-budget-s", type=float, default=480.0, help="overall limit: later pairs are skipped, a running one is stopped")
    parser.add_argument("--keep", action="store_true", help="keep the built checkpoints")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--model-name", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    models = [m.strip().lower() for m in args.models.split(",") if m.strip()]
    backends = [b.strip().lower() for b in args.backends.split(",") if b.strip()]
    unknown = [m for m in models if m not in MODELS] + [b for b in backends if b not in BACKENDS]
    if unknown:
        parser.error(f"unknown model/backend {', '.join(unknown)}; models: {', '.join(MODELS)}; backends: {', '.join(BACKENDS)}")
    if args.skip_32b:
        models = [m for m in models if m != "32b"]
    if args.quick:
        models, backends, args.steps = ["7b"], ["unsloth"], 1
    if args.dry_run:
        models, backends = ["tiny"], ["transformers"]
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


def spec_for(model: str) -> ModelSpec:
    """The ModelSpec of a --models entry (``tiny`` is the dry run's model)."""
    if model == "tiny":
        return ModelSpec(name="tiny-dry-run", num_params=count_parameters(**DRY_RUN_SHAPES), **DRY_RUN_SHAPES)
    return ModelSpec.builtin(MODELS[model])


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
    from gapo_lite.tiny import _BASE_WORDS, SPECIAL_TOKENS

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
    from gapo_lite.tiny import build_tokenizer

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


def build_checkpoint(spec: ModelSpec, out_dir: Path, tokenizer_dir: Path | None = None) -> Path:
    """Save a randomly initialised Qwen2 with ``spec``'s shapes (bf16 on CUDA, fp32 on CPU) and a tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    free = shutil.disk_usage(out_dir.parent if out_dir.parent.exists() else Path("/")).free
    if free < checkpoint_bytes(spec):
        raise RuntimeError(f"{out_dir.parent} has {free / GIB:.1f} GiB free; the {spec.name} checkpoint needs {checkpoint_bytes(spec) / GIB:.1f} GiB")
    tokenizer = build_tokenizer_for(spec, tokenizer_dir)
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


def max_prompt_tokens(tokenizer, dataset) -> int:
    """Longest chat-formatted prompt of ``dataset`` in tokens (what the planner's prompt_tokens means)."""
    texts = [tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False) for row in dataset]
    return max(len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in texts)


class _GenerationMeter:
    """Wraps the trainer's generation method to time it and count completion tokens."""

    def __init__(self, trainer) -> None:
        self.seconds = 0.0
        self.tokens = 0
        inner = getattr(trainer, "_generate_single_turn", None)
        self.active = callable(inner)
        if not self.active:
            return

        def timed(*args, **kwargs):
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
            start = time.perf_counter()
            out = inner(*args, **kwargs)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.seconds += time.perf_counter() - start
            completion_ids = out[0] if isinstance(out, tuple) else out
            self.tokens += sum(len(c) for c in completion_ids)
            return out

        trainer._generate_single_turn = timed


def run_pair(model_dir: Path, model_name: str, backend: str, args: argparse.Namespace) -> dict[str, Any]:
    """Load ``model_dir`` with ``backend``, plan, run ``args.steps`` GAPO steps; return the measurements."""
    os.environ["GAPO_LITE_BACKEND"] = backend
    import gapo_lite  # noqa: F401  (imports unsloth first when backend is unsloth)
    import torch

    from gapo_lite.data import build_list_dataset
    from gapo_lite.memory import GIB as _GIB
    from gapo_lite.memory import ModelSpec as _Spec
    from gapo_lite.memory import plan_memory
    from gapo_lite.models import LoraSettings, load_model
    from gapo_lite.rewards import FrequencyScorer, GroupReward

    cuda = torch.cuda.is_available()
    budget = torch.cuda.mem_get_info()[0] if cuda else 8 * _GIB
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    spec = _Spec.from_config(model_dir, name=model_name)
    dataset = build_list_dataset(args.prompts_per_step * args.steps, seed=0)
    load_start = time.perf_counter()
    model, tokenizer = load_model(
        model_dir, backend=backend, load_in_4bit=cuda, max_seq_length=1024 + args.completion_tokens,
        lora=LoraSettings(r=args.lora_rank, alpha=max(1, args.lora_rank // 2), dropout=0.1),
    )
    load_seconds = time.perf_counter() - load_start
    prompt_tokens = max_prompt_tokens(tokenizer, dataset)
    plan = plan_memory(
        spec, quantization="4bit" if cuda else "32bit", lora_rank=args.lora_rank, num_generations=args.num_generations,
        prompts_per_step=args.prompts_per_step, prompt_tokens=prompt_tokens, completion_tokens=args.completion_tokens,
        budget_bytes=budget, backend=backend,
    )
    from trl import GRPOConfig, GRPOTrainer  # after gapo_lite, so Unsloth's patched classes when backend is unsloth

    config = GRPOConfig(
        output_dir=str(model_dir.parent / f"out-{model_name}-{backend}"),
        max_steps=args.steps,
        learning_rate=1e-5,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        max_completion_length=args.completion_tokens,
        generation_kwargs={"min_new_tokens": args.completion_tokens},
        temperature=1.0,
        beta=0.0,
        bf16=cuda,
        use_cpu=not cuda,
        seed=0,
        **plan.grpo_kwargs(),
    )
    reward = GroupReward(FrequencyScorer(), num_generations=args.num_generations)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[reward], args=config, train_dataset=dataset)
    meter = _GenerationMeter(trainer)
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    trainer.train()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() if cuda else None
    tokens = meter.tokens or args.steps * plan.generation_batch_size * args.completion_tokens
    return {
        "model": model_name,
        "backend": backend,
        "status": "ok",
        "peak_vram_bytes": peak,
        "estimate_bytes": plan.estimated_peak_bytes,
        "budget_bytes": plan.budget_bytes,
        "fits": plan.fits,
        "chunk_size": plan.chunk_size,
        "steps_per_generation": plan.steps_per_generation,
        "prompt_tokens": prompt_tokens,
        "steps": args.steps,
        "step_seconds": seconds / args.steps,
        "load_seconds": load_seconds,
        "generated_tokens": tokens,
        "tokens_per_second": tokens / meter.seconds if meter.seconds > 0 else tokens / seconds,
        "tokens_per_second_basis": "generation time" if meter.seconds > 0 else "whole step time",
    }


def format_results(rows: list[dict[str, Any]]) -> str:
    """The results table: model, backend, peak VRAM, planner estimate, ratio, step time, generated tokens/s."""

    def gib(value: Any) -> str:
        return f"{value / GIB:.2f}" if isinstance(value, (int, float)) else "-"

    header = f"{'model':<14}{'backend':<14}{'peak VRAM GiB':>14}{'plan GiB':>10}{'plan/peak':>10}{'chunk':>7}{'step s':>9}{'gen tok/s':>11}  status"
    lines = [header, "-" * len(header)]
    for r in rows:
        peak, est = r.get("peak_vram_bytes"), r.get("estimate_bytes")
        ratio = f"{est / peak:.2f}" if isinstance(peak, (int, float)) and peak and isinstance(est, (int, float)) else "-"
        step = f"{r['step_seconds']:.1f}" if isinstance(r.get("step_seconds"), (int, float)) else "-"
        tps = f"{r['tokens_per_second']:.0f}" if isinstance(r.get("tokens_per_second"), (int, float)) else "-"
        chunk = str(r.get("chunk_size", "-"))
        lines.append(f"{r['model']:<14}{r['backend']:<14}{gib(peak):>14}{gib(est):>10}{ratio:>10}{chunk:>7}{step:>9}{tps:>11}  {r.get('status', '')}")
    return "\n".join(lines)


def _worker_env(backend: str, work_dir: Path) -> dict[str, str]:
    return dict(
        os.environ,
        GAPO_LITE_BACKEND=backend,
        UNSLOTH_COMPILE_LOCATION=str(work_dir / "unsloth_compiled_cache"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )


def _run_worker(model_dir: Path, model_name: str, backend: str, args: argparse.Namespace, timeout: float) -> dict[str, Any]:
    result_file = model_dir.parent / f"result-{model_name}-{backend}.json"
    result_file.unlink(missing_ok=True)
    cmd = [
        sys.executable, str(Path(__file__).resolve()), "--worker", "--model-dir", str(model_dir), "--model-name", model_name,
        "--backend", backend, "--result-file", str(result_file), "--steps", str(args.steps),
        "--num-generations", str(args.num_generations), "--prompts-per-step", str(args.prompts_per_step),
        "--completion-tokens", str(args.completion_tokens), "--lora-rank", str(args.lora_rank),
    ]
    base = {"model": model_name, "backend": backend}
    try:
        proc = subprocess.run(cmd, env=_worker_env(backend, model_dir.parent), timeout=max(timeout, 1), capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return {**base, "status": f"timed out after {timeout:.0f}s"}
    if proc.returncode != 0 or not result_file.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        sys.stderr.write(f"--- {model_name}/{backend} failed (rc {proc.returncode}); last output:\n{(proc.stderr or '')[-4000:]}\n")
        return {**base, "status": f"failed: {tail[0][:120]}"}
    return json.loads(result_file.read_text())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        result = run_pair(args.model_dir, args.model_name, args.backend, args)
        args.result_file.write_text(json.dumps(result))
        return 0

    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.dry_run:
        print("gpu_check: no CUDA GPU here; use --dry-run for the CPU path", file=sys.stderr)
        return 2
    specs = {m: spec_for(m) for m in args.model_list}
    work_dir = args.work_dir or default_work_dir(max(checkpoint_bytes(s) for s in specs.values()))
    work_dir.mkdir(parents=True, exist_ok=True)
    print(f"gpu_check: models {', '.join(s.name for s in specs.values())}; backends {', '.join(args.backend_list)}; "
          f"{args.steps} steps of {args.prompts_per_step} prompt(s) x G={args.num_generations}, {args.completion_tokens}-token completions; "
          f"work dir {work_dir}", flush=True)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for key, spec in specs.items():
        elapsed = time.perf_counter() - start
        if elapsed > args.time_budget_s:
            rows += [{"model": spec.name, "backend": b, "status": "skipped: time budget"} for b in args.backend_list]
            continue
        model_dir = work_dir / spec.name
        try:
            t0 = time.perf_counter()
            build_checkpoint(spec, model_dir, args.tokenizer)
            print(f"gpu_check: built {spec.name} ({spec.num_params / 1e9:.2f}B params) in {time.perf_counter() - t0:.0f}s", flush=True)
        except (RuntimeError, ValueError) as err:
            rows += [{"model": spec.name, "backend": b, "status": f"not built: {err}"} for b in args.backend_list]
            continue
        for backend in args.backend_list:
            remaining = args.time_budget_s - (time.perf_counter() - start)
            if remaining <= 0:
                rows.append({"model": spec.name, "backend": backend, "status": "skipped: time budget"})
                continue
            row = _run_worker(model_dir, spec.name, backend, args, timeout=remaining)
            rows.append(row)
            print(f"gpu_check: {spec.name}/{backend}: {row.get('status')}", flush=True)
        if not args.keep:
            shutil.rmtree(model_dir, ignore_errors=True)
    print()
    print(format_results(rows))
    print(f"\ntotal {time.perf_counter() - start:.0f}s; planner estimate includes 1 GiB CUDA context not seen by max_memory_allocated")
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0 if all(r.get("status") == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
