"""GAPO on Qwen2.5-7B-Instruct, the paper's setup, on one GPU (4-bit QLoRA through Unsloth).

    python recipes/qwen7b_lists.py        # or: gapo-lite train --recipe qwen7b_lists --set max_steps=100

Paper settings: LoRA r=64, alpha=32, dropout 0.1; G=32 completions per prompt; lr 1e-5; 8 prompts per
step; lists of 4-12 items; beta=0 (no KL). The memory planner picks how many completions go through
each forward/backward pass (`gapo-lite plan --model qwen2.5-7b` shows the plan).
"""
from gapo_lite.training import TrainConfig, train

config = TrainConfig(
    model="Qwen/Qwen2.5-7B-Instruct",  # or a local folder
    backend="auto",  # Unsloth on a CUDA GPU
    load_in_4bit=True,
    max_seq_length=512,
    num_generations=32,
    prompts_per_step=8,
    learning_rate=1e-5,
    max_completion_length=32,
    max_steps=500,
    save_steps=25,
    output_dir="runs/qwen7b_lists",
    report_to="none",  # or "tensorboard", "trackio", "wandb"
)

if __name__ == "__main__":
    train(config)
