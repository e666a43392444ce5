"""Open-ended GAPO on Qwen2.5-7B-Instruct: "Name a fruit." with no list in the prompt (one GPU, 4-bit QLoRA).

    python recipes/open_ended_names.py    # or: gapo-lite train --recipe open_ended_names --set max_steps=100

Each prompt names a category of gapo_lite/data/wordlists.json; that category's word list is the validator.
A completion is canonicalised (case, punctuation, "Sure! ..." lead-ins, articles, plurals) and scores
1 - f + 1/L when it is on the list (L = the list's size), -1 otherwise, so answers outside the list count
as invalid. The categories that `gapo-lite eval open` asks about (city, country, animal, ...) are left
out, so that suite measures prompts the model never trained on (12 categories remain). Paper settings otherwise (LoRA r=64,
alpha=32, dropout 0.1, G=32, lr 1e-5, 8 prompts per step, beta=0).
"""
from gapo_lite.data.open_prompts import ANSWER_ONLY, EVAL_SUITE_OVERLAP, build_open_ended_dataset, vocabularies
from gapo_lite.rewards import open_ended_scorer
from gapo_lite.training import TrainConfig, train

# "numbers" is left out too: its list spells numbers out ("Seven"), so a model's "7" would count as invalid.
CATEGORIES = sorted(c for c in vocabularies("train") if c not in (*EVAL_SUITE_OVERLAP, "numbers"))

config = TrainConfig(
    model="Qwen/Qwen2.5-7B-Instruct",  # or a local folder
    backend="auto",  # Unsloth on a CUDA GPU
    load_in_4bit=True,
    max_seq_length=256,
    num_generations=32,
    prompts_per_step=8,
    learning_rate=1e-5,
    max_completion_length=16,  # a name, a full stop, maybe a short lead-in
    max_steps=300,
    save_steps=25,
    output_dir="runs/open_ended_names",
    report_to="none",
)



def scorer(config: TrainConfig):
    """One open-ended scorer per category; validator = the category's word list."""
    return open_ended_scorer("train", names=CATEGORIES, invalid_reward=config.invalid_reward)


def train_dataset(config: TrainConfig):
    """``max_steps * prompts_per_step`` prompts over CATEGORIES, seeded by ``data_seed`` (after any --set)."""
    return build_open_ended_dataset(
        config.max_steps * config.prompts_per_step, split="train", names=CATEGORIES, suffix=ANSWER_ONLY, seed=config.data_seed
    )


if __name__ == "__main__":
    train(config, scorer=scorer(config), train_dataset=train_dataset(config))
