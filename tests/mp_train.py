"""Run by tests/test_multiprocess.py under `accelerate launch --num_processes 2`: a few GAPO steps of the
tiny recipe, each rank logging the rows it scored and the rewards the hook returned."""
import json
import os
import sys

from gapo_lite.models import LoraSettings, load_model
from gapo_lite.rewards import GroupReward
from gapo_lite.training import TrainConfig, train

model_dir, out_dir = sys.argv[1], sys.argv[2]
rank = int(os.environ.get("RANK", "0"))


class LoggingHook(GroupReward):
    def __call__(self, prompts, completions, **kwargs):
        rewards = super().__call__(prompts, completions, **kwargs)
        with open(os.path.join(out_dir, f"rank{rank}.jsonl"), "a") as f:
            texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
            f.write(json.dumps({"prompt_id": kwargs["prompt_id"], "items": kwargs["items"], "completions": texts, "rewards": rewards}) + "\n")
        return rewards


import gapo_lite.training.trainer as trainer_module  # noqa: E402

trainer_module.GroupReward = LoggingHook  # the trainer builds its hook from this name
config = TrainConfig(
    model=model_dir, num_generations=2, prompts_per_step=3, chunk_size=3, max_completion_length=2, max_steps=3, save_steps=100,
    learning_rate=1e-3, lora_r=4, lora_alpha=8, lora_dropout=0.0, output_dir=os.path.join(out_dir, "run"), num_prompts=12,
)
model, tok = load_model(model_dir, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
train(config, model=model, tokenizer=tok)
