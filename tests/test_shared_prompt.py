"""The shared-prompt loss forward gives TRL's log-probabilities, entropies and gradients (tiny model, LoRA)."""
from __future__ import annotations

import functools
import inspect

import pytest
import torch

from gapo_lite.training.shared_prompt import SharedPromptMixin, prompt_groups


def test_prompt_groups_follow_ids_and_mask():
    ids = torch.tensor([[5, 6, 1], [5, 6, 2], [7, 6, 1], [5, 6, 3]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 1, 1]])
    assert [g.tolist() for g in prompt_groups(ids, mask, 2)] == [[0, 1], [2], [3]]


@pytest.fixture(scope="module")
def lora_model(tiny_model_path):
    from gapo_lite.models import LoraSettings, load_model

    model, tok = load_model(tiny_model_path, lora=LoraSettings(r=4, alpha=8, dropout=0.0, target_modules=("q_proj", "v_proj", "up_proj")))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.3)  # a non-zero adapter, so its gradients and outputs matter
    return model


def trainers():
    """TRL's log-probabilities, and the shared prompt's over them, reached as TRL calls them (``_full_logits_logps``)."""
    from trl import GRPOTrainer

    from gapo_lite.training.gapo_trainer import GAPOState
    from gapo_lite.upstream.trl import TRLHooks

    class Plain:
        temperature = 0.8
        _entropy_bonus_enabled = True
        _full_logits_logps = GRPOTrainer._full_logits_logps

    class Shared(SharedPromptMixin, TRLHooks, Plain):
        def __init__(self):
            self.gapo = GAPOState()

    return Plain(), Shared()


@pytest.fixture
def checkpointing(lora_model):
    """Gradient checkpointing on the shared model, in training mode, as TRL's trainer turns it on (non-reentrant,
    transformers 5's default) or reentrant; off again afterwards."""

    def enable(reentrant: bool = False) -> None:
        lora_model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": reentrant})
        lora_model.train()

    yield enable
    lora_model.gradient_checkpointing_disable()
    lora_model.eval()


def shared_and_plain(model, completion: int):
    """TRL's forward and the shared prompt's on two interleaved, left-padded prompts: (logps, entropies, grads) each,
    and the completion mask."""
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, vocab, (1, 7), generator=g), torch.randint(3, vocab, (1, 7), generator=g)]
    rows = [0, 1, 0, 0, 1, 0]  # two prompts, interleaved as TRL's shuffle leaves them
    prompt_ids = torch.cat([prompts[r] for r in rows])
    prompt_mask = torch.ones_like(prompt_ids)
    prompt_mask[[1, 4], :2] = 0  # the second prompt left-padded
    completion_ids = torch.randint(3, vocab, (len(rows), completion), generator=g)
    completion_mask = torch.ones_like(completion_ids)
    if completion > 2:
        completion_mask[2, -2:] = 0  # a completion that ended early
    ids, mask = torch.cat([prompt_ids, completion_ids], 1), torch.cat([prompt_mask, completion_mask], 1)
    results = []
    for trainer in trainers():
        trainer.model_kwarg_keys = tuple(inspect.signature(model.get_base_model().forward).parameters)
        model.zero_grad()
        logps, entropies, _ = trainer._full_logits_logps(model, ids, mask, completion, compute_entropy=True)
        ((logps * completion_mask).sum() + 0.1 * (entropies * completion_mask).sum()).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        results.append((logps.detach(), entropies.detach(), grads))
    return results, completion_mask


def assert_same(results, completion_mask):
    (lp_a, ent_a, grad_a), (lp_b, ent_b, grad_b) = results
    assert lp_a.shape == lp_b.shape == completion_mask.shape
    on = completion_mask.bool()
    assert torch.allclose(lp_a[on], lp_b[on], atol=1e-5) and torch.allclose(ent_a[on], ent_b[on], atol=1e-5)
    for name in grad_a:
        assert torch.allclose(grad_a[name], grad_b[name], atol=1e-5, rtol=1e-4), name
    assert any(g.abs().sum() > 0 for g in grad_b.values())


