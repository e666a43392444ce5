"""Batched, seeded sampling of completions with transformers ``generate`` (with a progress bar)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Prompt = str | list[dict[str, str]]


def ensure_pad_token(tokenizer: Any) -> Any:
    """Give the tokenizer a pad token distinct from its end-of-sequence token where its vocabulary has one.

    Unsloth's GRPO loss drops every completion token whose id is the pad id (unsloth_zoo 2026.10.9,
    ``rl_replacements.py`` ~L2962-2982; Unsloth's own loader picks a pad distinct from eos for that reason,
    ``tokenizer_utils.py`` ~L811-817), so with pad = eos the end-of-turn token that closes each completion
    would leave the loss. TRL's path masks by position, so there the pad token changes nothing: padded
    positions are masked (``tests/test_pad_token.py``). A missing pad, or one equal to eos, is replaced by the
    first of :func:`pad_candidates`; a tokenizer with none pads with eos (the transformers path is unaffected;
    the Unsloth loader refuses it)."""
    if tokenizer.pad_token is None and tokenizer.eos_token is None:
        raise ValueError(f"{type(tokenizer).__name__} has neither a pad token nor an eos token to pad with; set tokenizer.pad_token")
    if tokenizer.pad_token is not None and not pads_with_eos(tokenizer):
        return tokenizer
    candidates = pad_candidates(tokenizer)
    tokenizer.pad_token = candidates[0] if candidates else tokenizer.eos_token
    return tokenizer


def pads_with_eos(tokenizer: Any) -> bool:
    """True when the tokenizer's pad token is (or has the id of) its end-of-sequence token."""
    return tokenizer.eos_token is not None and (tokenizer.pad_token == tokenizer.eos_token or tokenizer.pad_token_id == tokenizer.eos_token_id)


def pad_candidates(tokenizer: Any) -> list[str]:
    """The tokenizer's added tokens that can pad, best first, none of them its eos: pad sentinels (``<pad>``,
    ``[PAD]``, Llama-3.1's ``<|finetune_right_pad_id|>``, Qwen's ``<|fim_pad|>``...), ``<|endoftext|>`` (the pad
    of Qwen and GPT-style tokenizers, SmolLM2's unknown token), Llama-3's ``<|reserved_special_token_N|>``, then the
    unknown token. Only added tokens are looked at, so an ordinary word such as ``pad`` never pads."""
    eos = tokenizer.eos_token
    added = [token for token, _ in sorted(tokenizer.get_added_vocab().items(), key=lambda item: item[1]) if token != eos]
    sentinels = [t for t in added if "pad" in t.lower() and t.startswith(("<", "[")) and t.endswith((">", "]"))]
    endoftext = [t for t in added if t == "<|endoftext|>"]
    reserved = [t for t in added if t.startswith("<|reserved_special_token_")]
    unknown = [tokenizer.unk_token] if tokenizer.unk_token is not None and tokenizer.unk_token != eos else []
    return list(dict.fromkeys(sentinels + endoftext + reserved + unknown))


def render_prompt(tokenizer: Any, prompt: Prompt) -> str:
    """Chat messages through the tokenizer's chat template (with the generation prompt); plain text as is."""
    if isinstance(prompt, str):
        return prompt
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)


