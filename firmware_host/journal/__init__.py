"""The journal: the table's durable memory, in one SQLite file.

Everything the table decides is committed here *before* anyone hears of it: a
settled round is first a committed row, then an outbox entry, then an MQTT message
(``firmware_host/mqtt.py`` drains the outbox). A crash at any instant leaves every
round either fully settled (round row, settlement payload, outbox entry, jackpot
state, all in one transaction) or not settled at all, and a round can never be
settled or voided twice.

One module per concern, each a part of :class:`Journal`:

- ``connection``: the SQLite connection, pragmas, migrations (``schema``) and the
  one transaction helper every other part writes through;
- ``outbox``: messages queued in the transaction whose change they announce;
- ``audit``: the hash-chained, append-only event log and the latched faults;
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
from .audit import GENESIS_HASH, ChainReport, Event, Fault, event_hash
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
from .outbox import OutboxEntry, OutboxMessage
from .requests import RequestIdTaken, RequestRecord
from .rounds import ROUNDS_TOPIC, RoundRecord, RoundStatus, new_round_id
from .schema import DB_MIGRATIONS, DB_SCHEMA_VERSION
from .settings import JOURNAL_SPECS, JournalSettings
from .storage import STORAGE_CODES, StorageFault, StorageGuard
from .store import Journal, RecalledRound

__all__ = [
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
    "JournalSettings",
    "OutboxEntry",
    "OutboxMessage",
    "PhaseNotAllowed",
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
    "StorageError",
    "StorageFault",
    "StorageGuard",
    "event_hash",
    "new_round_id",
]
