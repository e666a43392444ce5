"""Chunked forward/backward passes give the unchunked gradient; out-of-memory back-off is exact and bounded.

Out-of-memory errors are injected (TRL's ``compute_loss`` or generation raises ``torch.OutOfMemoryError``)."""
import types
import weakref

import pytest
import torch
from transformers import TrainerCallback

from gapo_lite.training import TrainConfig, build_trainer
from gapo_lite.training.backoff import GLOBAL_NORM, ROW_MEAN, TOKEN_MEAN, GenerationOutOfMemory, OutOfMemoryAtChunkOne
from gapo_lite.training.config import LOSS_TYPES

G, PROMPTS = 8, 2  # one optimizer step sees 16 completions


class GradCapture(TrainerCallback):
    def __init__(self):
        self.grads = None

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


class IgnoresGradOutput(torch.autograd.Function):
    """Stands for Unsloth's GRPO loss (``UnslothEfficientGRPO``, unsloth_zoo/rl_replacements.py ~L1427-1431 in
    2026.10.9): its backward hands back the loss's own gradient whatever gradient it is given (unless DeepSpeed
    sets ``upstream_scale``), so a weight multiplied onto the loss never reaches the parameters."""

    @staticmethod
    def forward(ctx, loss):
        return loss.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return torch.ones_like(grad_output)


def one_step(small_vocab_model, tmp_path, chunk, monkeypatch=None, oom_if=None, table=None, loss_type="dapo", on_call=None,
             unsloth_loss=False, error=None, **settings):
    """Gradient of one GAPO update at ``chunk`` completions per pass (after any back-off); ``unsloth_loss``: the
    loss's backward ignores its incoming gradient, as Unsloth's does."""
    import trl

    from gapo_lite.models import LoraSettings, load_model

    path, dataset = small_vocab_model
    model, tok = load_model(path, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    torch.manual_seed(0)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)  # non-zero B so every LoRA matrix gets a gradient
    config = TrainConfig(
        model=str(path), num_generations=G, prompts_per_step=PROMPTS, max_completion_length=3, max_steps=1,
        learning_rate=1e-4, max_grad_norm=0.0, chunk_size=chunk, output_dir=str(tmp_path / f"run{chunk}"), save_steps=100,
        loss_type=loss_type, scale_rewards="none" if loss_type == "dr_grpo" else "group", **settings,
    )
    capture = GradCapture()
    if oom_if is not None:
        original = trl.GRPOTrainer.compute_loss

        def flaky(self, model, inputs, *args, **kwargs):
            if on_call is not None:
                on_call()
            if oom_if(self, inputs["completion_ids"].shape[0]):
                held = FailedStepMemory()  # stands for the failed step's activations, alive while its frame is
                FailedStepMemory.refs.append(weakref.ref(held))
                raise error or torch.OutOfMemoryError("CUDA out of memory (injected)")
            return original(self, model, inputs, *args, **kwargs)

        monkeypatch.setattr(trl.GRPOTrainer, "compute_loss", flaky)
    if unsloth_loss:
        inner = trl.GRPOTrainer.compute_loss
        monkeypatch.setattr(trl.GRPOTrainer, "compute_loss", lambda self, *args, **kwargs: IgnoresGradOutput.apply(inner(self, *args, **kwargs)))
    trainer = build_trainer(config, model=model, tokenizer=tok, train_dataset=dataset, callbacks=[capture])
    if table is not None:  # the memory plan (a CUDA run's) whose table ends the error at one completion per pass
        trainer.gapo.memory_plan = types.SimpleNamespace(format_table=lambda: table)
    trainer.train()
    return capture.grads, trainer


class FailedStepMemory:
    refs: list = []


def rel_error(a, b):
    num = sum(float((a[k] - b[k]).norm() ** 2) for k in b) ** 0.5
    den = sum(float(b[k].norm() ** 2) for k in b) ** 0.5
    return num / den


@pytest.fixture(scope="module")
def reference(small_vocab_model, tmp_path_factory):
    grads, trainer = one_step(small_vocab_model, tmp_path_factory.mktemp("ref"), G * PROMPTS)
    assert trainer.args.gradient_accumulation_steps == 1
    assert sum(float(g.abs().sum()) for g in grads.values()) > 0, "reference gradient is zero: no reward signal"
    return grads


