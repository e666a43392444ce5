"""Crash safety: resume from the latest complete checkpoint with the same data order; skip broken ones."""
import json

import pytest
from transformers import TrainerCallback

from gapo_lite.rewards import FrequencyScorer
from gapo_lite.training import TrainConfig, train
from gapo_lite.training.callbacks import read_metrics
from gapo_lite.training.checkpoints import MARKER, find_latest_checkpoint


class Crash(TrainerCallback):
    def __init__(self, at_step):
        self.at_step = at_step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.at_step:
            raise RuntimeError("simulated crash")


class KeyRecorder(FrequencyScorer):
    def __init__(self):
        super().__init__()
        self.keys = []

    def __call__(self, group):
        self.keys.append(group.key)
        return super().__call__(group)


def config_for(path, out, **kw):
    base = dict(model=str(path), num_generations=4, prompts_per_step=2, max_completion_length=2, max_steps=6, save_steps=2,
                learning_rate=1e-3, lora_r=4, lora_alpha=8, lora_dropout=0.0, output_dir=str(out), num_prompts=8)
    base.update(kw)
    return TrainConfig(**base)


def run(config, **kw):
    from gapo_lite.models import LoraSettings, load_model

    model, tok = load_model(config.model, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    return train(config, model=model, tokenizer=tok, **kw)


@pytest.fixture(scope="module")
def uninterrupted(small_vocab_model, tmp_path_factory):
    path, dataset = small_vocab_model
    recorder = KeyRecorder()
    result = run(config_for(path, tmp_path_factory.mktemp("full")), scorer=recorder, train_dataset=dataset)
    return recorder.keys, result


def test_crash_then_resume_ends_at_planned_step_with_same_data_order(small_vocab_model, tmp_path, uninterrupted):
    path, dataset = small_vocab_model
    full_keys, full = uninterrupted
    assert full.global_step == 6 and len(full_keys) == 12  # 2 groups per step
    first = KeyRecorder()
    with pytest.raises(RuntimeError, match="simulated crash"):
        run(config_for(path, tmp_path), scorer=first, train_dataset=dataset, callbacks=[Crash(at_step=5)])
    assert find_latest_checkpoint(tmp_path).name == "checkpoint-4"
    assert first.keys == full_keys[:10]
    second = KeyRecorder()
    result = run(config_for(path, tmp_path, resume=True), scorer=second, train_dataset=dataset)
    assert result.global_step == 6
    assert second.keys == full_keys[8:]  # steps 5 and 6, in the uninterrupted order
    steps = [row["step"] for row in read_metrics(result.metrics_path) if "loss" in row]
    assert steps == [1, 2, 3, 4, 5, 6]  # nothing lost, nothing logged twice
    assert (result.adapter_dir / "adapter_config.json").is_file()
    assert (tmp_path / "config.yaml").is_file()


def test_broken_checkpoints_are_skipped_with_a_warning(small_vocab_model, tmp_path, uninterrupted):
    _, full = uninterrupted
    out = full.output_dir
    assert find_latest_checkpoint(out).name == "checkpoint-6"
    # a half-written newer checkpoint (no completion marker) and a truncated one
    (out / "checkpoint-8").mkdir(exist_ok=True)
    (out / "checkpoint-8" / "trainer_state.json").write_text("{")
    weights = next((out / "checkpoint-6").glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.warns(UserWarning, match="skipping checkpoint"):
        latest = find_latest_checkpoint(out)
    assert latest.name == "checkpoint-4"
    info = json.loads((latest / MARKER).read_text())
    assert info["step"] == 4 and info["files"]
