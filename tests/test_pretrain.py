"""The demo's pretraining recipe on a small pool: it learns to copy an item of the list, then collapses onto the first."""
import random

import pytest

from gapo_lite.answers import parse_choice
from gapo_lite.data import categories, format_prompt
from gapo_lite.demo.pretrain import collapse_targets, pretrain_collapsed
from gapo_lite.demo.tiny import build_tiny_model
from gapo_lite.models import load_model
from gapo_lite.sampling import sample_completions

NAMES = ("animals", "colors", "fruits", "tools")


def _pool() -> dict[str, list[str]]:
    everything = categories("all")
    return {name: everything[name][:8] for name in NAMES if name in everything}


def _measure(model, tok, pool, seed=7):
    """Valid rate and share of the first shown item over fresh 4-item lists of the pool (T = 0.7, sampled)."""
    rng = random.Random(seed)
    lists = [rng.sample(pool[name], 4) for name in sorted(pool) for _ in range(4)]
    prompts = [[{"role": "user", "content": format_prompt(items, "x")}] for items in lists]
    outs = sample_completions(model, tok, prompts, n=24, temperature=0.7, max_new_tokens=2, seed=seed, progress=False)
    choices = [(parse_choice(text, items), items) for items, texts in zip(lists, outs) for text in texts]
    valid = [(c, items) for c, items in choices if c is not None]
    return len(valid) / len(choices), sum(c == items[0] for c, items in valid) / max(1, len(valid))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from gapo_lite.demo.stages import torch_threads

    pool = _pool()
    assert len(pool) == len(NAMES), f"expected categories {NAMES} in the word lists, got {sorted(pool)}"
    path = build_tiny_model(tmp_path_factory.mktemp("m") / "tiny", hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=4, seed=0, embedding_std=0.1)
    with torch_threads(1):  # the thresholds below were set on one thread; the count goes back for the modules after this one
        yield path, pool


@pytest.mark.slow  # 460 pretraining steps, ~24 s of the default run's 3 minutes; `make demo` runs the same recipe at full size
def test_copy_phase_then_collapse_phase(tiny):
    path, pool = tiny
    model, tok = load_model(path, lora=None)
    before = _measure(model, tok, pool)
    pretrain_collapsed(model, tok, copy_steps=400, steps=0, batch_size=32, learning_rate=3e-3, min_items=3, max_items=5,
                       mixed_share=0.5, lm_on_items=False, pool=pool, progress=False)
    valid, first = _measure(model, tok, pool)
    assert before[0] < 0.5, f"an untrained model should rarely answer an item of the list, got valid {before[0]:.2f}"
    assert valid >= 0.9, f"after the copy phase the model should copy an item of the list, got valid {valid:.2f}"
    assert first < 0.5, f"the copy phase has a uniform target, yet the first item got {first:.2f} of valid answers"
    embeddings = model.get_input_embeddings().weight.detach().clone()
    pretrain_collapsed(model, tok, steps=60, batch_size=32, first_share=0.8, learning_rate=3e-3, min_items=3, max_items=5,
                       mixed_share=0.5, lm_on_items=False, freeze_embeddings_in_collapse=True, pool=pool, progress=False)
    assert model.get_input_embeddings().weight.requires_grad, "the embeddings stay trainable after a frozen collapse phase"
    assert (model.get_input_embeddings().weight == embeddings).all(), "freeze_embeddings_in_collapse changed the embeddings"
    valid, first = _measure(model, tok, pool)
    assert valid >= 0.9 and first >= 0.6, f"after collapsing: valid {valid:.2f}, first-item share {first:.2f}"


def test_bad_arguments_are_named(tiny):
    path, pool = tiny
    model, tok = load_model(path, lora=None)
    with pytest.raises(ValueError, match="first_share"):
        pretrain_collapsed(model, tok, steps=1, first_share=0.0, pool=pool, progress=False)
    with pytest.raises(ValueError, match="at least one step"):
        pretrain_collapsed(model, tok, steps=0, copy_steps=0, pool=pool, progress=False)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        pretrain_collapsed(model, tok, steps=1, pool={"made_up": ["Zyzzyva", "Qwxl", "Blorf"]}, min_items=2, max_items=3, progress=False)


def test_collapse_targets_by_hand():
    assert collapse_targets(4, 0.7) == pytest.approx([0.7, 0.1, 0.1, 0.1])
    assert collapse_targets(1, 0.3) == [1.0]


