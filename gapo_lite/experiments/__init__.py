"""Miniature CPU experiments beyond list selection (open-ended naming, accuracy with diversity), on one
staged runner (:mod:`gapo_lite.experiments.runner`) and one pretraining loop (:mod:`gapo_lite.supervised`).

Run one with ``python -m gapo_lite.experiments.open_ended --out runs/exp_open`` (or ``.accuracy``).
The names below are re-exported for callers that import them from here (``gapo_lite.demo`` among them).
"""
from gapo_lite.experiments.runner import Experiment, RLRun, add_common_arguments, run_staged, table, torch_threads
from gapo_lite.overrides import apply_overrides
from gapo_lite.supervised import supervised_pretrain, train_steps

__all__ = [
    "Experiment",
    "RLRun",
    "add_common_arguments",
    "apply_overrides",
    "run_staged",
    "supervised_pretrain",
    "table",
    "torch_threads",
    "train_steps",
]
