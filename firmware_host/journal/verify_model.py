"""What ``tablectl audit verify`` reports (:class:`AuditReport`, :class:`Problem`) and
the helpers its row checks share (``firmware_host/journal/verify.py``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..jsonio import JSON, canonical_json
from .chain import CHAIN_KEYED, ChainReport, Event

_SCALARS = (str, int, type(None))

#: Position of a problem no chain entry describes (reported after every chain position).
NOWHERE = math.inf


@dataclass(frozen=True, slots=True)
class Problem:
    """One row that fails: ``position`` is the chain entry it is seen at (for the order
    of the report), ``row`` names it, ``reason`` says why."""

    position: float
    row: str
    reason: str
    #: The problem is that the chain lacks an entry for the row: meaningful only where
    #: the chain is whole (past a broken entry, the entry may be the broken one).
    unchained: bool = False

    def __str__(self) -> str:
        where = "" if self.position == NOWHERE else f"chain entry {int(self.position)}: "
        return f"{where}{self.row}: {self.reason}"

    def to_json(self) -> dict[str, JSON]:
        return {
            "position": None if self.position == NOWHERE else int(self.position),
            "row": self.row,
            "reason": self.reason,
        }


@dataclass
class AuditReport:
    """What :func:`audit_journal` found."""

    chain: ChainReport
    problems: list[Problem] = field(default_factory=list)
    #: Rows checked against the chain, by table.
    checked: dict[str, int] = field(default_factory=dict)
    #: Rows written before the chain covered rows (upgraded journals), by table.
    uncovered: dict[str, int] = field(default_factory=dict)
    #: Rows dropped by retention (``rounds_pruned``): rounds whose bets and payload are gone.
    pruned_rounds: int = 0
    anchors: int = 0
    floor_rounds: int = 0
    key_id: str | None = None
    #: The chain is broken at this entry: rows described after it were not checked.
    unchecked_after: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def first(self) -> Problem | None:
        ordered = self.ordered()
        return ordered[0] if ordered else None

    def ordered(self) -> list[Problem]:
        """In chain order; a broken chain first of all (nothing after it is proven)."""
        bad = self.chain.first_bad_id
        return sorted(
            self.problems,
            key=lambda p: (not (bad is not None and p.row.startswith("event log")), p.position),
        )

    def summary(self) -> str:
        rows = ", ".join(f"{n} {t}" for t, n in self.checked.items())
        extra = []
        if self.pruned_rounds:
            extra.append(f"{self.pruned_rounds} round(s) pruned by retention")
        if any(self.uncovered.values()):
            old = ", ".join(f"{n} {t}" for t, n in self.uncovered.items() if n)
            extra.append(f"written before the chain covered rows (not checked): {old}")
        if self.anchors:
            extra.append(f"{self.anchors} floor anchor(s) hold")
        if self.floor_rounds:
            extra.append(f"{self.floor_rounds} floor round(s) match")
        tail = f"; {'; '.join(extra)}" if extra else ""
        return (
            f"chain of {self.chain.head_id} entries keyed with audit key {self.key_id} "
            f"(from entry {self.chain.keyed_from}), head {self.chain.head_id}:"
            f"{self.chain.head_hash}; rows checked: {rows or 'none'}{tail}"
        )

    def __str__(self) -> str:
        if self.ok:
            return f"audit OK: {self.summary()}"
        first = self.first
        more = len(self.problems) - 1
        text = f"audit FAILED at {first}" + (f" ({more} more problem(s))" if more else "")
        if self.unchecked_after is not None:
            text += f"; rows described after entry {self.unchecked_after} could not be checked"
        return text

    def to_json(self) -> dict[str, JSON]:
        return {
            "ok": self.ok,
            "problems": [p.to_json() for p in self.ordered()],
            "chain": {
                "ok": self.chain.ok,
                "entries": self.chain.head_id,
                "head": self.chain.head_hash,
                "keyed_from": self.chain.keyed_from,
            },
            "checked": dict(self.checked),
            "uncovered": dict(self.uncovered),
            "pruned_rounds": self.pruned_rounds,
            "anchors": self.anchors,
            "floor_rounds": self.floor_rounds,
            "key_id": self.key_id,
            "unchecked_after": self.unchecked_after,
        }


def _c(value: JSON) -> str:
    return canonical_json(value)


def _same(a: JSON, b: JSON) -> bool:
    """Equal as JSON (``True`` is not ``1``; objects compared canonically)."""
    if type(a) is type(b) and type(a) in _SCALARS:
        return bool(a == b)
    return _c(a) == _c(b)


def _loads(text: str | None) -> JSON:
    return None if text is None else json.loads(text)


def _short(value: JSON, width: int = 60) -> str:
    text = _c(value)
    return text if len(text) <= width else text[: width - 3] + "..."


class _Expected:
    """What the chain says the money rows hold, built entry by entry."""

    def __init__(self) -> None:
        self.opened: dict[str, Event] = {}
        self.finished: dict[str, Event] = {}
        self.placed: dict[tuple[str, str], Event] = {}
        self.cancelled: dict[tuple[str, str], Event] = {}
        self.jackpot: dict[str, Event] = {}
        self.hits: dict[str, Event] = {}
        self.paid: dict[str, Event] = {}
        self.pruned: dict[str, Event] = {}
        #: Answers to floor requests, by (principal, request_id); those retention dropped.
        self.answered: dict[tuple[str, str], Event] = {}
        self.answers_pruned: set[tuple[str, str]] = set()
        #: Each latched fault in order: [latched, cleared or None].
        self.faults: list[list[Event | None]] = []
        self.uncovered: dict[str, Any] | None = None
        self.problems: list[Problem] = []
        #: Only these rounds' and hits' rows are read (a window of the chain), or all.
        self.scope_rounds: list[str] | None = None
        self.scope_hits: list[str] | None = None
        self._last_seq: dict[str, tuple[int, Event]] = {}

    def visit(self, ev: Event) -> None:
        d: dict[str, Any] = ev.data if isinstance(ev.data, dict) else {}

        def text(name: str) -> str:
            value = d.get(name)
            return value if isinstance(value, str) else ""

        kind = ev.kind
        if kind == "round_opened":
            rid, table, seq = text("round_id"), text("table_id"), d.get("seq")
            self.opened[rid] = ev
            last = self._last_seq.get(table)
            if last is not None and isinstance(seq, int) and seq <= last[0]:
                self.problems.append(
                    Problem(
                        ev.id,
                        f"round {rid} (seq {seq})",
                        f"opened with seq {seq} after seq {last[0]} (entry {last[1].id}): a "
                        "sequence number the table had already used",
                    )
                )
            if isinstance(seq, int):
                self._last_seq[table] = (seq, ev)
        elif kind in ("round_settled", "round_void") and "payload_sha256" in d:
            self.finished[text("round_id")] = ev
        elif kind == "bet_placed":
            self.placed[(text("round_id"), text("bet_id"))] = ev
        elif kind == "bet_cancelled":
            self.cancelled[(text("round_id"), text("bet_id"))] = ev
        elif kind == "jackpot_saved":
            self.jackpot[text("name")] = ev
        elif kind == "jackpot_hit":
            self.hits.setdefault(text("hit_id"), ev)
        elif kind == "jackpot_paid":
            self.paid.setdefault(text("hit_id"), ev)
        elif kind == "rounds_pruned":
            for rid in d.get("round_ids") or ():
                self.pruned[rid] = ev
        elif kind == "request_answered":
            self.answered[(text("principal"), text("request_id"))] = ev
        elif kind == "requests_pruned":
            for pair in d.get("requests") or ():
                if isinstance(pair, list) and len(pair) == 2:
                    self.answers_pruned.add((str(pair[0]), str(pair[1])))
        elif kind == "fault_latched":
            self.faults.append([ev, None])
        elif kind == "fault_cleared":
            for pair in self.faults:
                latched = pair[0]
                assert latched is not None
                if pair[1] is None and latched.data.get("code") == d.get("code"):
                    pair[1] = ev
                    break
        elif kind == CHAIN_KEYED and self.uncovered is None:
            self.uncovered = d.get("uncovered_before") or {}


def _select(db: Any, sql: str, column: str, keys: list[str] | None, order: str) -> Any:
    """``sql`` ordered by ``order``; only the rows whose ``column`` is in ``keys`` unless
    ``keys`` is None (every row)."""
    if keys is None:
        return db.execute(f"{sql} ORDER BY {order}")
    joiner = " AND " if " WHERE " in sql else " WHERE "
    return db.execute(
        f"{sql}{joiner}{column} IN (SELECT value FROM json_each(?)) ORDER BY {order}",
        (json.dumps(keys),),
    )


def _uncovered(journal: Any, exp: _Expected) -> dict[str, Any]:
    """Where rows written before the chain covered rows end (ids, jackpot names)."""
    if exp.uncovered is not None:
        return dict(exp.uncovered)
    if journal.chain.key_id is None:  # an unkeyed journal: take meta's word (library use)
        value = journal.db.meta("uncovered_before")
        if value is not None:
            return dict(json.loads(value))
    return {}


def _cmp(
    problems: list[Problem],
    ev: Event,
    row: str,
    what: str,
    in_table: JSON,
    in_chain: JSON,
) -> bool:
    if _same(in_table, in_chain):
        return True
    problems.append(
        Problem(
            ev.id,
            row,
            f"{what} is {_short(in_table)} in the table, the chain recorded {_short(in_chain)} "
            f"(entry {ev.id}, {ev.kind})",
        )
    )
    return False


def _loads_lenient(text: str) -> JSON:
    try:
        return _loads(text)
    except ValueError:
        return text
