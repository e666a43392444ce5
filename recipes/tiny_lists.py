"""GAPO on a tiny random Qwen2 built locally: runs on a laptop CPU in about a minute.

    python recipes/tiny_lists.py          # or: gapo-lite train --recipe tiny_lists --set max_steps=20

It shows the plumbing (data, hook, trainer, checkpoints); the model starts random, so expect few valid
answers. `make demo` is the meaningful CPU experiment (a collapsed model made diverse).
"""
from pathlib import Path

from gapo_lite.training import TrainConfig, train

MODEL_DIR = "runs/tiny_model"

config = TrainConfig(
    model=MODEL_DIR,
    backend="transformers",
    load_in_4bit=False,
    num_generations=8,
    prompts_per_step=4,
    max_completion_length=4,
    learning_rate=1e-3,
    lora_r=16,
    lora_alpha=32,
    lora_dropout=0.0,
    max_steps=20,
    save_steps=10,
    output_dir="runs/tiny_lists",
)



def prepare(config: TrainConfig) -> None:
    """Build the random tiny model the first time it is trained (not when the recipe is read, nor on --dry-run)."""
    from gapo_lite.demo.tiny import build_tiny_model

    if config.model == MODEL_DIR and not (Path(MODEL_DIR) / "config.json").exists():
        build_tiny_model(MODEL_DIR, hidden_size=64, num_layers=2)


if __name__ == "__main__":
    prepare(config)
    train(config)
