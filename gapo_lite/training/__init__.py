"""Training: ``TrainConfig`` (what to run), ``HardwarePlan`` (what the hardware decides) and ``train`` (run it), TRL-style."""
from gapo_lite.training.config import TrainConfig
from gapo_lite.training.hardware import HardwarePlan, resolve_hardware
from gapo_lite.training.trainer import TrainResult, build_trainer, train

__all__ = ["HardwarePlan", "TrainConfig", "TrainResult", "build_trainer", "resolve_hardware", "train"]
