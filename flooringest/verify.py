"""The floor's check of what a table says: signed by the table, with a key of the
registry, and no further than the table itself announced.

- :class:`Verifier` turns a message of a table's ``rounds`` topic into a verified
  :class:`~flooringest.messages.Round` or a :class:`~flooringest.messages.Quarantined`
  with its reason: the table is unknown (``UNKNOWN_TABLE``), the message is not signed
  (``UNSIGNED``), not in its one signed spelling (``NOT_CANONICAL``), signed by no key
  of the table (``BAD_SIGNATURE``), not JSON or not a round (``NOT_JSON``,
  ``NOT_A_ROUND``), or a round whose ``seq`` is beyond anything the table announced
  (``SEQ_NOT_ANNOUNCED``). The message is parsed once and verified once
  (:func:`firmware_host.auth.evidence.open_sealed` returns the parsed payload).
- :class:`Announcements`: per table, the newest round the table itself announced, in
  a message it signed: its retained ``anchor`` (published before each round's
  messages), its ``state`` (``anchor``, ``last_round_id``), and its answers to the
  ingest's ``replay_rounds`` (``data.newest_seq``). Kept lazily: the latest raw
  ``anchor`` and ``state`` of each table are held as received and verified only when a
  round (or the duties) needs them, so that a table's anchor costs a signature check
  only when it says something the floor did not know yet.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from firmware_host.auth.evidence import EvidenceError, open_sealed
from firmware_host.journal.rounds import seq_of_round_id

from . import messages as m
from .messages import Incoming, Quarantined, Round
from .registry import Registry

#: Phases of a finished round (an anchor or state naming one says it is finished).
FINISHED = ("settled", "void")


def _seq(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def _evidence_code(exc: EvidenceError) -> str:
    code = exc.code
    if code == "NOT_AN_OBJECT":
        return m.NOT_A_ROUND
    return code if code in m.CODES else m.BAD_SIGNATURE


@dataclass
class _Said:
    #: The highest round seq the table announced (any phase) in a verified message.
    announced: int = 0
    #: The highest round the table announced *finished* (a tail gap below it is real).
    finished: int = 0
    #: The latest raw message per kind (anchor, state) not verified yet, and when.
    raw: dict[str, tuple[bytes, float]] = field(default_factory=dict)
    #: What a pending raw message claims, read once (:meth:`Announcements.pending_claim`).
    claim: tuple[bytes, int] | None = None
    #: The newest round of the backlog the table paces now, by its verified ``state``
    #: (``backlog.to_seq``; 0: none): the rounds above it were published live.
    paced_to: int = 0
    #: What the pending raw ``state`` says of it, read once (:meth:`Announcements.
    #: backlog_news`).
    paced_claim: tuple[bytes, int] | None = None
    #: Changed since last saved to the database.
    dirty: bool = False


class Announcements:
    """What each table announced (see the module docstring). ``on_failure`` receives
    each anchor or state that fails its verification (quarantined by the worker)."""

    def __init__(self, on_failure: Callable[[Quarantined], None] | None = None) -> None:
        self.tables: dict[str, _Said] = {}
        self.on_failure = on_failure
        #: Signatures checked (anchors, states, answers), and their CPU time (s).
        self.verified = 0
        self.cpu_s = 0.0

    def offer(self, table: str, kind: str, raw: bytes, at: float) -> None:
        """A table's ``anchor`` or ``state`` as received: kept, not verified yet. An
        anchor that claims less than the one kept, or than what was verified already,
        is not kept (issue 36: after a reconnection a table publishes its live rounds
        first and its backlog's older anchors after them; were the latest kept, a live
        round arriving next would find only an older claim, and be quarantined
        ``SEQ_NOT_ANNOUNCED``). Read, not verified: a forged claim is found out when
        it is verified, as a forged latest one always was."""
        said = self.tables.get(table)
        if said is None:
            said = self.tables[table] = _Said()
        if kind == "anchor":
            claim = _raw_claim(kind, raw)
            kept = said.raw.get(kind)
            if claim is not None and (
                claim < said.announced
                or (kept is not None and claim < (_raw_claim(kind, kept[0]) or 0))
            ):
                return
        said.raw[kind] = (raw, at)

    def announced(self, table: str) -> int:
        said = self.tables.get(table)
        return said.announced if said is not None else 0

    def finished(self, table: str) -> int:
        said = self.tables.get(table)
        return said.finished if said is not None else 0

    def covers(self, table: str, seq: int, keys: Any) -> bool:
        """Whether the table announced a round ``seq`` or later (verifying the latest
        anchor and state it published, if that is needed to know)."""
        said = self.tables.get(table)
        if said is None:
            return False
        if seq <= said.announced:
            return True
        if said.raw:
            self.settle(table, keys)
        return seq <= said.announced

    def pending_claim(self, table: str) -> int:
        """The highest finished round the table's unverified anchor or state claim
        (parsed, not verified: whether they are worth verifying)."""
        said = self.tables.get(table)
        best = 0
        if said is None:
            return best
        for kind, (raw, _at) in said.raw.items():
            if said.claim is not None and said.claim[0] is raw:
                best = max(best, said.claim[1])
                continue
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(doc, dict):
                n = _claims(kind, doc)[1]
                said.claim = (raw, n)  # a state that stays pending is read once
                best = max(best, n)
        return best

    def backlog_news(self, table: str) -> bool:
        """Whether the table's pending (unverified) ``state`` says something else of its
        paced backlog than its last verified one: worth verifying now (issue 36)."""
        said = self.tables.get(table)
        if said is None or (pending := said.raw.get("state")) is None:
            return False
        raw = pending[0]
        if said.paced_claim is None or said.paced_claim[0] is not raw:
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError:
                doc = None
            said.paced_claim = (raw, _paced_to(doc) if isinstance(doc, dict) else 0)
        return said.paced_claim[1] != said.paced_to

    def paced(self, keys: Callable[[str], Any]) -> dict[str, int]:
        """Per table pacing a backlog, its newest round, by its verified ``state``; a
        pending ``state`` that says something new of it is verified first (with
        ``keys(table)``: one a connection, and one when the backlog is over)."""
        for t in [t for t in self.tables if self.backlog_news(t)]:
            self.settle(t, keys(t))
        return {t: s.paced_to for t, s in self.tables.items() if s.paced_to}

    def settle(self, table: str, keys: Any) -> None:
        """Verify the table's pending anchor and state (with ``keys``: None, the table
        is unknown, and they are dropped)."""
        said = self.tables.get(table)
        if said is None or not said.raw:
            return
        pending, said.raw = said.raw, {}
        if keys is None:
            return
        t0 = time.process_time()
        try:
            for kind, (raw, at) in pending.items():
                self.verified += 1
                try:
                    doc, _ = open_sealed(raw, kind, keys)
                except EvidenceError as exc:
                    self._failed(kind, table, raw, at, _evidence_code(exc), str(exc))
                    continue
                if doc.get("table_id") != table:
                    self._failed(
                        kind, table, raw, at, m.MALFORMED,
                        f"table_id {doc.get('table_id')!r} is not the topic's table {table!r}",
                    )  # fmt: skip
                    continue
                announced, finished = _claims(kind, doc)
                self.raise_to(table, announced, finished)
                if kind == "state":
                    self.tables[table].paced_to = _paced_to(doc)
        finally:
            self.cpu_s += time.process_time() - t0

    def raise_to(self, table: str, announced: int, finished: int) -> None:
        said = self.tables.get(table)
        if said is None:
            said = self.tables[table] = _Said()
        announced = max(announced, finished)
        if announced > said.announced:
            said.announced = announced
            said.dirty = True
        if finished > said.finished:
            said.finished = finished
            said.dirty = True

    def answered(self, table: str, newest: int) -> None:
        """The table answered a replay request: its newest round is ``newest``. The
        announced seq may only grow; the finished one follows the table's word (a
        tail gap beyond what it has is closed: it has no such rounds to send)."""
        said = self.tables.get(table)
        if said is None:
            said = self.tables[table] = _Said()
        if newest > said.announced:
            said.announced = newest
        if newest < said.finished:
            said.finished = newest
        said.dirty = True

    def merge(self, table: str, announced: int, finished: int) -> None:
        """Values saved in the database (by this or another worker): never lowers."""
        said = self.tables.get(table)
        if said is None:
            said = self.tables[table] = _Said()
        said.announced = max(said.announced, announced)
        if said.finished == 0:
            said.finished = finished

    def dirty(self) -> list[tuple[str, int, int]]:
        """``(table, announced, finished)`` changed since the last call."""
        out = []
        for tid, said in self.tables.items():
            if said.dirty:
                said.dirty = False
                out.append((tid, said.announced, said.finished))
        return out

    def forget(self, known: Registry) -> None:
        """Drop what is held for tables no longer in the registry."""
        for tid in [t for t in self.tables if t not in known]:
            del self.tables[tid]

    def _failed(self, kind: str, table: str, raw: bytes, at: float, code: str, msg: str) -> None:
        if self.on_failure is not None:
            seq, rid = m.readable(raw)
            self.on_failure(Quarantined(kind, table, raw, code, msg, at, seq, rid))


def _raw_claim(kind: str, raw: bytes) -> int | None:
    """What an unverified message claims (the seq it announces; None: unreadable)."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return max(_claims(kind, doc)) if isinstance(doc, dict) else None


