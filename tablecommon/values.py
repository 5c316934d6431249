"""How a value of a table file is read and checked: the one reader of the settings of
every section (:mod:`tablecommon.settings`) and of the games' rule options
(``firmware_host.games.options``). Pure: takes values, returns values or error
strings naming their path (and the article that authorises a range, if any)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from fractions import Fraction
from pathlib import Path
from typing import Any

__all__ = ["check_value", "coerce", "document_dir", "relative_to"]

#: The directory a ``path`` value of the document being read is relative to (the table
#: file's own); None: the working directory (a section built in code, a test's).
_DOCUMENT_DIR: ContextVar[Path | None] = ContextVar("document_dir", default=None)


def document_dir() -> Path | None:
    """The directory ``path`` values are read relative to, if a table file is being read."""
    return _DOCUMENT_DIR.get()


@contextlib.contextmanager
def relative_to(directory: str | Path | None) -> Iterator[None]:
    """While reading a document, ``path`` values are relative to ``directory`` (the
    table file's directory: ``firmware_host.config.load_config`` sets it)."""
    token = _DOCUMENT_DIR.set(None if directory is None else Path(directory))
    try:
        yield
    finally:
        _DOCUMENT_DIR.reset(token)


def _cite(meta: Mapping[str, Any]) -> str:
    return f" ({meta['cite']})" if meta["cite"] else ""


def coerce(kind: str, value: Any, path: str, meta: Mapping[str, Any]) -> tuple[Any, str | None]:
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
    if kind == "path":
        if not isinstance(value, str) or not value.strip():
            return None, f"{path}: expected a file path (a string), got {value!r}"
        base = _DOCUMENT_DIR.get()
        where = Path(value).expanduser()
        if not where.is_absolute() and base is not None:
            where = base / where
        return str(where), None
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
