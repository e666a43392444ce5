"""Memory planning for GAPO/GRPO LoRA training: model shapes, per-term estimates and a chunking that fits."""
from gapo_lite.memory.planner import GIB, MemoryPlan, MemoryPlanError, PlanSettings, estimate_terms, minimum_budget_bytes, plan_memory
from gapo_lite.memory.specs import ModelSpec, builtin_names

__all__ = ["GIB", "MemoryPlan", "MemoryPlanError", "ModelSpec", "PlanSettings", "builtin_names", "estimate_terms", "minimum_budget_bytes", "plan_memory"]
