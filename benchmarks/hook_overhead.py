"""GAPO hook overhead: the same GRPOTrainer run on the tiny model with the GAPO hook and with a trivial
per-completion reward, alternating in one process; then the hook's own time per group of 32 as the
number of groups grows.

    python benchmarks/hook_overhead.py [--steps 12] [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from gapo_lite.data import build_list_dataset
from gapo_lite.demo.tiny import build_tiny_model
from gapo_lite.models import LoraSettings, load_model
from gapo_lite.rewards import GroupReward
from gapo_lite.training import TrainConfig, build_trainer


def trivial_reward(prompts, completions, **kwargs):
    """Per-completion baseline: the length of the completion's text."""
    return [float(len(c[0]["content"] if isinstance(c, list) else c)) for c in completions]


def step_times(model_dir: Path, out: Path, hook, steps: int) -> list[float]:
    model, tok = load_model(model_dir, lora=LoraSettings(r=8, alpha=16, dropout=0.0))
    config = TrainConfig(model=str(model_dir), num_generations=32, prompts_per_step=4, max_completion_length=4, max_steps=steps,
                         save_steps=10_000, learning_rate=1e-4, output_dir=str(out))
    trainer = build_trainer(config, model=model, tokenizer=tok, train_dataset=build_list_dataset(steps * 4, seed=1))
    trainer.reward_funcs = [hook]
    trainer.args.disable_tqdm = True
    trainer.train()
    times = [h["step_time"] for h in trainer.state.log_history if "step_time" in h]
    return times[2:]  # drop warm-up steps


def hook_time_per_group(num_groups: int, repeats: int = 5) -> float:
    ds = build_list_dataset(num_groups, seed=2)
    prompts, completions, ids, items = [], [], [], []
    for row in ds:
        for k in range(32):
            prompts.append(row["prompt"])
            completions.append([{"role": "assistant", "content": f"I pick {row['items'][k % len(row['items'])]}."}])
            ids.append(row["prompt_id"])
            items.append(row["items"])
    hook = GroupReward(num_generations=32)
    best = []
    for _ in range(repeats):
        t = time.perf_counter()
        hook(prompts=prompts, completions=completions, prompt_id=ids, items=items, log_metric=lambda *a: None)
        best.append(time.perf_counter() - t)
    return min(best) / num_groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_model(Path(tmp) / "model")
        gapo, trivial = [], []
        for r in range(args.rounds):  # alternate so drift hits both equally
            trivial += step_times(model_dir, Path(tmp) / f"t{r}", trivial_reward, args.steps)
            gapo += step_times(model_dir, Path(tmp) / f"g{r}", GroupReward(num_generations=32), args.steps)
    mg, mt = statistics.median(gapo), statistics.median(trivial)
    print(f"GRPO step, tiny model, 4 prompts x G=32 ({len(gapo)} steps each, alternating rounds)")
    print(f"  median step time with GAPO hook      : {mg * 1000:8.1f} ms")
    print(f"  median step time with trivial reward : {mt * 1000:8.1f} ms")
    print(f"  ratio GAPO / trivial                 : {mg / mt:8.3f}   (goal <= 1.02)")
    print("GroupReward alone, per group of 32 completions")
    for groups in (1, 4, 16, 64, 256):
        per = hook_time_per_group(groups)
        print(f"  {groups:4d} groups: {per * 1e6:8.1f} us per group   ({per * groups * 1000:7.2f} ms per call)")


if __name__ == "__main__":
    main()
