"""What the list-prompt miniatures share (the demo and the regime map): the lists-suite measurement and the RL run's config."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def measure(model: Any, tokenizer: Any, s: Any) -> dict[str, Any]:
    """Lists-suite metrics on held-out and training categories at each evaluation temperature."""
    from gapo_lite.eval.lists import run_lists
    from gapo_lite.eval.settings import SampleSettings

    out: dict[str, Any] = {}
    for temperature in s.eval_temperatures:
        row: dict[str, Any] = {}
        for split in ("heldout", "train"):
            settings = SampleSettings(n=s.eval_samples, temperature=temperature, max_new_tokens=s.completion_tokens, batch_size=512, seed=s.seed, progress=False)
            r = run_lists(model, tokenizer, settings, num_lists=s.eval_lists, split=split)
            row.update(
                {
                    f"{split}_pressure": r["pressure"],
                    f"{split}_jsd": r["mean_jsd"],
                    f"{split}_valid_rate": r["mean_valid_rate"],
                    f"{split}_unique": sum(sum(1 for c in lst["counts"].values() if c) for lst in r["lists"]) / len(r["lists"]),
                    f"{split}_first_share": r["position_shares"][0] if r["position_shares"] else math.nan,
                    f"{split}_position_shares": r["position_shares"],
                }
            )
        out[f"T{temperature:g}"] = row
    main = out.pop(f"T{s.eval_temperatures[0]:g}")
    return {**main, **{f"temperature_{k[1:]}": v for k, v in out.items()}}


def rl_config(s: Any, start: Path, out: Path, reward: str, invalid_reward: float = -1.0, freeze_embeddings: bool = False):
    """The RL run's TrainConfig: full fine-tuning of the tiny model on training categories, G completions per
    prompt (``freeze_embeddings``: the token embeddings stay fixed, as LoRA leaves them)."""
    from gapo_lite.training import TrainConfig

    return TrainConfig(
        model=str(start), backend="transformers", load_in_4bit=False, use_lora=False, freeze_embeddings=freeze_embeddings, reward=reward, invalid_reward=invalid_reward,
        num_generations=s.num_generations, prompts_per_step=s.prompts_per_step, max_completion_length=s.completion_tokens,
        temperature=s.rl_temperature, learning_rate=s.rl_lr, lr_scheduler_type=s.rl_schedule, max_steps=s.rl_steps, save_steps=max(1, s.rl_steps // 2),
        save_total_limit=1, split="train", data_seed=s.seed, seed=s.seed, output_dir=str(out), optim="adamw_torch",
    )
