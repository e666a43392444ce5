"""Supervised "pretraining" of a tiny model into a mode-collapsed list picker (stands in for a real LLM's habits)."""
from __future__ import annotations

import random
from typing import Any

from tqdm.auto import tqdm

from gapo_lite.data import TEMPLATES, categories, format_prompt
from gapo_lite.demo.supervised import train_steps
from gapo_lite.sampling import render_prompt


def collapse_targets(num_items: int, first_share: float) -> list[float]:
    """Answer distribution over list positions: ``first_share`` on the first, the rest spread evenly."""
    if not 0.0 < first_share <= 1.0:
        raise ValueError(f"first_share must be in (0, 1], got {first_share}")
    if num_items == 1:
        return [1.0]
    rest = (1.0 - first_share) / (num_items - 1)
    return [first_share] + [rest] * (num_items - 1)


def pretrain_collapsed(
    model: Any,
    tokenizer: Any,
    *,
    steps: int = 1500,
    batch_size: int = 64,
    first_share: float = 0.8,
    learning_rate: float = 3e-3,
    copy_steps: int = 0,
    copy_learning_rate: float | None = None,
    min_items: int = 4,
    max_items: int = 12,
    mixed_share: float = 0.0,
    lm_weight: float = 1.0,
    lm_on_items: bool = True,
    freeze_embeddings_in_collapse: bool = False,
    collapse_params: tuple[str, ...] | None = None,
    seed: int = 0,
    progress: bool = True,
    pool: dict[str, list[str]] | None = None,
) -> list[float]:
    """Train ``model`` on list prompts of ALL categories to answer the first item with ``first_share``.

    Two phases, each with its own schedule: ``copy_steps`` with a UNIFORM target over the list's items (the
    model learns to copy an item from the prompt, rather than guess a word of the category), then ``steps``
    with the collapsed target (``collapse_targets``). The answer position gets a soft cross-entropy target
    and the token after the answer is trained to be end-of-turn. A ``mixed_share`` of the lists draws items
    from all categories. ``lm_weight`` adds the ordinary next-token loss on the prompt tokens (what a real
    LLM is pretrained on); with ``lm_on_items=False`` the list's items are left out of it: predicting the
    next item of a list only teaches which words a category has, the habit behind invalid answers (a word
    of the category that is not in the list), and it pulls those words' tied embeddings together. In each
    phase the learning rate warms up over 5% of its steps, then decays on a cosine to 10%.
    ``freeze_embeddings_in_collapse`` keeps the token embeddings fixed in the collapse phase: the habit to
    learn is a position (the first item), and noisy updates of the embeddings of the few items that happen
    to stand first would leave item-specific preferences behind (held-out items are never trained by RL,
    so those would stay). ``collapse_params`` (substrings of parameter names, e.g. ``("layers.1.self_attn",)``)
    restricts the collapse phase to those parameters: a habit learned in one attention layer is a small, local
    change that GAPO can undo in general, where one spread over every block also leaves item-specific
    preferences that GAPO then amplifies on held-out lists.
    ``pool``
    (category -> items) replaces the kit's categories, e.g. for a seconds-long test.
    Returns the loss per step of both phases.
    """
    if steps < 0 or copy_steps < 0 or steps + copy_steps < 1:
        raise ValueError(f"need steps >= 0, copy_steps >= 0 and at least one step, got steps={steps}, copy_steps={copy_steps}")
    collapse_targets(2, first_share)  # validates first_share before any training
    losses: list[float] = []
    phases = [(copy_steps, None, copy_learning_rate or learning_rate, "pretraining: copy"),
              (steps, first_share, learning_rate, "pretraining: collapse")]
    params = dict(model.named_parameters())
    if collapse_params is not None and not any(key in name for name in params for key in collapse_params):
        raise ValueError(f"collapse_params {list(collapse_params)} match no parameter of the model (names look like {next(iter(params))!r})")
    embeddings = model.get_input_embeddings().weight
    bar = tqdm(total=steps + copy_steps, desc=phases[0][3], unit="step", disable=not progress)  # one bar for both phases
    for i, (n, share, lr, desc) in enumerate(p for p in phases if p[0] > 0):
        bar.set_description(desc, refresh=False)
        trainable = {name: p.requires_grad for name, p in params.items()}
        if share is not None and freeze_embeddings_in_collapse:
            embeddings.requires_grad_(False)
        if share is not None and collapse_params is not None:
            for name, p in params.items():
                p.requires_grad_(p.requires_grad and any(key in name for key in collapse_params))
        try:
            batch_loss = list_answer_loss(model, tokenizer, batch_size=batch_size, first_share=share, min_items=min_items, max_items=max_items,
                                          mixed_share=mixed_share, lm_weight=lm_weight, lm_on_items=lm_on_items, pool=pool)
            losses += train_steps(model, batch_loss, steps=n, learning_rate=lr, seed=seed + 1000 * i, bar=bar)
        finally:
            for name, p in params.items():
                p.requires_grad_(trainable[name])
    bar.close()
    return losses


