"""GAPO on the prompts you care about, on one GPU: Qwen2.5-7B-Instruct asked "Name a city." and six more
(4-bit QLoRA through Unsloth). The GPU twin of recipes/smollm2_naming.py: the same prompts, valid answers and
reward; the paper's model, LoRA and learning rate.

    gapo-lite train --recipe qwen7b_naming            # or: python recipes/qwen7b_naming.py

To use your own prompts and valid answers, change PROMPTS and valid_answers in recipes/smollm2_naming.py (this
recipe takes both from there), or copy both here. Qwen2.5-7B answers validly far more often than SmolLM2-135M, so
the paper's -1 for an invalid answer is kept; read `gapo-lite eval --suite open` first ("Will GAPO spread this
model?" in its report) and set `--set invalid_reward=0` if the model is valid too rarely.
"""
import dataclasses

from gapo_lite.training import train
from gapo_lite.training.recipes import load_recipe_file

naming = load_recipe_file("smollm2_naming")  # its prompts and valid answers, through its train_dataset and scorer

config = dataclasses.replace(
    naming.config,
    model="Qwen/Qwen2.5-7B-Instruct",  # or a local folder
    backend="auto",  # Unsloth on a CUDA GPU
    load_in_4bit=True,
    max_seq_length=512,
    lora_r=64,
    lora_alpha=32,
    lora_dropout=0.1,
    learning_rate=1e-5,
    prompts_per_step=8,
    invalid_reward=-1.0,
    max_steps=300,
    save_steps=25,
    output_dir="runs/qwen7b_naming",
)
train_dataset = naming.train_dataset
scorer = naming.scorer

if __name__ == "__main__":
    train(config, **naming.train_kwargs(config))
