"""``gapo-lite plan``: estimate GPU memory for a GAPO step, pick the chunking that fits, and say what would fit.

Every setting defaults to :class:`~gapo_lite.training.TrainConfig`'s, on a CUDA GPU as ``train()`` would run it
(Unsloth backend, 4-bit, 8-bit AdamW); the plan is built by the same function ``train()`` uses."""
from __future__ import annotations

import argparse
import dataclasses
import sys

from gapo_lite._bootstrap import BACKENDS, DEFAULT_BACKEND
from gapo_lite.memory.planner import GIB, OPTIMIZERS, QUANTIZATIONS, MemoryPlan, MemoryPlanError

DEFAULT_MODEL = "qwen2.5-7b"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gapo_lite.training.config import TrainConfig
    from gapo_lite.training.planning import DEFAULT_PROMPT_TOKENS

    d = TrainConfig()
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="local model folder, hub id (its config.json, or the built-in table offline: Qwen2.5, Qwen3, Llama 3.x, Gemma 2/3, "
                             "Mistral, Phi, SmolLM2) or a built-in name")
    parser.add_argument("--quantization", choices=QUANTIZATIONS, default="16bit" if d.load_in_4bit is False else "4bit")
    parser.add_argument("--lora-rank", type=int, default=d.lora_r)
    parser.add_argument("--num-generations", type=int, default=d.num_generations, help="G, completions per prompt")
    parser.add_argument("--prompts-per-step", type=int, default=d.prompts_per_step)
    parser.add_argument("--prompt-tokens", type=int, default=DEFAULT_PROMPT_TOKENS, help="longest prompt, in tokens (train() measures it from the dataset)")
    parser.add_argument("--completion-tokens", type=int, default=d.max_completion_length, help="max_completion_length")
    parser.add_argument("--budget-gb", type=float, default=None, help="memory budget per GPU in GiB (default: free memory of the current CUDA GPU)")
    parser.add_argument("--world-size", type=int, default=1, help="number of GPUs / processes")
    parser.add_argument("--backend", choices=BACKENDS, default=DEFAULT_BACKEND,
                        help="as train() would ask; auto resolves on the machine planned for, a CUDA GPU with Unsloth installed: unsloth")
    parser.add_argument("--optimizer", choices=tuple(OPTIMIZERS), default="adamw_8bit", help="adamw_8bit (what train() uses on CUDA) or adamw (fp32 states)")
    parser.add_argument("--fast-inference", action="store_true", help="generation through Unsloth's colocated vLLM (backend unsloth)")
    parser.add_argument("--gpu-memory-utilization", type=float, default=d.gpu_memory_utilization, help="vLLM's share of the GPU with --fast-inference")
    parser.add_argument("--gpu-total-gb", type=float, default=None, help="the GPU's total memory in GiB, for vLLM's share (default: the budget)")
    parser.add_argument("--no-gradient-checkpointing", dest="gradient_checkpointing", action="store_false")
    parser.add_argument("--max-seq-length", type=int, default=d.max_seq_length,
                        help="the model's max_seq_length (Unsloth offloads checkpointed layer inputs from 512)")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def plan_from_args(args: argparse.Namespace) -> MemoryPlan:
    """The plan ``train()`` would make for these settings on a CUDA GPU."""
    from gapo_lite.runplan import resolve_run_plan
    from gapo_lite.training.config import TrainConfig
    from gapo_lite.training.planning import plan_for_config

    if args.budget_gb is not None and args.budget_gb <= 0:
        raise ValueError(f"--budget-gb must be positive, got {args.budget_gb}")
    if args.budget_gb is None:
        import torch

        if not torch.cuda.is_available():
            raise ValueError("no CUDA GPU to measure free memory on; give the budget with --budget-gb (GiB), e.g. --budget-gb 24")
    config = dataclasses.replace(
        TrainConfig(), model=args.model, lora_r=args.lora_rank, num_generations=args.num_generations, prompts_per_step=args.prompts_per_step,
        max_completion_length=args.completion_tokens, memory_budget_gb=args.budget_gb, fast_inference=args.fast_inference,
        gpu_memory_utilization=args.gpu_memory_utilization, load_in_4bit=args.quantization == "4bit", max_seq_length=args.max_seq_length,
    )
    run_plan = resolve_run_plan(
        backend=args.backend, load_in_4bit=config.load_in_4bit, fast_inference=args.fast_inference,
        optim="adamw_8bit" if args.optimizer == "adamw_8bit" else "adamw_torch", gradient_checkpointing=args.gradient_checkpointing,
        precision="fp32" if args.quantization == "32bit" else "auto", cuda=True, has_unsloth=True, processes=args.world_size,
    )
    total = None if args.gpu_total_gb is None else int(args.gpu_total_gb * GIB)
    return plan_for_config(config, prompt_tokens=args.prompt_tokens, run_plan=run_plan, total_bytes=total)


def report_plan_error(err: MemoryPlanError, command: str, as_json: bool = False) -> int:
    """Print a plan that does not fit (its table, with what would fit; or its JSON) and a one-line verdict; exit code 1."""
    print(err.plan.to_json() if as_json else err.plan.format_table())
    print(f"{command}: does not fit: {str(err).splitlines()[0]}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    from gapo_lite.errors import print_error

    try:
        plan = plan_from_args(args)
    except MemoryPlanError as err:
        return report_plan_error(err, "gapo-lite plan", args.json)
    except (ValueError, FileNotFoundError) as err:
        return print_error("gapo-lite plan", err)
    print(plan.to_json() if args.json else plan.format_table())
    return 0
