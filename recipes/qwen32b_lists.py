"""GAPO on Qwen2.5-32B-Instruct on one datacenter GPU (4-bit QLoRA through Unsloth).

    python recipes/qwen32b_lists.py        # or: gapo-lite train --recipe qwen32b_lists --set max_steps=100

Paper settings: LoRA r=64, alpha=32, dropout 0.1; G=32 completions per prompt; lr 1e-5; 8 prompts per
step; lists of 4-12 items; beta=0 (no KL). The memory planner picks how many completions go through
each forward/backward pass (`gapo-lite plan --model qwen2.5-32b` shows the plan).

Smallest budget the planner accepts for this recipe: 72.39 GiB of free GPU memory (an 80 GB card), with
128-token prompts (list prompts should be about 60-100 tokens with Qwen's tokenizer; train() measures them):
    gapo-lite plan --model qwen2.5-32b --prompt-tokens 128 --completion-tokens 32 --budget-gb 72.39
Most of it is generation: Unsloth's decode buffer for 256 sequences of 128 + 513 rows is 40 GiB. On a
smaller card use prompts_per_step=4 (48.14 GiB) or 2 (36.02 GiB), keeping G=32, or fast_inference=True.
"""
from gapo_lite.training import TrainConfig, train

config = TrainConfig(
    model="Qwen/Qwen2.5-32B-Instruct",  # or a local folder
    backend="auto",  # Unsloth on a CUDA GPU
    load_in_4bit=True,
    max_seq_length=512,
    num_generations=32,
    prompts_per_step=8,
    learning_rate=1e-5,
    max_completion_length=32,
    max_steps=500,
    save_steps=25,
    output_dir="runs/qwen32b_lists",
    report_to="none",  # or "tensorboard", "trackio", "wandb"
)

if __name__ == "__main__":
    train(config)
