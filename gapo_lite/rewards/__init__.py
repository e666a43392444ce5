"""Group-level rewards and the hook that plugs them into TRL's GRPO loop."""
from gapo_lite.rewards.frequency import expected_reward, frequency_aware_rewards
from gapo_lite.rewards.hook import Group, GroupReward, GroupScorer, completion_text, group_metrics
from gapo_lite.rewards.scorers import FrequencyScorer, ValidityScorer
from gapo_lite.rewards.accuracy import AccuracyDiversityScorer, extract_number
from gapo_lite.rewards.open_ended import OpenEndedFrequencyScorer, canonical_answer, frequency_rewards_with_L
from gapo_lite.rewards.semantic import SemanticClusterer, SemanticScorer

__all__ = [
    "AccuracyDiversityScorer",
    "OpenEndedFrequencyScorer",
    "SemanticClusterer",
    "SemanticScorer",
    "canonical_answer",
    "extract_number",
    "frequency_rewards_with_L",
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
