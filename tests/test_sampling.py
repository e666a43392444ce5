"""``gapo_lite.sampling``: prompt rendering, shapes, seeding, restored state, and greedy decoding checked
against a hand-written token-by-token argmax loop."""
from __future__ import annotations

import pytest
import torch

from gapo_lite.models import load_model
from gapo_lite.sampling import render_prompt, sample_completions

PROMPTS = [
    [{"role": "user", "content": "Pick one item from this list at random: Cat, Dog, Owl. Answer with the item only."}],
    [{"role": "user", "content": "Here is a list of animals: Fox, Owl. Choose one of them and reply with just that word."}],
    "a plain-text prompt Cat Dog",
]


@pytest.fixture(scope="module")
def loaded(tiny_model_path):
    return load_model(tiny_model_path, lora=None)


def greedy_by_hand(model, tokenizer, prompt, max_new_tokens: int) -> str:
    """Greedy decoding without ``generate``: append the argmax token until end-of-turn or the budget."""
    ids = tokenizer(render_prompt(tokenizer, prompt), add_special_tokens=False, return_tensors="pt")["input_ids"]
    new: list[int] = []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            token = int(model(input_ids=ids).logits[0, -1].argmax())
            if token == tokenizer.eos_token_id:
                break
            new.append(token)
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    return tokenizer.decode(new, skip_special_tokens=True)


def test_render_prompt(loaded):
    _, tok = loaded
    assert render_prompt(tok, "plain text") == "plain text"
    rendered = render_prompt(tok, PROMPTS[0])
    assert PROMPTS[0][0]["content"] in rendered
    assert rendered.rstrip().endswith("assistant")  # the generation prompt opens the assistant turn


def test_greedy_matches_a_hand_written_decoder_at_any_batch_size(loaded):
    model, tok = loaded
    expected = [greedy_by_hand(model, tok, p, 5) for p in PROMPTS]
    for batch_size in (1, 2, 64):  # left padding must not change what a prompt decodes to
        out = sample_completions(model, tok, PROMPTS, n=2, temperature=0, max_new_tokens=5, batch_size=batch_size, progress=False)
        assert out == [[e, e] for e in expected], batch_size


def test_shapes_seeding_and_restored_state(loaded):
    model, tok = loaded
    model.train()
    tok.padding_side = "right"
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    a = sample_completions(model, tok, PROMPTS, n=5, temperature=1.0, max_new_tokens=4, batch_size=4, seed=7, progress=False)
    assert [len(x) for x in a] == [5, 5, 5] and all(isinstance(t, str) for x in a for t in x)
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's random stream is untouched
    assert model.training and tok.padding_side == "right"  # restored
    model.eval()
    b = sample_completions(model, tok, PROMPTS, n=5, temperature=1.0, max_new_tokens=4, batch_size=4, seed=7, progress=False)
    c = sample_completions(model, tok, PROMPTS, n=5, temperature=1.0, max_new_tokens=4, batch_size=4, seed=8, progress=False)
    assert a == b and a != c


def test_bad_arguments(loaded):
    model, tok = loaded
    with pytest.raises(ValueError, match="n must be >= 1"):
        sample_completions(model, tok, PROMPTS, n=0)
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        sample_completions(model, tok, PROMPTS, temperature=-0.1)


def test_ensure_pad_token_prefers_a_token_other_than_eos_and_names_a_tokenizer_with_neither():
    from types import SimpleNamespace

    from gapo_lite.sampling import ensure_pad_token

    def tokenizer(pad, added=(), unk=None):
        vocab = {token: i for i, token in enumerate(["<|im_end|>", *added])}
        return SimpleNamespace(pad_token=pad, pad_token_id=vocab.get(pad), eos_token="<|im_end|>", eos_token_id=0, unk_token=unk,
                               get_added_vocab=lambda: vocab)

    assert ensure_pad_token(tokenizer(None)).pad_token == "<|im_end|>"  # nothing else to pad with
    assert ensure_pad_token(tokenizer(None, ["<|endoftext|>", "<pad>"])).pad_token == "<pad>"
    assert ensure_pad_token(tokenizer("<|im_end|>", ["<|endoftext|>"])).pad_token == "<|endoftext|>"  # pad = eos replaced
    assert ensure_pad_token(tokenizer("<|endoftext|>", ["<|endoftext|>", "<pad>"])).pad_token == "<|endoftext|>"  # kept
    with pytest.raises(ValueError, match="neither a pad token nor an eos token"):
        ensure_pad_token(SimpleNamespace(pad_token=None, eos_token=None))


def test_samples_from_a_shared_prefix_follow_the_models_next_token_distribution(loaded):
    """Every copy of the prefilled prompt cache samples from the model's own distribution (not one copy's)."""
    model, tok = loaded
    prompt = PROMPTS[0]
    ids = tok(render_prompt(tok, prompt), add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=ids).logits[0, -1], -1)
    n = 1500
    out = sample_completions(model, tok, [prompt], n=n, temperature=1.0, max_new_tokens=1, batch_size=500, seed=3, progress=False)[0]
    first = [tok(t, add_special_tokens=False)["input_ids"][:1] for t in out]
    counts = torch.zeros_like(probs)
    for token in first:
        if token:
            counts[token[0]] += 1
    seen = counts.sum()
    top = probs.argsort(descending=True)[:5]
    assert seen > 0.5 * n
    tv = 0.5 * (counts[top] / seen - probs[top] / probs[top].sum() * (counts[top].sum() / seen)).abs().sum()
    assert tv < 0.06, (counts[top] / seen, probs[top])


def test_return_ended_says_which_completions_reached_their_end_of_turn(loaded):
    """Greedy completions checked against the hand loop: one that stopped before the budget ended its turn;
    ``return_ended`` leaves the texts as they were."""
    model, tokenizer = loaded
    budget = 6
    texts, ended = sample_completions(model, tokenizer, PROMPTS, n=1, temperature=0, max_new_tokens=budget, progress=False, return_ended=True)
    assert texts == sample_completions(model, tokenizer, PROMPTS, n=1, temperature=0, max_new_tokens=budget, progress=False)
    for prompt, (text,), (flag,) in zip(PROMPTS, texts, ended):
        ids = tokenizer(render_prompt(tokenizer, prompt), add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            for _ in range(budget):
                token = int(model(input_ids=ids).logits[0, -1].argmax())
                ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
                if token == tokenizer.eos_token_id:
                    break
        assert flag == (token == tokenizer.eos_token_id)
    # a model whose end-of-turn token is its favourite ends every turn at once
    eos = int(model(input_ids=tokenizer(render_prompt(tokenizer, PROMPTS[0]), add_special_tokens=False, return_tensors="pt")["input_ids"]).logits[0, -1].argmax())
    saved = tokenizer.eos_token_id
    try:
        tokenizer.eos_token_id = eos
        _, first = sample_completions(model, tokenizer, PROMPTS[:1], n=2, temperature=0, max_new_tokens=budget, progress=False, return_ended=True)
    finally:
        tokenizer.eos_token_id = saved
    assert first == [[True, True]]
