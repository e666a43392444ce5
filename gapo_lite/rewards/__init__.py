"""GAPO's reward: the formula, the group scorers and the hook that plugs them into TRL's GRPO loop.

One convention, TRL's: a *reward function* is called with a generation batch's rows and returns one float per
completion, and the kit has one, the hook :class:`GroupReward`; a *group scorer* (:class:`GroupScorer`, the one
protocol) is called with one :class:`Group`, a prompt's completions, returns one float per completion and says
which answer each gave (``answers``). Every scorer here is one:

* GAPO's frequency reward over what a reply means: :class:`FrequencyScorer` (list prompts: which item),
  :class:`OpenEndedFrequencyScorer` (open prompts: a vocabulary or validator), :class:`CategoryScorer` and
  :func:`open_ended_scorer` (open prompts of several categories), :class:`SemanticScorer` (near-duplicate
  clusters), :class:`AccuracyDiversityScorer` (correct answers, by solution);
* per-sample baselines (plain GRPO): :class:`ValidityScorer`, :class:`AccuracyScorer`;
* scorers of scorers: :class:`TaskScorer` (by the group's task column), :class:`InvalidBelowMode` (an invalid
  answer just below the group's favourite).

The formula is :func:`gapo_reward` (``1 - (f - 1/L)``), applied to a group by :func:`frequency_aware_rewards`
and :func:`frequency_rewards_with_L`. Answer parsing is :mod:`gapo_lite.answers`; nothing here imports ``eval``.
"""
from gapo_lite.rewards.accuracy import AccuracyDiversityScorer, AccuracyScorer
from gapo_lite.rewards.categories import CategoryScorer, open_ended_scorer
from gapo_lite.rewards.frequency import expected_reward, frequency_aware_rewards, frequency_rewards_with_L, gapo_reward
from gapo_lite.rewards.group import Group, GroupScorer
from gapo_lite.rewards.hook import GroupReward
from gapo_lite.rewards.invalid import InvalidBelowMode
from gapo_lite.rewards.list_scorer import FrequencyScorer
from gapo_lite.rewards.open_scorer import OpenEndedFrequencyScorer
from gapo_lite.rewards.semantic import SemanticClusterer, SemanticScorer
from gapo_lite.rewards.tasks import TaskScorer
from gapo_lite.rewards.validity import ValidityScorer

__all__ = [
    "AccuracyDiversityScorer",
    "AccuracyScorer",
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
    "ValidityScorer",
    "expected_reward",
    "frequency_aware_rewards",
    "frequency_rewards_with_L",
    "gapo_reward",
    "open_ended_scorer",
]
