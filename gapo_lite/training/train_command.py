"""``gapo-lite train --recipe NAME [--model PATH] [--set key=value ...] [--resume]``."""
from __future__ import annotations

import argparse


class ListSettings(argparse.Action):
    """``--list-settings``: print every TrainConfig field with its help and exit, as ``--help`` does (no recipe needed)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values, option_string=None) -> None:
        from gapo_lite.training.config import settings_help

        print(settings_help())
        parser.exit()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--recipe", required=True, help="recipe name in recipes/ (tiny_lists, qwen7b_lists, ...) or a .py path")
    parser.add_argument("--model", help="model folder, hub name or .gguf file (shorthand for --set model=...)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a TrainConfig field (repeatable; --list-settings lists them)")
    parser.add_argument("--list-settings", action=ListSettings, help="list every TrainConfig field with its default and help, then exit")
    parser.add_argument("--resume", action="store_true", help="resume from the latest complete checkpoint in output_dir")
    parser.add_argument("--dry-run", action="store_true", help="print the resolved config and exit before loading anything")


def run(args: argparse.Namespace) -> int:
    from gapo_lite.errors import require_local_model
    from gapo_lite.overrides import apply_overrides
    from gapo_lite.training.recipes import load_recipe_file

    recipe = load_recipe_file(args.recipe)
    extra = ([f"model={args.model}"] if args.model else []) + (["resume=true"] if args.resume else [])
    config = apply_overrides(recipe.config, extra + args.overrides, what="TrainConfig key")
    if args.dry_run:
        import yaml

        print(yaml.safe_dump(config.to_dict(), sort_keys=False))
        return 0
    from gapo_lite.runplan import run_plan_for

    run_plan = run_plan_for(config)  # an impossible request (4-bit here, fp32 on Unsloth, ...) stops before the recipe builds anything
    recipe.prepare_for(config)
    require_local_model(config.model, "model")
    from gapo_lite.memory import MemoryPlanError
    from gapo_lite.training import train
    from gapo_lite.training.plan_command import report_plan_error

    try:
        result = train(config, run_plan=run_plan, **recipe.train_kwargs(config))
    except MemoryPlanError as err:  # raised before the first step: the table says what would fit
        return report_plan_error(err, "gapo-lite train")
    print(f"gapo-lite: done at step {result.global_step}; adapter in {result.adapter_dir}, metrics in {result.metrics_path}")
    return 0
