"""TrainConfig defaults, --set parsing, recipes and the train CLI's early errors."""
import pytest

from gapo_lite.cli import main
from gapo_lite.training import TrainConfig, run_plan_for
from gapo_lite.training.recipes import load_recipe
from gapo_lite.training.trainer import grpo_args


def test_defaults_are_the_papers():
    c = TrainConfig()
    assert (c.num_generations, c.beta, c.learning_rate, c.prompts_per_step) == (32, 0.0, 1e-5, 8)
    assert (c.lora_r, c.lora_alpha, c.lora_dropout, c.min_items, c.max_items) == (64, 32, 0.1, 4, 12)
    assert len(c.lora_target_modules) == 7


def test_overrides_parse_types():
    c = TrainConfig().with_overrides(["num_generations=16", "learning_rate=3e-4", "use_lora=false", "chunk_size=none",
                                      "lora_target_modules=q_proj, v_proj", "report_to=tensorboard"])
    assert c.num_generations == 16 and c.learning_rate == 3e-4 and c.use_lora is False and c.chunk_size is None
    assert c.lora_target_modules == ("q_proj", "v_proj") and c.report_to == "tensorboard"


@pytest.mark.parametrize(
    "assignment, match",
    [("bogus=1", "unknown TrainConfig key 'bogus'"), ("num_generations=many", "bad value for num_generations"),
     ("use_lora=maybe", "bad value for use_lora"), ("backend=jax", "bad value for backend"), ("report_to=mlflow", "report_to"),
     ("num_generations=1", "num_generations"), ("chunk_size=5", "chunk_size=5 must divide"), ("noequals", "key=value")],
)
def test_bad_overrides_are_clear_errors(assignment, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig().with_overrides([assignment])


def test_yaml_round_trip(tmp_path):
    c = TrainConfig(num_generations=4, prompts_per_step=2)
    c.save(tmp_path / "c.yaml")
    assert TrainConfig.load(tmp_path / "c.yaml") == c
    with pytest.raises(ValueError, match="unknown TrainConfig key"):
        TrainConfig.from_dict({"nope": 1})


def test_grpo_args_one_optimizer_step_per_generation_batch():
    config = TrainConfig(num_generations=8, prompts_per_step=4, chunk_size=4, output_dir="/tmp/x")
    args = grpo_args(config, run_plan_for(config), 4)
    assert args.per_device_train_batch_size == 4
    assert args.gradient_accumulation_steps == args.steps_per_generation == 8
    assert args.generation_batch_size == 32 and args.generation_batch_size % args.num_generations == 0
    assert args.beta == 0.0 and args.loss_type == "dapo"


@pytest.mark.parametrize("name", ["tiny_lists", "qwen7b_lists", "qwen32b_lists"])
def test_recipes_load(name):
    c = load_recipe(name)
    assert isinstance(c, TrainConfig)
    if name.startswith("qwen"):
        assert c.num_generations == 32 and c.load_in_4bit and c.lora_r == 64


def test_cli_bad_key_fails_before_loading_a_model(capsys, monkeypatch):
    import gapo_lite.models

    def boom(*a, **k):
        raise AssertionError("model loaded")

    monkeypatch.setattr(gapo_lite.models, "load_model", boom)
    with pytest.raises(ValueError, match="bogus"):
        main(["train", "--recipe", "tiny_lists", "--set", "bogus=3"])
    assert main(["train", "--recipe", "qwen7b_lists", "--set", "max_steps=7", "--dry-run"]) == 0
    assert "max_steps: 7" in capsys.readouterr().out
    assert main(["train", "--recipe", "smollm2_lists", "--model", "/models/x.gguf", "--dry-run"]) == 0
    assert "model: /models/x.gguf" in capsys.readouterr().out  # --model is --set model=...
    with pytest.raises(FileNotFoundError, match="no recipe 'nope'"):
        main(["train", "--recipe", "nope"])


def test_plan_for_config_gives_trl_valid_chunking():
    from gapo_lite.training.planning import plan_for_config

    config = TrainConfig(model="qwen2.5-7b", memory_budget_gb=24)
    memory_plan = plan_for_config(config)
    assert memory_plan.fits and (config.prompts_per_step * config.num_generations) % memory_plan.chunk_size == 0
    chunked = TrainConfig(output_dir="/tmp/x", chunk_size=memory_plan.chunk_size)
    args = grpo_args(chunked, run_plan_for(chunked), memory_plan.chunk_size)
    assert args.generation_batch_size == 256 and args.steps_per_generation == memory_plan.steps_per_generation
    roomy = plan_for_config(TrainConfig(model="qwen2.5-7b", memory_budget_gb=80))
    assert roomy.chunk_size >= memory_plan.chunk_size


def test_32b_recipe_states_the_smallest_budget_the_planner_accepts():
    """The figure in recipes/qwen32b_lists.py is the planner's, at the recipe's own settings (so it cannot drift)."""
    import re

    from gapo_lite.memory import GIB, MemoryPlanError, ModelSpec, minimum_budget_bytes, plan_memory
    from gapo_lite.runplan import run_plan_for
    from gapo_lite.training.planning import plan_settings
    from gapo_lite.training.recipes import load_recipe_file

    recipe = load_recipe_file("qwen32b_lists")
    text = recipe.path.read_text()
    stated = float(re.search(r"Smallest budget the planner accepts for this recipe: ([\d.]+) GiB", text).group(1))
    c = recipe.config
    settings = plan_settings(c, run_plan_for(c, cuda=True, has_unsloth=True, processes=1), prompt_tokens=128)
    assert (settings.quantization, settings.backend, settings.optimizer) == ("4bit", "unsloth", "adamw_8bit")
    spec = ModelSpec.builtin(c.model)
    assert stated == round(minimum_budget_bytes(spec, settings) / GIB, 2)
    assert plan_memory(spec, settings, budget_bytes=int((stated + 0.01) * GIB)).fits
    with pytest.raises(MemoryPlanError):
        plan_memory(spec, settings, budget_bytes=int((stated - 0.01) * GIB))


def test_prompt_tokens_are_measured_from_the_dataset(tiny_model_path):
    """The planner's prompt length is the dataset's longest prompt through the real tokenizer (not 256)."""
    from gapo_lite.data import build_list_dataset
    from gapo_lite.models import load_tokenizer
    from gapo_lite.training.planning import measure_prompt_tokens

    tok = load_tokenizer(tiny_model_path)
    dataset = build_list_dataset(40, seed=3)
    # independently: the chat template's own tokenisation of every row
    lengths = [len(tok.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]) for row in dataset]
    assert measure_prompt_tokens(tok, dataset) == max(lengths)
    assert measure_prompt_tokens(tok, dataset, sample=1) == lengths[0]
    assert 20 < max(lengths) < 256
    with pytest.raises(ValueError, match="empty"):
        measure_prompt_tokens(tok, dataset.select([]))


