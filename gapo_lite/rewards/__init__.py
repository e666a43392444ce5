"""Group-level rewards and the hook that plugs them into TRL's GRPO loop."""
from gapo_lite.rewards.frequency import expected_reward, frequency_aware_rewards
from gapo_lite.rewards.hook import Group, GroupReward, GroupScorer, completion_text, group_metrics
from gapo_lite.rewards.scorers import FrequencyScorer, ValidityScorer

__all__ = [
    "FrequencyScorer",
    "Group",
    "GroupReward",
    "GroupScorer",
    "ValidityScorer",
    "completion_text",
    "expected_reward",
    "frequency_aware_rewards",
    "group_metrics",
]