@pytest.mark.parametrize("completion", [1, 5])
def test_same_logps_entropies_and_gradients_as_trls_forward(lora_model, completion):
    assert_same(*shared_and_plain(lora_model, completion))


@pytest.mark.parametrize("completion", [1, 5])
def test_same_under_gradient_checkpointing(lora_model, checkpointing, completion):
    """Checkpointed layers rerun their forward in the backward; the prompt's cache is still read exactly once per run."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    checkpointing()
    layers = [m for m in lora_model.modules() if isinstance(m, GradientCheckpointingLayer)]
    calls = []
    for layer in layers:
        layer._gradient_checkpointing_func = counted(layer._gradient_checkpointing_func, calls)
    results, mask = shared_and_plain(lora_model, completion)
    assert_same(results, mask)
    forwards = 1 if completion == 1 else 2  # the prompt, then its completions' tokens
    assert len(calls) == len(layers) * (1 + 2 * forwards)  # TRL's one forward, then each of the two prompts' (checkpointed too)


def counted(function: functools.partial, calls: list) -> functools.partial:
    """transformers' checkpoint function (a partial of torch's, carrying use_reentrant), counting its calls."""

    def checkpoint(*args, **kwargs):
        calls.append(1)
        return function.func(*args, **kwargs)

    return functools.partial(checkpoint, *function.args, **function.keywords)


def test_reentrant_checkpointing_takes_trls_path(lora_model, checkpointing, monkeypatch):
    """Reentrant checkpointing runs the forward without grad: a cache written there would carry no gradient, so TRL's path runs."""
    from gapo_lite.upstream.transformers import prompt_cache_is_exact

    assert prompt_cache_is_exact(lora_model)
    checkpointing(reentrant=True)
    assert not prompt_cache_is_exact(lora_model)
    called = []
    monkeypatch.setattr(SharedPromptMixin, "_shared_prompt_logits", lambda *a: called.append(1))
    _, shared = trainers()
    shared.model_kwarg_keys = ("logits_to_keep",)
    ids = torch.tensor([[5, 6, 7, 8], [5, 6, 7, 9]])
    shared._full_logits_logps(lora_model, ids, torch.ones_like(ids), 2)
    assert not called


def test_rows_that_share_nothing_take_trls_path(lora_model, monkeypatch):
    _, shared = trainers()
    shared.model_kwarg_keys = ("logits_to_keep",)
    ids = torch.tensor([[5, 6, 7, 8], [9, 6, 7, 8]])
    called = []
    monkeypatch.setattr(SharedPromptMixin, "_shared_prompt_logits", lambda *a: called.append(1))
    shared._full_logits_logps(lora_model, ids, torch.ones_like(ids), 2)
    assert not called


def test_generation_with_shared_prompts_matches_plain_generate(lora_model):
    """Greedy decoding of a left-padded batch of two prompts, each repeated: the same ids either way."""
    from transformers import GenerationConfig

    from gapo_lite.training.shared_prompt import share_prompts_in_generation

    model = lora_model
    g = torch.Generator().manual_seed(2)
    a, b = torch.randint(3, model.config.vocab_size, (1, 6), generator=g), torch.randint(3, model.config.vocab_size, (1, 4), generator=g)
    b = torch.cat([torch.zeros(1, 2, dtype=torch.long), b], 1)
    ids = torch.cat([a, b, a, a, b])
    mask = torch.ones_like(ids)
    mask[[1, 4], :2] = 0
    # As TRL calls it: everything in a generation config (other keyword arguments take generate's own path).
    kwargs = dict(generation_config=GenerationConfig(max_new_tokens=5, do_sample=False, pad_token_id=0, eos_token_id=None))
    with torch.no_grad():
        want = model.generate(input_ids=ids, attention_mask=mask, **kwargs)
        calls = []
        plain = model.generate
        model.generate = lambda **kw: calls.append(kw["input_ids"].shape[0]) or plain(**kw)
        share_prompts_in_generation(model)
        try:
            got = model.generate(input_ids=ids, attention_mask=mask, **kwargs)
        finally:
            del model.generate  # back to the class's method for the other tests
    assert torch.equal(got, want)
    assert calls == [5]  # the two prompts decode in one loop over all five rows, not one loop per prompt

