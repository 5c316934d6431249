"""The journal: the table's durable memory, in one SQLite file.

Everything the table decides is committed here *before* anyone hears of it: a
settled round is first a committed row, then an outbox entry, then an MQTT message
(``firmware_host/mqtt/`` drains the outbox). A crash at any instant leaves every
round either fully settled (round row, settlement payload, outbox entry, jackpot
state, all in one transaction) or not settled at all, and a round can never be
settled or voided twice.

One module per concern, each a part of :class:`Journal`:

- ``connection``: the SQLite connection, pragmas, migrations (``schema``) and the
  one transaction helper every other part writes through;
- ``outbox``: messages queued in the transaction whose change they announce;
- ``audit``: the keyed hash chain (the append-only event log, which also records
  every row that moves money) and the latched faults; ``auditkey``: the table's
  audit key; ``verify``: every row checked against the chain (``tablectl audit
  verify``); ``anchor``: chain positions the floor holds, and what they prove;
- ``jackpot``: jackpot states and the two-step hits;
- ``frames``: raw device frames; ``retention``: what is kept and for how long;
- ``rounds``: rounds from open to settled or void, their settlement payloads, and
  the one place that numbers rounds (sequence numbers and round ids);
- ``bets``: the bets of a round, idempotent by id;
- ``requests``: the answer to every floor request by request id, journaled with the
  change it answers (exactly once), and two-person approvals;
- ``store``: :class:`Journal` itself, game recall and the status snapshot;
- ``storage``: storage faults (full disk, I/O error, damaged file) translated into
  coded errors and latched calmly (:class:`StorageGuard`);
- ``settings``: the ``[journal]`` configuration section.

Import from here (``from firmware_host.journal import Journal``), not from the parts.
"""

from __future__ import annotations

from .alerts import SEVERITIES, AlertAcknowledged, AlertNotFound, AlertRecord
from .anchor import ANCHOR_TOPIC, Anchor, AnchorError, AnchorFinding
from .audit import CHAIN_KEYED, GENESIS_HASH, ChainReport, Event, Fault, event_hash
from .auditkey import AuditKey, AuditKeyError
from .bets import BetRecord
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
from .frames import RawFrame
from .jackpot import DEFAULT_JACKPOT, JackpotHit, JackpotHitRecord
from .lock import StateLock, StateLocked
from .outbox import OutboxEntry, OutboxMessage
from .requests import RequestIdTaken, RequestRecord
from .rounds import ROUNDS_TOPIC, RoundRecord, RoundStatus, new_round_id
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
    "Anchor",
    "AnchorError",
    "AnchorFinding",
    "AuditKey",
    "AuditKeyError",
    "AuditReport",
    "BetConflict",
    "BetNotFound",
    "BetRecord",
    "ChainReport",
    "Event",
    "Fault",
    "FaultNotFound",
    "JackpotHit",
    "JackpotHitConflict",
    "JackpotHitNotFound",
    "JackpotHitRecord",
    "Journal",
    "JournalCorrupt",
    "JournalError",
    "JournalFull",
    "JournalIOError",
    "JournalOfAnotherTable",
    "JournalSettings",
    "OutboxEntry",
    "OutboxMessage",
    "PhaseNotAllowed",
    "Problem",
    "RawFrame",
    "RecalledRound",
    "RequestIdTaken",
    "RequestRecord",
    "RoundExists",
    "RoundFinished",
    "RoundInFlight",
    "RoundNotFound",
    "RoundRecord",
    "RoundStatus",
    "StateLock",
    "StateLocked",
    "StorageError",
    "StorageFault",
    "StorageGuard",
    "TableOwner",
    "audit_journal",
    "event_hash",
    "new_round_id",
]
