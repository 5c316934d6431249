"""The integrity detectors' events: one of the journal's event log, published on the
``events`` topic in the same transaction (exactly once, in outbox order)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ..journal import AuditLog, OutboxMessage
from ..jsonio import JSON
from ..schemas import PAYLOAD_SCHEMA_VERSION
from ..timefmt import iso_utc


def table_event(
    chain: AuditLog,
    table_id: str,
    kind: str,
    data: Mapping[str, JSON],
    *,
    at: datetime,
    round_id: str | None = None,
) -> None:
    """Journal the event ``kind`` with ``data`` and queue its ``events`` message
    (``at``: the payload's time)."""
    payload: dict[str, JSON] = {
        "schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": table_id,
        "event": kind, "at": iso_utc(at),
    }  # fmt: skip
    if round_id is not None:
        payload["round_id"] = round_id
    payload["data"] = dict(data)
    chain.append_event(
        kind, {**data, "round_id": round_id} if round_id is not None else dict(data),
        outbox=[OutboxMessage("events", payload, qos=1, retain=False, round_id=round_id)],
    )  # fmt: skip
