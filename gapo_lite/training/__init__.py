"""Training: ``TrainConfig`` (what to run) and ``train`` (run it), TRL-style."""
from gapo_lite.training.config import TrainConfig
from gapo_lite.training.trainer import TrainResult, build_trainer, train

__all__ = ["TrainConfig", "TrainResult", "build_trainer", "train"]
