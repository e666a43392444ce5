"""gapo-lite: Group-Aware Policy Optimization (GAPO) for single-GPU LoRA fine-tuning."""
from gapo_lite._bootstrap import import_unsloth_first

import_unsloth_first()  # must precede trl / transformers / peft whenever unsloth is used

from gapo_lite.answers import parse_choice  # noqa: E402
from gapo_lite.data import build_list_dataset  # noqa: E402
from gapo_lite.rewards import FrequencyScorer, Group, GroupReward, ValidityScorer, frequency_aware_rewards  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "FrequencyScorer",
    "Group",
    "GroupReward",
    "ValidityScorer",
    "build_list_dataset",
    "frequency_aware_rewards",
    "parse_choice",
]