def test_cuda_chunking_plans_with_the_measured_prompts_and_the_real_backend():
    import dataclasses

    from gapo_lite.runplan import run_plan_for
    from gapo_lite.training.trainer import resolve_chunk_size

    config = TrainConfig(model="qwen2.5-7b", memory_budget_gb=24, max_completion_length=32)
    gpu = dataclasses.replace(run_plan_for(config), cuda=True, backend="unsloth", precision="unsloth", optim="adamw_8bit",
                              gradient_checkpointing=True, load_in_4bit=True)
    chunking = resolve_chunk_size(config, gpu, prompt_tokens=90)
    assert "90 prompt + 32 completion tokens" in chunking.table and "backend unsloth" in chunking.table
    assert chunking.memory_plan.settings["optimizer"] == "adamw_8bit" and chunking.memory_plan.chunk_size == chunking.chunk_size
    assert chunking.extras == {"unsloth_grpo_mini_batch": 1}
    assert 256 % chunking.chunk_size == 0
    cpu = resolve_chunk_size(config, run_plan_for(config))
    assert (cpu.chunk_size, cpu.table, cpu.extras) == (256, None, {})  # CPU: one pass, no plan


def test_the_planner_is_asked_what_the_config_and_its_run_plan_say():
    """The planner has no defaults of its own: every setting follows the TrainConfig or its run plan."""
    import dataclasses

    from gapo_lite.runplan import run_plan_for
    from gapo_lite.training.planning import plan_settings

    c = TrainConfig(lora_r=16, num_generations=4, prompts_per_step=2, max_completion_length=48, max_seq_length=384, gpu_memory_utilization=0.3,
                    fast_inference=True, load_in_4bit=False, optim="adamw_torch", gradient_checkpointing=False)
    run = run_plan_for(c, cuda=True, has_unsloth=True, processes=2)
    s = plan_settings(c, run, prompt_tokens=90, total_bytes=10 * 2**30)
    assert (s.lora_rank, s.num_generations, s.prompts_per_step, s.completion_tokens, s.max_seq_length, s.gpu_memory_utilization) == (
        16, 4, 2, 48, 384, 0.3)
    assert (s.quantization, s.backend, s.optimizer, s.gradient_checkpointing, s.world_size, s.fast_inference) == (
        "16bit", "unsloth", "adamw", False, 2, True)
    assert (s.prompt_tokens, s.gpu_total_bytes) == (90, 10 * 2**30)
    plain = dataclasses.replace(c, backend="transformers", fast_inference=False)
    assert plan_settings(plain, run_plan_for(plain, cuda=True, has_unsloth=True, processes=2)).backend == "transformers"


