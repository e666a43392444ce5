"""Measured peak memory of one GRPO-style forward+backward per chunk size, next to the planner's estimate.

    python benchmarks/memory.py                       # CPU: ~40M-parameter Qwen2, 32k vocabulary, chunks 1,2,4,8
    python benchmarks/memory.py --chunks 1,2 --completion-tokens 128

The loss is GRPO's policy-gradient core: log-probs of the completion tokens (TRL's selective_log_softmax
over the logits of the kept positions) times per-completion advantages, with a LoRA adapter and gradient
checkpointing, as the transformers backend trains. Measured on CPU: the peak increase of the process's
resident memory (psutil, sampled every millisecond in a thread) over the level just before the step,
each chunk size in a fresh subprocess with glibc's mmap threshold pinned low so that freed tensors go
back to the OS. On a CUDA GPU: ``torch.cuda.max_memory_allocated`` above the allocation before the step.
The estimate is the planner's ``activations + logits_and_logprobs`` for the same shapes at 32-bit
(CPU) or 16-bit (GPU) on the transformers backend; the ratio estimate/measured is printed, not asserted.

    python benchmarks/memory.py --resident SmolLM2-135M,Qwen2.5-0.5B,Qwen2.5-1.5B --record docs/results/memory_resident.json

``--resident`` compares, for the 4-bit transformers path (bitsandbytes NF4 + peft LoRA, loaded by ``load_model``),
the planner's resident terms with the bytes of the real tensors after one forward, backward and AdamW step:
weights (packed NF4 data and its quantization states, and the unquantized rest), LoRA parameters, their
gradients and the optimizer's states. Each model is built with random weights at its real shapes from the
planner's offline table (SmolLM2-135M is the real checkpoint when ``scripts/get_smollm2.sh`` has fetched it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MIB = 1024**2


def build_model(path: Path, *, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int, vocab: int) -> Path:
    """A random Qwen2 with a word-level tokenizer whose vocabulary is padded with generated words to ``vocab``."""
    from gapo_lite.demo.tiny import _BASE_WORDS, SPECIAL_TOKENS, build_tiny_model

    reserved = len(SPECIAL_TOKENS) + len(_BASE_WORDS)
    words = [f"w{i:05d}" for i in range(max(vocab - reserved, 1))]
    return build_tiny_model(
        path, words, hidden_size=hidden, num_layers=layers, num_heads=heads, num_kv_heads=kv_heads,
        intermediate_size=intermediate, max_positions=2048,
    )


class PeakSampler:
    """Samples this process's RSS in a background thread; ``peak`` is the highest value seen."""

    def __init__(self, interval: float = 0.001) -> None:
        import psutil

        self._process = psutil.Process()
        self._interval = interval
        self._stop = threading.Event()
        self.peak = self._process.memory_info().rss
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._process.memory_info().rss)
            time.sleep(self._interval)

    def __enter__(self) -> "PeakSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)


def grpo_step(model, chunk: int, prompt_tokens: int, completion_tokens: int, vocab: int, seed: int = 0) -> None:
    """One forward+backward of ``-(logp(completion) * advantage).mean()`` on random tokens."""
    import torch
    from trl.trainer.utils import selective_log_softmax

    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(20, vocab, (chunk, prompt_tokens + completion_tokens), generator=generator).to(device)
    advantages = torch.randn(chunk, generator=generator).to(device)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids), logits_to_keep=completion_tokens + 1, use_cache=False).logits
    logps = selective_log_softmax(logits[:, :-1], ids[:, -completion_tokens:])
    loss = -(logps * advantages[:, None]).mean()
    loss.backward()


