"""Tiny Qwen2 models with a word-level tokenizer, built locally for tests and the CPU demo (no hub needed)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_BASE_WORDS = ["system", "user", "assistant", ".", ",", ":", "!", "?", "'", '"', "*", "I", "pick", "choose"]


def build_tokenizer(words: Iterable[str]):
    """A word-level ``PreTrainedTokenizerFast`` over ``words`` with a ChatML-style chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for token in [*SPECIAL_TOKENS, *_BASE_WORDS, *words]:
        vocab.setdefault(token, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="<unk>",
        pad_token="<|endoftext|>",
        eos_token="<|im_end|>",
        bos_token=None,
        additional_special_tokens=["<|im_start|>"],
        chat_template=CHAT_TEMPLATE,
    )
    tokenizer.padding_side = "left"
    return tokenizer


def build_tiny_model(
    path: str | Path,
    words: Iterable[str] | None = None,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int | None = None,
    max_positions: int = 512,
    seed: int = 0,
    embedding_std: float | None = None,
    copy_head: bool = False,
) -> Path:
    """Save a randomly initialised Qwen2 causal LM and its tokenizer to ``path``; return the path.

    ``words`` defaults to the list-selection vocabulary, so every item of every category is one token.
    Load it back with :func:`gapo_lite.models.load_model` like any real checkpoint. ``embedding_std``
    re-draws the (tied) token embeddings with that standard deviation instead of Qwen2's 0.02: larger
    embeddings make an item copied from the prompt stand out in the logits sooner, which is what lets the
    CPU demo learn to copy from a list within its time budget. ``copy_head`` starts the last attention layer as
    a copier: its value and output projections are the identity, so attending to a token adds that token's
    (normalised) embedding to the residual stream, which the tied output layer reads back as the same token.
    Only *where* to attend is left to learn, which takes the demo's copy phase from thousands of steps to
    hundreds (``lab/LOG.md``); the rest of the layer is Qwen2's usual random start.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from gapo_lite.data import vocabulary

    if copy_head and num_kv_heads != num_heads:  # the identity value projection needs values as wide as the hidden state
        raise ValueError(f"copy_head needs as many key/value heads as heads (num_kv_heads={num_kv_heads}, num_heads={num_heads})")
    path = Path(path)
    tokenizer = build_tokenizer(vocabulary() if words is None else words)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    if embedding_std is not None:
        if embedding_std <= 0:
            raise ValueError(f"embedding_std must be > 0, got {embedding_std}")
        torch.nn.init.normal_(model.get_input_embeddings().weight, std=embedding_std)
    if copy_head:
        attention = model.model.layers[-1].self_attn
        with torch.no_grad():
            attention.v_proj.weight.copy_(torch.eye(hidden_size))
            attention.v_proj.bias.zero_()
            attention.o_proj.weight.copy_(torch.eye(hidden_size))
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