def sample_completions(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    *,
    n: int = 1,
    temperature: float = 0.7,
    max_new_tokens: int = 32,
    batch_size: int = 64,
    seed: int = 0,
    top_p: float = 1.0,
    progress: bool = True,
    precision: str = "auto",
    return_ended: bool = False,
) -> list[list[str]] | tuple[list[list[str]], list[list[bool]]]:
    """``n`` sampled completions (decoded, special tokens removed) for every prompt, in prompt order.

    A prompt's ``n`` samples are drawn ``batch_size`` at a time, its prefix computed once per batch; ``temperature=0``
    means greedy decoding. The same seed, model and prompts give the same samples. On a CPU, ``precision``
    (see :func:`gapo_lite._bootstrap.cpu_precision`) decides whether generation runs under bf16 autocast.
    ``return_ended``: also whether each completion ended its turn (its end-of-sequence token within
    ``max_new_tokens``), as ``(texts, ended)``.
    """
    import contextlib

    import torch
    from tqdm.auto import tqdm

    from gapo_lite._bootstrap import cpu_precision

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    ensure_pad_token(tokenizer)
    texts = [render_prompt(tokenizer, p) for p in prompts]
    device = next(model.parameters()).device
    on_cpu_bf16 = device.type == "cpu" and cpu_precision(precision) == "bf16"
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if on_cpu_bf16 else contextlib.nullcontext()
    kwargs: dict[str, Any] = dict(max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
    else:
        kwargs.update(do_sample=False)
    # A prompt's n samples share its prefix: it is run through the model once and its KV cache copied to
    # each sample, so a batch costs one prompt's prefill plus the decoding (the prefill of 64 copies of a
    # 75-token prompt was most of the time). Batches never mix prompts, so no padding is needed.
    chunks = [(i, k) for i in range(len(texts)) for k in _split(n, batch_size)]
    was_training = model.training
    model.eval()
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    outputs: list[list[str]] = [[] for _ in texts]
    ended: list[list[bool]] = [[] for _ in texts]
    try:
        with torch.no_grad(), autocast:
            for i, k in tqdm(chunks, desc="sampling", disable=not progress, leave=False):
                ids = tokenizer(texts[i], return_tensors="pt", add_special_tokens=False)["input_ids"].to(device)
                decoded, finished = _sample_shared_prefix(model, tokenizer, ids, k, kwargs)
                outputs[i].extend(decoded)
                ended[i].extend(finished)
    finally:
        torch.random.set_rng_state(generator_state)
        if was_training:
            model.train()
    return (outputs, ended) if return_ended else outputs


def _split(n: int, batch_size: int) -> list[int]:
    """``n`` samples as batch sizes of at most ``batch_size``."""
    return [min(batch_size, n - start) for start in range(0, n, batch_size)]


def _sample_shared_prefix(model: Any, tokenizer: Any, ids: Any, copies: int, kwargs: dict[str, Any]) -> tuple[list[str], list[bool]]:
    """``copies`` completions of one prompt (``ids``: 1 x T), and whether each generated the eos token."""
    import torch

    batch = ids.repeat(copies, 1)
    out = generate_shared_prefix(model, batch, torch.ones_like(batch), **kwargs)[:, ids.shape[1]:]
    ended = (out == kwargs["eos_token_id"]).any(dim=1).tolist()
    return tokenizer.batch_decode(out, skip_special_tokens=True), ended


def prompt_groups(input_ids: Any, attention_mask: Any, prompt_length: int) -> list[Any]:
    """Row indices of each distinct prompt (ids and mask of the first ``prompt_length`` positions), in first-seen order."""
    import torch

    key = torch.cat([input_ids[:, :prompt_length], attention_mask[:, :prompt_length].to(input_ids.dtype)], dim=1)
    _, inverse = torch.unique(key, dim=0, return_inverse=True)
    firsts: dict[int, list[int]] = {}
    for row, group in enumerate(inverse.tolist()):
        firsts.setdefault(group, []).append(row)
    return [torch.tensor(rows, device=input_ids.device) for rows in firsts.values()]


def generate_shared_prefix(model: Any, input_ids: Any, attention_mask: Any, *, generate: Any = None, **kwargs: Any) -> Any:
    """``model.generate`` on a left-padded batch, each distinct prompt (ids and mask) prefilled once.

    The distinct prompts are prefilled together, one row each, and every row of the batch (GAPO's G
    completions of a prompt, an evaluation's n samples) gets a copy of its prompt's KV cache; then one
    ``generate`` call decodes all rows at once, as it would without sharing: a step with 8 prompts is one
    decoding loop, not 8. Positions follow the attention mask as ``generate`` sets them. Returns prompt +
    completion ids in the rows' order. ``generate``: the generation method to call (default ``model.generate``).
    """
    import torch

    generate = generate or model.generate
    groups = prompt_groups(input_ids, attention_mask, input_ids.shape[1])
    if input_ids.shape[1] < 2 or len(groups) == input_ids.shape[0]:  # nothing to share
        return generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    firsts = torch.stack([rows[0] for rows in groups])
    ids, mask = input_ids[firsts], attention_mask[firsts]
    positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
    # The last prompt token is left for generate: its logits start the completion.
    cache = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions[:, :-1], use_cache=True, logits_to_keep=1).past_key_values
    prompt_of_row = torch.empty(input_ids.shape[0], dtype=torch.long, device=input_ids.device)
    for prompt, rows in enumerate(groups):
        prompt_of_row[rows] = prompt
    cache.reorder_cache(prompt_of_row)  # beam search's reindexing: row i gets a copy of its prompt's cache
    return generate(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, **kwargs)
