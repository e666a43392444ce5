"""Training: ``TrainConfig`` (what to run), ``RunPlan`` (how it runs: backend, precision, batching) and ``train`` (run it), TRL-style."""
from gapo_lite.runplan import RunPlan, run_plan_for
from gapo_lite.training.config import TrainConfig
from gapo_lite.training.trainer import TrainResult, build_trainer, train

__all__ = ["RunPlan", "TrainConfig", "TrainResult", "build_trainer", "run_plan_for", "train"]
