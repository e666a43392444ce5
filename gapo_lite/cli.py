"""``gapo-lite`` command line: ``demo``, ``train``, ``plan``, ``eval``.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and ``run(args) -> int``.
"""
from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "demo": ("gapo_lite.demo", "the miniature GAPO reproduction on CPU (the README's main job)"),
    "train": ("gapo_lite.training.cli", "train with GAPO from a recipe"),
    "plan": ("gapo_lite.memory.cli", "memory plan: what fits, and how to chunk the groups"),
    "eval": ("gapo_lite.eval.cli", "diversity / validity / accuracy evaluation with a report"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gapo-lite", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module)
        try:
            importlib.import_module(module).add_arguments(sub_parser)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
            sub_parser.set_defaults(_missing=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "_missing", None):
        print(f"gapo-lite {args.command}: not available in this build ({args._missing} missing)", file=sys.stderr)
        return 2
    return int(importlib.import_module(args._module).run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
