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


def _cite(meta: Mapping[str, Any]) -> str:
    return f" ({meta['cite']})" if meta["cite"] else ""


def _coerce(kind: str, value: Any, path: str, meta: Mapping[str, Any]) -> tuple[Any, str | None]:
    """Convert a TOML value to the option's type; return (value, error)."""
    if kind == "bool":
        if not isinstance(value, bool):
            return None, f"{path}: expected true or false, got {value!r}"
        return value, None
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return None, f"{path}: expected an integer, got {value!r}"
        return value, None
    if kind == "str":
        if not isinstance(value, str):
            return None, f"{path}: expected a string, got {value!r}"
        return value, None
    if kind == "fraction":
        if isinstance(value, (bool, float)):
            return None, (
                f'{path}: expected an exact fraction such as "1/20" or an integer, got {value!r}'
                " (floats are refused: odds and rates must be exact)"
            )
        if isinstance(value, int):
            return Fraction(value), None
        if isinstance(value, str):
            try:
                return Fraction(value.strip()), None
            except (ValueError, ZeroDivisionError):
                return None, f'{path}: {value!r} is not an exact fraction such as "1/20"'
        return None, f'{path}: expected an exact fraction such as "1/20", got {value!r}'
    if kind in ("int_list", "str_list"):
        want = str if kind == "str_list" else int
        if not isinstance(value, list) or not all(
            isinstance(v, want) and not isinstance(v, bool) for v in value
        ):
            return None, f"{path}: expected a list of {want.__name__}s, got {value!r}"
        return tuple(value), None
    if kind == "sectors":
        if not isinstance(value, dict):
            return None, f"{path}: expected a table of name = [numbers], got {value!r}"
        out = {}
        for name, nums in value.items():
            if not isinstance(nums, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) for n in nums
            ):
                return None, f"{path}.{name}: expected a list of integers, got {nums!r}"
            out[str(name)] = tuple(nums)
        return out, None
    raise AssertionError(kind)


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


def check_value(value: Any, path: str, meta: Mapping[str, Any]) -> str | None:
    rng = meta.get("range")
    if rng is not None:
        lo, hi = rng
        items = value if isinstance(value, tuple) else (value,)
        for v in items:
            if not lo <= v <= hi:
                word = "authorised" if meta.get("cite") else "allowed"
                return f"{path}: {v} is outside the {word} range {lo}..{hi}{_cite(meta)}"
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        word = "authorised" if meta.get("cite") else "allowed"
        return f"{path}: {value!r} is not one of the {word} choices {allowed}{_cite(meta)}"
    check = meta.get("check")
    if check is not None:
        problem = check(value)
        if problem:
            return f"{path}: {problem}{_cite(meta)}"
    return None


def describe(cls: type[Any]) -> list[dict[str, Any]]:
    """The options of a rules dataclass, for docs and ``tablectl math`` headers."""
    out = []
    for f in dataclasses.fields(cls):
        m = f.metadata
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else f.default_factory()  # type: ignore[operator]
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
