"""Import Unsloth before trl/transformers/peft whenever it will be used, so its TRL patches apply."""
from __future__ import annotations

import importlib.util
import logging
import os
import sys

logger = logging.getLogger("gapo_lite")

BACKEND_ENV = "GAPO_LITE_BACKEND"


def unsloth_wanted() -> bool:
    """True when the unsloth backend will (probably) be used: asked for explicitly, or a CUDA GPU is present."""
    choice = os.environ.get(BACKEND_ENV, "auto").lower()
    if choice == "transformers" or importlib.util.find_spec("unsloth") is None:
        return False
    if choice == "unsloth":
        return True
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return torch.cuda.is_available()


def import_unsloth_first() -> bool:
    """Import unsloth now if it will be used; warn if trl/transformers/peft were imported before it."""
    if "unsloth" in sys.modules:
        return True
    if not unsloth_wanted():
        return False
    early = [m for m in ("trl", "transformers", "peft") if m in sys.modules]
    if early:
        logger.warning(
            "gapo-lite: %s imported before unsloth; Unsloth's patches may not apply. "
            "Import gapo_lite (or unsloth) first.",
            ", ".join(early),
        )
    import unsloth  # noqa: F401  (patches trl/transformers/peft at import)

    return True
