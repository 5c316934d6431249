"""JSON Schemas (draft 2020-12) of every MQTT payload: ``docs/mqtt.md`` is the prose.

The schemas ship with the package so floor systems can take them from an installed
controller. Validation needs the ``jsonschema`` package, a *development* dependency:
the daemon never validates its own output at run time (the tests do, on every
payload they see), so :func:`validate` imports it lazily.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from importlib import resources
from typing import Any

#: The ``schema_version`` every MQTT payload carries (the ``const`` of every schema
#: here; a test keeps them equal). Bumped on any change a consumer must know about.
PAYLOAD_SCHEMA_VERSION = 8

#: Every schema, by name (the file is ``<name>.json``).
SCHEMA_NAMES = (
    "round",
    "state",
    "anchor",
    "device",
    "jackpot",
    "event",
    "bet_request",
    "bet_response",
    "command_request",
    "command_response",
    "board",
    "stats",
    "alerts",
    "limits",
    "floor_record",
    "shift",
    "session",
)

#: Topic (relative to ``<prefix>/tables/<table_id>/``) -> schema name.
TOPIC_SCHEMAS = {
    "rounds": "round",
    "state": "state",
    "anchor": "anchor",
    "jackpot": "jackpot",
    "events": "event",
    "bets/request": "bet_request",
    "bets/response": "bet_response",
    "commands/request": "command_request",
    "commands/response": "command_response",
    "board": "board",
    "stats": "stats",
    "alerts": "alerts",
    "limits": "limits",
    "shift": "shift",
    "sessions": "session",
}


def response(table_id: str, request_id: str | None, status: str, **fields: Any) -> dict[str, Any]:
    """The answer to a request (``bets/response``, ``commands/response``): the common
    head (schema version, table, the request's ``request_id`` echoed back), its
    ``status`` (``accepted``/``rejected`` for bets, ``ok``/``error`` for commands) and
    ``fields`` (``code`` and ``message`` of a refusal, the command's ``data``...)."""
    return {
        "schema_version": PAYLOAD_SCHEMA_VERSION,
        "table_id": table_id,
        "request_id": request_id,
        "status": status,
        **fields,
    }


@cache
def _load(name: str) -> str:
    if name not in SCHEMA_NAMES:
        raise KeyError(f"no schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    return resources.files(__name__).joinpath(f"{name}.json").read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` as a fresh dict (``round``, ``state``, ``device``...)."""
    schema: dict[str, Any] = json.loads(_load(name))
    return schema


def schema_for_topic(topic: str) -> str:
    """Schema name of a topic relative to the table's root (``devices/<name>`` -> ``device``)."""
    if topic.startswith("devices/") and topic.count("/") == 1:
        return "device"
    try:
        return TOPIC_SCHEMAS[topic]
    except KeyError:
        raise KeyError(f"no schema for topic {topic!r}") from None


@cache
def _validator(name: str) -> Any:
    try:
        jsonschema = importlib.import_module("jsonschema")
    except ImportError as exc:  # pragma: no cover - dev dependency
        raise RuntimeError(
            "validating payloads needs the jsonschema package (pip install .[dev]); "
            "the daemon itself never needs it"
        ) from exc
    cls = jsonschema.Draft202012Validator
    schema = load_schema(name)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def validate(name: str, payload: Any) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``payload`` (parsed JSON, or bytes/str
    of JSON) conforms to schema ``name``."""
    if isinstance(payload, bytes | bytearray | str):
        payload = json.loads(payload)
    _validator(name).validate(payload)


def errors(name: str, payload: Any) -> list[str]:
    """Every violation of schema ``name`` as ``path: message`` lines (empty when valid)."""
    if isinstance(payload, bytes | bytearray | str):
        payload = json.loads(payload)
    out = []
    for err in sorted(_validator(name).iter_errors(payload), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{path}: {err.message}")
    return out
