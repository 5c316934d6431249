"""The journal: the table's durable memory, in one SQLite file.

Everything the table decides is committed here *before* anyone hears of it: a
settled round is first a committed row, then an outbox entry, then an MQTT message
(``firmware_host/mqtt`` drains the outbox). A crash at any instant leaves every
round either fully settled (round row, settlement payload, outbox entry, jackpot
state, all in one transaction) or not settled at all, and a round can never be
settled or voided twice: :meth:`Journal.settle_round` and :meth:`Journal.void_round`
refuse a round that is already finished.

Storage choices and why:

- WAL mode with ``synchronous=FULL``: a commit returns only after the write-ahead
  log is on disk, and readers (``tablectl audit``, the console) never block the
  writer. Writes whose loss cannot hurt (raw device frames, "published" marks on
  the outbox) commit with ``synchronous=NORMAL`` (no fsync of their own); the next
  FULL commit makes them durable too, because the WAL is written in order. So the
  frames that led to a settled round are on disk once that round is; the frame that
  carried a device result (the wheel's winning number) is written by the settlement's
  own transaction (``settle_round(raw_frames=...)``).
- Each public operation is one short ``BEGIN IMMEDIATE`` transaction on the caller's
  thread (the daemon's event loop): no thread pool, no interleaving.
- The schema is versioned with ``PRAGMA user_version`` and upgraded by
  :data:`MIGRATIONS` when an older file is opened; a newer file is refused.
- The event log (``events``) is append-only (triggers refuse UPDATE and DELETE)
  and hash-chained: each row's ``hash`` is
  ``sha256(prev_hash + canonical_json({"at", "data", "id", "kind"}))`` with
  ``prev_hash`` the previous row's hash in hex (64 zeros for the first row) and
  canonical JSON = sorted keys, ``(",", ":")`` separators, UTF-8, no ASCII escaping.
  :meth:`Journal.verify_chain` recomputes it and names the first broken row.
- Retention: raw frames are kept for the last ``raw_frame_rounds`` finished rounds,
  bets and settlement payloads for the last ``full_rounds``; the round row (outcome,
  status, timestamps and a totals summary) is kept forever.

The journal knows nothing of MQTT except that outbox entries carry a topic
*relative to the table's root* (``rounds``, ``events``, ``jackpot``...), a QoS and
a retain flag; the publisher adds ``<prefix>/tables/<table_id>/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import secrets
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .config import FieldSpec, register_section, validate_fields
from .games.errors import CodedError

log = logging.getLogger(__name__)

JSON = Any
#: Topic of settled and voided rounds, relative to the table's root.
ROUNDS_TOPIC = "rounds"
#: First ``prev_hash`` of the event chain.
GENESIS_HASH = "0" * 64
#: Jackpot name used when a table has one progressive (the usual case).
DEFAULT_JACKPOT = "progressive"

RoundStatus = Literal["settled", "void"]


# ---------------------------------------------------------------------------
# errors


class JournalError(CodedError, RuntimeError):
    """Base of the journal's errors; ``code`` is stable (tests and responses match it)."""

    code = "JOURNAL_ERROR"


class RoundNotFound(JournalError, LookupError):
    code = "ROUND_NOT_FOUND"


class RoundExists(JournalError):
    code = "ROUND_EXISTS"


class RoundInFlight(JournalError):
    """A new round was opened while another round of the same table is unfinished."""

    code = "ROUND_IN_FLIGHT"


class RoundFinished(JournalError):
    """The round is already settled or voided: it can never be settled or voided again."""

    code = "ROUND_FINISHED"


class PhaseNotAllowed(JournalError):
    """The round is not in one of the phases the operation requires (bets after close)."""

    code = "ROUND_PHASE"


class BetConflict(JournalError):
    """The bet id is already used in this round by a bet with different content."""

    code = "BET_DUPLICATE_ID"


class BetNotFound(JournalError, LookupError):
    code = "BET_NOT_FOUND"


class JackpotHitConflict(JournalError):
    code = "JACKPOT_HIT_CONFLICT"


class JackpotHitNotFound(JournalError, LookupError):
    code = "JACKPOT_HIT_NOT_FOUND"


class FaultNotFound(JournalError, LookupError):
    code = "FAULT_NOT_ACTIVE"


class JournalCorrupt(JournalError):
    """The file fails SQLite's integrity check or has a schema this software cannot read."""

    code = "JOURNAL_CORRUPT"


# ---------------------------------------------------------------------------
# helpers


def iso_utc(dt: datetime) -> str:
    """ISO-8601 UTC with milliseconds and a ``Z``: ``2026-05-09T07:35:25.123Z``."""
    if dt.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_now() -> datetime:
    return datetime.now(UTC)


def dumps(obj: JSON) -> str:
    """Compact JSON as stored and published (key order kept, no NaN, UTF-8 text)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(obj: JSON) -> str:
    """Canonical JSON used by the event hash chain (sorted keys, compact, UTF-8)."""
    return json.dumps(
        obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False, sort_keys=True
    )


def event_hash(prev_hash: str, event_id: int, at: str, kind: str, data: JSON) -> str:
    """Hash of one event-log row (see the module docstring for the exact formula)."""
    content = canonical_json({"id": event_id, "at": at, "kind": kind, "data": data})
    return hashlib.sha256((prev_hash + content).encode("utf-8")).hexdigest()


def check_relative_topic(topic: str) -> str:
    """A topic below the table's root: non-empty levels, no wildcards, no leading '$'."""
    if not isinstance(topic, str) or not topic:
        raise ValueError("topic must be a non-empty string")
    if topic.startswith("$") or "\x00" in topic:
        raise ValueError(f"topic {topic!r} may not start with '$' or contain NUL")
    for level in topic.split("/"):
        if not level:
            raise ValueError(f"topic {topic!r} has an empty level")
        if "+" in level or "#" in level:
            raise ValueError(f"topic {topic!r} contains an MQTT wildcard")
    return topic


def _payload_bytes(payload: JSON | bytes | str) -> bytes:
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return dumps(payload).encode("utf-8")


def _loads(text: str | None) -> JSON:
    return None if text is None else json.loads(text)


# ---------------------------------------------------------------------------
# records


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """A message to publish, written to the outbox in the caller's transaction.

    ``topic`` is relative to the table's root (``events``, ``rounds``...). A mapping
    or list payload is serialised as compact JSON; bytes and str are stored as is.
    """

    topic: str
    payload: JSON | bytes | str
    qos: int = 1
    retain: bool = False
    round_id: str | None = None


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    id: int
    topic: str
    payload: bytes
    qos: int
    retain: bool
    round_id: str | None
    created_at: str
    published_at: str | None


