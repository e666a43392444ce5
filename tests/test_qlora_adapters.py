"""A quantized model's LoRA adapter trains in fp32: TRL's bf16 cast is undone after the trainer is built, the
planner counts fp32, and docs/gpu.md's measurement of what bf16 would cost is what the script prints."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def nf4_lora_model(small_vocab_model, monkeypatch):
    """The small-vocabulary tiny model in bitsandbytes NF4 (bf16 compute) with LoRA, through load_model's 4-bit transformers path;
    the one GPU fact faked is the device the plan puts it on (bitsandbytes 0.50 runs NF4 on the CPU)."""
    pytest.importorskip("bitsandbytes")
    from gapo_lite.models import LoraSettings, load_model
    from gapo_lite.runplan import RunPlan

    monkeypatch.setattr(torch.cuda, "current_device", lambda: "cpu")
    plan = RunPlan(cuda=True, world_size=1, backend="transformers", backend_reason="test", precision="bf16", optim="adamw_torch",
                   gradient_checkpointing=False, load_in_4bit=True)
    model, tok = load_model(small_vocab_model[0], run_plan=plan, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05)  # a non-zero B, so that A gets a gradient at the first step
    return model, tok


def test_trl_casts_a_quantized_adapter_to_bf16_and_build_trainer_keeps_it_fp32(nf4_lora_model, small_vocab_model, tmp_path, monkeypatch):
    import trl

    from gapo_lite.memory.planner import ADAPTER_BYTES
    from gapo_lite.training import TrainConfig, build_trainer

    model, tok = nf4_lora_model
    _, dataset = small_vocab_model
    assert model.is_loaded_in_4bit and {p.dtype for p in model.parameters() if p.requires_grad} == {torch.float32}
    config = TrainConfig(model="tiny-nf4", backend="transformers", load_in_4bit=False, num_generations=8, prompts_per_step=2,
                         max_completion_length=3, max_steps=1, save_steps=100, learning_rate=1e-3, output_dir=str(tmp_path / "run"), lora_r=4, lora_alpha=8,
                         lora_dropout=0.0)
    cast_by_trl = []
    original_init = trl.GRPOTrainer.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        cast_by_trl.extend({p.dtype for p in self.model.parameters() if p.requires_grad})

    monkeypatch.setattr(trl.GRPOTrainer, "__init__", init)
    trainer = build_trainer(config, model=model, tokenizer=tok, train_dataset=dataset)
    assert cast_by_trl == [torch.bfloat16]  # what TRL 1.14 leaves (grpo_trainer.py ~L520-523)
    trainable = [p for p in trainer.model.parameters() if p.requires_grad]
    assert trainable and all(p.dtype == torch.float32 and p.element_size() == ADAPTER_BYTES for p in trainable)
    before = [p.detach().clone() for p in trainable]
    trainer.train()  # the optimizer is made now, for the fp32 parameters
    assert all(p.dtype == torch.float32 for p in trainable)
    assert all(not torch.equal(p, b) for p, b in zip(trainable, before))
    assert all(state["exp_avg"].dtype == torch.float32 for state in trainer.optimizer.state.values())


def test_planner_counts_fp32_adapters():
    from gapo_lite.memory.planner import ADAPTER_BYTES, OPTIMIZERS

    assert ADAPTER_BYTES == torch.finfo(torch.float32).bits // 8
    assert OPTIMIZERS == {"adamw": 4 + 4 + 8, "adamw_8bit": 4 + 4 + 2}  # param + grad + AdamW's two states


def docs_table() -> str:
    text = (ROOT / "docs" / "gpu.md").read_text()
    begin, end = "<!-- lora-bf16:begin -->", "<!-- lora-bf16:end -->"
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def test_bf16_adapter_measurement_is_what_the_script_prints():
    """docs/gpu.md's figures, recomputed; and the finding: in fp32 all but a handful of entries move once they have a
    gradient, in bf16 at lr 1e-5 most of A does not."""
    pytest.importorskip("bitsandbytes")
    script = runpy.run_path(str(ROOT / "scripts" / "lora_bf16_updates.py"), run_name="lora_bf16_updates")
    assert docs_table() == script["render"]()
    for optimizer in script["OPTIMIZERS"]:
        fp32, bf16 = script["changed_shares"](optimizer, "fp32"), script["changed_shares"](optimizer, "bf16")
        assert fp32[0]["A"] == bf16[0]["A"] == 0.0 and fp32[0]["B"] == bf16[0]["B"] == 1.0  # step 1: B leaves zero, A has no gradient
        assert all(step["all"] > 0.9999 for step in fp32[1:])
        assert all(step["A"] < 0.4 for step in bf16[1:]) and bf16[-1]["B"] > 0.999
