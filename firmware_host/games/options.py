"""Declarative rule options: each game's pay table and house options as a frozen
dataclass whose fields carry their authorised range and the article that allows it.

The same declaration validates a table's configuration (every error at once, each
with its path and article), documents the option (``tablectl check-config``, docs)
and gives the default. Pure: takes mappings, returns values or error strings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeVar

from tablecommon.values import check_value
from tablecommon.values import coerce as _coerce

T = TypeVar("T")

#: Where an option lives in the table file: ``[pay_table.<game>]`` or ``[rules.<game>]``.
SECTIONS = ("pay_table", "rules")


def option(
    default: Any,
    *,
    section: str = "rules",
    doc: str,
    cite: str = "",
    range: tuple[int, int] | None = None,
    choices: Sequence[Any] | None = None,
    kind: str | None = None,
    check: Callable[[Any], str | None] | None = None,
) -> Any:
    """Declare one option of a game's rules dataclass.

    ``kind`` is inferred from the default when omitted: ``int``, ``bool``, ``str``,
    ``fraction`` (TOML ``"1/20"`` or an integer), ``int_list``, ``sectors``
    (table of name -> list of ints). ``check`` returns an error text or None.
    """
    assert section in SECTIONS, section
    if kind is None:
        kind = _infer_kind(default)
    meta = {
        "section": section,
        "doc": doc,
        "cite": cite,
        "range": range,
        "choices": tuple(choices) if choices is not None else None,
        "kind": kind,
        "check": check,
    }
    if isinstance(default, (dict, list)):
        frozen = _freeze(default, kind)
        return dataclasses.field(default_factory=lambda: frozen, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _infer_kind(default: Any) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, Fraction):
        return "fraction"
    if isinstance(default, str):
        return "str"
    if isinstance(default, (tuple, list)):
        return "int_list"
    if isinstance(default, dict):
        return "sectors"
    raise TypeError(f"cannot infer option kind from {default!r}")


def _freeze(value: Any, kind: str) -> Any:
    if kind == "sectors":
        return {str(k): tuple(v) for k, v in value.items()}
    if kind in ("int_list", "str_list"):
        return tuple(value)
    return value


def build_rules(
    cls: type[T],
    sections: Mapping[str, Mapping[str, Any] | None],
    game_id: str,
    errors: list[str],
) -> T | None:
    """Build ``cls`` (a rules dataclass) from ``{"pay_table": {...}, "rules": {...}}``.

    Appends every problem to ``errors`` with its dotted path; returns None if any.
    Unknown keys are errors (a misspelt option must never silently keep its default).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    n_errors = len(errors)
    for section in SECTIONS:
        data = sections.get(section) or {}
        if not isinstance(data, Mapping):
            errors.append(f"{section}.{game_id}: expected a table, got {data!r}")
            continue
        for key, raw in data.items():
            path = f"{section}.{game_id}.{key}"
            f = fields.get(key)
            if f is None or f.metadata.get("section") != section:
                known = sorted(
                    n for n, fl in fields.items() if fl.metadata.get("section") == section
                )
                hint = ""
                if f is not None:
                    hint = f" (it belongs in [{f.metadata['section']}.{game_id}])"
                errors.append(
                    f"{path}: unknown key{hint}; known keys: {', '.join(known) or 'none'}"
                )
                continue
            meta = f.metadata
            value, err = _coerce(meta["kind"], raw, path, meta)
            if err:
                errors.append(err)
                continue
            err = check_value(value, path, meta)
            if err:
                errors.append(err)
                continue
            values[key] = value
    if len(errors) > n_errors:
        return None
    try:
        return cls(**values)
    except ValueError as exc:  # cross-field checks in __post_init__
        errors.append(f"{next(iter(SECTIONS))}.{game_id}: {exc}")
        return None


def describe(cls: type[Any]) -> list[dict[str, Any]]:
    """The options of a rules dataclass, for docs and ``tablectl math`` headers."""
    out = []
    for f in dataclasses.fields(cls):
        m = f.metadata
        default = (
            f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[operator]
        )
        out.append(
            {
                "key": f"{m['section']}.{f.name}",
                "default": to_json_value(default),
                "doc": m["doc"],
                "cite": m["cite"],
                "range": list(m["range"]) if m["range"] else None,
                "choices": list(m["choices"]) if m["choices"] else None,
            }
        )
    return out


def rules_json(rules: Any) -> dict[str, Any]:
    """The rule set as JSON (what a settled round and ``tablectl math`` report)."""
    return {f.name: to_json_value(getattr(rules, f.name)) for f in dataclasses.fields(rules)}


def to_json_value(value: Any) -> Any:
    if isinstance(value, Fraction):
        return str(value) if value.denominator != 1 else value.numerator
    if isinstance(value, tuple):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json_value(v) for k, v in value.items()}
    return value