@dataclass(frozen=True, slots=True)
class RoundRecord:
    round_id: str
    table_id: str
    seq: int
    game: str
    rules: JSON
    phase: str
    status: RoundStatus | None
    void_reason: str | None
    outcome: JSON
    #: First time the round entered each phase: ``{"open": "2026-...Z", ...}``.
    timestamps: Mapping[str, str]
    opened_at: str
    finished_at: str | None
    #: Kept forever: totals and bet count of the settled round.
    summary: JSON
    #: What is still kept: ``full``, ``no_frames`` (raw frames pruned) or ``summary``.
    detail: str

    @property
    def finished(self) -> bool:
        return self.status is not None

    def to_json(self) -> dict[str, JSON]:
        return {
            "round_id": self.round_id,
            "table_id": self.table_id,
            "seq": self.seq,
            "game": self.game,
            "rules": self.rules,
            "phase": self.phase,
            "status": self.status,
            "void_reason": self.void_reason,
            "outcome": self.outcome,
            "timestamps": dict(self.timestamps),
            "opened_at": self.opened_at,
            "finished_at": self.finished_at,
            "summary": self.summary,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class BetRecord:
    round_id: str
    bet_id: str
    seat: int
    bet_type: str
    selection: JSON
    stake: int
    status: Literal["placed", "cancelled"]
    placed_at: str
    cancelled_at: str | None

    def content(self) -> tuple[int, str, str, int]:
        return (self.seat, self.bet_type, canonical_json(self.selection), self.stake)

    def to_bet(self) -> Any:
        """The rules core's :class:`~firmware_host.games.base.Bet`."""
        from .games.base import Bet

        return Bet(self.bet_id, self.seat, self.bet_type, self.selection, self.stake)

    def to_json(self) -> dict[str, JSON]:
        return {
            "bet_id": self.bet_id,
            "seat": self.seat,
            "bet_type": self.bet_type,
            "selection": self.selection,
            "stake": self.stake,
            "status": self.status,
            "placed_at": self.placed_at,
            "cancelled_at": self.cancelled_at,
        }


@dataclass(frozen=True, slots=True)
class RawFrame:
    id: int
    round_id: str | None
    device: str
    direction: Literal["rx", "tx"]
    data: bytes
    at: str

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "round_id": self.round_id,
            "device": self.device,
            "direction": self.direction,
            "hex": self.data.hex(),
            "at": self.at,
        }


@dataclass(frozen=True, slots=True)
class RecalledRound:
    """One round as the console's ``recall`` shows it."""

    round: RoundRecord
    bets: tuple[BetRecord, ...]
    settlement: JSON  # the published payload, or None (in flight, or pruned)
    frames: tuple[RawFrame, ...]

    def to_json(self) -> dict[str, JSON]:
        return {
            "round": self.round.to_json(),
            "bets": [b.to_json() for b in self.bets],
            "settlement": self.settlement,
            "frames": [f.to_json() for f in self.frames],
        }


@dataclass(frozen=True, slots=True)
class JackpotHit:
    """A jackpot hit to record (step 1 of 2; :meth:`Journal.confirm_jackpot_payment` is 2)."""

    hit_id: str
    amount: int
    round_id: str | None = None
    details: JSON = None
    name: str = DEFAULT_JACKPOT


@dataclass(frozen=True, slots=True)
class JackpotHitRecord:
    hit_id: str
    name: str
    round_id: str | None
    amount: int
    details: JSON
    recorded_at: str
    paid_at: str | None
    payment: JSON

    @property
    def paid(self) -> bool:
        return self.paid_at is not None

    def to_json(self) -> dict[str, JSON]:
        return {
            "hit_id": self.hit_id,
            "name": self.name,
            "round_id": self.round_id,
            "amount": self.amount,
            "details": self.details,
            "recorded_at": self.recorded_at,
            "paid_at": self.paid_at,
            "payment": self.payment,
        }


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    at: str
    kind: str
    data: JSON
    prev_hash: str
    hash: str

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "at": self.at,
            "kind": self.kind,
            "data": self.data,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


@dataclass(frozen=True, slots=True)
class ChainReport:
    ok: bool
    checked: int
    #: Id of the first row that breaks the chain (None when ``ok``).
    first_bad_id: int | None = None
    reason: str = ""
    head_hash: str = GENESIS_HASH

    def __str__(self) -> str:
        if self.ok:
            return f"event log intact: {self.checked} row(s), head {self.head_hash}"
        return f"event log broken at row {self.first_bad_id}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Fault:
    code: str
    message: str
    data: JSON
    set_at: str
    cleared_at: str | None = None
    cleared_by: str | None = None
    clear_reason: str | None = None

    def to_json(self) -> dict[str, JSON]:
        return {
            "code": self.code,
            "message": self.message,
            "data": self.data,
            "set_at": self.set_at,
            "cleared_at": self.cleared_at,
            "cleared_by": self.cleared_by,
            "clear_reason": self.clear_reason,
        }


# ---------------------------------------------------------------------------
# schema

_SCHEMA_V1 = """
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE rounds (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  round_id TEXT NOT NULL UNIQUE,
  table_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  game TEXT NOT NULL,
  rules TEXT NOT NULL,
  phase TEXT NOT NULL,
  status TEXT CHECK (status IN ('settled', 'void')),
  void_reason TEXT,
  outcome TEXT,
  timestamps TEXT NOT NULL,
  opened_at TEXT NOT NULL,
  finished_at TEXT,
  summary TEXT,
  detail TEXT NOT NULL DEFAULT 'full' CHECK (detail IN ('full', 'no_frames', 'summary')),
  UNIQUE (table_id, seq),
  CHECK ((status IS NULL) = (finished_at IS NULL))
) STRICT;
CREATE INDEX rounds_in_flight ON rounds(id) WHERE status IS NULL;
CREATE INDEX rounds_finished ON rounds(id) WHERE status IS NOT NULL;
CREATE INDEX rounds_detail ON rounds(detail, id);

CREATE TABLE bets (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  round_id TEXT NOT NULL REFERENCES rounds(round_id),
  bet_id TEXT NOT NULL,
  seat INTEGER NOT NULL,
  bet_type TEXT NOT NULL,
  selection TEXT NOT NULL,
  stake INTEGER NOT NULL CHECK (stake > 0),
  status TEXT NOT NULL CHECK (status IN ('placed', 'cancelled')),
  placed_at TEXT NOT NULL,
  cancelled_at TEXT,
  UNIQUE (round_id, bet_id)
) STRICT;

CREATE TABLE raw_frames (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  round_id TEXT REFERENCES rounds(round_id),
  device TEXT NOT NULL,
  direction TEXT NOT NULL CHECK (direction IN ('rx', 'tx')),
  data BLOB NOT NULL,
  at TEXT NOT NULL
) STRICT;
CREATE INDEX raw_frames_round ON raw_frames(round_id);

CREATE TABLE settlements (
  round_id TEXT PRIMARY KEY REFERENCES rounds(round_id),
  status TEXT NOT NULL CHECK (status IN ('settled', 'void')),
  payload TEXT NOT NULL,
  outbox_id INTEGER NOT NULL,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  payload BLOB NOT NULL,
  qos INTEGER NOT NULL CHECK (qos IN (0, 1, 2)),
  retain INTEGER NOT NULL CHECK (retain IN (0, 1)),
  round_id TEXT,
  created_at TEXT NOT NULL,
  published_at TEXT
) STRICT;
CREATE INDEX outbox_pending ON outbox(id) WHERE published_at IS NULL;

CREATE TABLE jackpot (
  name TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  round_id TEXT,
  updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE jackpot_hits (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hit_id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  round_id TEXT,
  amount INTEGER NOT NULL CHECK (amount >= 0),
  details TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  paid_at TEXT,
  payment TEXT
) STRICT;
CREATE INDEX jackpot_hits_unpaid ON jackpot_hits(id) WHERE paid_at IS NULL;

CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  kind TEXT NOT NULL,
  data TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
) STRICT;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;

CREATE TABLE faults (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  data TEXT NOT NULL,
  set_at TEXT NOT NULL,
  cleared_at TEXT,
  cleared_by TEXT,
  clear_reason TEXT
) STRICT;
CREATE UNIQUE INDEX faults_active ON faults(code) WHERE cleared_at IS NULL;
"""

#: ``MIGRATIONS[n]`` upgrades a journal from schema version ``n`` to ``n + 1``.
#: Version 0 is an empty file. Append, never edit, once a version has shipped.
MIGRATIONS: tuple[str, ...] = (_SCHEMA_V1,)
SCHEMA_VERSION = len(MIGRATIONS)


