"""JSON as the table stores and publishes it, and the one ``JSON`` type alias.

:func:`dumps` is the form of every journaled and published payload (compact, key
order kept, UTF-8, no NaN); :func:`canonical_json` is the form the journal's event
hash chain is computed over (the same with sorted keys), so two equal values always
hash alike.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

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


def loads_or_none(text: str | None) -> JSON:
    """Parse a nullable JSON column: SQL NULL stays ``None``."""
    return None if text is None else json.loads(text)