@pytest.mark.parametrize("chunk", [1, 2, 4, G])
def test_chunked_gradient_equals_unchunked(small_vocab_model, tmp_path, reference, chunk):
    grads, trainer = one_step(small_vocab_model, tmp_path, chunk)
    assert trainer.args.per_device_train_batch_size == chunk
    assert trainer.args.gradient_accumulation_steps == trainer.args.steps_per_generation == G * PROMPTS // chunk
    assert set(grads) == set(reference)
    assert rel_error(grads, reference) <= 1e-5


def test_gradient_checkpointing_keeps_the_gradient(small_vocab_model, tmp_path, reference, monkeypatch):
    """The trainer with checkpointing on gives the same update, each group's prompt still computed once."""
    from gapo_lite.training.shared_prompt import SharedPromptMixin

    shared = SharedPromptMixin._shared_prompt_logits
    groups = []  # rows per shared prompt forward
    monkeypatch.setattr(SharedPromptMixin, "_shared_prompt_logits", staticmethod(lambda *a: groups.append(a[1].size(0)) or shared(*a)))
    grads, trainer = one_step(small_vocab_model, tmp_path, 8, gradient_checkpointing=True)
    assert trainer.args.gradient_checkpointing and trainer.model.is_gradient_checkpointing
    assert sum(groups) == G * PROMPTS and len(groups) <= 2 * PROMPTS  # each pass of 8 shuffled rows: one forward per prompt in it
    assert rel_error(grads, reference) <= 1e-5


def test_oom_halves_chunk_and_keeps_the_gradient(small_vocab_model, tmp_path, reference, monkeypatch):
    # passes of more than 2 completions "run out of memory": 16 -> 8 -> 4 -> 2
    grads, trainer = one_step(small_vocab_model, tmp_path, 16, monkeypatch, oom_if=lambda self, rows: rows > 2)
    assert [b["chunk_size"] for b in trainer.gapo.backoffs] == [8, 4, 2]
    assert trainer.chunk_size == 2
    assert rel_error(grads, reference) <= 1e-5


def test_oom_in_a_later_micro_step_redoes_the_window(small_vocab_model, tmp_path, reference, monkeypatch):
    # chunk 4 = 4 micro-steps; the second one fails once at 4 rows, after the first was accumulated
    fired = []

    def oom_if(self, rows):
        if self.micro_step % 4 == 1 and rows == 4 and not fired:
            fired.append(self.micro_step)
            return True
        return False

    grads, trainer = one_step(small_vocab_model, tmp_path, 4, monkeypatch, oom_if=oom_if)
    assert fired and [b["chunk_size"] for b in trainer.gapo.backoffs] == [2]
    assert rel_error(grads, reference) <= 1e-5


def test_a_cublas_allocation_failure_backs_off_too(small_vocab_model, tmp_path, reference, monkeypatch):
    """cuBLAS failing to allocate is a RuntimeError, not torch.OutOfMemoryError; it is memory all the same."""
    cublas = RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
    grads, trainer = one_step(small_vocab_model, tmp_path, 16, monkeypatch, oom_if=lambda self, rows: rows > 8, error=cublas)
    assert [b["chunk_size"] for b in trainer.gapo.backoffs] == [8]
    assert rel_error(grads, reference) <= 1e-5


def test_other_runtime_errors_are_not_taken_for_memory(small_vocab_model, tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match="CUBLAS_STATUS_INVALID_VALUE"):
        one_step(small_vocab_model, tmp_path, 16, monkeypatch, oom_if=lambda self, rows: True,
                 error=RuntimeError("CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasSgemm`"))


def test_oom_at_chunk_one_stops_with_the_plan_table(small_vocab_model, tmp_path, monkeypatch):
    with pytest.raises(OutOfMemoryAtChunkOne, match="(?s)even with 1 completion.*PLAN TABLE"):
        one_step(small_vocab_model, tmp_path, 4, monkeypatch, oom_if=lambda self, rows: True, table="PLAN TABLE")


@pytest.mark.parametrize("micro_step", [2, 3])
def test_oom_at_a_later_micro_step_keeps_the_gradient(small_vocab_model, tmp_path, reference, monkeypatch, micro_step):
    # chunk 4 = 4 micro-steps; micro-step `micro_step` fails once, after `micro_step` were accumulated
    fired = []

    def oom_if(self, rows):
        if self.micro_step % 4 == micro_step and rows == 4 and not fired:
            fired.append(self.micro_step)
            return True
        return False

    grads, trainer = one_step(small_vocab_model, tmp_path, 4, monkeypatch, oom_if=oom_if)
    assert fired == [micro_step] and [b["chunk_size"] for b in trainer.gapo.backoffs] == [2]
    assert rel_error(grads, reference) <= 1e-5