# ---------------------------------------------------------------------------
# configuration

JOURNAL_SPECS: dict[str, FieldSpec] = {
    "path": FieldSpec("str", "/var/lib/tablectl/journal.sqlite3", doc="journal file (SQLite)"),
    "raw_frame_rounds": FieldSpec(
        "int",
        100,
        doc="finished rounds whose raw device frames are kept (at least 10)",
        range=(10, 10**7),
        cite="GLI-11 game recall: last 10 games",
    ),
    "full_rounds": FieldSpec(
        "int",
        10000,
        doc="finished rounds whose bets and settlement payload are kept in full",
        range=(10, 10**9),
    ),
    "published_outbox_keep": FieldSpec(
        "int", 1000, doc="published outbox entries kept after publication", range=(0, 10**9)
    ),
    "integrity_check": FieldSpec(
        "str",
        "quick",
        doc="SQLite check when the journal is opened",
        choices=("quick", "full", "none"),
    ),
}


@dataclass(frozen=True, slots=True)
class JournalSettings:
    path: str = "/var/lib/tablectl/journal.sqlite3"
    raw_frame_rounds: int = 100
    full_rounds: int = 10000
    published_outbox_keep: int = 1000
    integrity_check: str = "quick"

    def open(self, *, clock: Callable[[], datetime] = utc_now) -> Journal:
        return Journal(
            self.path,
            raw_frame_rounds=self.raw_frame_rounds,
            full_rounds=self.full_rounds,
            published_outbox_keep=self.published_outbox_keep,
            integrity_check=self.integrity_check,
            clock=clock,
        )


def _validate_section(data: Any, path: str, errors: list[str]) -> JournalSettings | None:
    n = len(errors)
    vals = validate_fields(JOURNAL_SPECS, data, path, errors)
    if len(errors) > n:
        return None
    if vals["full_rounds"] < vals["raw_frame_rounds"]:
        errors.append(
            f"{path}.full_rounds: {vals['full_rounds']} is below raw_frame_rounds "
            f"{vals['raw_frame_rounds']} (a round kept with its frames must keep its bets)"
        )
        return None
    if not vals["path"]:
        errors.append(f"{path}.path: must not be empty")
        return None
    return JournalSettings(**vals)


register_section("journal", _validate_section)


# ---------------------------------------------------------------------------
# the journal