def worker(args: argparse.Namespace) -> dict:
    """Load the model, warm up, then measure one step of ``args.chunk`` completions."""
    import gc

    import torch

    from gapo_lite.models import LoraSettings, load_model

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model, _ = load_model(args.model_dir, backend="transformers", load_in_4bit=False, lora=LoraSettings(r=args.lora_rank, alpha=2 * args.lora_rank, dropout=0.1))
    if torch.cuda.is_available():
        model = model.to(torch.bfloat16)
        for name, param in model.named_parameters():
            if param.requires_grad:
                param.data = param.data.float()
    if not args.no_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    vocab = model.config.vocab_size
    grpo_step(model, 1, 8, 8, vocab)  # warm-up: lazy buffers, thread pools, autograd machinery
    model.zero_grad(set_to_none=False)  # keep LoRA grads allocated: they are not part of the compared terms
    gc.collect()
    start = time.perf_counter()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        grpo_step(model, args.chunk, args.prompt_tokens, args.completion_tokens, vocab, seed=1)
        torch.cuda.synchronize()
        measured = torch.cuda.max_memory_allocated() - base
    else:
        import psutil

        base = psutil.Process().memory_info().rss
        with PeakSampler() as sampler:
            grpo_step(model, args.chunk, args.prompt_tokens, args.completion_tokens, vocab, seed=1)
        measured = sampler.peak - base
    return {"chunk": args.chunk, "measured_bytes": int(measured), "seconds": time.perf_counter() - start, "device": "cuda" if torch.cuda.is_available() else "cpu"}


def estimate(model_dir: Path, args: argparse.Namespace, chunk: int, cuda: bool) -> dict[str, int]:
    from gapo_lite.memory import ModelSpec, estimate_terms
    from gapo_lite.runplan import resolve_run_plan
    from gapo_lite.training import TrainConfig
    from gapo_lite.training.planning import plan_settings

    spec = ModelSpec.from_config(model_dir)
    config = TrainConfig(model=str(model_dir), lora_r=args.lora_rank, num_generations=2, prompts_per_step=1, max_completion_length=args.completion_tokens)
    run = resolve_run_plan(backend="transformers", load_in_4bit=False, optim="adamw_8bit", gradient_checkpointing=not args.no_checkpointing,
                           precision="auto" if cuda else "fp32", cuda=cuda, has_unsloth=False, processes=1)  # 16-bit weights on a GPU, 32-bit on a CPU
    return estimate_terms(spec, plan_settings(config, run, prompt_tokens=args.prompt_tokens), chunk)


