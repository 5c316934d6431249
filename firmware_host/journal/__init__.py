"""The journal: the table's durable memory, in one SQLite file.

Everything the table decides is committed here *before* anyone hears of it: a
settled round is first a committed row, then an outbox entry, then an MQTT message
(``firmware_host/mqtt/`` drains the outbox). A crash at any instant leaves every
round either fully settled (round row, settlement payload, outbox entry, jackpot
state, all in one transaction) or not settled at all, and a round can never be
settled or voided twice.

One module per concern, each a part of :class:`Journal` (an object of its own with a
small interface; every part shares the one :class:`Database`):

- ``database``: the SQLite connection, pragmas, migrations (``schema``), the one
  transaction helper every other part writes through, the storage guard, ``meta`` and
  the clock (``journal.db``);
- ``outbox``: messages queued in the transaction whose change they announce
  (``journal.outbox``);
- ``chain``: the keyed hash chain, the append-only event log that also records every
  row that moves money (``journal.chain``); ``faults``: the latched faults
  (``journal.faults``); ``auditkey``: the table's audit key; ``verify``: every row
  checked against the chain (``tablectl audit verify``); ``anchor``: chain positions
  the floor holds, and what they prove;
- ``jackpot``: jackpot states and the two-step hits (``journal.jackpot``);
- ``frames``: raw device frames (``journal.frames``); ``retention``: what is kept and
  for how long (``journal.retention``);
- ``rounds``: rounds from open to settled or void, their settlement payloads, and the
  one place that numbers rounds (sequence numbers and round ids) (``journal.rounds``);
- ``bets``: the bets of a round, idempotent by id (``journal.bets``);
- ``requests``: the answer to every floor request by request id, journaled with the
  change it answers (exactly once), and two-person approvals (``journal.requests``);
- ``alerts``: integrity alerts held until acknowledged (``journal.alerts``);
- ``store``: :class:`Journal` itself, which builds the parts, and what reads across
  them (game recall, the audit, the checks against the floor, the status snapshot);
- ``storage``: storage faults (full disk, I/O error, damaged file) translated into
  coded errors and latched calmly (:class:`StorageGuard`);
- ``settings``: the ``[journal]`` configuration section.

A consumer is given the part (or parts) it uses, not the journal.

Import from here (``from firmware_host.journal import Journal``), not from the parts.
"""

from __future__ import annotations

from .alerts import SEVERITIES, AlertAcknowledged, AlertNotFound, AlertRecord, AlertStore
from .anchor import ANCHOR_TOPIC, Anchor, AnchorError, AnchorFinding
from .auditkey import AuditKey, AuditKeyError
from .bets import BetRecord, BetStore
from .chain import CHAIN_KEYED, GENESIS_HASH, AuditLog, ChainReport, Event, event_hash
from .database import Database
from .errors import (
    BetConflict,
    BetNotFound,
    FaultNotFound,
    JackpotHitConflict,
    JackpotHitNotFound,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalIOError,
    PhaseNotAllowed,
    RoundExists,
    RoundFinished,
    RoundInFlight,
    RoundNotFound,
    StorageError,
)
from .faults import Fault, FaultStore
from .frames import FrameStore, RawFrame
from .jackpot import DEFAULT_JACKPOT, JackpotHit, JackpotHitRecord, JackpotStore
from .lock import StateLock, StateLocked
from .outbox import Outbox, OutboxEntry, OutboxMessage
from .requests import RequestIdTaken, RequestRecord, RequestStore
from .retention import Retention, Windows
from .rounds import (
    ROUNDS_TOPIC,
    RoundRecord,
    RoundStatus,
    RoundStore,
    new_round_id,
    seq_of_round_id,
)
from .schema import DB_MIGRATIONS, DB_SCHEMA_VERSION
from .settings import JOURNAL_SPECS, JournalSettings
from .storage import STORAGE_CODES, StorageFault, StorageGuard
from .store import Journal, JournalOfAnotherTable, RecalledRound, TableOwner
from .verify import audit_journal
from .verify_model import AuditReport, Problem

__all__ = [
    "ANCHOR_TOPIC",
    "CHAIN_KEYED",
    "DB_MIGRATIONS",
    "DB_SCHEMA_VERSION",
    "DEFAULT_JACKPOT",
    "GENESIS_HASH",
    "JOURNAL_SPECS",
    "ROUNDS_TOPIC",
    "SEVERITIES",
    "STORAGE_CODES",
    "AlertAcknowledged",
    "AlertNotFound",
    "AlertRecord",
    "AlertStore",
    "Anchor",
    "AnchorError",
    "AnchorFinding",
    "AuditKey",
    "AuditKeyError",
    "AuditLog",
    "AuditReport",
    "BetConflict",
    "BetNotFound",
    "BetRecord",
    "BetStore",
    "ChainReport",
    "Database",
    "Event",
    "Fault",
    "FaultNotFound",
    "FaultStore",
    "FrameStore",
    "JackpotHit",
    "JackpotHitConflict",
    "JackpotHitNotFound",
    "JackpotHitRecord",
    "JackpotStore",
    "Journal",
    "JournalCorrupt",
    "JournalError",
    "JournalFull",
    "JournalIOError",
    "JournalOfAnotherTable",
    "JournalSettings",
    "Outbox",
    "OutboxEntry",
    "OutboxMessage",
    "PhaseNotAllowed",
    "Problem",
    "RawFrame",
    "RecalledRound",
    "RequestIdTaken",
    "RequestRecord",
    "RequestStore",
    "Retention",
    "RoundExists",
    "RoundFinished",
    "RoundInFlight",
    "RoundNotFound",
    "RoundRecord",
    "RoundStatus",
    "RoundStore",
    "StateLock",
    "StateLocked",
    "StorageError",
    "StorageFault",
    "StorageGuard",
    "TableOwner",
    "Windows",
    "audit_journal",
    "event_hash",
    "new_round_id",
    "seq_of_round_id",
]
