"""``--set key=value``: the one parser for every settings dataclass (TrainConfig, the experiments' and the
demo's settings). A value is parsed to its field's annotated type: bool, int, float, str, ``X | None``
("none"), ``Literal[...]``, ``tuple[T, ...]`` (comma-separated) and ``dict`` (JSON)."""
from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from gapo_lite.errors import UserError

S = TypeVar("S")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def split_assignment(text: str) -> tuple[str, str]:
    """``"key = value"`` -> ``("key", "value")``."""
    key, sep, raw = (s.strip() for s in text.partition("="))
    if not sep or not key:
        raise UserError(f"--set expects key=value, got {text!r}")
    return key, raw


def parse_value(key: str, raw: str, hint: Any) -> Any:
    """``raw`` parsed to the annotated type ``hint``; :class:`UserError` naming ``key`` when it does not parse."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if raw.lower() in ("none", "null") and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return parse_value(key, raw, inner[0])
    try:
        if hint is bool:
            if raw.lower() not in _TRUE + _FALSE:
                raise ValueError
            return raw.lower() in _TRUE
        if hint in (int, float, str):
            return hint(raw)
        if origin is Literal:
            if raw not in args:
                raise ValueError
            return raw
        if origin is tuple:
            kind = args[0] if args else str
            return tuple(parse_value(key, part.strip(), kind) for part in raw.split(",") if part.strip())
        if origin is dict or hint is dict:
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise ValueError
            return value
        return raw
    except (ValueError, TypeError):
        expected = f"one of {args}" if origin is Literal else getattr(hint, "__name__", str(hint))
        raise UserError(f"bad value for {key}: {raw!r} (expected {expected})") from None


def apply_overrides(settings: S, assignments: Sequence[str], what: str = "setting") -> S:
    """A copy of the dataclass ``settings`` with ``key=value`` assignments applied, each value parsed to its
    field's type. Unknown keys, unparsable values and values the dataclass rejects (its ``__post_init__``
    raising ``ValueError``) raise :class:`UserError`; ``what`` names a key in messages ("TrainConfig key")."""
    hints = typing.get_type_hints(type(settings))
    names = [f.name for f in dataclasses.fields(settings)]  # type: ignore[arg-type]
    changes: dict[str, Any] = {}
    for text in assignments:
        key, raw = split_assignment(text)
        if key not in names:
            raise UserError(f"unknown {what} {key!r}; known: {', '.join(sorted(names))}")
        changes[key] = parse_value(key, raw, hints[key])
    try:
        return dataclasses.replace(settings, **changes)  # type: ignore[type-var]
    except UserError:
        raise
    except ValueError as err:
        raise UserError(str(err)) from err
