"""Field conversions of a line-protocol file: a named group's text -> an event's value.

A rule's ``fields`` say how each named group of its pattern becomes a field of its
event (``docs/protocols/line-protocol.md``, "Fields"):

- ``"text"`` (the default for a group the rule does not list): the text as matched;
- ``"int"``: decimal digits (spaces around them allowed), with ``range = [lo, hi]``;
- ``"hex"``: hexadecimal digits (a bit field: the SS2's warning flags);
- ``"pocket"``: a roulette pocket, ``0``-``36``, ``00`` (37), ``000`` (38), ``0000`` (39);
- ``"card"``: a card in the shared notation (:mod:`tablecommon.cards`: ``AS``, ``10D``);
- ``"dice"``: dice faces ``1``-``6`` (``0``: not readable), ``3,4,5``, ``3 4 5`` or ``345``;
- ``{ map = { "0" = "clockwise", "1" = "anticlockwise" } }``: the text looked up;
- ``{ each = { F = "flat", T = "tilted" } }``: each character looked up (a tuple);
- a table may also say ``type``, ``range`` and ``from`` (the group read, when the
  field has another name than the group).

A group that did not take part in the match, or matched only spaces, is **absent**
(``None``), unless a ``map`` names that very text. A text a conversion refuses raises
:class:`FieldError`: the line is then no event at all (it counts as garbled).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tablecommon.cards import Card
from tablecommon.errors import CodedError

__all__ = ["CONVERSIONS", "FieldConv", "FieldError", "parse_field", "pocket_text"]

#: The named conversions (besides ``map`` and ``each`` tables).
CONVERSIONS = ("text", "int", "hex", "pocket", "card", "dice")

_INT = re.compile(r"-?\d{1,18}")
_HEX = re.compile(r"[0-9A-Fa-f]{1,16}")
_EXTRA_ZEROS = {"00": 37, "000": 38, "0000": 39}
_ZERO_TEXT = {v: k for k, v in _EXTRA_ZEROS.items()}


class FieldError(ValueError):
    """A group's text that its conversion refuses (the line is no event)."""


def pocket_text(number: int) -> str:
    """A pocket as a wheel shows it: ``"7"``, ``"0"``, ``"00"`` (37)."""
    return _ZERO_TEXT.get(number, str(number))


def _pocket(text: str) -> int:
    if text in _EXTRA_ZEROS:
        return _EXTRA_ZEROS[text]
    if not text.isdigit() or len(text) > 2 or (len(text) == 2 and text[0] == "0"):
        raise FieldError(f"{text!r} is not a pocket (0-36, 00, 000, 0000)")
    value = int(text)
    if value > 36:
        raise FieldError(f"{text!r} is not a pocket (0-36, 00, 000, 0000)")
    return value


def _dice(text: str) -> tuple[int, ...]:
    parts = text.replace(",", " ").split()
    if len(parts) == 1 and len(parts[0]) > 1:
        parts = list(parts[0])
    if not 1 <= len(parts) <= 6 or not all(p.isdigit() and len(p) == 1 for p in parts):
        raise FieldError(f"{text!r} is not dice (faces 1-6, 0 unreadable)")
    faces = tuple(int(p) for p in parts)
    if any(f > 6 for f in faces):
        raise FieldError(f"{text!r} is not dice (faces 1-6, 0 unreadable)")
    return faces


@dataclass(frozen=True)
class FieldConv:
    """How one event field is read from one named group."""

    name: str  # the event's field
    source: str  # the named group read (the field's name unless ``from``)
    type: str = "text"  # one of CONVERSIONS, "map" or "each"
    mapping: Mapping[str, Any] | None = None
    range: tuple[int, int] | None = None

    def convert(self, text: str | None) -> Any:
        """The field's value, None when absent; :class:`FieldError` when refused."""
        if text is not None and self.type == "map" and self.mapping and text in self.mapping:
            return self.mapping[text]
        if text is None or not text.strip():
            return None
        t = text.strip()
        if self.type == "text":
            return text
        if self.type == "map":
            assert self.mapping is not None
            raise FieldError(f"{text!r} is none of {', '.join(map(repr, self.mapping))}")
        if self.type == "each":
            assert self.mapping is not None
            missing = sorted({c for c in t if c not in self.mapping})
            if missing:
                raise FieldError(f"{t!r}: {', '.join(map(repr, missing))} not in its table")
            return tuple(self.mapping[c] for c in t)
        if self.type in ("int", "hex"):
            if not (_INT if self.type == "int" else _HEX).fullmatch(t):
                raise FieldError(
                    f"{t!r} is not a {'decimal' if self.type == 'int' else 'hex'} number"
                )
            value = int(t, 10 if self.type == "int" else 16)
            if self.range is not None and not self.range[0] <= value <= self.range[1]:
                raise FieldError(f"{value} is outside {self.range[0]}..{self.range[1]}")
            return value
        if self.type == "pocket":
            return _pocket(t)
        if self.type == "card":
            try:
                return str(Card.parse(t))
            except CodedError as exc:
                raise FieldError(exc.message) from None
        if self.type == "dice":
            return _dice(t)
        raise AssertionError(self.type)


def parse_field(name: str, spec: Any) -> tuple[FieldConv | None, str | None]:
    """A rule's ``fields.<name>`` as written in the file: (its conversion, or the problem)."""
    if isinstance(spec, str):
        if spec not in CONVERSIONS:
            return (
                None,
                f"field {name!r}: unknown conversion {spec!r} (one of {', '.join(CONVERSIONS)}, or a map/each table)",
            )
        return FieldConv(name, name, spec), None
    if not isinstance(spec, Mapping):
        return None, f"field {name!r}: expected a conversion name or a table, got {spec!r}"
    unknown = sorted(set(spec) - {"type", "map", "each", "from", "range"})
    if unknown:
        return (
            None,
            f"field {name!r}: unknown key(s) {', '.join(unknown)} (type, map, each, from, range)",
        )
    source = spec.get("from", name)
    if not isinstance(source, str) or not source:
        return None, f"field {name!r}: 'from' must name a group of the pattern"
    if "map" in spec and "each" in spec:
        return None, f"field {name!r}: give 'map' or 'each', not both"
    table_key = "map" if "map" in spec else "each" if "each" in spec else None
    if table_key is not None:
        table = spec[table_key]
        if not isinstance(table, Mapping) or not table:
            return None, f"field {name!r}: '{table_key}' must be a table of text = value"
        if table_key == "each" and any(len(k) != 1 for k in table):
            return None, f"field {name!r}: the keys of 'each' are single characters"
        if "type" in spec and spec["type"] != table_key:
            return None, f"field {name!r}: type {spec['type']!r} with a '{table_key}' table"
        return FieldConv(name, source, table_key, dict(table)), None
    kind = spec.get("type", "text")
    if kind not in CONVERSIONS:
        return (
            None,
            f"field {name!r}: unknown conversion {kind!r} (one of {', '.join(CONVERSIONS)})",
        )
    rng = spec.get("range")
    bounds: tuple[int, int] | None = None
    if rng is not None:
        if (
            kind not in ("int", "hex")
            or not isinstance(rng, list)
            or len(rng) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in rng)
            or rng[0] > rng[1]
        ):
            return None, f"field {name!r}: 'range' is [low, high] of an int or hex field"
        bounds = (rng[0], rng[1])
    return FieldConv(name, source, kind, None, bounds), None