def run_worker_subprocess(model_dir: Path, args: argparse.Namespace, chunk: int) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="65536", GAPO_LITE_BACKEND="transformers")
    cmd = [
        sys.executable, __file__, "--worker", "--model-dir", str(model_dir), "--chunk", str(chunk),
        "--prompt-tokens", str(args.prompt_tokens), "--completion-tokens", str(args.completion_tokens),
        "--lora-rank", str(args.lora_rank),
    ] + (["--no-checkpointing"] if args.no_checkpointing else [])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"worker for chunk {chunk} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def random_checkpoint(name: str, out: Path) -> Path:
    """A checkpoint folder of the offline table's ``name`` with random bf16 weights at its real shapes and a
    tokenizer (what ``load_model`` reads): built as a Qwen2 (the table's layout) or a Llama."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from gpu_check import build_tokenizer_for, qwen2_config_kwargs

    from gapo_lite.memory import ModelSpec

    spec = ModelSpec.builtin(name)
    tokenizer = build_tokenizer_for(spec)
    kwargs = qwen2_config_kwargs(spec, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    config = LlamaConfig(**kwargs) if spec.model_type == "llama" else Qwen2Config(**kwargs)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def tensor_bytes(tensors) -> int:
    """Bytes of distinct storages (a tied embedding and head, or a shared quantization code, count once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        if t is not None:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return sum(seen.values())


def quant_state_tensors(param):
    """The tensors of a bitsandbytes Params4bit's quantization state (absmax, code, and the nested state of double quant)."""
    state = getattr(param, "quant_state", None)
    if state is None:
        return []
    found = [state.absmax, state.code, getattr(state, "offset", None)]
    nested = getattr(state, "state2", None)
    if nested is not None:
        found += [nested.absmax, nested.code]
    return [t for t in found if t is not None and hasattr(t, "untyped_storage")]


def resident_terms(model_dir: Path, lora_rank: int) -> dict[str, int]:
    """Measured resident bytes of the 4-bit transformers path after one forward, backward and AdamW step."""
    import torch

    from gapo_lite.models import LoraSettings, load_model
    from gapo_lite.runplan import resolve_run_plan

    plan = resolve_run_plan(backend="transformers", load_in_4bit=True, precision="fp32", gradient_checkpointing=False)
    model, _ = load_model(model_dir, run_plan=plan, lora=LoraSettings(r=lora_rank, alpha=2 * lora_rank, dropout=0.1))
    lora = [p for p in model.parameters() if p.requires_grad]
    frozen = [p for p in model.parameters() if not p.requires_grad]
    optimizer = torch.optim.AdamW(lora, lr=1e-5)
    ids = torch.randint(10, model.config.vocab_size, (1, 8))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    states = [t for state in optimizer.state.values() for t in state.values() if torch.is_tensor(t) and t.dim() > 0]
    return {
        "weights": tensor_bytes(frozen + [t for p in frozen for t in quant_state_tensors(p)]),
        "lora_params": tensor_bytes(lora),
        "lora_grads": tensor_bytes(p.grad for p in lora),
        "optimizer_states": tensor_bytes(states),
    }


def predicted_resident_terms(model_dir: Path, lora_rank: int) -> dict[str, int]:
    """The planner's resident terms for the same model on the 4-bit transformers path with torch AdamW."""
    from gapo_lite.memory import ModelSpec, estimate_terms
    from gapo_lite.memory.planner import ADAPTER_BYTES, OPTIMIZER_STATE_BYTES, lora_parameter_count
    from gapo_lite.runplan import resolve_run_plan
    from gapo_lite.training import TrainConfig
    from gapo_lite.training.planning import plan_settings

    spec = ModelSpec.from_config(model_dir)
    config = TrainConfig(model=str(model_dir), lora_r=lora_rank, num_generations=2, prompts_per_step=1)
    run = resolve_run_plan(backend="transformers", load_in_4bit=True, optim="adamw_torch", precision="fp32", cuda=False, has_unsloth=False, processes=1)
    settings = plan_settings(config, run)
    assert (settings.quantization, settings.optimizer) == ("4bit", "adamw")
    terms = estimate_terms(spec, settings, 1)
    count = lora_parameter_count(spec, lora_rank)
    split = {"lora_params": count * ADAPTER_BYTES, "lora_grads": count * ADAPTER_BYTES, "optimizer_states": count * OPTIMIZER_STATE_BYTES["adamw"]}
    assert sum(split.values()) == terms["lora_params_and_optimizer"]  # the planner's one term, in its three parts
    return {"weights": terms["weights"], **split}


def resident_worker(args: argparse.Namespace) -> dict:
    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    return {"measured": resident_terms(args.model_dir, args.lora_rank), "predicted": predicted_resident_terms(args.model_dir, args.lora_rank)}


def run_resident(names: list[str], lora_rank: int) -> list[dict]:
    """Each model in a fresh process (its memory returned to the OS): predicted, measured and their ratio per term."""
    from gapo_lite.gguf import smollm2_path
    from gapo_lite.models import check_model_path

    rows = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix="gapo_resident_") as tmp:
            real = name == "SmolLM2-135M" and Path(smollm2_path()).is_file()
            model_dir = Path(check_model_path(smollm2_path())) if real else random_checkpoint(name, Path(tmp) / "model")
            cmd = [sys.executable, __file__, "--resident-worker", "--model-dir", str(model_dir), "--lora-rank", str(lora_rank)]
            out = subprocess.run(cmd, env=dict(os.environ, GAPO_LITE_BACKEND="transformers"), capture_output=True, text=True, check=False)
            if out.returncode != 0:
                raise RuntimeError(f"resident worker for {name} failed:\n{out.stderr[-3000:]}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
        for term, measured in result["measured"].items():
            predicted = result["predicted"][term]
            row = {"model": name + ("" if real or name != "SmolLM2-135M" else " (random)"), "term": term, "predicted": predicted, "measured": measured,
                   "ratio": predicted / measured}
            rows.append(row)
            print(f"{row['model']}: {term} predicted {predicted / MIB:.2f} MiB, measured {measured / MIB:.2f} MiB", flush=True)
    return rows


def format_resident(rows: list[dict]) -> str:
    """The markdown table docs/gpu.md shows: per model and term the planner's bytes, the real tensors' and their ratio."""
    lines = ["| model | term | predicted MiB | measured MiB | predicted / measured |", "|---|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['term']} | {r['predicted'] / MIB:.2f} | {r['measured'] / MIB:.2f} | {r['ratio']:.4f} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="1,2,4,8")
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--completion-tokens", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--intermediate", type=int, default=1536)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--lora-rank", type=int, default=None, help="LoRA rank (default 16; 64, the paper's, with --resident)")
    parser.add_argument("--no-checkpointing", action="store_true")
    parser.add_argument("--resident", metavar="MODELS", help="comma-separated offline-table names: the 4-bit path's resident terms, predicted vs measured")
    parser.add_argument("--record", type=Path, help="with --resident: write the rows here (JSON)")
    parser.add_argument("--resident-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--chunk", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.lora_rank is None and not args.resident:
        args.lora_rank = 16
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    if args.resident_worker:
        print(json.dumps(resident_worker(args)))
        return 0
    if args.resident:
        rows = run_resident([n.strip() for n in args.resident.split(",") if n.strip()], args.lora_rank or 64)  # the paper's rank
        print(format_resident(rows))
        if args.record:
            args.record.write_text(json.dumps(rows, indent=1) + "\n")
        return 0

    import torch

    cuda = torch.cuda.is_available()
    chunks = [int(c) for c in args.chunks.split(",") if c.strip()]
    with tempfile.TemporaryDirectory(prefix="gapo_membench_") as tmp:
        model_dir = build_model(
            Path(tmp) / "model", hidden=args.hidden, layers=args.layers, heads=args.heads, kv_heads=args.kv_heads,
            intermediate=args.intermediate, vocab=args.vocab,
        )
        from gapo_lite.memory import ModelSpec

        spec = ModelSpec.from_config(model_dir)
        print(
            f"model: {spec.num_params / 1e6:.1f}M params, hidden {spec.hidden_size}, {spec.num_layers} layers, vocab {spec.vocab_size}; "
            f"LoRA r={args.lora_rank}; {args.prompt_tokens} prompt + {args.completion_tokens} completion tokens; "
            f"checkpointing {'off' if args.no_checkpointing else 'on'}; device {'cuda' if cuda else 'cpu'}"
        )
        header = f"{'chunk':>5} {'activ. est':>11} {'logits est':>11} {'estimate':>10} {'measured':>10} {'est/meas':>9} {'step s':>7}"
        print(header)
        print("-" * len(header))
        for chunk in chunks:
            result = run_worker_subprocess(model_dir, args, chunk)
            terms = estimate(model_dir, args, chunk, cuda)
            est = terms["activations"] + terms["logits_and_logprobs"]
            measured = result["measured_bytes"]
            ratio = est / measured if measured > 0 else float("nan")
            print(
                f"{chunk:>5} {terms['activations'] / MIB:>9.1f}Mi {terms['logits_and_logprobs'] / MIB:>9.1f}Mi "
                f"{est / MIB:>8.1f}Mi {measured / MIB:>8.1f}Mi {ratio:>9.2f} {result['seconds']:>7.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
