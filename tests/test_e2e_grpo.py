"""End to end: TRL GRPOTrainer + GroupReward + a LoRA adapter on a tiny model loaded from disk."""
import numpy as np
import pytest

from gapo_lite.data import TEMPLATES, make_example
from gapo_lite.demo.tiny import build_tiny_model
from gapo_lite.models import LoraSettings, load_model
from gapo_lite.rewards import FrequencyScorer, GroupReward

ITEMS = ["Cat", "Dog", "Owl", "Fox"]


class Recording(FrequencyScorer):
    def __init__(self):
        super().__init__()
        self.batches: list[list[float]] = []

    def __call__(self, group):
        rewards = super().__call__(group)
        self.batches.append(rewards)
        return rewards


def test_grpo_with_group_reward_trains_lora(tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    words = sorted(set(TEMPLATES[0].replace("{items}", "").replace(".", " ").replace(":", " ").split()) | set(ITEMS))
    path = build_tiny_model(tmp_path / "model", words=words, seed=1)
    model, tokenizer = load_model(path, backend="transformers", lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    rows = [make_example(ITEMS[i % 4 :] + ITEMS[: i % 4], "animals", TEMPLATES[0], f"p{i}") for i in range(16)]
    scorer = Recording()
    hook = GroupReward(scorer, num_generations=8)
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, gradient_accumulation_steps=4, num_generations=8,
        max_completion_length=2, max_steps=3, learning_rate=5e-2, logging_steps=1, report_to="none", use_cpu=True,
        gradient_checkpointing=False, bf16=False, save_strategy="no", temperature=1.0, seed=0,
    )
    before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[hook], args=args, train_dataset=Dataset.from_list(rows))
    trainer.train()

    logs = [h for h in trainer.state.log_history if "rewards/gapo_frequency/mean" in h]
    assert len(logs) == 3
    per_step = np.array([r for g in scorer.batches for r in g]).reshape(3, -1)  # 4 groups of 8 per step
    assert per_step.shape[1] == 32
    for log, rewards in zip(logs, per_step):
        assert log["rewards/gapo_frequency/mean"] == pytest.approx(rewards.mean(), abs=1e-5)
        assert "gapo_frequency/valid_rate" in log and "gapo_frequency/group_entropy" in log
    assert any(log["rewards/gapo_frequency/std"] > 0 for log in logs), "no step had a reward signal"
    changed = [n for n, p in model.named_parameters() if "lora_" in n and not np.allclose(before[n].numpy(), p.detach().numpy())]
    assert changed, "LoRA weights did not change"
    assert all(not p.requires_grad for n, p in model.named_parameters() if "lora_" not in n)


def test_a_dataset_of_one_repeated_prompt_trains_one_group_per_row(tmp_path):
    """"Name a fruit." a thousand times is a dataset users write: TRL puts several copies in one batch, side by
    side, and the hook scores each copy as its own group of num_generations, as TRL's advantages do."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    words = sorted(set(TEMPLATES[0].replace("{items}", "").replace(".", " ").replace(":", " ").split()) | set(ITEMS))
    path = build_tiny_model(tmp_path / "model", words=words, seed=1)
    model, tokenizer = load_model(path, backend="transformers", lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    row = make_example(ITEMS, "animals", TEMPLATES[0], "same")
    scorer = Recording()
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, gradient_accumulation_steps=4, num_generations=8,
        max_completion_length=2, max_steps=2, learning_rate=5e-2, logging_steps=1, report_to="none", use_cpu=True,
        gradient_checkpointing=False, bf16=False, save_strategy="no", temperature=1.0, seed=0,
    )
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[GroupReward(scorer, num_generations=8)], args=args,
                          train_dataset=Dataset.from_list([row] * 16))
    trainer.train()
    assert [len(g) for g in scorer.batches] == [8] * 8  # 2 steps x 4 copies of the one prompt, each its own group
