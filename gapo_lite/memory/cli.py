"""``gapo-lite plan``: estimate GPU memory for a GAPO step and pick the chunking that fits."""
from __future__ import annotations

import argparse
import sys

from gapo_lite.memory.planner import BACKENDS, GIB, OPTIMIZERS, QUANTIZATIONS, MemoryPlanError, plan_memory
from gapo_lite.memory.specs import ModelSpec, builtin_names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="qwen2.5-7b", help=f"built-in name ({', '.join(builtin_names())}) or a local model folder")
    parser.add_argument("--quantization", choices=QUANTIZATIONS, default="4bit")
    parser.add_argument("--lora-rank", type=int, default=64)
    parser.add_argument("--num-generations", type=int, default=32, help="G, completions per prompt")
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument("--prompt-tokens", type=int, default=256, help="longest prompt, in tokens (train() measures it from the dataset)")
    parser.add_argument("--completion-tokens", type=int, default=256, help="max_completion_length")
    parser.add_argument("--budget-gb", type=float, default=None, help="memory budget per GPU in GiB (default: free memory of the current CUDA GPU)")
    parser.add_argument("--world-size", type=int, default=1, help="number of GPUs / processes")
    parser.add_argument("--backend", choices=BACKENDS, default="unsloth")
    parser.add_argument("--optimizer", choices=tuple(OPTIMIZERS), default="adamw_8bit", help="adamw_8bit (what train() uses on CUDA) or adamw (fp32 states)")
    parser.add_argument("--fast-inference", action="store_true", help="generation through Unsloth's colocated vLLM (backend unsloth)")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.5, help="vLLM's share of the GPU with --fast-inference")
    parser.add_argument("--gpu-total-gb", type=float, default=None, help="the GPU's total memory in GiB, for vLLM's share (default: the budget)")
    parser.add_argument("--no-gradient-checkpointing", dest="gradient_checkpointing", action="store_false")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        spec = ModelSpec.resolve(args.model)
        if args.budget_gb is not None and args.budget_gb <= 0:
            raise ValueError(f"--budget-gb must be positive, got {args.budget_gb}")
        budget = None if args.budget_gb is None else int(args.budget_gb * GIB)
        if budget is None:
            import torch

            if not torch.cuda.is_available():
                raise ValueError("no CUDA GPU to measure free memory on; give the budget with --budget-gb (GiB), e.g. --budget-gb 24")
        plan = plan_memory(
            spec,
            quantization=args.quantization,
            lora_rank=args.lora_rank,
            num_generations=args.num_generations,
            prompts_per_step=args.prompts_per_step,
            prompt_tokens=args.prompt_tokens,
            completion_tokens=args.completion_tokens,
            budget_bytes=budget,
            world_size=args.world_size,
            backend=args.backend,
            gradient_checkpointing=args.gradient_checkpointing,
            optimizer=args.optimizer,
            fast_inference=args.fast_inference,
            gpu_memory_utilization=args.gpu_memory_utilization,
            gpu_total_bytes=None if args.gpu_total_gb is None else int(args.gpu_total_gb * GIB),
        )
    except MemoryPlanError as err:
        if args.json:
            print(err.plan.to_json())
        else:
            print(err.plan.format_table())
        headline = str(err).splitlines()[0]
        print(f"gapo-lite plan: does not fit: {headline}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError) as err:
        message = " ".join(str(err).split())
        print(f"gapo-lite plan: error: {message}", file=sys.stderr)
        return 2
    print(plan.to_json() if args.json else plan.format_table())
    return 0