def test_what_trl_would_refuse_is_refused_before_loading_and_grpo_args_runs_once(tiny_model_path, tmp_path, monkeypatch):
    from gapo_lite.errors import UserError
    from gapo_lite.training import build_trainer
    from gapo_lite.training import trainer as trainer_module

    unloadable = str(tmp_path / "no-model-here")  # loading it would fail: the error must come first
    for bad, message in ((dict(extra_grpo_args={"nonesuch": 1}), "nonesuch is not a field of trl.GRPOConfig"),
                         (dict(lr_scheduler_type="sometimes"), "lr_scheduler_type='sometimes' is not one transformers knows"),
                         (dict(optim="adamw_fast"), "optim='adamw_fast' is not one transformers knows")):
        with pytest.raises(UserError, match=message):
            build_trainer(TrainConfig(model=unloadable, output_dir=str(tmp_path / "bad"), **bad))
    calls = []
    real = trainer_module.grpo_args
    monkeypatch.setattr(trainer_module, "grpo_args", lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs))
    trainer = build_trainer(TrainConfig(model=str(tiny_model_path), num_generations=2, prompts_per_step=1, max_steps=1, output_dir=str(tmp_path / "run")))
    assert calls == [1]
    assert trainer.gapo.run_plan.backend == "transformers" and trainer.gapo.share_prompts and trainer.gapo.prompts_per_step == 1


def test_list_settings_prints_every_field_with_its_help_by_group(capsys):
    """Each TrainConfig field carries its help (field metadata, as TRL's GRPOConfig); --list-settings prints them in
    their groups, which are the source's comment headings; a bad --set key names the valid ones."""
    import dataclasses
    import inspect
    import re

    from gapo_lite.errors import UserError
    from gapo_lite.training import config as config_module

    fields = dataclasses.fields(TrainConfig)
    assert all(len(f.metadata.get("help", "")) > 10 for f in fields), [f.name for f in fields if len(f.metadata.get("help", "")) <= 10]
    source = inspect.getsource(TrainConfig)
    headings = re.findall(r"# --- (.+?) -+\n\s+(\w+):", source)
    assert {first: title for title, first in headings} == config_module.GROUPS
    with pytest.raises(SystemExit) as done:
        main(["train", "--list-settings"])  # no recipe needed, like --help
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line in config_module.GROUPS.values()] == list(config_module.GROUPS.values())
    for f in fields:
        assert f"  {f.name}: " in out and f.metadata["help"].split()[0] in out
    assert "  backend: auto | unsloth | transformers = auto" in out and "  lora_r: int = 64" in out
    with pytest.raises(UserError, match="unknown TrainConfig key 'lora_rank'; known: .*lora_r, "):
        main(["train", "--recipe", "tiny_lists", "--set", "lora_rank=8"])
