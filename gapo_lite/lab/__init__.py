"""The CPU lab: the experiments that produced the project's figures, apart from the library a user imports.

The demo (:mod:`~gapo_lite.lab.demo`), the tiny word-level models (:mod:`~gapo_lite.lab.tiny`), the
pretraining loops (:mod:`~gapo_lite.lab.supervised`, :mod:`~gapo_lite.lab.pretrain`), the regime map,
SmolLM2 and the experiments beyond lists, all on one staged runner (:mod:`~gapo_lite.lab.runner`), with
one plot module (:mod:`~gapo_lite.lab.plots`). The demo and the regime map share their settings' parts and
their model, pretraining, measurement and RL config (:mod:`~gapo_lite.lab.lists`).
Run one with ``python -m gapo_lite.lab.<name> --out runs/<name>``. The library never imports this package.
"""
from gapo_lite.lab.runner import Experiment, RLRun, add_common_arguments, run_staged, table, torch_threads
from gapo_lite.lab.supervised import supervised_pretrain, train_steps
from gapo_lite.overrides import apply_overrides

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