def _claims(kind: str, doc: dict[str, Any]) -> tuple[int, int]:
    """``(announced, finished)`` by an anchor's or a state's payload (0: none)."""
    if kind == "anchor":
        seq = _seq(doc.get("seq")) or 0
        return seq, seq if doc.get("phase") in FINISHED else max(0, seq - 1)
    # state: its anchor, its round in progress, its last round (finished when idle)
    announced = finished = 0
    a = doc.get("anchor")
    if isinstance(a, dict):
        s = _seq(a.get("seq")) or 0
        announced = s
        finished = s if a.get("phase") in FINISHED else max(0, s - 1)
    last = seq_of_round_id(doc.get("last_round_id")) or 0
    current = _seq(doc.get("seq")) or 0
    announced = max(announced, last, current)
    if last:
        finished = max(finished, last if doc.get("phase") == "idle" else last - 1)
    return announced, finished


def _paced_to(doc: dict[str, Any]) -> int:
    """``backlog.to_seq`` of a ``state`` payload (0: none)."""
    b = doc.get("backlog")
    return (_seq(b.get("to_seq")) or 0) if isinstance(b, dict) else 0


class Verifier:
    """The check of every round a worker receives (see the module docstring)."""

    def __init__(self, registry: Registry, announcements: Announcements) -> None:
        self.registry = registry
        self.announcements = announcements
        #: Rounds checked, and the CPU time of their signature checks (s).
        self.rounds = 0
        self.cpu_s = 0.0

    def round(self, msg: Incoming) -> Round | Quarantined:
        """Verify one message of ``<table>/rounds``."""
        self.rounds += 1
        table, raw = msg.table, msg.payload
        keys = self.registry.keys(table)
        if keys is None:
            seq, rid = m.readable(raw)
            return Quarantined(
                "rounds", table, raw, m.UNKNOWN_TABLE,
                f"table {table!r} is not in the floor's registry", msg.received_at, seq, rid,
            )  # fmt: skip
        try:
            doc, _ = open_sealed(raw, "rounds", keys)
        except EvidenceError as exc:
            seq, rid = m.readable(raw)
            return Quarantined(
                "rounds", table, raw, _evidence_code(exc), str(exc), msg.received_at, seq, rid
            )
        r = m.round_of(doc, table, raw, msg.received_at)
        if isinstance(r, str):
            seq, rid = m.readable(raw)
            return Quarantined("rounds", table, raw, m.NOT_A_ROUND, r, msg.received_at, seq, rid)
        if not self.announcements.covers(table, r.seq, keys):
            return Quarantined(
                "rounds", table, raw, m.SEQ_NOT_ANNOUNCED,
                f"seq {r.seq} is beyond the newest round table {table} announced "
                f"({self.announcements.announced(table) or 'none'})",
                msg.received_at, r.seq, r.round_id, r.sha256,
            )  # fmt: skip
        return r

    def batch(self, msgs: list[Incoming]) -> list[Round | Quarantined]:
        t0 = time.process_time()
        a0 = self.announcements.cpu_s
        try:
            return [self.round(x) for x in msgs]
        finally:
            # The anchors verified on the way are counted by the announcements.
            self.cpu_s += time.process_time() - t0 - (self.announcements.cpu_s - a0)


def replay_answer(
    raw: bytes, table: str, keys: Any, expected_id: str
) -> tuple[dict[str, Any] | None, Quarantined | None]:
    """A ``commands/response`` whose ``request_id`` the ingest made (checked by the
    caller before anything is verified): its payload when it verifies, or its
    quarantine."""
    at = time.time()
    try:
        doc, _ = open_sealed(raw, "commands/response", keys)
    except EvidenceError as exc:
        return None, Quarantined("commands/response", table, raw, _evidence_code(exc), str(exc), at)
    if doc.get("table_id") != table or doc.get("request_id") != expected_id:
        return None, Quarantined(
            "commands/response", table, raw, m.MALFORMED,
            "an answer for another table or request", at,
        )  # fmt: skip
    return doc, None


__all__ = ["FINISHED", "Announcements", "Verifier", "replay_answer", "seq_of_round_id"]
