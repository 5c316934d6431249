"""At start-up, the journal against what the table last published to the floor.

A journal can come back from a power cut, a restored backup or a swapped SD card
holding less than the floor already has (storage that acknowledged a flush it had not
done loses the WAL's tail). Played on, it would number new rounds with sequence numbers
the floor already holds. So before the floor link publishes anything, the daemon reads
the table's own retained ``anchor`` and ``state`` from the broker
(:func:`firmware_host.mqtt.read_retained`): the chain position and round ``seq`` the
table last published (``firmware_host/journal/anchor.py`` says why the retained
``anchor`` is never behind a round the floor holds). Then:

- the journal holds everything up to them: nothing happens (one log line);
- it does not (its chain ends before the anchor, has another hash there, or lacks
  rounds the floor heard of): ``JOURNAL_BEHIND_FLOOR`` is latched, with what is
  missing in its message (the log, the console's ``faults`` and the retained
  ``state``), and the floor's last ``seq`` is recorded so that new rounds are numbered
  above it; no round opens until a technician clears the fault from the console with a
  reason (after reconciling with the floor's records);
- before that, and without the broker, the journal is checked against itself: its last
  :data:`RECENT` chain entries and every row they describe (a power cut on storage that
  lied about a flush can lose a checkpoint's pages while the newest entries, the ones
  the floor's anchor matches, survive). Rows it recorded and no longer holds latch
  ``JOURNAL_BEHIND_FLOOR`` too, naming them;
- the broker cannot be reached: ``JOURNAL_UNCHECKED`` is latched and no round opens
  (a simulated table, ``[daemon] simulated``, only warns and plays);
  the check is retried in the background (the link's backoff) and, once it succeeds,
  the fault clears itself (or becomes ``JOURNAL_BEHIND_FLOOR``). A technician may clear
  ``JOURNAL_UNCHECKED`` from the console to play without the floor (recorded in the
  chain); the floor link still starts only after the check has been made, so the
  retained anchor it would overwrite is always read first.

What a technician cleared (the floor's anchors and the rows named in the last cleared
``JOURNAL_BEHIND_FLOOR``) is not latched again at the next start while it is the same:
the broker keeps the floor's anchor until the table's next round, and lost rows stay
in the checked window for a while. Anything new is latched again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..auth.evidence import FLOOR_DOMAIN, EvidenceError, open_sealed
from ..journal import (
    Anchor,
    AnchorError,
    AnchorFinding,
    AuditReport,
    Fault,
    FaultNotFound,
    FaultStore,
    StorageError,
)

log = logging.getLogger(__name__)

#: The journal holds less than the floor: play stops until a technician clears it.
BEHIND = "JOURNAL_BEHIND_FLOOR"
#: The broker could not be asked at start-up: play waits for the check (or a technician).
UNCHECKED = "JOURNAL_UNCHECKED"
#: The retained topics read (relative to the table's root).
RETAINED = ("anchor", "state")
#: The floor's own record of the table, read with them (``floor_record_topic``).
FLOOR_RECORD = "floor record"


def floor_record_topic(prefix: str, table_id: str) -> str:
    """Where the floor ingest keeps its signed record of what it holds of a table
    (``docs/floor.md``): retained, written by the ingest alone (the broker's ACL), read
    by the table at start-up."""
    return f"{prefix}/floor/records/{table_id}"


def floor_record_anchor(
    table_id: str, raw: bytes, keys: Sequence[Ed25519PublicKey]
) -> Anchor | None:
    """The anchor in the floor's record of this table, once its signature verifies with
    a key of a principal allowed ``floor_record`` (``keys``); None (logged) when the
    record cannot be read, is for another table, carries no chain or is not signed by
    such a key: a record the table cannot verify is never taken as the floor's word."""
    try:
        doc, _ = open_sealed(raw, "record", keys, domain=FLOOR_DOMAIN)
        if doc.get("table_id") != table_id:
            raise AnchorError(f"it is the record of table {doc.get('table_id')!r}")
        if doc.get("chain") is None:
            return None
        return Anchor.from_payload(doc, source=f"the floor's record ({doc.get('principal')})")
    except EvidenceError as exc:
        log.error(
            "floor check: ignoring the floor's record of this table: %s (%s keys of "
            "floor_record principals known)",
            exc,
            len(keys),
        )
    except (AnchorError, ValueError) as exc:
        log.warning("floor check: ignoring the floor's record of this table: %s", exc)
    return None


#: Chain entries checked against the rows they describe at start-up (the journal's own
#: consistency: a power cut on lying storage can lose a checkpoint's pages while the
#: newest entries, which the floor's anchor matches, survive): about 1,400 roulette
#: rounds of five bets, a day and more of play; 0.7 s on the development machine.
RECENT = 10_000

#: Reads the table's retained messages: suffix -> payload (raises ``ConnectionError``).
Reader = Callable[[], Awaitable[Mapping[str, bytes]]]


def anchors_from(
    table_id: str,
    retained: Mapping[str, bytes],
    record_keys: Sequence[Ed25519PublicKey] = (),
) -> list[Anchor]:
    """The anchors in the retained messages (one that cannot be read is logged and left
    out: the broker's copy is evidence, not an order), the floor's record among them
    (:func:`floor_record_anchor`)."""
    out = []
    record = retained.get(FLOOR_RECORD)
    if record:
        floor = floor_record_anchor(table_id, record, record_keys)
        if floor is not None:
            out.append(floor)
    for suffix in RETAINED:
        raw = retained.get(suffix)
        if not raw:
            continue
        try:
            doc = json.loads(raw)
            if isinstance(doc, dict) and doc.get("table_id") not in (None, table_id):
                raise AnchorError(f"it belongs to table {doc.get('table_id')!r}")
            anchor = Anchor.from_payload(doc, source=f"retained {suffix}")
        except (ValueError, AnchorError) as exc:
            log.warning("floor check: ignoring the retained %s: %s", suffix, exc)
            continue
        if anchor is not None:
            out.append(anchor)
    return out


#: Problems of the journal's own recent chain kept in the fault (the message names 3).
DAMAGE_KEPT = 200


class CheckedJournal(Protocol):
    """What the check uses of the journal (``Journal`` is one): its checks against its
    own recent chain and against the floor's anchors, the latch of a journal behind the
    floor (all read across its parts), and its latched faults."""

    @property
    def faults(self) -> FaultStore: ...

    def check_recent(self, entries: int = ...) -> AuditReport: ...

    def check_against_floor(
        self, anchors: Sequence[Anchor], table_id: str | None = None
    ) -> list[AnchorFinding]: ...

    def latch_behind_floor(
        self,
        table_id: str,
        findings: Sequence[AnchorFinding],
        *,
        damage: Sequence[str] = ...,
        anchors: Sequence[Anchor] = ...,
        at: datetime | None = None,
    ) -> Fault: ...


def damage(journal: CheckedJournal, recent: int = RECENT) -> list[str]:
    """Rows the journal's last ``recent`` chain entries describe and it no longer holds
    as recorded (:meth:`~firmware_host.journal.Journal.check_recent`), each named; empty
    when it holds them all. Damage a technician already acknowledged (it was in the
    last cleared ``JOURNAL_BEHIND_FLOOR``) is left out: it is not latched again at every
    start while it stays in the window."""
    report = journal.check_recent(recent)
    if report.ok:
        return []
    found = [str(p) for p in report.ordered()[:DAMAGE_KEPT]]
    cleared = journal.faults.last_cleared(BEHIND)
    known = cleared.data.get("damage", []) if cleared and isinstance(cleared.data, dict) else []
    return [d for d in found if d not in set(known)]


def acknowledged_anchors(faults: FaultStore) -> set[tuple[int, str]]:
    """The floor's anchors of the last ``JOURNAL_BEHIND_FLOOR`` a technician cleared: the
    broker keeps them retained until the table's next round, and they are not latched
    again at every start meanwhile."""
    cleared = faults.last_cleared(BEHIND)
    floor = cleared.data.get("floor", []) if cleared and isinstance(cleared.data, dict) else []
    out: set[tuple[int, str]] = set()
    for a in floor:
        chain = a.get("chain") if isinstance(a, dict) else None
        if isinstance(chain, dict):
            out.add((int(chain.get("seq", 0)), str(chain.get("head", ""))))
    return out


def assess(
    journal: CheckedJournal, table_id: str, anchors: Sequence[Anchor], *, recent: int = RECENT
) -> tuple[list[AnchorFinding], list[str]]:
    """What the journal lacks: according to the floor's ``anchors``, and according to
    its own recent chain (:func:`damage`). Both empty: it holds everything."""
    return journal.check_against_floor(anchors, table_id), damage(journal, recent)


class JournalFloorCheck:
    """The start-up check of the journal against the floor (see the module docstring)."""

    def __init__(
        self,
        journal: CheckedJournal,
        table_id: str,
        read: Reader,
        *,
        retry_min: float = 0.25,
        retry_max: float = 30.0,
        rng: random.Random | None = None,
        recent: int = RECENT,
        simulated: bool = False,
        record_keys: Sequence[Ed25519PublicKey] = (),
    ) -> None:
        """``simulated``: a table with simulated devices (``[daemon] simulated``, ``tablectl
        run --simulate``) plays while the broker is unreachable, with a warning instead of
        ``JOURNAL_UNCHECKED`` (no real game is at stake; the check is still made, and a
        journal behind the floor still latched, once the broker answers).
        ``record_keys``: the keys of the principals allowed ``floor_record`` (the floor
        ingest), which sign the floor's record of the table (``read`` returns it under
        :data:`FLOOR_RECORD`)."""
        self.journal = journal
        self.record_keys = tuple(record_keys)
        self.simulated = simulated
        self.recent = recent
        self.table_id = table_id
        self.read = read
        self.retry_min = retry_min
        self.retry_max = retry_max
        self._rng = rng or random.Random()
        self.checked = False
        self.findings: list[AnchorFinding] = []
        #: What the journal's own recent chain says it lost (None: not checked yet).
        self.damage: list[str] | None = None

    async def check_once(self, *, latch: bool = True) -> bool:
        """One attempt: True once the journal was compared with the floor. An unreachable
        broker latches ``JOURNAL_UNCHECKED`` when ``latch`` (the first attempt; a retry
        never latches it again over a technician's clear)."""
        if self.damage is None:  # the journal against itself: needs no broker
            found = damage(self.journal, self.recent)
            if found:  # a storage fault here leaves it to the next attempt
                fault = self.journal.latch_behind_floor(self.table_id, [], damage=found)
                log.error("journal check: %s: %s", BEHIND, fault.message)
            self.damage = found
        try:
            retained = await self.read()
        except ConnectionError as exc:
            if not latch:
                log.debug("floor check: broker still unreachable: %s", exc)
                return False
            if self.simulated:
                log.warning(
                    "floor check: broker unreachable (%s); a simulated table plays without "
                    "the check until the broker answers",
                    exc,
                )
                return False
            _, new = self.journal.faults.set_fault(
                UNCHECKED,
                "the floor's broker could not be reached at start-up, so the journal could not "
                "be compared with what the table last published; no round opens until the "
                "check succeeds (it is retried) or a technician clears this fault",
                {"error": str(exc)},
            )
            if new:
                log.error("floor check: %s: broker unreachable (%s); play waits", UNCHECKED, exc)
            return False
        anchors = anchors_from(self.table_id, retained, self.record_keys)
        self.findings = [
            f
            for f in self.journal.check_against_floor(anchors, self.table_id)
            if (f.anchor.chain_seq, f.anchor.chain_head)
            not in acknowledged_anchors(self.journal.faults)
        ]
        if self.findings:
            self.journal.latch_behind_floor(self.table_id, self.findings, anchors=anchors)
            log.error("floor check: %s: %s", BEHIND, "; ".join(f.reason for f in self.findings))
        elif anchors:
            log.info(
                "floor check: the journal holds everything the floor has (%s)",
                ", ".join(f"{a.source} {a}" for a in anchors),
            )
        else:
            log.info("floor check: the broker holds no anchor of this table (a new table?)")
        self.checked = True
        with contextlib.suppress(FaultNotFound):
            self.journal.faults.clear_fault(
                UNCHECKED,
                by="table",
                reason="checked against the floor: "
                + ("journal behind the floor" if self.findings else "nothing missing"),
            )
        return True

    async def until_checked(self) -> None:
        """Retry :meth:`check_once` with capped, jittered backoff until it succeeds."""
        attempt = 0
        while True:
            step = min(self.retry_max, self.retry_min * float(1 << min(attempt, 30)))
            attempt += 1
            await asyncio.sleep(step * (0.5 + 0.5 * self._rng.random()))
            try:
                if await self.check_once(latch=False):
                    return
            except StorageError:
                # The journal cannot write now (DISK_FULL, JOURNAL_IO): its guard latched
                # and logged it, play is stopped by it; the check is tried again.
                continue