def test_second_oom_during_the_redo_backs_off_again(small_vocab_model, tmp_path, reference, monkeypatch):
    # micro-step 3 of 4 fails at chunk 4; the redo's first pass (micro-step 0 at chunk 2) fails too
    state = {"first": False, "second": False}

    def oom_if(self, rows):
        if not state["first"] and self.micro_step % 4 == 3 and rows == 4:
            state["first"] = True
            return True
        if state["first"] and not state["second"]:
            state["second"] = True
            assert self.micro_step % 4 == 3 and rows == 2  # the redo, at the halved chunk, with TRL's step counter kept
            return True
        return False

    grads, trainer = one_step(small_vocab_model, tmp_path, 4, monkeypatch, oom_if=oom_if)
    assert state == {"first": True, "second": True}
    assert [b["chunk_size"] for b in trainer.gapo.backoffs] == [2, 1]
    assert rel_error(grads, reference) <= 1e-5


def test_failed_step_is_freed_before_the_redo(small_vocab_model, tmp_path, reference, monkeypatch):
    """The redo starts only once the failed step's frames (and what they hold) are gone."""
    FailedStepMemory.refs.clear()
    alive_at_redo = []
    fired = []

    def oom_if(self, rows):
        if self.micro_step % 4 == 2 and rows == 4 and not fired:
            fired.append(True)
            return True
        return False

    def on_call():
        if fired and len(alive_at_redo) == 0:
            alive_at_redo.append(FailedStepMemory.refs[-1]() is not None)

    grads, _ = one_step(small_vocab_model, tmp_path, 4, monkeypatch, oom_if=oom_if, on_call=on_call)
    assert alive_at_redo == [False]
    assert rel_error(grads, reference) <= 1e-5


def test_oom_during_generation_names_it_and_does_not_halve(small_vocab_model, tmp_path, monkeypatch):
    import trl

    def generation_oom(self, inputs):
        raise torch.OutOfMemoryError("CUDA out of memory (injected in generation)")

    monkeypatch.setattr(trl.GRPOTrainer, "_generate_and_score_completions", generation_oom)  # TRL's own, below the kit's hooks
    with pytest.raises(GenerationOutOfMemory, match="(?s)GENERATING.*prompts_per_step=2.*fast_inference=True.*max_completion_length=3"):
        one_step(small_vocab_model, tmp_path, 4, monkeypatch)


def test_every_loss_type_has_a_split_rule():
    assert GLOBAL_NORM | ROW_MEAN | TOKEN_MEAN == set(LOSS_TYPES)
    assert not (GLOBAL_NORM & ROW_MEAN or GLOBAL_NORM & TOKEN_MEAN or ROW_MEAN & TOKEN_MEAN)


_REFERENCES: dict = {}


@pytest.mark.parametrize("loss_type", [lt for lt in LOSS_TYPES if lt != "dapo"])
def test_backoff_is_exact_for_every_loss_type(small_vocab_model, tmp_path, monkeypatch, loss_type):
    """Each loss type's re-weighting: 16 completions, passes above 4 "run out of memory" (16 -> 8 -> 4)."""
    reference, _ = one_step(small_vocab_model, tmp_path / "ref", 16, loss_type=loss_type)
    assert sum(float(g.abs().sum()) for g in reference.values()) > 0
    grads, trainer = one_step(small_vocab_model, tmp_path / "oom", 16, monkeypatch, oom_if=lambda self, rows: rows > 4, loss_type=loss_type)
    assert trainer.loss_type == loss_type and [b["chunk_size"] for b in trainer.gapo.backoffs] == [8, 4]
    assert rel_error(grads, reference) <= 1e-5


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_backoff_is_exact_when_the_loss_ignores_its_incoming_gradient(small_vocab_model, tmp_path, monkeypatch, loss_type):
    """Unsloth's GRPO loss drops the gradient a weighted loss would hand it; the parts' weights reach the parameters anyway."""
    reference, _ = one_step(small_vocab_model, tmp_path / "ref", 16, monkeypatch, loss_type=loss_type, unsloth_loss=True)
    grads, trainer = one_step(small_vocab_model, tmp_path / "oom", 16, monkeypatch, oom_if=lambda self, rows: rows > 4,
                              loss_type=loss_type, unsloth_loss=True)
    assert [b["chunk_size"] for b in trainer.gapo.backoffs] == [8, 4]
    assert rel_error(grads, reference) <= 1e-5