def test_collapse_params_train_only_the_named_parameters(tiny):
    path, pool = tiny
    model, tok = load_model(path, lora=None)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    pretrain_collapsed(model, tok, steps=3, batch_size=8, first_share=0.8, min_items=3, max_items=5, collapse_params=("layers.1.self_attn",),
                       pool=pool, progress=False)
    changed = {n for n, p in model.named_parameters() if not (p.detach() == before[n]).all()}
    assert changed and all(n.startswith("model.layers.1.self_attn.") for n in changed), f"changed outside the named parameters: {sorted(changed)}"
    assert all(p.requires_grad for p in model.parameters()), "every parameter is trainable again after the collapse phase"
    with pytest.raises(ValueError, match="match no parameter"):
        pretrain_collapsed(model, tok, steps=1, collapse_params=("layers.9.mlp",), pool=pool, progress=False)



@pytest.mark.parametrize("lm_on_items", [False, True])
def test_the_loss_on_the_read_positions_equals_the_loss_on_all_logits(tiny, lm_on_items):
    """list_answer_loss runs the output layer only where the loss reads it; its figure is the one the model's full
    logits give, written out here the plain way on the same drawn batch. With first_share=1 the answer's target is
    the answer in the sequence, so the plain loss needs nothing but the batch."""
    import torch
    import torch.nn.functional as F

    from gapo_lite.demo.pretrain import list_answer_loss

    path, pool = tiny
    model, tok = load_model(path, lora=None)
    decoder, seen = model.get_decoder(), {}

    def spy(**kwargs):  # keeps the batch the loss drew
        seen.update(kwargs)
        return decoder(**kwargs)

    loss = list_answer_loss(model, tok, batch_size=6, first_share=1.0, min_items=3, max_items=5, mixed_share=0.5, lm_on_items=lm_on_items, pool=pool)
    model.get_decoder = lambda: spy
    fast = float(loss(random.Random(3)))
    ids, mask = seen["input_ids"], seen["attention_mask"]
    assert (mask[:, 0] == 0).any(), "the drawn lists differ in length, so some rows are padded"
    logits = model(input_ids=ids, attention_mask=mask).logits
    targets = ids[:, 1:-2].masked_fill(mask[:, 1:-2] == 0, -100)
    if not lm_on_items:
        items = torch.tensor(sorted({tok.convert_tokens_to_ids(i) for v in pool.values() for i in v}))
        targets = targets.masked_fill(torch.isin(targets, items), -100)
    plain = (F.cross_entropy(logits[:, -3], ids[:, -2]) + F.cross_entropy(logits[:, -2], ids[:, -1])
             + F.cross_entropy(logits[:, :-3].reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100))
    assert fast == pytest.approx(float(plain), rel=1e-5)


def _item_mass(path, lists) -> float:
    """Mean probability, at the answer position of an untrained model, on the items of the list in the prompt."""
    import torch

    from gapo_lite.sampling import render_prompt

    model, tok = load_model(path, lora=None)
    texts = [render_prompt(tok, [{"role": "user", "content": format_prompt(items, "x")}]) for items in lists]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False, padding_side="left")
    with torch.no_grad():
        probs = model(**enc).logits[:, -1].float().softmax(-1)
    return sum(probs[i, tok.convert_tokens_to_ids(items)].sum().item() for i, items in enumerate(lists)) / len(lists)


def test_copy_head_copies_before_any_training(tmp_path):
    """The copy head's last attention layer adds the attended tokens' embeddings to the residual stream, so an
    untrained model already puts far more mass on the list's items (6 of 768 tokens) than Qwen2's random start."""
    import torch

    pool = _pool()
    rng = random.Random(3)
    lists = [rng.sample(pool[name], 6) for name in sorted(pool) for _ in range(4)]
    sizes = dict(hidden_size=128, num_layers=2, num_heads=8, num_kv_heads=8, seed=0, embedding_std=0.1)  # the demo's (TinyModel)
    plain = build_tiny_model(tmp_path / "plain", **sizes)
    copier = build_tiny_model(tmp_path / "copier", copy_head=True, **sizes)
    model, _ = load_model(copier, lora=None)
    attention = model.model.layers[-1].self_attn
    assert torch.equal(attention.v_proj.weight, torch.eye(128)) and torch.equal(attention.o_proj.weight, torch.eye(128))
    assert not torch.equal(model.model.layers[0].self_attn.v_proj.weight, torch.eye(128)), "only the last layer is a copier"
    plain_mass, copier_mass = _item_mass(plain, lists), _item_mass(copier, lists)
    # Seeds 0-4 of these sizes: a plain start 0.0000-0.0001, a copier 0.011-0.026 (290x to 1200x).
    assert plain_mass < 0.005, f"a random start should put next to nothing on the list's items, got {plain_mass:.4f}"
    assert copier_mass > 20 * plain_mass, f"the copy head should raise the list's items at once: {plain_mass:.5f} -> {copier_mass:.5f}"
    with pytest.raises(ValueError, match="copy_head needs as many key/value heads"):
        build_tiny_model(tmp_path / "gqa", hidden_size=64, num_heads=4, num_kv_heads=2, copy_head=True)
