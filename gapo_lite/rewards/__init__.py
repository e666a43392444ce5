"""Group-level rewards and the hook that plugs them into TRL's GRPO loop.

Layout (arrows point down only): ``group`` (Group, the scorer protocol, group metrics) and ``frequency``
(the reward formula) at the bottom; the scorers (``lists``, ``open_ended``, ``categories``, ``semantic``,
``accuracy``, ``validity``, ``tasks``; ``AccuracyReward`` and ``ValidityReward`` are the per-sample baselines)
on them; ``hook`` (GroupReward) on top. Answer parsing comes from
:mod:`gapo_lite.answers`; nothing here imports ``eval`` or ``experiments``.
"""
from gapo_lite.answers import canonical_answer, extract_number
from gapo_lite.rewards.accuracy import AccuracyDiversityScorer, AccuracyReward
from gapo_lite.rewards.categories import CategoryScorer, open_ended_scorer
from gapo_lite.rewards.frequency import expected_reward, frequency_aware_rewards, frequency_rewards_with_L, gapo_reward
from gapo_lite.rewards.group import Group, GroupScorer, group_metrics
from gapo_lite.rewards.hook import GroupReward, completion_text
from gapo_lite.rewards.invalid import InvalidBelowMode
from gapo_lite.rewards.lists import FrequencyScorer, ValidityScorer
from gapo_lite.rewards.open_ended import OpenEndedFrequencyScorer
from gapo_lite.rewards.semantic import SemanticClusterer, SemanticScorer
from gapo_lite.rewards.tasks import TaskScorer
from gapo_lite.rewards.validity import ValidityReward

__all__ = [
    "AccuracyDiversityScorer",
    "AccuracyReward",
    "CategoryScorer",
    "FrequencyScorer",
    "Group",
    "GroupReward",
    "GroupScorer",
    "InvalidBelowMode",
    "OpenEndedFrequencyScorer",
    "SemanticClusterer",
    "SemanticScorer",
    "TaskScorer",
    "ValidityReward",
    "ValidityScorer",
    "canonical_answer",
    "completion_text",
    "expected_reward",
    "extract_number",
    "frequency_aware_rewards",
    "frequency_rewards_with_L",
    "gapo_reward",
    "group_metrics",
    "open_ended_scorer",
]
