"""GGUF files as ordinary checkpoints: de-quantise once with transformers' GGUF loader, save a plain folder.

transformers loads a ``.gguf`` file (``from_pretrained(folder, gguf_file=name)``, with the ``gguf``
package) and de-quantises it to full precision, but the model keeps ``quantization_method=GGUF`` in its
config: Trainer then refuses to train it and ``save_pretrained`` refuses to write it. :func:`gguf_checkpoint`
builds a plain model from the same config without the quantization config, loads the de-quantised weights
into it and saves an ordinary safetensors folder (with the tokenizer), which loads, takes LoRA and trains
like any other. The folder is made once, under a file lock, and reused.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from gapo_lite._bootstrap import cache_dir

logger = logging.getLogger("gapo_lite")

MARKER = "gapo_lite_gguf.json"  # written last: a folder without it is an interrupted conversion
FORMAT = 2  # bump when the conversion changes, so older converted folders are redone


def is_gguf(name_or_path: str | Path) -> bool:
    """True when ``name_or_path`` names a ``.gguf`` file (it need not exist)."""
    return str(name_or_path).lower().endswith(".gguf")


def _source_stamp(path: Path) -> dict[str, object]:
    stat = path.stat()
    return {"source": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "format": FORMAT}


def fix_special_tokens(tokenizer: Any, config: Any) -> list[str]:
    """Make the tokenizer's bos / eos / pad tokens the ones the GGUF metadata names (kept in ``config``).

    transformers 5.17's GGUF tokenizer conversion gets them wrong for SmolLM2 (eos ``<|im_start|>``, no pad,
    where the file says eos = pad = ``<|im_end|>``), so generation would stop at the wrong token and the
    trainer would mask the wrong one. Returns what was changed, as "role: old -> new" lines.
    """
    changed = []
    for role in ("bos", "eos", "pad"):
        token_id = getattr(config, f"{role}_token_id", None)
        if not isinstance(token_id, int) or not 0 <= token_id < len(tokenizer):
            continue
        token = tokenizer.convert_ids_to_tokens(token_id)
        old = getattr(tokenizer, f"{role}_token")
        if old != token:
            setattr(tokenizer, f"{role}_token", token)
            changed.append(f"{role}: {old} -> {token}")
    return changed


def smollm2_path() -> str:
    """``$SMOLLM2_GGUF``, else where ``scripts/get_smollm2.sh`` puts SmolLM2-135M-Instruct's GGUF file."""
    return os.environ.get("SMOLLM2_GGUF") or str(cache_dir() / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf")


def _cache_root() -> Path:
    return cache_dir() / "gguf"


def default_checkpoint_dir(gguf_path: str | Path) -> Path:
    """Where the converted folder goes: beside the file (``name.gguf`` -> ``name.hf/``) when that folder is
    writable, else under ``$GAPO_LITE_CACHE/gguf`` (default ``~/.cache/gapo-lite/gguf``)."""
    path = Path(gguf_path).expanduser().resolve()
    beside = path.with_name(path.name[: -len(".gguf")] + ".hf")
    if os.access(path.parent, os.W_OK):
        return beside
    return _cache_root() / beside.name


def is_converted(folder: str | Path, gguf_path: str | Path) -> bool:
    """True when ``folder`` holds a finished conversion of this very file (same path, size and mtime)."""
    marker = Path(folder) / MARKER
    if not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text()) == _source_stamp(Path(gguf_path).expanduser())
    except (OSError, ValueError):
        return False


def _require_gguf_package() -> None:
    try:
        import gguf  # noqa: F401
    except ImportError as err:
        raise ImportError("loading a .gguf file needs the `gguf` package: pip install 'gapo-lite[gguf]' (or pip install gguf)") from err


def _convert_gguf(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """De-quantise ``gguf_path`` into ``out_dir``: config.json, model.safetensors, tokenizer files and a marker.

    Writes into a temporary sibling folder and renames it at the end, so ``out_dir`` is either absent or complete.
    Called only under :func:`gguf_checkpoint`'s lock, which keeps a second process from replacing the folder.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gapo_lite.upstream.transformers import drop_quantization_record, tied_weight_keys

    _require_gguf_package()
    source = Path(gguf_path).expanduser().resolve()
    if not source.is_file():
        raise FileNotFoundError(f"GGUF file {str(gguf_path)!r} does not exist")
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"gapo-lite: converting {source.name} to a plain checkpoint in {out} (once; de-quantising to float32)")
    loaded = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    config = loaded.config
    for line in fix_special_tokens(tokenizer, config):
        print(f"gapo-lite: special token from the GGUF metadata, {line}")
    drop_quantization_record(config)
    config.dtype = torch.float32
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    tied = tied_weight_keys(plain)
    missing = [k for k in missing if k not in tied]
    if missing or unexpected:
        raise RuntimeError(f"GGUF weights do not fit the plain {type(plain).__name__}: missing {missing[:5]}, unexpected {unexpected[:5]}")
    del loaded
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        plain.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        (staging / MARKER).write_text(json.dumps(_source_stamp(source)))
        if out.exists():  # an interrupted or outdated conversion
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def gguf_checkpoint(gguf_path: str | Path, out_dir: str | Path | None = None) -> Path:
    """The plain checkpoint folder for ``gguf_path``, converting it on first use (see :func:`default_checkpoint_dir`)."""
    from filelock import FileLock

    folder = Path(out_dir) if out_dir is not None else default_checkpoint_dir(gguf_path)
    if is_converted(folder, gguf_path):
        logger.info("gapo-lite: reusing the converted checkpoint %s", folder)
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Two processes started together (e.g. two seeds) would both convert and the second rename would replace
    # the folder under the first one's reader: the lock makes the second wait and reuse the first's folder.
    with FileLock(str(folder.parent / f".{folder.name}-lock")):
        if is_converted(folder, gguf_path):
            return folder
        return _convert_gguf(gguf_path, folder)