@dataclass
class _Latency:
    """Commit latencies of the last operations, for ``get_status()`` and the bench."""

    samples: deque[float] = field(default_factory=lambda: deque(maxlen=2048))
    count: int = 0
    max_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)
        self.count += 1
        self.max_s = max(self.max_s, seconds)

    def summary(self) -> dict[str, float | int]:
        s = sorted(self.samples)
        if not s:
            return {"count": 0}
        return {
            "count": self.count,
            "p50_ms": round(s[len(s) // 2] * 1e3, 3),
            "p99_ms": round(s[min(len(s) - 1, (len(s) * 99) // 100)] * 1e3, 3),
            "max_ms": round(self.max_s * 1e3, 3),
        }


_ROUND_COLS = (
    "round_id, table_id, seq, game, rules, phase, status, void_reason, outcome, "
    "timestamps, opened_at, finished_at, summary, detail"
)
_BET_COLS = "round_id, bet_id, seat, bet_type, selection, stake, status, placed_at, cancelled_at"
_OUTBOX_COLS = "id, topic, payload, qos, retain, round_id, created_at, published_at"
_HIT_COLS = "hit_id, name, round_id, amount, details, recorded_at, paid_at, payment"
_FAULT_COLS = "code, message, data, set_at, cleared_at, cleared_by, clear_reason"


def _round(row: sqlite3.Row) -> RoundRecord:
    return RoundRecord(
        round_id=row[0],
        table_id=row[1],
        seq=row[2],
        game=row[3],
        rules=_loads(row[4]),
        phase=row[5],
        status=row[6],
        void_reason=row[7],
        outcome=_loads(row[8]),
        timestamps=_loads(row[9]),
        opened_at=row[10],
        finished_at=row[11],
        summary=_loads(row[12]),
        detail=row[13],
    )


def _bet(row: sqlite3.Row) -> BetRecord:
    return BetRecord(row[0], row[1], row[2], row[3], _loads(row[4]), row[5], row[6], row[7], row[8])


def _outbox(row: sqlite3.Row) -> OutboxEntry:
    return OutboxEntry(row[0], row[1], bytes(row[2]), row[3], bool(row[4]), row[5], row[6], row[7])


def _hit(row: sqlite3.Row) -> JackpotHitRecord:
    return JackpotHitRecord(
        row[0], row[1], row[2], row[3], _loads(row[4]), row[5], row[6], _loads(row[7])
    )


def _fault(row: sqlite3.Row) -> Fault:
    return Fault(row[0], row[1], _loads(row[2]), row[3], row[4], row[5], row[6])


class Journal:
    """The table's journal. Not thread-safe: use it from one thread (the event loop).

    Every public method that writes is one atomic transaction. Methods taking
    ``outbox=`` write those messages in the same transaction, so a lifecycle event
    is published if and only if the change it announces is committed.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        raw_frame_rounds: int = 100,
        full_rounds: int = 10000,
        published_outbox_keep: int = 1000,
        integrity_check: str = "quick",
        clock: Callable[[], datetime] = utc_now,
        readonly: bool = False,
    ) -> None:
        if raw_frame_rounds < 10:
            raise ValueError("raw_frame_rounds must be at least 10 (recall of the last 10 games)")
        if full_rounds < raw_frame_rounds:
            raise ValueError("full_rounds must be at least raw_frame_rounds")
        self.path = str(path)
        self.raw_frame_rounds = raw_frame_rounds
        self.full_rounds = full_rounds
        self.published_outbox_keep = published_outbox_keep
        self.readonly = readonly
        self._clock = clock
        self._listeners: list[Callable[[], None]] = []
        self._latency: dict[str, _Latency] = {}
        self._outbox_written = False
        if readonly:
            uri = Path(self.path).resolve().as_uri() + "?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=5.0)
        else:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=5.0)
        try:
            self._setup(integrity_check)
        except BaseException:
            self._db.close()
            raise

    # -- lifecycle -------------------------------------------------------------
    def _setup(self, integrity_check: str) -> None:
        db = self._db
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA busy_timeout = 5000")
        if not self.readonly:
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise JournalCorrupt(f"{self.path}: cannot switch to WAL mode (got {mode})")
            db.execute("PRAGMA synchronous = FULL")
        if integrity_check != "none":
            pragma = "quick_check" if integrity_check == "quick" else "integrity_check"
            try:
                rows = [r[0] for r in db.execute(f"PRAGMA {pragma}(5)")]
            except sqlite3.DatabaseError as exc:
                raise JournalCorrupt(f"{self.path}: {exc}") from exc
            if rows != ["ok"]:
                raise JournalCorrupt(f"{self.path}: integrity check failed: {'; '.join(rows)}")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise JournalCorrupt(
                f"{self.path}: journal schema version {version} is newer than this software "
                f"understands (up to {SCHEMA_VERSION})",
                code="JOURNAL_TOO_NEW",
            )
        if version < SCHEMA_VERSION:
            if self.readonly:
                raise JournalCorrupt(
                    f"{self.path}: journal schema version {version} needs an upgrade; "
                    "open it read-write once (start the daemon)",
                    code="JOURNAL_NEEDS_UPGRADE",
                )
            self._migrate(version)

    def _migrate(self, version: int) -> None:
        while version < SCHEMA_VERSION:
            script = MIGRATIONS[version]
            version += 1
            try:
                self._db.executescript(
                    f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {version};\nCOMMIT;"
                )
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            log.info("journal %s: schema upgraded to version %d", self.path, version)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def add_outbox_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after each commit that queued outbox entries (wakes publishers)."""
        self._listeners.append(callback)

    def remove_outbox_listener(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(callback)

    # -- transactions ------------------------------------------------------------
    def _now(self, at: datetime | None = None) -> str:
        return iso_utc(at if at is not None else self._clock())

    @contextlib.contextmanager
    def _tx(self, op: str, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` transaction; rolled back on any exception.

        ``durable=False`` commits without its own fsync (``synchronous=NORMAL``): for
        writes whose loss on power failure is harmless (see the module docstring).
        """
        if self.readonly:
            raise JournalError("the journal is open read-only", code="JOURNAL_READONLY")
        db = self._db
        if not durable:
            db.execute("PRAGMA synchronous = NORMAL")
        t0 = time.perf_counter()
        self._outbox_written = False
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            self._outbox_written = False
            raise
        finally:
            if not durable:
                db.execute("PRAGMA synchronous = FULL")
        self._latency.setdefault(op, _Latency()).add(time.perf_counter() - t0)
        if self._outbox_written:
            self._outbox_written = False
            for cb in list(self._listeners):
                try:
                    cb()
                except Exception:  # a listener must never undo a committed transaction
                    log.exception("outbox listener failed")

    def commit_latency(self) -> dict[str, dict[str, float | int]]:
        """Per operation: count, p50/p99/max commit time in ms (transaction begin to commit)."""
        return {op: lat.summary() for op, lat in sorted(self._latency.items())}

    def _enqueue(
        self, db: sqlite3.Connection, messages: Iterable[OutboxMessage], now: str
    ) -> list[int]:
        ids = []
        for m in messages:
            check_relative_topic(m.topic)
            if m.qos not in (0, 1, 2):
                raise ValueError(f"qos must be 0, 1 or 2, got {m.qos!r}")
            cur = db.execute(
                "INSERT INTO outbox (topic, payload, qos, retain, round_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (m.topic, _payload_bytes(m.payload), m.qos, int(m.retain), m.round_id, now),
            )
            ids.append(int(cur.lastrowid or 0))
            self._outbox_written = True
        return ids

    def _append_event(self, db: sqlite3.Connection, kind: str, data: JSON, now: str) -> Event:
        if not kind:
            raise ValueError("event kind must not be empty")
        data = json.loads(canonical_json(data))  # refuses what cannot be hashed canonically
        row = db.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        prev_id, prev_hash = (row[0], row[1]) if row else (0, GENESIS_HASH)
        event_id = prev_id + 1
        h = event_hash(prev_hash, event_id, now, kind, data)
        db.execute(
            "INSERT INTO events (id, at, kind, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)",
            (event_id, now, kind, canonical_json(data), prev_hash, h),
        )
        return Event(event_id, now, kind, data, prev_hash, h)

    def _get_round(self, db: sqlite3.Connection, round_id: str) -> RoundRecord:
        row = db.execute(
            f"SELECT {_ROUND_COLS} FROM rounds WHERE round_id = ?", (round_id,)
        ).fetchone()
        if row is None:
            raise RoundNotFound(f"no round {round_id!r} in the journal")
        return _round(row)

    def _open_round_for_change(
        self, db: sqlite3.Connection, round_id: str, what: str
    ) -> RoundRecord:
        rnd = self._get_round(db, round_id)
        if rnd.finished:
            raise RoundFinished(
                f"round {round_id} is already {rnd.status}"
                + (f" ({rnd.void_reason})" if rnd.void_reason else "")
                + f"; cannot {what}"
            )
        return rnd

    # -- rounds ------------------------------------------------------------------
    def next_seq(self, table_id: str) -> int:
        row = self._db.execute(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM rounds WHERE table_id = ?", (table_id,)
        ).fetchone()
        return int(row[0])

    def open_round(
        self,
        table_id: str,
        game: str,
        rules: JSON,
        *,
        round_id: str | None = None,
        seq: int | None = None,
        phase: str = "open",
        at: datetime | None = None,
        allow_concurrent: bool = False,
        outbox: Sequence[OutboxMessage] = (),
    ) -> RoundRecord:
        """Start a round. ``seq`` defaults to the table's next sequence number.

        ``round_id`` defaults to ``<table_id>-<seq:06d>-<8 hex>``: the random tail keeps
        ids unique on the floor even if a journal is ever lost and seq restarts.
        Refuses (:class:`RoundInFlight`) while another round of the table is unfinished
        unless ``allow_concurrent``.
        """
        now = self._now(at)
        with self._tx("open_round") as db:
            if not allow_concurrent:
                row = db.execute(
                    "SELECT round_id FROM rounds WHERE table_id = ? AND status IS NULL LIMIT 1",
                    (table_id,),
                ).fetchone()
                if row is not None:
                    raise RoundInFlight(f"round {row[0]} of table {table_id} is not finished")
            if seq is None:
                seq = int(
                    db.execute(
                        "SELECT COALESCE(MAX(seq), 0) + 1 FROM rounds WHERE table_id = ?",
                        (table_id,),
                    ).fetchone()[0]
                )
            if round_id is None:
                round_id = f"{table_id}-{seq:06d}-{secrets.token_hex(4)}"
            try:
                db.execute(
                    "INSERT INTO rounds (round_id, table_id, seq, game, rules, phase, timestamps, "
                    "opened_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (round_id, table_id, seq, game, dumps(rules), phase, dumps({phase: now}), now),
                )
            except sqlite3.IntegrityError as exc:
                raise RoundExists(
                    f"round {round_id!r} or seq {seq} of table {table_id} already exists"
                ) from exc
            self._enqueue(db, outbox, now)
            return self._get_round(db, round_id)

    def round(self, round_id: str) -> RoundRecord:
        return self._get_round(self._db, round_id)

    def last_round(self, table_id: str | None = None) -> RoundRecord | None:
        if table_id is None:
            row = self._db.execute(
                f"SELECT {_ROUND_COLS} FROM rounds ORDER BY id DESC LIMIT 1"
            ).fetchone()
        else:
            row = self._db.execute(
                f"SELECT {_ROUND_COLS} FROM rounds WHERE table_id = ? ORDER BY id DESC LIMIT 1",
                (table_id,),
            ).fetchone()
        return None if row is None else _round(row)

    def set_phase(
        self,
        round_id: str,
        phase: str,
        *,
        outcome: JSON = None,
        at: datetime | None = None,
        outbox: Sequence[OutboxMessage] = (),
    ) -> RoundRecord:
        """Move an unfinished round to ``phase`` (and record the outcome, when given).

        The outcome recorded here is what lets a restarted daemon resume a round whose
        result was read before the crash. ``settled`` and ``void`` are set only by
        :meth:`settle_round` and :meth:`void_round`.
        """
        if phase in ("settled", "void"):
            raise ValueError(
                f"use settle_round/void_round to finish a round, not set_phase({phase!r})"
            )
        now = self._now(at)
        with self._tx("set_phase") as db:
            rnd = self._open_round_for_change(db, round_id, f"move it to phase {phase!r}")
            stamps = dict(rnd.timestamps)
            stamps.setdefault(phase, now)
            if outcome is None:
                db.execute(
                    "UPDATE rounds SET phase = ?, timestamps = ? WHERE round_id = ?",
                    (phase, dumps(stamps), round_id),
                )
            else:
                db.execute(
                    "UPDATE rounds SET phase = ?, timestamps = ?, outcome = ? WHERE round_id = ?",
                    (phase, dumps(stamps), dumps(outcome), round_id),
                )
            self._enqueue(db, outbox, now)
            return self._get_round(db, round_id)

    def _finish(
        self,
        op: str,
        round_id: str,
        status: RoundStatus,
        payload: Mapping[str, JSON],
        *,
        outcome: JSON,
        void_reason: str | None,
        jackpot_state: Mapping[str, JSON] | None,
        jackpot_name: str,
        jackpot_hits: Sequence[JackpotHit],
        events: Sequence[tuple[str, JSON]],
        outbox: Sequence[OutboxMessage],
        at: datetime | None,
        raw_frames: Sequence[tuple[str, Literal["rx", "tx"], bytes]] = (),
    ) -> int:
        if not isinstance(payload, Mapping):
            raise TypeError("the round payload must be a JSON object (mapping)")
        if payload.get("round_id", round_id) != round_id:
            raise ValueError(f"payload round_id {payload.get('round_id')!r} is not {round_id!r}")
        if payload.get("status", status) != status:
            raise ValueError(f"payload status {payload.get('status')!r} is not {status!r}")
        now = self._now(at)
        body = dumps(payload)
        with self._tx(op) as db:
            rnd = self._open_round_for_change(db, round_id, "settle or void it again")
            stamps = dict(rnd.timestamps)
            stamps.setdefault(status, now)
            final_outcome = outcome if outcome is not None else rnd.outcome
            bets = payload.get("bets")
            summary: dict[str, JSON] = {"bets": len(bets) if isinstance(bets, list) else 0}
            for key in ("totals", "jackpot"):
                if key in payload:
                    summary[key] = payload[key]
            cur = db.execute(
                "UPDATE rounds SET phase = ?, status = ?, void_reason = ?, outcome = ?, "
                "timestamps = ?, finished_at = ?, summary = ? "
                "WHERE round_id = ? AND status IS NULL",
                (
                    status,
                    status,
                    void_reason,
                    None if final_outcome is None else dumps(final_outcome),
                    dumps(stamps),
                    now,
                    dumps(summary),
                    round_id,
                ),
            )
            if cur.rowcount != 1:  # cannot happen inside BEGIN IMMEDIATE; belt and braces
                raise RoundFinished(f"round {round_id} changed under the transaction")
            (outbox_id,) = self._enqueue(
                db, [OutboxMessage(ROUNDS_TOPIC, body.encode("utf-8"), 1, False, round_id)], now
            )
            db.execute(
                "INSERT INTO settlements (round_id, status, payload, outbox_id, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (round_id, status, body, outbox_id, now),
            )
            for hit in jackpot_hits:
                self._record_hit(db, hit, now)
            if jackpot_state is not None:
                self._save_jackpot(db, jackpot_name, jackpot_state, round_id, now)
            if status == "void":
                self._append_event(
                    db, "round_void", {"round_id": round_id, "reason": void_reason}, now
                )
            for kind, data in events:
                self._append_event(db, kind, data, now)
            self._enqueue(db, outbox, now)
            self._insert_frames(db, ((round_id, *f) for f in raw_frames), now)
        self._retain()
        return outbox_id

    def settle_round(
        self,
        round_id: str,
        outcome: JSON,
        payload: Mapping[str, JSON],
        jackpot_state: Mapping[str, JSON] | None = None,
        *,
        jackpot_name: str = DEFAULT_JACKPOT,
        jackpot_hits: Sequence[JackpotHit] = (),
        events: Sequence[tuple[str, JSON]] = (),
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
        raw_frames: Sequence[tuple[str, Literal["rx", "tx"], bytes]] = (),
    ) -> int:
        """Settle a round in ONE transaction; return the id of its ``rounds`` outbox entry.

        Marks the round settled with its outcome, stores ``payload`` (the round as
        published, ``firmware_host/schemas/round.json``), queues it on ``rounds``
        (QoS 1), saves ``jackpot_state`` and records ``jackpot_hits`` (step 1 of 2),
        appends ``events`` to the event log, queues ``outbox`` and keeps
        ``raw_frames`` ``(device, direction, data)``, the device frames that carried the
        result, against the round. Raises
        :class:`RoundFinished` if the round is already settled or voided, so nothing
        is ever settled twice, and :class:`RoundNotFound` for an unknown round.
        """
        return self._finish(
            "settle_round",
            round_id,
            "settled",
            payload,
            outcome=outcome,
            void_reason=None,
            jackpot_state=jackpot_state,
            jackpot_name=jackpot_name,
            jackpot_hits=jackpot_hits,
            events=events,
            outbox=outbox,
            at=at,
            raw_frames=raw_frames,
        )

    def void_round(
        self,
        round_id: str,
        reason: str,
        payload: Mapping[str, JSON],
        *,
        outcome: JSON = None,
        jackpot_state: Mapping[str, JSON] | None = None,
        jackpot_name: str = DEFAULT_JACKPOT,
        events: Sequence[tuple[str, JSON]] = (),
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
    ) -> int:
        """Void a round in ONE transaction (same guarantees as :meth:`settle_round`).

        ``payload`` is the voided round as published (bets refunded). A ``round_void``
        event with the reason is appended to the event log in the same transaction.
        """
        if not reason:
            raise ValueError("a void needs a reason")
        return self._finish(
            "void_round",
            round_id,
            "void",
            payload,
            outcome=outcome,
            void_reason=reason,
            jackpot_state=jackpot_state,
            jackpot_name=jackpot_name,
            jackpot_hits=(),
            events=events,
            outbox=outbox,
            at=at,
        )

    def in_flight_rounds(self, table_id: str | None = None) -> list[RoundRecord]:
        """Rounds neither settled nor voided, oldest first (what a restart must resolve)."""
        sql = f"SELECT {_ROUND_COLS} FROM rounds WHERE status IS NULL"
        args: tuple[str, ...] = ()
        if table_id is not None:
            sql += " AND table_id = ?"
            args = (table_id,)
        return [_round(r) for r in self._db.execute(sql + " ORDER BY id", args)]

    def settlement(self, round_id: str) -> JSON:
        """The published payload of a finished round (None if in flight or pruned)."""
        row = self._db.execute(
            "SELECT payload FROM settlements WHERE round_id = ?", (round_id,)
        ).fetchone()
        return None if row is None else json.loads(row[0])

    # -- bets ----------------------------------------------------------------------
    def place_bet(
        self,
        round_id: str,
        bet: Any,
        *,
        phases: Iterable[str] | None = None,
        at: datetime | None = None,
        outbox: Sequence[OutboxMessage] = (),
    ) -> tuple[BetRecord, bool]:
        """Record a bet (a rules-core ``Bet`` or a mapping with its five fields).

        Idempotent by ``bet_id``: the same id with the same content returns the
        existing record and ``False`` (nothing written, ``outbox`` not queued); the
        same id with different content raises :class:`BetConflict`. Returns
        ``(record, created)``. ``phases``, when given, are the phases in which the
        round accepts bets (checked in the same transaction: :class:`PhaseNotAllowed`).
        """
        if isinstance(bet, Mapping):
            bet_id, seat, bet_type = bet["bet_id"], bet.get("seat", 0), bet["bet_type"]
            selection, stake = bet.get("selection"), bet["stake"]
        else:
            bet_id, seat, bet_type, selection, stake = (
                bet.bet_id,
                bet.seat,
                bet.bet_type,
                bet.selection,
                bet.stake,
            )
        if not isinstance(bet_id, str) or not bet_id:
            raise ValueError("a journaled bet needs a non-empty bet_id")
        if isinstance(stake, bool) or not isinstance(stake, int) or stake <= 0:
            raise ValueError(f"stake must be a positive integer, got {stake!r}")
        if isinstance(seat, bool) or not isinstance(seat, int):
            raise ValueError(f"seat must be an integer, got {seat!r}")
        sel = canonical_json(selection)
        now = self._now(at)
        with self._tx("place_bet") as db:
            row = db.execute(
                f"SELECT {_BET_COLS} FROM bets WHERE round_id = ? AND bet_id = ?",
                (round_id, bet_id),
            ).fetchone()
            if row is not None:
                existing = _bet(row)
                if existing.content() != (seat, bet_type, sel, stake):
                    raise BetConflict(
                        f"bet id {bet_id!r} is already used in round {round_id} by "
                        f"{existing.bet_type} {canonical_json(existing.selection)} "
                        f"stake {existing.stake}"
                    )
                return existing, False
            rnd = self._open_round_for_change(db, round_id, "take bets")
            if phases is not None and rnd.phase not in set(phases):
                raise PhaseNotAllowed(
                    f"round {round_id} is in phase {rnd.phase!r}: bets are not accepted"
                )
            db.execute(
                "INSERT INTO bets (round_id, bet_id, seat, bet_type, selection, stake, status, "
                "placed_at) VALUES (?, ?, ?, ?, ?, ?, 'placed', ?)",
                (round_id, bet_id, seat, bet_type, sel, stake, now),
            )
            self._enqueue(db, outbox, now)
            return BetRecord(
                round_id, bet_id, seat, bet_type, json.loads(sel), stake, "placed", now, None
            ), True

    def cancel_bet(
        self,
        round_id: str,
        bet_id: str,
        *,
        phases: Iterable[str] | None = None,
        at: datetime | None = None,
        outbox: Sequence[OutboxMessage] = (),
    ) -> tuple[BetRecord, bool]:
        """Cancel a bet; idempotent (cancelling a cancelled bet returns it and ``False``)."""
        now = self._now(at)
        with self._tx("cancel_bet") as db:
            row = db.execute(
                f"SELECT {_BET_COLS} FROM bets WHERE round_id = ? AND bet_id = ?",
                (round_id, bet_id),
            ).fetchone()
            if row is None:
                raise BetNotFound(f"no bet {bet_id!r} in round {round_id}")
            existing = _bet(row)
            if existing.status == "cancelled":
                return existing, False
            rnd = self._open_round_for_change(db, round_id, "cancel bets")
            if phases is not None and rnd.phase not in set(phases):
                raise PhaseNotAllowed(
                    f"round {round_id} is in phase {rnd.phase!r}: bets cannot be cancelled"
                )
            db.execute(
                "UPDATE bets SET status = 'cancelled', cancelled_at = ? "
                "WHERE round_id = ? AND bet_id = ?",
                (now, round_id, bet_id),
            )
            self._enqueue(db, outbox, now)
            row = db.execute(
                f"SELECT {_BET_COLS} FROM bets WHERE round_id = ? AND bet_id = ?",
                (round_id, bet_id),
            ).fetchone()
            return _bet(row), True

    def bets(self, round_id: str, *, include_cancelled: bool = True) -> list[BetRecord]:
        """A round's bets in the order they were placed."""
        sql = f"SELECT {_BET_COLS} FROM bets WHERE round_id = ?"
        if not include_cancelled:
            sql += " AND status = 'placed'"
        return [_bet(r) for r in self._db.execute(sql + " ORDER BY id", (round_id,))]

    # -- raw frames ----------------------------------------------------------------
    def add_raw_frame(
        self,
        round_id: str | None,
        device: str,
        direction: Literal["rx", "tx"],
        data: bytes,
        *,
        at: datetime | None = None,
    ) -> int:
        """Keep one raw device frame (committed without its own fsync; see the module doc)."""
        return self.add_raw_frames([(round_id, device, direction, data)], at=at)[0]

    def add_raw_frames(
        self,
        frames: Iterable[tuple[str | None, str, Literal["rx", "tx"], bytes]],
        *,
        at: datetime | None = None,
    ) -> list[int]:
        now = self._now(at)
        with self._tx("add_raw_frames", durable=False) as db:
            return self._insert_frames(db, frames, now)

    @staticmethod
    def _insert_frames(
        db: sqlite3.Connection,
        frames: Iterable[tuple[str | None, str, Literal["rx", "tx"], bytes]],
        now: str,
    ) -> list[int]:
        ids = []
        for round_id, device, direction, data in frames:
            cur = db.execute(
                "INSERT INTO raw_frames (round_id, device, direction, data, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (round_id, device, direction, bytes(data), now),
            )
            ids.append(int(cur.lastrowid or 0))
        return ids

    def raw_frames(self, round_id: str) -> list[RawFrame]:
        return [
            RawFrame(r[0], r[1], r[2], r[3], bytes(r[4]), r[5])
            for r in self._db.execute(
                "SELECT id, round_id, device, direction, data, at FROM raw_frames "
                "WHERE round_id = ? ORDER BY id",
                (round_id,),
            )
        ]

    # -- outbox --------------------------------------------------------------------
    def enqueue(self, *messages: OutboxMessage) -> list[int]:
        """Queue messages for publication on their own (one transaction); return their ids."""
        now = self._now()
        with self._tx("enqueue") as db:
            return self._enqueue(db, messages, now)

    def outbox_pending(self, limit: int = 100, *, after_id: int = 0) -> list[OutboxEntry]:
        """Unpublished entries in publication order (ascending id)."""
        return [
            _outbox(r)
            for r in self._db.execute(
                f"SELECT {_OUTBOX_COLS} FROM outbox WHERE published_at IS NULL AND id > ? "
                "ORDER BY id LIMIT ?",
                (after_id, limit),
            )
        ]

    def replay_rounds(
        self, table_id: str, from_seq: int, to_seq: int | None = None, *, limit: int = 1000
    ) -> list[int]:
        """Queue the stored payloads of finished rounds ``from_seq..to_seq`` again, in seq order.

        For a floor system that found a gap in ``seq`` (a broker that lost messages it
        had acknowledged): the same bytes under the same ``round_id``, so it is just
        another duplicate for consumers that already have them. Rounds whose payload was
        pruned (older than ``full_rounds``) are skipped. Returns the new outbox ids.
        """
        now = self._now()
        sql = (
            "SELECT r.round_id, s.payload FROM rounds r JOIN settlements s ON s.round_id = r.round_id "
            "WHERE r.table_id = ? AND r.seq >= ?"
        )
        args: list[Any] = [table_id, from_seq]
        if to_seq is not None:
            sql += " AND r.seq <= ?"
            args.append(to_seq)
        args.append(limit)
        with self._tx("replay_rounds") as db:
            rows = db.execute(sql + " ORDER BY r.seq LIMIT ?", args).fetchall()
            msgs = [
                OutboxMessage(ROUNDS_TOPIC, text.encode("utf-8"), 1, False, rid)
                for rid, text in rows
            ]
            return self._enqueue(db, msgs, now)

    def outbox_pending_count(self) -> int:
        return int(
            self._db.execute("SELECT COUNT(*) FROM outbox WHERE published_at IS NULL").fetchone()[0]
        )

    def outbox_mark_published(self, ids: int | Iterable[int], *, at: datetime | None = None) -> int:
        """Mark entries published (after the broker's PUBACK); returns how many changed.

        Committed without its own fsync: losing a mark on power failure only means
        the entry is published again, which consumers handle (dedupe by id).
        """
        id_list = [ids] if isinstance(ids, int) else list(ids)
        if not id_list:
            return 0
        now = self._now(at)
        with self._tx("outbox_mark_published", durable=False) as db:
            n = 0
            for i in id_list:
                n += db.execute(
                    "UPDATE outbox SET published_at = ? WHERE id = ? AND published_at IS NULL",
                    (now, i),
                ).rowcount
            return n

    def outbox_entry(self, entry_id: int) -> OutboxEntry | None:
        row = self._db.execute(
            f"SELECT {_OUTBOX_COLS} FROM outbox WHERE id = ?", (entry_id,)
        ).fetchone()
        return None if row is None else _outbox(row)

    # -- recall and retention ----------------------------------------------------------
    def recall(self, n: int = 10) -> list[RecalledRound]:
        """The last ``n`` rounds (newest first) with bets, settlement payload and raw frames."""
        rows = self._db.execute(
            f"SELECT {_ROUND_COLS} FROM rounds ORDER BY id DESC LIMIT ?", (n,)
        ).fetchall()
        out = []
        for row in rows:
            rnd = _round(row)
            out.append(
                RecalledRound(
                    rnd,
                    tuple(self.bets(rnd.round_id)),
                    self.settlement(rnd.round_id),
                    tuple(self.raw_frames(rnd.round_id)),
                )
            )
        return out

    def rounds_summary(
        self, limit: int = 100, *, before_seq: int | None = None, table_id: str | None = None
    ) -> list[RoundRecord]:
        """Round rows (kept forever) newest first; page with ``before_seq``."""
        sql = f"SELECT {_ROUND_COLS} FROM rounds WHERE 1 = 1"
        args: list[Any] = []
        if table_id is not None:
            sql += " AND table_id = ?"
            args.append(table_id)
        if before_seq is not None:
            sql += " AND seq < ?"
            args.append(before_seq)
        args.append(limit)
        return [_round(r) for r in self._db.execute(sql + " ORDER BY id DESC LIMIT ?", args)]

    def _retain(self) -> None:
        """Prune raw frames, full detail and published outbox entries past the windows."""
        db = self._db

        def nth_finished(n: int) -> int | None:
            row = db.execute(
                "SELECT id FROM rounds WHERE status IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET ?",
                (n - 1,),
            ).fetchone()
            return None if row is None else int(row[0])

        frames_edge = nth_finished(self.raw_frame_rounds)
        full_edge = nth_finished(self.full_rounds)
        pub = db.execute("SELECT MAX(id) FROM outbox WHERE published_at IS NOT NULL").fetchone()[0]
        if frames_edge is None and full_edge is None and pub is None:
            return
        with self._tx("retention", durable=False):
            if frames_edge is not None:
                old = [
                    r[0]
                    for r in db.execute(
                        "SELECT round_id FROM rounds WHERE detail = 'full' AND id < ? "
                        "AND status IS NOT NULL",
                        (frames_edge,),
                    )
                ]
                for rid in old:
                    db.execute("DELETE FROM raw_frames WHERE round_id = ?", (rid,))
                    db.execute("UPDATE rounds SET detail = 'no_frames' WHERE round_id = ?", (rid,))
                edge_opened = db.execute(
                    "SELECT opened_at FROM rounds WHERE id = ?", (frames_edge,)
                ).fetchone()[0]
                db.execute(
                    "DELETE FROM raw_frames WHERE round_id IS NULL AND at < ?", (edge_opened,)
                )
            if full_edge is not None:
                old = [
                    r[0]
                    for r in db.execute(
                        "SELECT round_id FROM rounds WHERE detail IN ('full', 'no_frames') "
                        "AND id < ? AND status IS NOT NULL",
                        (full_edge,),
                    )
                ]
                for rid in old:
                    db.execute("DELETE FROM raw_frames WHERE round_id = ?", (rid,))
                    db.execute("DELETE FROM bets WHERE round_id = ?", (rid,))
                    db.execute("DELETE FROM settlements WHERE round_id = ?", (rid,))
                    db.execute("UPDATE rounds SET detail = 'summary' WHERE round_id = ?", (rid,))
            if pub is not None:
                db.execute(
                    "DELETE FROM outbox WHERE published_at IS NOT NULL AND id <= ?",
                    (int(pub) - self.published_outbox_keep,),
                )

    # -- jackpot ---------------------------------------------------------------------
    def _save_jackpot(
        self,
        db: sqlite3.Connection,
        name: str,
        state: Mapping[str, JSON],
        round_id: str | None,
        now: str,
    ) -> None:
        db.execute(
            "INSERT INTO jackpot (name, state, round_id, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET state = excluded.state, round_id = excluded.round_id, "
            "updated_at = excluded.updated_at",
            (name, dumps(dict(state)), round_id, now),
        )

    def _record_hit(self, db: sqlite3.Connection, hit: JackpotHit, now: str) -> JackpotHitRecord:
        if isinstance(hit.amount, bool) or not isinstance(hit.amount, int) or hit.amount < 0:
            raise ValueError(
                f"jackpot hit amount must be a non-negative integer, got {hit.amount!r}"
            )
        row = db.execute(
            f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE hit_id = ?", (hit.hit_id,)
        ).fetchone()
        if row is not None:
            existing = _hit(row)
            same = (
                existing.name,
                existing.round_id,
                existing.amount,
                canonical_json(existing.details),
            ) == (
                hit.name,
                hit.round_id,
                hit.amount,
                canonical_json(hit.details),
            )
            if not same:
                raise JackpotHitConflict(
                    f"jackpot hit {hit.hit_id!r} already recorded with other content"
                )
            return existing
        db.execute(
            "INSERT INTO jackpot_hits (hit_id, name, round_id, amount, details, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (hit.hit_id, hit.name, hit.round_id, hit.amount, dumps(hit.details), now),
        )
        self._append_event(
            db,
            "jackpot_hit",
            {
                "hit_id": hit.hit_id,
                "name": hit.name,
                "round_id": hit.round_id,
                "amount": hit.amount,
            },
            now,
        )
        return JackpotHitRecord(
            hit.hit_id, hit.name, hit.round_id, hit.amount, hit.details, now, None, None
        )

    def jackpot_state(self, name: str = DEFAULT_JACKPOT) -> JSON:
        """The last saved state (meters, parameters...) of jackpot ``name``, or None."""
        row = self._db.execute("SELECT state FROM jackpot WHERE name = ?", (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    def save_jackpot_state(
        self,
        state: Mapping[str, JSON],
        *,
        name: str = DEFAULT_JACKPOT,
        events: Sequence[tuple[str, JSON]] = (),
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
    ) -> None:
        """Save a jackpot state on its own (parameter change, adjustment), with its events."""
        now = self._now(at)
        with self._tx("save_jackpot_state") as db:
            self._save_jackpot(db, name, state, None, now)
            for kind, data in events:
                self._append_event(db, kind, data, now)
            self._enqueue(db, outbox, now)

    def record_jackpot_hit(
        self,
        hit: JackpotHit,
        *,
        state: Mapping[str, JSON] | None = None,
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
    ) -> JackpotHitRecord:
        """Step 1 of a hit: record it (and the meter reset in ``state``) atomically.

        Idempotent by ``hit_id`` (same content: returns the existing record).
        """
        now = self._now(at)
        with self._tx("record_jackpot_hit") as db:
            rec = self._record_hit(db, hit, now)
            if rec.recorded_at == now and state is not None:
                self._save_jackpot(db, hit.name, state, hit.round_id, now)
            self._enqueue(db, outbox, now)
            return rec

    def confirm_jackpot_payment(
        self,
        hit_id: str,
        payment: JSON = None,
        *,
        state: Mapping[str, JSON] | None = None,
        outbox: Sequence[OutboxMessage] = (),
        at: datetime | None = None,
    ) -> tuple[JackpotHitRecord, bool]:
        """Step 2 of a hit: payment confirmed. Idempotent: returns ``(record, changed)``."""
        now = self._now(at)
        with self._tx("confirm_jackpot_payment") as db:
            row = db.execute(
                f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE hit_id = ?", (hit_id,)
            ).fetchone()
            if row is None:
                raise JackpotHitNotFound(f"no jackpot hit {hit_id!r}")
            existing = _hit(row)
            if existing.paid:
                return existing, False
            db.execute(
                "UPDATE jackpot_hits SET paid_at = ?, payment = ? WHERE hit_id = ?",
                (now, dumps(payment), hit_id),
            )
            if state is not None:
                self._save_jackpot(db, existing.name, state, existing.round_id, now)
            self._append_event(
                db,
                "jackpot_paid",
                {"hit_id": hit_id, "amount": existing.amount, "payment": payment},
                now,
            )
            self._enqueue(db, outbox, now)
            row = db.execute(
                f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE hit_id = ?", (hit_id,)
            ).fetchone()
            return _hit(row), True

    def jackpot_hits(self, limit: int = 25, *, name: str | None = None) -> list[JackpotHitRecord]:
        """The last ``limit`` hits, newest first."""
        sql = f"SELECT {_HIT_COLS} FROM jackpot_hits"
        args: list[Any] = []
        if name is not None:
            sql += " WHERE name = ?"
            args.append(name)
        args.append(limit)
        return [_hit(r) for r in self._db.execute(sql + " ORDER BY id DESC LIMIT ?", args)]

    def unpaid_jackpot_hits(self) -> list[JackpotHitRecord]:
        """Hits recorded but not confirmed paid, oldest first (to finish after a restart)."""
        return [
            _hit(r)
            for r in self._db.execute(
                f"SELECT {_HIT_COLS} FROM jackpot_hits WHERE paid_at IS NULL ORDER BY id"
            )
        ]

    # -- event log -------------------------------------------------------------------
    def append_event(
        self,
        kind: str,
        data: JSON = None,
        *,
        at: datetime | None = None,
        outbox: Sequence[OutboxMessage] = (),
    ) -> Event:
        """Append one event to the hash-chained audit log (power up, config change...)."""
        now = self._now(at)
        with self._tx("append_event") as db:
            ev = self._append_event(db, kind, data, now)
            self._enqueue(db, outbox, now)
            return ev

    def events(self, limit: int = 50, *, after_id: int = 0, kind: str | None = None) -> list[Event]:
        """Events after ``after_id`` in order; with ``after_id=0`` the *last* ``limit`` events."""
        cols = "SELECT id, at, kind, data, prev_hash, hash FROM events"
        where, args = "1 = 1", []
        if kind is not None:
            where += " AND kind = ?"
            args.append(kind)
        if after_id:
            sql = f"{cols} WHERE {where} AND id > ? ORDER BY id LIMIT ?"
            rows = self._db.execute(sql, [*args, after_id, limit]).fetchall()
        else:
            sql = f"{cols} WHERE {where} ORDER BY id DESC LIMIT ?"
            rows = self._db.execute(sql, [*args, limit]).fetchall()[::-1]
        return [Event(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]

    def verify_chain(self) -> ChainReport:
        """Recompute the event chain; report the first row that breaks it and why."""
        prev_id, prev_hash, checked = 0, GENESIS_HASH, 0
        for row_id, at, kind, data_text, stored_prev, stored_hash in self._db.execute(
            "SELECT id, at, kind, data, prev_hash, hash FROM events ORDER BY id"
        ):
            if row_id != prev_id + 1:
                missing = (
                    f"row {prev_id + 1}"
                    if row_id == prev_id + 2
                    else f"rows {prev_id + 1}..{row_id - 1}"
                )
                return ChainReport(
                    False, checked, row_id, f"{missing} missing (deleted?)", prev_hash
                )
            if stored_prev != prev_hash:
                return ChainReport(
                    False,
                    checked,
                    row_id,
                    f"prev_hash {stored_prev[:16]}... does not match the hash of row {prev_id} "
                    f"({prev_hash[:16]}...)",
                    prev_hash,
                )
            try:
                data = json.loads(data_text)
            except (TypeError, ValueError):
                return ChainReport(False, checked, row_id, "data is not valid JSON", prev_hash)
            if canonical_json(data) != data_text:
                return ChainReport(
                    False, checked, row_id, "data is not in canonical form (edited?)", prev_hash
                )
            expect = event_hash(prev_hash, row_id, at, kind, data)
            if expect != stored_hash:
                return ChainReport(
                    False,
                    checked,
                    row_id,
                    "content does not match its hash (row edited)",
                    prev_hash,
                )
            prev_id, prev_hash = row_id, stored_hash
            checked += 1
        return ChainReport(True, checked, None, "", prev_hash)

    # -- latched faults ------------------------------------------------------------------
    def set_fault(
        self, code: str, message: str, data: JSON = None, *, at: datetime | None = None
    ) -> tuple[Fault, bool]:
        """Latch a fault (it survives restarts until cleared); idempotent: ``(fault, new)``."""
        now = self._now(at)
        with self._tx("set_fault") as db:
            row = db.execute(
                f"SELECT {_FAULT_COLS} FROM faults WHERE code = ? AND cleared_at IS NULL", (code,)
            ).fetchone()
            if row is not None:
                return _fault(row), False
            db.execute(
                "INSERT INTO faults (code, message, data, set_at) VALUES (?, ?, ?, ?)",
                (code, message, dumps(data), now),
            )
            self._append_event(
                db, "fault_latched", {"code": code, "message": message, "data": data}, now
            )
            return Fault(code, message, data, now), True

    def clear_fault(self, code: str, *, by: str, reason: str, at: datetime | None = None) -> Fault:
        """Clear a latched fault; ``by`` and ``reason`` go to the event log."""
        now = self._now(at)
        with self._tx("clear_fault") as db:
            row = db.execute(
                f"SELECT {_FAULT_COLS} FROM faults WHERE code = ? AND cleared_at IS NULL", (code,)
            ).fetchone()
            if row is None:
                raise FaultNotFound(f"no latched fault {code!r}")
            db.execute(
                "UPDATE faults SET cleared_at = ?, cleared_by = ?, clear_reason = ? "
                "WHERE code = ? AND cleared_at IS NULL",
                (now, by, reason, code),
            )
            self._append_event(db, "fault_cleared", {"code": code, "by": by, "reason": reason}, now)
            f = _fault(row)
            return Fault(f.code, f.message, f.data, f.set_at, now, by, reason)

    def active_faults(self) -> list[Fault]:
        return [
            _fault(r)
            for r in self._db.execute(
                f"SELECT {_FAULT_COLS} FROM faults WHERE cleared_at IS NULL ORDER BY id"
            )
        ]

    # -- status --------------------------------------------------------------------------
    def get_status(self) -> dict[str, JSON]:
        """A snapshot for ``status`` on the console and the daemon's health."""
        return {
            "path": self.path,
            "schema_version": self.schema_version,
            "outbox_pending": self.outbox_pending_count(),
            "in_flight_rounds": [r.round_id for r in self.in_flight_rounds()],
            "active_faults": [f.code for f in self.active_faults()],
            "commit_latency": self.commit_latency(),
        }
