"""Errors in what the user asked for, as opposed to crashes.

The ``gapo-lite`` command line prints a :class:`UserError` as one line (``gapo-lite <cmd>: error: ...``)
and exits with code 2; any other exception keeps its traceback.
"""
from __future__ import annotations

import sys
from pathlib import Path

USAGE_ERROR = 2  # the exit code of a user error, as argparse uses for usage errors


class UserError(ValueError):
    """A bad recipe, ``--set`` key or value, model path or suite: the message says what to change."""


class UserFileNotFoundError(UserError, FileNotFoundError):
    """A file or folder the user named does not exist."""


def looks_like_local_path(name: str) -> bool:
    """True for names meant as local folders (absolute, ``./``, ``../``, ``~`` or two or more ``/``), not hub
    ids like ``gpt2`` or ``Org/Model``. The one rule for the kit: model loading, the memory planner and the CLIs ask here."""
    return name.startswith(("/", "./", "../", "~", ".\\", "..\\")) or name in (".", "..") or name.count("/") >= 2 or "\\" in name


def require_local_model(name: str, what: str = "model") -> None:
    """Raise :class:`UserFileNotFoundError` when ``name`` is meant as a local folder that does not exist."""
    if looks_like_local_path(name) and not Path(name).expanduser().exists():
        raise UserFileNotFoundError(f"{what} {name!r} does not exist (a local folder, or a hub id like Org/Model)")


def one_line(message: object) -> str:
    """``message`` with its whitespace (newlines included) collapsed to single spaces."""
    return " ".join(str(message).split()) or type(message).__name__


def print_error(command: str, message: object) -> int:
    """Print ``<command>: error: <message on one line>`` to stderr; return :data:`USAGE_ERROR` for the exit code.

    The one way every command line of the kit (``gapo-lite``, its subcommands, the lab's scripts) reports a user error."""
    print(f"{command}: error: {one_line(message)}", file=sys.stderr)
    return USAGE_ERROR
