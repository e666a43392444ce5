"""Batched, seeded sampling of completions with transformers ``generate`` (with a progress bar)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Prompt = str | list[dict[str, str]]


def ensure_pad_token(tokenizer: Any) -> Any:
    """Give a tokenizer without a pad token the usual one, its end-of-sequence token (Llama / SmolLM2 ship
    none); padded positions are masked, so which token pads does not change what the model sees."""
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ValueError(f"{type(tokenizer).__name__} has neither a pad token nor an eos token to pad with; set tokenizer.pad_token")
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


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
) -> list[list[str]]:
    """``n`` sampled completions (decoded, special tokens removed) for every prompt, in prompt order.

    Rows are batched ``batch_size`` at a time (a prompt's ``n`` samples may span batches); ``temperature=0``
    means greedy decoding. The same seed, model and prompts give the same samples. On a CPU, ``precision``
    (see :func:`gapo_lite._bootstrap.cpu_precision`) decides whether generation runs under bf16 autocast.
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
    rows = [t for t in texts for _ in range(n)]
    device = next(model.parameters()).device
    on_cpu_bf16 = device.type == "cpu" and cpu_precision(precision) == "bf16"
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if on_cpu_bf16 else contextlib.nullcontext()
    was_training = model.training
    model.eval()
    old_side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    outputs: list[str] = []
    try:
        with torch.no_grad(), autocast:
            for start in tqdm(range(0, len(rows), batch_size), desc="sampling", disable=not progress, leave=False):
                batch = tokenizer(rows[start : start + batch_size], return_tensors="pt", padding=True, add_special_tokens=False).to(device)
                kwargs: dict[str, Any] = dict(max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
                if temperature > 0:
                    kwargs.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
                else:
                    kwargs.update(do_sample=False)
                out = model.generate(**batch, **kwargs)
                new = out[:, batch["input_ids"].shape[1] :]
                outputs.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
    finally:
        tokenizer.padding_side = old_side
        torch.random.set_rng_state(generator_state)
        if was_training:
            model.train()
    return [outputs[i * n : (i + 1) * n] for i in range(len(prompts))]
