"""GAPO on a tiny random Qwen2 built locally: runs on a laptop CPU in about a minute.

    python recipes/tiny_lists.py          # or: gapo-lite train --recipe tiny_lists --set max_steps=20

It shows the plumbing (data, hook, trainer, checkpoints); the model starts random, so expect few valid
answers. `make demo` is the meaningful CPU experiment (a collapsed model made diverse).
"""
from pathlib import Path

from gapo_lite.lab.tiny import build_tiny_model
from gapo_lite.training import TrainConfig, train

MODEL_DIR = Path("runs/tiny_model")
if not (MODEL_DIR / "config.json").exists():
    build_tiny_model(MODEL_DIR, hidden_size=64, num_layers=2)

config = TrainConfig(
    model=str(MODEL_DIR),
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

if __name__ == "__main__":
    train(config)
