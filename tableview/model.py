"""The pit as the page sees it: what each table's topics last said.

Pure bookkeeping, no I/O: :meth:`Pit.apply` takes one MQTT message (topic and payload
bytes) and returns the id of the table it changed, or None. The retained snapshots
(``state``, ``board``, ``stats``, ``jackpot``, ``alerts``, ``devices/<name>``) replace what the
table had; ``rounds`` and ``events`` are kept, the last few, newest first.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

#: Retained snapshots kept as they are, by topic (relative to the table's root).
SNAPSHOTS = ("state", "board", "stats", "jackpot", "alerts")
#: Rounds and events kept per table.
LAST_ROUNDS = 12
LAST_EVENTS = 20
#: Bet fields the page shows.
BET_FIELDS = ("bet_id", "seat", "bet_type", "selection", "stake", "result", "payout", "net")


def round_summary(r: dict[str, Any]) -> dict[str, Any]:
    """A round as the page lists it: outcome, status, bets and totals."""
    stamps = r.get("timestamps") or {}
    return {
        "round_id": r.get("round_id"),
        "seq": r.get("seq"),
        "status": r.get("status"),
        "void_reason": r.get("void_reason"),
        "outcome": r.get("outcome"),
        "currency": r.get("currency"),
        "minor_digits": r.get("minor_digits"),
        "totals": r.get("totals"),
        "bets": [{k: b.get(k) for k in BET_FIELDS} for b in r.get("bets") or []],
        "at": stamps.get(str(r.get("status"))) or stamps.get("result"),
    }


@dataclass
class TableModel:
    table_id: str
    snapshots: dict[str, Any] = field(default_factory=dict)
    devices: dict[str, Any] = field(default_factory=dict)
    rounds: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=LAST_ROUNDS))
    events: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=LAST_EVENTS))

    def to_json(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id,
            **{k: self.snapshots.get(k) for k in SNAPSHOTS},
            "devices": dict(sorted(self.devices.items())),
            "rounds": list(self.rounds),
            "events": list(self.events),
        }


@dataclass
class Pit:
    """Every table heard under ``<prefix>/tables/``."""

    prefix: str = "casino"
    tables: dict[str, TableModel] = field(default_factory=dict)

    def _split(self, topic: str) -> tuple[str, str] | None:
        head = f"{self.prefix}/tables/"
        if not topic.startswith(head):
            return None
        table_id, _, rest = topic[len(head) :].partition("/")
        return (table_id, rest) if table_id and rest else None

    def apply(self, topic: str, payload: bytes) -> str | None:
        """Take one message; the id of the table it changed, or None."""
        where = self._split(topic)
        if where is None:
            return None
        table_id, rest = where
        if rest not in (*SNAPSHOTS, "rounds", "events") and not rest.startswith("devices/"):
            return None  # requests and responses are not the page's business
        t = self.tables.get(table_id)
        if t is None:
            t = self.tables[table_id] = TableModel(table_id)
        if not payload:  # a retained message cleared
            t.snapshots.pop(rest, None)
            t.devices.pop(rest.removeprefix("devices/"), None)
            return table_id
        try:
            data = json.loads(payload)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(data, dict):
            return None
        if rest in SNAPSHOTS:
            t.snapshots[rest] = data
        elif rest.startswith("devices/"):
            t.devices[rest.removeprefix("devices/")] = data
        elif rest == "rounds":
            rid = data.get("round_id")
            if any(r["round_id"] == rid for r in t.rounds):
                return None  # a re-delivery (QoS 1): same round, same bytes
            t.rounds.appendleft(round_summary(data))
        else:
            t.events.appendleft(data)
        return table_id

    def to_json(self) -> dict[str, Any]:
        return {"tables": [self.tables[k].to_json() for k in sorted(self.tables)]}
