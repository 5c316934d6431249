"""The pit as the page sees it: what each followed table's topics last said, bounded.

Pure bookkeeping, no I/O: :meth:`Pit.apply` takes one MQTT message (topic and payload
bytes) and returns the id of the table it changed, or None. The retained snapshots
(``state``, ``board``, ``stats``, ``jackpot``, ``alerts``, ``devices/<name>``) replace what the
table had; ``rounds`` and ``events`` are kept, the last few, newest first.

Anyone who may publish on the broker can publish under ``<prefix>/tables/``, so what
the view keeps is bounded (issue 29) and nothing it keeps is taken on trust:

- only the tables it follows (:class:`Selection`: ids and prefixes): the others'
  messages are counted and dropped before they are parsed;
- at most :attr:`Caps.tables` tables, :attr:`Caps.devices` devices and
  :attr:`Caps.history` rounds and events per table, :attr:`Caps.message_bytes` per
  message, :attr:`Caps.table_bytes` per table (what it keeps of a table is its JSON on
  ``/api/tables``): a message over a cap is counted (:attr:`Pit.ignored`), never kept;
- a message is a table's only when its payload's ``table_id`` is the topic's: a
  client publishing under one table's topics cannot replace another's state;
- given the tables' public keys, only what the table signed (``open_sealed``): what
  does not verify is counted and dropped, and a table is added to the page only by a
  message that verifies.

Each table is kept as the compact JSON text of each part (the ``signature`` member
removed), so the memory it takes is about what it shows.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from firmware_host.auth.evidence import SIGNATURE, EvidenceError, open_sealed
from firmware_host.boundedjson import RequestShapeError, check_shape

from .caps import Caps

#: Retained snapshots kept as they are, by topic (relative to the table's root).
SNAPSHOTS = ("state", "board", "stats", "jackpot", "alerts", "limits")
#: Topics the view reads below a table's root (``devices/+``: one per device).
TOPICS = (*SNAPSHOTS, "rounds", "events", "devices/+")
#: Bet fields the page shows.
BET_FIELDS = ("bet_id", "seat", "bet_type", "selection", "stake", "result", "payout", "net")
#: A table id as the table names itself (``[table] id``: ``firmware_host.config``).
TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: A device name, as the topic ``devices/<name>`` carries it.
DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: Deepest nesting of arrays and objects kept (a payload of the contract nests about 5),
#: and most arrays and objects in one message (a round of 1,000 bets opens about 3,000).
MAX_DEPTH = 32
MAX_CONTAINERS = 20_000
#: Why a message was ignored, as :attr:`Pit.ignored` counts them (``dropped``: the MQTT
#: client's queue was full, the view fell behind a flood: ``tableview.server``).
REASONS = (
    "not_followed",
    "too_large",
    "malformed",
    "table_mismatch",
    "unverified",
    "too_many_tables",
    "too_many_devices",
    "over_budget",
    "dropped",
)


class Selection:
    """The tables a view follows: ids (``MO-R-07``) and prefixes (``MO-R-``, or any
    text ending in ``*``); none at all: every table. A selector ending in ``-``, ``_``,
    ``.`` or ``*`` is a prefix, any other a table id."""

    def __init__(self, selectors: Iterable[str] = ()) -> None:
        ids: set[str] = set()
        prefixes: set[str] = set()
        for raw in selectors:
            s = raw.strip()
            if s.endswith("*") or (s and s[-1] in "-_."):
                p = s.rstrip("*")
                if p and not TABLE_ID.match(p):
                    raise ValueError(f"table prefix {raw!r}: letters, digits, '_', '.', '-' only")
                prefixes.add(p)
            elif TABLE_ID.match(s):
                ids.add(s)
            else:
                raise ValueError(
                    f"table {raw!r}: a table id (1-64 letters, digits, '_', '.', '-') or a "
                    "prefix (ending in '-', '_', '.' or '*')"
                )
        self.every = "" in prefixes or not (ids or prefixes)
        self.ids = frozenset(ids)
        self.prefixes = tuple(sorted(prefixes - {""}))

    def __contains__(self, table_id: object) -> bool:
        if not isinstance(table_id, str) or not TABLE_ID.match(table_id):
            return False
        return self.every or table_id in self.ids or table_id.startswith(self.prefixes)

    def filters(self) -> list[str]:
        """The table level of the topic filters: the ids, or ``+`` (MQTT has no prefix
        wildcard: the view then filters the table ids itself)."""
        return ["+"] if self.every or self.prefixes else sorted(self.ids)

    def describe(self) -> str:
        if self.every:
            return "every table"
        return ", ".join([*sorted(self.ids), *(f"{p}*" for p in self.prefixes)])


def round_summary(r: Mapping[str, Any], max_bets: int) -> dict[str, Any]:
    """A round as the page lists it: outcome, status, bets (the first ``max_bets``,
    and how many the round holds) and totals."""
    stamps = r.get("timestamps")
    stamps = stamps if isinstance(stamps, dict) else {}
    bets = r.get("bets")
    bets = [b for b in bets if isinstance(b, dict)] if isinstance(bets, list) else []
    return {
        "round_id": r.get("round_id"),
        "seq": r.get("seq"),
        "status": r.get("status"),
        "void_reason": r.get("void_reason"),
        "outcome": r.get("outcome"),
        "currency": r.get("currency"),
        "minor_digits": r.get("minor_digits"),
        "totals": r.get("totals"),
        "bets": [{k: b.get(k) for k in BET_FIELDS} for b in bets[:max_bets]],
        "bets_count": len(bets),
        "at": stamps.get(str(r.get("status"))) or stamps.get("result"),
        "dealer": r.get("dealer"),
    }


def _text(value: Any) -> bytes:
    return orjson.dumps(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass
class Totals:
    """What the view added up of a table's settled rounds since it started following
    it (the pit page's handle, win, hold and pace, "from settled rounds"): each round
    counted once, by id, however often it is delivered. Amounts in minor units."""

    #: When the view first heard a round of the table (its own clock, ISO-8601 UTC).
    since: str = ""
    rounds: int = 0
    voids: int = 0
    #: Stakes of the settled rounds (a void's stakes are refunded: not handle), the
    #: banker's capital of a player-banked table aside (it is staked against the places,
    #: not wagered with the house: ``bank.layers[].capital``, docs/rules/super-pan-9.md).
    handle: int = 0
    #: The house's net result of the settled rounds (``totals.house_net``).
    win: int = 0
    currency: str | None = None
    minor_digits: int | None = None
    #: The first round's opening and the last round's end, as the table stamped them.
    first_at: str | None = None
    last_at: str | None = None
    #: Round ids counted (the most recent ones: a QoS 1 re-delivery is of a recent round).
    seen: deque[Any] = field(default_factory=lambda: deque(maxlen=4096))

    def add(self, r: Mapping[str, Any]) -> None:
        rid = r.get("round_id")
        if rid in self.seen:
            return
        self.seen.append(rid)
        if not self.since:
            self.since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        raw = r.get("timestamps")
        stamps: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
        opened, ended = stamps.get("opened"), stamps.get(str(r.get("status")))
        if isinstance(opened, str) and (self.first_at is None or opened < self.first_at):
            self.first_at = opened
        if isinstance(ended, str) and (self.last_at is None or ended > self.last_at):
            self.last_at = ended
        if r.get("status") != "settled":
            self.voids += 1
            return
        raw = r.get("totals")
        totals: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
        self.rounds += 1
        self.handle += _int(totals.get("stakes")) - _capital(r.get("bank"))
        self.win += _int(totals.get("house_net"))
        if isinstance(r.get("currency"), str):
            self.currency = r["currency"]
        if isinstance(r.get("minor_digits"), int):
            self.minor_digits = r["minor_digits"]

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "rounds": self.rounds,
            "voids": self.voids,
            "handle": self.handle,
            "win": self.win,
            "currency": self.currency,
            "minor_digits": self.minor_digits,
            "first_at": self.first_at,
            "last_at": self.last_at,
        }


def _capital(bank: Any) -> int:
    """The banker's capital in a round's ``bank`` (0 where there is none)."""
    layers = bank.get("layers") if isinstance(bank, dict) else None
    if not isinstance(layers, list):
        return 0
    return sum(_int(x.get("capital")) for x in layers if isinstance(x, dict))


@dataclass
class TableModel:
    """One table: the JSON text of each part it keeps, and their total size."""

    table_id: str
    snapshots: dict[str, bytes] = field(default_factory=dict)
    devices: dict[str, bytes] = field(default_factory=dict)
    #: ``(round_id, summary)``, newest first.
    rounds: deque[tuple[Any, bytes]] = field(default_factory=deque)
    events: deque[bytes] = field(default_factory=deque)
    #: Bytes kept (the parts' texts).
    size: int = 0
    #: The settled rounds added up since the view started following the table.
    totals: Totals = field(default_factory=Totals)

    def text(self) -> bytes:
        """The table as the page reads it (``/api/tables``, the ``table`` event)."""
        parts = [b'{"table_id":', _text(self.table_id)]
        for k in SNAPSHOTS:
            parts += [b',"', k.encode(), b'":', self.snapshots.get(k, b"null")]
        devices = b",".join(_text(n) + b":" + self.devices[n] for n in sorted(self.devices))
        parts += [b',"devices":{', devices, b'},"rounds":[']
        parts += [b",".join(t for _, t in self.rounds), b'],"events":[']
        parts += [b",".join(self.events), b'],"totals":', _text(self.totals.to_json()), b"}"]
        return b"".join(parts)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = orjson.loads(self.text())
        return doc

    def _trim(self, budget: int, keep_round: bool, keep_event: bool) -> None:
        """Drop the oldest events, then the oldest rounds, until the table fits
        ``budget`` (never the one just added)."""
        while self.size > budget and len(self.events) > (1 if keep_event else 0):
            self.size -= len(self.events.pop())
        while self.size > budget and len(self.rounds) > (1 if keep_round else 0):
            self.size -= len(self.rounds.pop()[1])


@dataclass
class Pit:
    """The followed tables heard under ``<prefix>/tables/``, within :class:`Caps`.

    ``keys``: each table's public keys (``open_sealed``); None: signatures are not
    checked (only ``table_id``'s agreement with the topic). Given keys, a table with
    none is never shown."""

    prefix: str = "casino"
    tables: dict[str, TableModel] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    caps: Caps = field(default_factory=Caps)
    keys: Mapping[str, Sequence[Ed25519PublicKey]] | None = None
    #: Messages ignored, by reason (:data:`REASONS`).
    ignored: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))

    @property
    def verifying(self) -> bool:
        return self.keys is not None

    def _split(self, topic: str) -> tuple[str, str] | None:
        head = f"{self.prefix}/tables/"
        if not topic.startswith(head):
            return None
        table_id, _, rest = topic[len(head) :].partition("/")
        return (table_id, rest) if table_id and rest else None

    def _ignore(self, reason: str) -> None:
        self.ignored[reason] += 1

    def _parse(self, table_id: str, rest: str, payload: bytes) -> dict[str, Any] | None:
        """The payload, checked (size, shape, signature, table id), without its
        signature; None (counted) when it is not kept."""
        if len(payload) > self.caps.message_bytes:
            self._ignore("too_large")
            return None
        try:
            check_shape(
                payload,
                max_bytes=self.caps.message_bytes,
                max_depth=MAX_DEPTH,
                max_containers=MAX_CONTAINERS,
            )
        except RequestShapeError:
            self._ignore("malformed")
            return None
        doc: Any
        if self.keys is not None:
            try:
                doc, _ = open_sealed(payload, rest, self.keys.get(table_id, ()))
            except EvidenceError as exc:
                self._ignore(
                    "malformed" if exc.code in ("NOT_JSON", "NOT_AN_OBJECT") else "unverified"
                )
                return None
        else:
            try:
                doc = orjson.loads(payload)
            except orjson.JSONDecodeError:
                doc = None
            if not isinstance(doc, dict):
                self._ignore("malformed")
                return None
            doc.pop(SIGNATURE, None)
        if doc.get("table_id") != table_id:
            self._ignore("table_mismatch")
            return None
        return dict(doc)

    def apply(self, topic: str, payload: bytes) -> str | None:
        """Take one message; the id of the table it changed, or None."""
        where = self._split(topic)
        if where is None:
            return None
        table_id, rest = where
        device = rest.removeprefix("devices/") if rest.startswith("devices/") else None
        if rest not in TOPICS and device is None:
            return None  # requests and responses are not the page's business
        if table_id not in self.selection or (device is not None and not DEVICE.match(device)):
            self._ignore("not_followed")
            return None
        t = self.tables.get(table_id)
        if t is None and len(self.tables) >= self.caps.tables:
            self._ignore("too_many_tables")
            return None
        full = t is not None and len(t.devices) >= self.caps.devices
        if full and device is not None and t is not None and device not in t.devices:
            self._ignore("too_many_devices")
            return None
        data = self._parse(table_id, rest, payload)  # a retained message cleared: malformed
        if data is None:
            return None
        if t is None:
            t = TableModel(table_id)
            changed = self._keep(t, rest, device, data)
            if changed:
                self.tables[table_id] = t
        else:
            changed = self._keep(t, rest, device, data)
        return table_id if changed else None

    def _keep(self, t: TableModel, rest: str, device: str | None, data: dict[str, Any]) -> bool:
        """Keep one checked payload; False (counted when over budget) when nothing
        changed. Room is made by dropping the oldest events, then the oldest rounds:
        the snapshots are the table's present and are never dropped for history."""
        slots = t.devices if device is not None else t.snapshots
        name = device if device is not None else rest
        if rest == "rounds":
            rid = data.get("round_id")
            if any(r == rid for r, _ in t.rounds):
                return False  # a re-delivery (QoS 1): same round, same bytes
            t.totals.add(data)
            text, old = _text(round_summary(data, self.caps.bets)), 0
        else:
            text = _text(data)
            old = 0 if rest == "events" else len(slots.get(name, b""))
        history = sum(len(x) for _, x in t.rounds) + sum(len(e) for e in t.events)
        if t.size - history - old + len(text) > self.caps.table_bytes:
            self._ignore("over_budget")
            return False
        t.size += len(text) - old
        if rest == "rounds":
            t.rounds.appendleft((rid, text))
        elif rest == "events":
            t.events.appendleft(text)
        else:
            slots[name] = text
        while len(t.rounds) > self.caps.history:
            t.size -= len(t.rounds.pop()[1])
        while len(t.events) > self.caps.history:
            t.size -= len(t.events.pop())
        t._trim(self.caps.table_bytes, keep_round=rest == "rounds", keep_event=rest == "events")
        return True

    def text(self, only: str | None = None) -> bytes:
        """Every table, by id (``{"tables": [...]}`` without its closing brace); ``only``:
        that table alone (none if the view does not have it)."""
        ids = sorted(self.tables) if only is None else [only] if only in self.tables else []
        return b'{"tables":[' + b",".join(self.tables[k].text() for k in ids) + b"]"

    def to_json(self) -> dict[str, Any]:
        return {"tables": [self.tables[k].to_json() for k in sorted(self.tables)]}