def list_answer_loss(
    model: Any,
    tokenizer: Any,
    *,
    batch_size: int,
    first_share: float | None,
    min_items: int = 4,
    max_items: int = 12,
    mixed_share: float = 0.0,
    lm_weight: float = 1.0,
    lm_on_items: bool = True,
    pool: dict[str, list[str]] | None = None,
    full_logits: bool = False,
):
    """One phase's loss, as ``rng -> loss of a fresh batch``: the answer's soft target is ``collapse_targets(first_share)``,
    or uniform when ``first_share`` is None (see :func:`pretrain_collapsed`). ``full_logits`` computes the logits at
    every position, as the model's own forward does: the same loss, slower (``benchmarks/demo_time.py`` compares)."""
    import torch
    import torch.nn.functional as F

    pool = categories("all") if pool is None else pool
    names = sorted(pool)
    everything = sorted({item for items in pool.values() for item in items})
    item_ids = {item: tokenizer.convert_tokens_to_ids(item) for items in pool.values() for item in items}
    if tokenizer.unk_token_id in item_ids.values():
        missing = [i for i, t in item_ids.items() if t == tokenizer.unk_token_id][:5]
        raise ValueError(f"pretrain_collapsed needs one token per item; not in the vocabulary: {missing}")
    eos = tokenizer.eos_token_id
    item_tensor = torch.tensor(sorted(set(item_ids.values())))

    def batch_loss(rng: random.Random):
        texts, targets = [], []
        for _ in range(batch_size):
            category = rng.choice(names)
            k = rng.randint(min_items, max_items)
            if rng.random() < mixed_share:  # items from anywhere: only copying from the prompt predicts them
                items = rng.sample(everything, k)
            else:
                items = rng.sample(pool[category], k)
            prompt = [{"role": "user", "content": format_prompt(items, category, rng.choice(TEMPLATES))}]
            dist = [1.0 / len(items)] * len(items) if first_share is None else collapse_targets(len(items), first_share)
            answer = rng.choices(items, weights=dist)[0]
            texts.append(render_prompt(tokenizer, prompt) + answer)
            targets.append((items, dist))
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False, padding_side="left")
        ids = torch.cat([enc["input_ids"], torch.full((batch_size, 1), eos)], dim=1)
        mask = torch.cat([enc["attention_mask"], torch.ones(batch_size, 1, dtype=enc["attention_mask"].dtype)], dim=1)
        # The output layer (vocabulary x hidden, a quarter of a step's products) runs only on the positions the loss
        # reads: the answer, the end-of-turn token, and the prompt positions whose next token is a target. The same
        # loss as taking the model's logits everywhere, without the products for padding and the list's items.
        hidden = model.get_decoder()(input_ids=ids, attention_mask=mask).last_hidden_state
        head = model.get_output_embeddings()
        if full_logits:
            logits = head(hidden)
            hidden, head = logits, lambda rows: rows  # the rows picked below are then rows of the logits
        answer_logp = F.log_softmax(head(hidden[:, -3]).float(), dim=-1)  # predicts the answer token
        soft = torch.zeros_like(answer_logp)
        for row, (items, dist) in enumerate(targets):
            for item, share in zip(items, dist):
                soft[row, item_ids[item]] += share
        loss = -(soft * answer_logp).sum(-1).mean() + F.cross_entropy(head(hidden[:, -2]).float(), ids[:, -1])
        if lm_weight:  # ordinary next-token loss on the prompt: the words, the lists, the chat format
            kept = mask[:, 1:-2] == 1
            if not lm_on_items:
                kept &= ~torch.isin(ids[:, 1:-2], item_tensor)
            loss = loss + lm_weight * F.cross_entropy(head(hidden[:, :-3][kept]).float(), ids[:, 1:-2][kept])
        return loss

    return batch_loss
