"""JSON as the table stores and publishes it, and the one ``JSON`` type alias.

:func:`dumps` is the form of every journaled and published payload (compact, key
order kept, UTF-8, no NaN); :func:`canonical_json` is the form the journal's event
hash chain is computed over (the same with sorted keys), so two equal values always
hash alike; :func:`canonical_json_nofloat` gives the same text faster for a value
with no float in it (a round payload).
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

import orjson

#: A decoded JSON value (dict, list, str, int, float, bool or None). Kept ``Any``:
#: payloads are built and read field by field and checked against their schemas.
JSON: TypeAlias = Any


def dumps(obj: JSON) -> str:
    """Compact JSON as stored and published (key order kept, no NaN, UTF-8 text)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(obj: JSON) -> str:
    """Canonical JSON (sorted keys, compact, UTF-8): equal values give equal text."""
    return json.dumps(
        obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False, sort_keys=True
    )


def canonical_json_nofloat(obj: JSON) -> str:
    """:func:`canonical_json` of a value with no float in it (a round payload:
    ``schemas/round.json`` has integers only), through orjson: the same text
    (``tests/test_jsonio.py`` compares them on generated values), 4 to 7 times faster
    (a 100-bet round: 0.30 -> 0.08 ms with cold caches, on the settlement's path).
    What orjson refuses (an integer beyond 64 bits, a lone surrogate, a type JSON has
    not) goes through :func:`canonical_json`, which decides. A float would be written
    as orjson writes it (``1e-05`` as ``0.00001``): the caller's value has none."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return canonical_json(obj)


def loads_or_none(text: str | None) -> JSON:
    """Parse a nullable JSON column: SQL NULL stays ``None``."""
    return None if text is None else json.loads(text)
