"""What the ingest handles: a message as received, a verified round, a message
quarantined with its reason (the codes of ``docs/floor.md``, "Quarantine")."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from firmware_host.auth.evidence import FLOOR_DOMAIN, seal

from . import anchor

#: Quarantine codes. The first six are found without the database, by the worker that
#: received the message; CHAIN_NOT_ADVANCING in the transaction that would store it.
UNKNOWN_TABLE = "UNKNOWN_TABLE"
UNSIGNED = "UNSIGNED"
NOT_CANONICAL = "NOT_CANONICAL"
BAD_SIGNATURE = "BAD_SIGNATURE"
NOT_JSON = "NOT_JSON"
NOT_A_ROUND = "NOT_A_ROUND"
SEQ_NOT_ANNOUNCED = "SEQ_NOT_ANNOUNCED"
CHAIN_NOT_ADVANCING = anchor.NOT_ADVANCING
#: A verified anchor, state or answer whose content the ingest cannot use (another
#: table's id, a seq that is not an integer >= 1).
MALFORMED = "MALFORMED"

CODES = (
    UNKNOWN_TABLE,
    UNSIGNED,
    NOT_CANONICAL,
    BAD_SIGNATURE,
    NOT_JSON,
    NOT_A_ROUND,
    SEQ_NOT_ANNOUNCED,
    CHAIN_NOT_ADVANCING,
    MALFORMED,
)
#: Codes of messages the table itself signed: never capped (a table's own rounds,
#: kept until a person or the duties decide).
VERIFIED_CODES = frozenset({SEQ_NOT_ANNOUNCED, CHAIN_NOT_ADVANCING})


@dataclass(frozen=True, slots=True)
class Incoming:
    """One message from ``<prefix>/tables/<table>/rounds``."""

    table: str
    payload: bytes
    received_at: float


@dataclass(frozen=True, slots=True)
class Round:
    """A round, verified: signed by its table with a key of the registry."""

    round_id: str
    table_id: str
    seq: int
    status: str
    text: str
    sha256: str
    chain: anchor.ChainPoint | None
    received_at: float
    #: The message as received (``text`` encoded).
    raw: bytes = b""


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A message kept aside, never stored as a round (``floor_quarantine``)."""

    topic: str  # below the table's root: rounds, anchor, state, commands/response
    table_id: str
    payload: bytes
    code: str
    message: str
    received_at: float
    seq: int | None = None
    round_id: str | None = None
    sha256: str = field(default="")

    def __post_init__(self) -> None:
        if not self.sha256:
            object.__setattr__(self, "sha256", hashlib.sha256(self.payload).hexdigest())


def round_of(doc: Any, table: str, raw: bytes, received_at: float) -> Round | str:
    """The round a verified (parsed) message carries, or why it is not one."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    rid, tid, seq, status = (doc.get(k) for k in ("round_id", "table_id", "seq", "status"))
    if not isinstance(rid, str) or not rid:
        return "no round_id"
    if tid != table:
        return f"table_id {tid!r} is not the topic's table {table!r}"
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        return f"seq must be an integer >= 1, got {seq!r}"
    if status not in ("settled", "void"):
        return f"status must be settled or void, got {status!r}"
    point = anchor.parse_chain(doc)
    return Round(
        rid,
        tid,
        seq,
        status,
        raw.decode("utf-8"),
        hashlib.sha256(raw).hexdigest(),
        point if isinstance(point, anchor.ChainPoint) else None,
        received_at,
        raw,
    )


def readable(raw: bytes) -> tuple[int | None, str | None]:
    """``(seq, round_id)`` of a message that may be anything, where readable (for a
    person looking at the quarantine; never trusted)."""
    import orjson

    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(doc, dict):
        return None, None
    seq, rid = doc.get("seq"), doc.get("round_id")
    return (
        seq if isinstance(seq, int) and not isinstance(seq, bool) and abs(seq) < 2**63 else None,
        rid[:128] if isinstance(rid, str) else None,
    )


__all__ = [
    "BAD_SIGNATURE",
    "CHAIN_NOT_ADVANCING",
    "CODES",
    "MALFORMED",
    "NOT_A_ROUND",
    "NOT_CANONICAL",
    "NOT_JSON",
    "SEQ_NOT_ANNOUNCED",
    "UNKNOWN_TABLE",
    "UNSIGNED",
    "VERIFIED_CODES",
    "Incoming",
    "Quarantined",
    "Round",
    "readable",
    "round_of",
]


#: ``schema_version`` of the floor's record of a table (``floor_record.json``).
RECORD_SCHEMA_VERSION = 1


def record_message(
    key: Any,
    principal: str,
    table: str,
    seq: int,
    round_id: str,
    chain_seq: int | None,
    chain_head: str | None,
    at: str,
) -> bytes:
    """The floor's record of a table (``firmware_host/schemas/floor_record.json``),
    sealed with the ingest's key (domain ``tablectl-floor-v1``, topic ``record``)."""
    body = {
        "schema_version": RECORD_SCHEMA_VERSION,
        "table_id": table,
        "seq": seq,
        "round_id": round_id,
        "chain": None if chain_seq is None else {"seq": chain_seq, "head": chain_head},
        "at": at,
        "principal": principal,
    }
    return seal(key, "record", body, domain=FLOOR_DOMAIN, float_free=True)
