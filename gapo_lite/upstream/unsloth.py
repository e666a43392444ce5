"""What gapo-lite reads from Unsloth's internals, all of it, read from unsloth and unsloth_zoo 2026.10.9.

The kit calls only Unsloth's public API (``FastLanguageModel``), but its memory planner
(:mod:`gapo_lite.memory.planner`) mirrors values Unsloth keeps in module-level (several of them private) names:
how its decode buffer grows, from which ``max_seq_length`` its "unsloth" checkpointing offloads, and how it
chunks the log-probabilities of a GRPO step. They are here, each with the source line it was read from, and
:func:`missing` reads the installed sources (without importing Unsloth, whose import patches TRL) to say which
line is no longer there.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

READ_FROM = "unsloth 2026.10.9, unsloth_zoo 2026.10.9"

KV_CACHE_INCREMENT = 512  # decode buffer rows added when full (and beyond the prompt at first)
OFFLOAD_MIN_SEQ = 512  # "unsloth" checkpointing offloads layer inputs to CPU RAM from this max_seq_length; below, plain checkpointing
FUSED_CHUNK_GB = 2.0  # the fused lm-head path's logits per chunk
BYTES_PER_LOGIT = 8  # bf16 logits, their fp32 copy and fp32 gradient
FUSED_MIN_ROWS = 512  # rows per chunk at least (of the rows / 8 it aims for)
LOGIT_CHUNK_MULTIPLIER_MIN, LOGIT_CHUNK_SEQ = 4, 4096  # unsloth_logit_chunk_multiplier when unset: max(4, seq_len // 4096)

# (package, file, the line that holds the values above), as read.
SOURCES = (
    ("unsloth", "models/llama.py", "KV_CACHE_INCREMENT = 512"),
    ("unsloth", "models/_utils.py", "if max_seq_length < 512:"),
    ("unsloth_zoo", "fused_losses/chunked_logprob.py", '_CHUNK_GB = _env_float("UNSLOTH_LOGPROB_CHUNK_GB", 2.0)'),
    ("unsloth_zoo", "fused_losses/chunked_logprob.py", "_BYTES_PER_LOGIT = 8.0"),
    ("unsloth_zoo", "fused_losses/chunked_logprob.py", '_MIN_ROWS = int(_env_float("UNSLOTH_LOGPROB_MIN_ROWS", 512))'),
    ("unsloth_zoo", "fused_losses/chunked_logprob.py", "rows = min(rows, max(_MIN_ROWS, -(-int(n_rows) // 8)))"),
    ("unsloth_zoo", "rl_replacements.py", "multiplier = max(4, seq_len // 4096)"),
)


def logit_chunk_multiplier(seq_len: int) -> int:
    """Unsloth's ``unsloth_logit_chunk_multiplier`` when it is unset and ``unsloth_grpo_mini_batch`` is set."""
    return max(LOGIT_CHUNK_MULTIPLIER_MIN, seq_len // LOGIT_CHUNK_SEQ)


def installed_sources() -> dict[str, Path] | None:
    """Where the installed unsloth and unsloth_zoo packages are (None when either is not installed); nothing is imported."""
    found = {name: importlib.util.find_spec(name) for name in ("unsloth", "unsloth_zoo")}
    if any(spec is None or not spec.submodule_search_locations for spec in found.values()):
        return None
    return {name: Path(next(iter(spec.submodule_search_locations))) for name, spec in found.items()}  # type: ignore[union-attr]


def missing() -> list[str]:
    """The source lines above that the installed unsloth / unsloth_zoo no longer hold, one line each."""
    from importlib.metadata import version

    roots = installed_sources()
    if roots is None:
        return ["unsloth or unsloth_zoo is not installed"]
    where = f"unsloth {version('unsloth')}, unsloth_zoo {version('unsloth_zoo')} (gapo_lite/upstream/unsloth.py was read from {READ_FROM})"
    problems = []
    for package, file, line in SOURCES:
        path = roots[package] / file
        if not path.is_file() or line not in path.read_text(encoding="utf-8"):
            problems.append(f"{where}: {package}/{file} no longer holds `{line}`")
    return problems
