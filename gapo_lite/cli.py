"""``gapo-lite`` command line: ``demo``, ``train``, ``plan``, ``eval``.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and ``run(args) -> int``.
:func:`entry` (the ``gapo-lite`` console script and ``python -m gapo_lite.cli``) prints a user error
(:class:`~gapo_lite.errors.UserError`: bad recipe, ``--set``, model path or suite) as one line,
``gapo-lite <cmd>: error: ...``, and exits with code 2; any other exception keeps its traceback.
:func:`main` runs a command and lets every exception through (for Python callers and tests).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from gapo_lite.errors import USAGE_ERROR, UserError, print_error

COMMANDS = {
    "demo": ("gapo_lite.demo.run", "the miniature GAPO reproduction on CPU (the README's main job)"),
    "train": ("gapo_lite.training.train_command", "train with GAPO from a recipe"),
    "plan": ("gapo_lite.training.plan_command", "memory plan: what fits, and how to chunk the groups"),
    "eval": ("gapo_lite.eval.eval_command", "diversity / validity / accuracy evaluation with a report"),
}


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr: ``<prog>: error: <message>``."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="gapo-lite", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineErrorParser)
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
    """Run one command; exceptions (user errors included) propagate."""
    from gapo_lite.quiet import quiet_libraries

    quiet_libraries()  # before any command imports transformers (which brings torchao and its noise)
    args = build_parser().parse_args(argv)
    if getattr(args, "_missing", None):
        return print_error(f"gapo-lite {args.command}", f"not available in this build ({args._missing} missing)")
    return int(importlib.import_module(args._module).run(args) or 0)


def command_name(argv: list[str] | None) -> str:
    """The subcommand named in ``argv`` (``"gapo-lite"`` alone when there is none)."""
    words = sys.argv[1:] if argv is None else argv
    name = next((w for w in words if w in COMMANDS), None)
    return f"gapo-lite {name}" if name else "gapo-lite"


def entry(argv: list[str] | None = None) -> int:
    """:func:`main` for the shell: a :class:`UserError` becomes one line on stderr and exit code 2."""
    try:
        return main(argv)
    except UserError as err:
        return print_error(command_name(argv), err)


if __name__ == "__main__":
    sys.exit(entry())
