"""The one ``--set`` parser (gapo_lite.overrides) and recipes built from the final config."""
from __future__ import annotations

import dataclasses
from typing import Literal

import pytest

from gapo_lite.errors import UserError
from gapo_lite.overrides import apply_overrides, parse_value, split_assignment
from gapo_lite.training import TrainConfig
from gapo_lite.training.recipes import load_recipe_file


@dataclasses.dataclass(frozen=True)
class Example:
    steps: int = 3
    rate: float = 0.5
    name: str = "a"
    flag: bool = False
    temps: tuple[float, ...] = (0.7,)
    words: tuple[str, ...] = ("x",)
    limit: int | None = None
    mode: Literal["fast", "slow"] = "fast"
    extra: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")


def test_every_annotated_type_parses():
    s = apply_overrides(Example(), ["steps=7", "rate=1e-3", "name = b c ", "flag=yes", "temps=0.5, 1.0", "words=q,r",
                                    "limit=12", "mode=slow", 'extra={"k": 1}'])
    assert s == Example(steps=7, rate=0.001, name="b c", flag=True, temps=(0.5, 1.0), words=("q", "r"), limit=12, mode="slow", extra={"k": 1})
    assert apply_overrides(s, ["limit=none", "flag=off"]).limit is None


@pytest.mark.parametrize(
    ("assignment", "message"),
    [("steps=x", "bad value for steps: 'x' (expected int)"), ("flag=maybe", "bad value for flag"),
     ("temps=0.5,hot", "bad value for temps"), ("mode=medium", "expected one of ('fast', 'slow')"),
     ("extra=[1]", "bad value for extra"), ("nope=1", "unknown setting 'nope'; known: extra, flag"),
     ("steps", "--set expects key=value"), ("=3", "--set expects key=value"), ("steps=0", "steps must be >= 1")],
)
def test_bad_assignments_are_user_errors(assignment, message):
    with pytest.raises(UserError) as err:
        apply_overrides(Example(), [assignment])
    assert message in str(err.value)


def test_the_original_is_untouched_and_what_names_the_key():
    original = Example()
    apply_overrides(original, ["steps=9"])
    assert original.steps == 3
    with pytest.raises(UserError, match="unknown demo setting 'x'"):
        apply_overrides(original, ["x=1"], what="demo setting")


def test_split_and_parse_helpers():
    assert split_assignment(" a = b=c ") == ("a", "b=c")
    assert parse_value("k", "3", int | None) == 3 and parse_value("k", "None", int | None) is None


def test_trainconfig_values_by_hand():
    """TrainConfig's --set goes through the shared parser: each value checked against its hand-written result."""
    sets = ["learning_rate=2e-5", "max_steps=7", "use_lora=false", "chunk_size=none", "split=heldout",
            "lora_target_modules=q_proj,v_proj", "report_to=tensorboard", "memory_budget_gb=24"]
    c = TrainConfig().with_overrides(sets)
    assert (c.learning_rate, c.max_steps, c.use_lora, c.chunk_size, c.split) == (2e-5, 7, False, None, "heldout")
    assert tuple(c.lora_target_modules) == ("q_proj", "v_proj") and c.report_to == "tensorboard" and c.memory_budget_gb == 24.0


def test_experiment_and_demo_settings_share_the_parser():
    from gapo_lite import overrides
    from gapo_lite.demo import stages

    assert stages.apply_overrides is overrides.apply_overrides


# ---------------------------------------------------------------- recipes as factories


RECIPE = '''
from gapo_lite.training import TrainConfig
config = TrainConfig(model="m", max_steps=4, prompts_per_step=2, data_seed=1)
built = []
def scorer(config):
    built.append(("scorer", config.invalid_reward))
    return ("scorer for", config.invalid_reward)
def train_dataset(config):
    built.append(("data", config.max_steps, config.data_seed))
    return list(range(config.max_steps * config.prompts_per_step))
'''


def test_recipe_factories_see_the_overrides(tmp_path):
    path = tmp_path / "r.py"
    path.write_text(RECIPE)
    recipe = load_recipe_file(str(path))
    assert recipe.train_kwargs() == {"scorer": ("scorer for", -1.0), "train_dataset": list(range(8))}
    final = apply_overrides(recipe.config, ["max_steps=3", "data_seed=5", "invalid_reward=-2"])
    kwargs = recipe.train_kwargs(final)
    assert kwargs == {"scorer": ("scorer for", -2.0), "train_dataset": list(range(6))}


def test_ready_objects_are_used_as_they_are(tmp_path):
    path = tmp_path / "r.py"
    path.write_text("from gapo_lite.training import TrainConfig\nfrom gapo_lite.rewards import FrequencyScorer\n"
                    "config = TrainConfig(model='m')\nscorer = FrequencyScorer()\n")
    recipe = load_recipe_file(str(path))
    assert recipe.train_kwargs(recipe.config) == {"scorer": recipe.scorer}


def test_open_ended_recipe_data_follows_set(tmp_path):
    recipe = load_recipe_file("open_ended_names")
    final = apply_overrides(recipe.config, ["max_steps=3", "prompts_per_step=2", "data_seed=4"])
    data = recipe.build("train_dataset", final)
    assert len(data) == 6 and all(pid.startswith("open-train-4-") for pid in data["prompt_id"])
    default = recipe.build("train_dataset")
    assert len(default) == recipe.config.max_steps * recipe.config.prompts_per_step
