"""Library noise, silenced at its source: messages a CPU run prints that say nothing about the run.

Each logger below is named with the one line that says why its messages are noise here; they are raised to
ERROR, so a real failure still shows. :func:`quiet_libraries` must run before the library is imported (the
messages come at import time), which is why the ``gapo-lite`` command line and the staged runner call it first.
:func:`run_log` keeps what the libraries do say in the run's folder instead of on the terminal.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

NOISY_LOGGERS = {
    # imported by transformers and peft for their quantizers; the kit never quantizes with torchao
    "torchao": "torchao's CUDA-only kernels (_C_mxfp8, _C_cutlass_90a) fail to load on a CPU, one line each",
    "torch.utils._pytree": "torchao registers its enums the way torch 2.13 deprecates; a warning meant for torchao's authors",
    "bitsandbytes.backends.cpu.ops": "bitsandbytes' optional CPU kernels need the 'kernels' package; without it its plain path runs",
}


def quiet_libraries(progress_bars: bool = True) -> None:
    """Raise the :data:`NOISY_LOGGERS` to ERROR; with ``progress_bars=False`` also switch off transformers' and the
    hub's bars ("Loading weights", "Writing model shards": instant for the demo's 2-layer model, one line each)."""
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    if not progress_bars:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


@contextlib.contextmanager
def run_log(path: str | Path) -> Iterator[Path]:
    """Append the kit's, transformers' and TRL's log records to ``path`` while the block runs (each at the level its
    logger passes on); the terminal still shows what it showed before."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    loggers = [logging.getLogger(name) for name in ("gapo_lite", "transformers", "trl")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield path
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        handler.close()
