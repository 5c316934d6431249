"""Emulated tables: many tables in one process, to load a broker and the floor ingest
without a daemon per table (issue 18 item 3). Each is what the floor sees of a real
table, and nothing more:

- its own MQTT connection, with the broker's **last will** (retained ``state``
  ``offline``) and a retained ``state`` ``online`` on connect (with the last seq);
- **real round payloads**: the demo runs recorded in ``tests/golden/<game>.json``, each
  given the table's id, its next ``seq``, a round id in the daemon's form
  (``<table>-<seq:06d>-<8 hex>``), timestamps and, with ``chain=True``, an issue-15
  anchor (``chain: {seq, head}``, the head a SHA-256 chain: the shape, not the HMAC);
- the daemon's **outbox semantics**: a round is kept until the broker acknowledges it
  (QoS 1) and sent again after a reconnect (the floor may see it twice, never
  differently); after a reconnection that found more than a window waiting, the rounds
  made since go first and that backlog beside them at the link's pace (the same
  :class:`firmware_host.mqtt.pace.BacklogPace`, ``backlog_per_minute``), said in
  ``state``'s ``backlog``, an older anchor of it going unretained, as the link does;
- the ``replay_rounds`` command answered from what it published, byte for byte (taken
  on trust: the emulator checks no signature), with the real answer's ``newest_seq``;
- **signed like a table** (issue 28): each table has its own Ed25519 identity key;
  every round, the retained ``anchor`` published before each round, the ``state``
  (and its last will) and the answers are sealed (:func:`firmware_host.auth.evidence.
  seal`). :meth:`Emulator.write_registry` writes the floor's registry of its tables.
  Kept cheap: a round is its template's text (already JCS) with a few replacements
  and one signature.

:class:`Emulator` runs N tables at a pace of ``rate`` rounds per second each,
staggered; it records when each round was first handed to the client (``published``)
for the benchmark's publish -> committed latency. ``python -m tablesim.emulator``
runs one from the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import heapq
import json
import math
import random
import secrets
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth.evidence import canonical_text, seal, seal_text
from firmware_host.auth.keys import public_pem
from firmware_host.mqtt.client import _AckClient
from firmware_host.mqtt.items import Backoff
from firmware_host.mqtt.settings import MqttSettings
from firmware_host.schemas import PAYLOAD_SCHEMA_VERSION
from firmware_host.timefmt import iso_utc, utc_now

from .emulink import EmuClient, Sending
from .floormix import BETS, TablePlan, scaled_round

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden"
#: The table's link by default: its publication window (``[mqtt] max_inflight``), its
#: reconnect backoff and its backlog's pace (``backlog_per_minute``).
TABLE_WINDOW = MqttSettings().max_inflight
TABLE_RECONNECT = (MqttSettings().reconnect_min_ms / 1000, MqttSettings().reconnect_max_ms / 1000)
TABLE_BACKLOG_PER_MINUTE = MqttSettings().backlog_per_minute


def recorded_rounds(directory: Path = GOLDEN) -> list[dict[str, Any]]:
    """The demo runs' round payloads of every game (``tests/golden``)."""
    out: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, list):
            out += [r for r in data if isinstance(r, dict) and "bets" in r]
    if not out:
        raise FileNotFoundError(f"no recorded rounds in {directory}")
    return out


#: Placeholders in a pre-serialised template (strings no recorded round contains).
_TABLE, _ROUND, _NOW = "@@emu-table@@", "@@emu-round@@", "@@emu-now@@"
_SEQ = '"@@emu-seq@@"'
_CHAIN = '"@@emu-chain@@"'


def serialise_template(doc: dict[str, Any]) -> str:
    """A recorded round as the text an emulated round is made from: its table id,
    round id, seq, timestamps and chain placeholders, its recorded anchor removed (it
    belongs to the demo's journal). Serialised once, in JCS (RFC 8785) form, the form
    a table signs: the placeholders are values, so the members stay in their canonical
    order whatever replaces them. A round is then a few ``str.replace`` calls, not a
    ``json.dumps`` of the whole round (the emulator is load generation: its own cost
    must stay small beside what it loads)."""
    doc = dict(doc)
    doc.pop("chain", None)
    doc.update(table_id=_TABLE, round_id=_ROUND, seq=_SEQ[1:-1], chain=_CHAIN[1:-1])
    doc["timestamps"] = {"opened": _NOW, "closed": _NOW, "result": _NOW, doc["status"]: _NOW}
    text = canonical_text(doc)
    if text.count(_SEQ) != 1 or text.count(_ROUND) != 1 or text.count(_CHAIN) != 1:
        raise ValueError("a recorded round already holds an emulator placeholder")
    return text


def _without_chain(text: str) -> str:
    """The template without its chain member (a table before issue 15)."""
    member = f'"chain":{_CHAIN}'
    if f"{member}," in text:
        return text.replace(f"{member},", "", 1)
    return text.replace(f",{member}", "", 1)


@dataclass
class EmulatedTable:
    table_id: str
    #: Pre-serialised recorded rounds (:func:`serialise_template`), in this table's order.
    templates: list[str]
    chain: bool = True
    seq: int = 0
    chain_seq: int = 0
    chain_head: str = "0" * 64
    #: The table's identity key (None: nothing signed, a table before issue 28).
    key: Ed25519PrivateKey | None = None
    #: Every round published, by seq (what a replay answers from).
    sent: dict[int, bytes] = field(default_factory=dict)
    #: Rounds not yet acknowledged by the broker, in order, each with the retained
    #: anchor published before it (None: a replay, sent again as it was): those made
    #: on the current connection or, unpaced, all of them (``pending``), and the
    #: backlog found when the connection came up, paced (``backlog``).
    pending: deque[tuple[str, bytes, bytes | None]] = field(default_factory=deque)
    backlog: deque[tuple[str, bytes, bytes | None]] = field(default_factory=deque)
    #: The highest seq whose anchor was handed over retained (an older one goes
    #: unretained: the retained anchor never goes back).
    anchor_top: int = 0
    #: The latest anchor (its payload), what ``state`` repeats, and as published.
    anchor: dict[str, Any] | None = None
    anchor_raw: bytes | None = None
    online: bool = False
    #: When (time.time()) each connection of its came up (the benchmark's return).
    connected_at: list[float] = field(default_factory=list)
    #: Made all the rounds it was asked for.
    done: bool = False
    #: The last round the broker acknowledged (what ``state`` announces).
    last_acked: str | None = None
    acked_seq: int = 0
    #: The backlog paced on this connection (``state``'s ``backlog``, as the link's),
    #: and when the last failed try to connect began (0: none since the last one).
    paced: dict[str, int] | None = None
    down_at: float = 0.0
    #: Seconds between two of its rounds (None: the emulator's ``1 / rate``).
    period: float | None = None
    #: The next round's template (None: :attr:`templates` in turn).
    pick: Callable[[], str] | None = None
    #: Bets in the last round made, and in every round made.
    last_bets: int = 0
    bets_made: int = 0
    #: The table id as it stands inside a JSON string.
    _quoted_id: str = ""
    #: Per template (by identity): its status (settled or void) and its bets.
    _info: dict[int, tuple[str, int]] = field(default_factory=dict)

    def next_round(self) -> tuple[int, str, bytes]:
        """The next round, as published (signed when the table has a key); its anchor
        is :attr:`anchor_raw` (see :meth:`queue_round`)."""
        self.seq += 1
        if not self._quoted_id:
            self._quoted_id = json.dumps(self.table_id, ensure_ascii=False)[1:-1]
        if self.pick is not None:
            text = self.pick()
        else:
            text = self.templates[(self.seq - 1) % len(self.templates)]
        rid = f"{self.table_id}-{self.seq:06d}-{secrets.token_hex(4)}"
        now = iso_utc(utc_now())
        body = (
            text.replace(_TABLE, self._quoted_id)
            .replace(_ROUND, json.dumps(rid, ensure_ascii=False)[1:-1])
            .replace(_SEQ, str(self.seq))
            .replace(_NOW, now)
        )
        if self.chain:
            # Several entries per round (bets, open, settle): the chain moves on by more
            # than 1 (bets counted from the text: the template's, the same each time).
            self.chain_seq += 2 + body.count('"bet_id"')
            self.chain_head = hashlib.sha256(
                bytes.fromhex(self.chain_head) + body.encode()
            ).hexdigest()
            # JCS: "head" before "seq".
            body = body.replace(_CHAIN, f'{{"head":"{self.chain_head}","seq":{self.chain_seq}}}', 1)
        else:
            body = _without_chain(body)
        info = self._info.get(id(text))
        if info is None:  # once per template (a few string lookups cannot tell)
            doc = json.loads(text)
            info = self._info[id(text)] = (str(doc["status"]), len(doc["bets"]))
        status = info[0]
        self.last_bets = info[1]
        self.bets_made += info[1]
        self.anchor = {
            "round_id": rid,
            "seq": self.seq,
            "phase": status,
            "chain": {"seq": self.chain_seq, "head": self.chain_head} if self.chain else None,
        }
        self.anchor_raw = None
        if self.key is not None:
            raw = seal_text(self.key, "rounds", body)
            if self.chain:
                # The retained anchor, as the table publishes it before the round's
                # messages: JCS text made directly (members in their canonical order).
                self.anchor_raw = seal_text(
                    self.key,
                    "anchor",
                    f'{{"at":"{now}","chain":{{"head":"{self.chain_head}","seq":'
                    f'{self.chain_seq}}},"phase":"{status}","round_id":"'
                    f'{json.dumps(rid, ensure_ascii=False)[1:-1]}","schema_version":'
                    f'{PAYLOAD_SCHEMA_VERSION},"seq":{self.seq},"table_id":"{self._quoted_id}"}}',
                )
        else:
            raw = body.encode()
        self.sent[self.seq] = raw
        return self.seq, rid, raw

    def queue_round(self) -> tuple[int, str, bytes]:
        """Make the next round and queue it (with its anchor before it) for the link."""
        seq, rid, raw = self.next_round()
        self.pending.append((rid, raw, self.anchor_raw))
        return seq, rid, raw

    @property
    def unsent(self) -> int:
        """Rounds not yet acknowledged by the broker (live and backlog)."""
        return len(self.pending) + len(self.backlog)

    def seal(self, topic: str, payload: dict[str, Any]) -> bytes:
        """A message of this table on ``topic`` (below its root): signed when it has a
        key, plain JSON otherwise."""
        if self.key is not None:
            return seal(self.key, topic, payload)
        return json.dumps(payload).encode()


def _set_event(event: asyncio.Event, _task: object) -> None:
    event.set()


@dataclass
class EmulatorStats:
    generated: int = 0
    published: int = 0
    resent: int = 0
    connects: int = 0
    replays: int = 0
    replayed: int = 0


class Emulator:
    """``tables`` emulated tables at ``rate`` rounds per second each, or a floor's
    tables each at its own pace (:class:`~tablesim.floormix.TablePlan`: its game's
    recorded rounds, of ``bets`` bets drawn uniformly, 7 to 60 by default).

    Each table publishes as the table's link does (``firmware_host.mqtt``): through its
    client (:class:`~firmware_host.mqtt.client._AckClient`, each PUBACK answered by a
    callback), at most ``window`` rounds in flight (the link's ``max_inflight``, 16 by
    default), a round leaving its queue only once the broker acknowledged it; after a
    lost connection it reconnects after the link's backoff
    (:class:`~firmware_host.mqtt.items.Backoff`: ``reconnect`` = the first delay and the
    cap in seconds, jitter 50-100%; the table's defaults are 0.25 and 3 s) and sends
    again everything not acknowledged: the rounds made since first, that backlog beside
    them at ``backlog_per_minute`` (the link's pace, the same
    :class:`~firmware_host.mqtt.pace.BacklogPace`; 0: in order at full speed)."""

    def __init__(
        self,
        host: str,
        port: int,
        tables: int | Sequence[str] | Sequence[TablePlan],
        *,
        rate: float = 1.0,
        prefix: str = "casino",
        chain: bool = True,
        seed: int = 18,
        state_every: int = 0,
        client_prefix: str = "emu",
        sign: bool = True,
        bets: tuple[int, int] | None = None,
        window: int = TABLE_WINDOW,
        reconnect: tuple[float, float] = (0.1, 2.0),
        backlog_per_minute: int = TABLE_BACKLOG_PER_MINUTE,
    ) -> None:
        self.host = host
        self.port = port
        self.prefix = prefix
        self.rate = rate
        self.state_every = state_every
        self.client_prefix = client_prefix
        if not rate > 0:
            raise ValueError(f"rate must be > 0 rounds per second, got {rate!r}")
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window!r}")
        self.window = window
        if backlog_per_minute < 0:
            raise ValueError(f"backlog_per_minute must be >= 0, got {backlog_per_minute!r}")
        self.backlog_per_minute = backlog_per_minute
        #: The reconnect backoff's cap (s): what was made this long before a connection
        #: is live, not backlog (the link's rule).
        self.backoff_cap = reconnect[1]
        self.backoff = Backoff(
            MqttSettings(
                reconnect_min_ms=round(1000 * reconnect[0]),
                reconnect_max_ms=round(1000 * reconnect[1]),
            ),
            random.Random(seed + 1),
        )
        rng = random.Random(seed)
        recorded = recorded_rounds()
        templates = [serialise_template(r) for r in recorded]
        if isinstance(tables, int):
            entries: list[str | TablePlan] = [f"emu-{i:04d}" for i in range(tables)]
        else:
            entries = list(tables)
        #: Rounds of a given size, made once: (recorded round, bets) -> template.
        self._sized: dict[tuple[int, int], str] = {}
        self.tables = {}
        #: The plan of each table made from one (its game, kind and pace).
        self.plans: dict[str, TablePlan] = {}
        for entry in entries:
            key = Ed25519PrivateKey.generate() if sign else None
            if isinstance(entry, TablePlan):
                mine = [i for i, r in enumerate(recorded) if r.get("game") == entry.game]
                if not mine:
                    raise ValueError(f"no recorded round of the game {entry.game!r}")
                self.plans[entry.table_id] = entry
                self.tables[entry.table_id] = EmulatedTable(
                    entry.table_id, [templates[i] for i in mine], chain=chain, key=key,
                    period=entry.period_s, pick=self._picker(recorded, mine, bets or BETS, rng),
                )  # fmt: skip
                continue
            own = templates[:]
            rng.shuffle(own)
            pick = None if bets is None else self._picker(recorded, list(range(len(recorded))),
                                                          bets, rng)  # fmt: skip
            self.tables[entry] = EmulatedTable(entry, own, chain=chain, key=key, pick=pick)
        #: round_id -> time.time() when first handed to the MQTT client.
        self.published: dict[str, float] = {}
        #: round_id -> time.time() when the table made it (journaled, queued).
        self.made: dict[str, float] = {}
        #: Every replay asked of a table: ``(table, from_seq, to_seq)``.
        self.replay_requests: list[tuple[str, int, int | None]] = []
        self.stats = EmulatorStats()
        self._playing = asyncio.Event()
        self._stop = asyncio.Event()
        self._wake: dict[str, asyncio.Event] = {}
        self._rng = rng
        #: The origin of every table's slots (``_clock``).
        self._base = time.monotonic()

    def _picker(
        self,
        recorded: list[dict[str, Any]],
        indices: list[int],
        bets: tuple[int, int],
        rng: random.Random,
    ) -> Callable[[], str]:
        """A round of one of the recorded rounds ``indices``, with a number of bets
        drawn uniformly in ``bets`` (each size of each round serialised once)."""
        lo, hi = bets
        if not 1 <= lo <= hi:
            raise ValueError(f"bets per round must be 1 <= low <= high, got {bets!r}")
        sized = self._sized

        def pick() -> str:
            key = (indices[rng.randrange(len(indices))], rng.randint(lo, hi))
            text = sized.get(key)
            if text is None:
                text = sized[key] = serialise_template(scaled_round(recorded[key[0]], key[1]))
            return text

        return pick

    @property
    def bets_made(self) -> int:
        return sum(t.bets_made for t in self.tables.values())

    def root(self, tid: str) -> str:
        return f"{self.prefix}/tables/{tid}"

    def write_registry(self, path: str | Path, *, game: str = "emulated") -> Path:
        """The floor's registry of these tables (``flooringest.registry``): ``path``
        (TOML) and each table's public key in ``keys/`` beside it."""
        p = Path(path)
        keys = p.parent / "keys"
        keys.mkdir(parents=True, exist_ok=True)
        lines = ["# the emulated tables (tablesim.emulator), their identity keys", ""]
        for tid, t in self.tables.items():
            if t.key is None:
                raise ValueError("the emulator signs nothing (sign=False): no registry")
            (keys / f"{tid}.pub").write_bytes(public_pem(t.key.public_key()))
            lines += [
                f"[tables.{json.dumps(tid)}]",
                f"game = {json.dumps(self.plans[tid].game if tid in self.plans else game)}",
                f"keys = [{json.dumps(f'keys/{tid}.pub')}]",
                "",
            ]
        p.write_text("\n".join(lines), encoding="utf-8")
        return p

    @property
    def total_rounds(self) -> int:
        return sum(t.seq for t in self.tables.values())

    def unacknowledged(self) -> int:
        return sum(t.unsent for t in self.tables.values())

    async def finished(self, timeout: float) -> bool:
        """Wait until every table made its rounds and the broker acknowledged them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(t.done for t in self.tables.values()) and not self.unacknowledged():
                return True
            await asyncio.sleep(0.1)
        return False

    def pause(self) -> None:
        """Stop making new rounds (what is pending is still sent)."""
        self._playing.clear()

    def play(self) -> None:
        self._playing.set()

    def stop(self) -> None:
        self._stop.set()
        self._playing.set()  # a paused clock sees the stop
        for wake in self._wake.values():
            wake.set()

    async def run(self, *, rounds_per_table: int | None = None, paused: bool = False) -> None:
        """Connect every table and play until :meth:`stop` (each table stops making
        rounds after ``rounds_per_table``, and stays connected, answering replays);
        returns after :meth:`stop` once everything made was acknowledged."""
        if not paused:  # paused: the tables connect, and play from play()
            self._playing.set()
        for tid in self.tables:
            self._wake[tid] = asyncio.Event()
        async with asyncio.TaskGroup() as tg:
            for tid in self.tables:
                tg.create_task(self._link(tid), name=f"emu-link-{tid}")
            tg.create_task(self._clock(rounds_per_table), name="emu-clock")

    async def _clock(self, limit: int | None) -> None:
        """Every table's rounds on its own slots, ``base + offset + k * period`` (its
        own period), the offsets spread evenly across the period: tables stay
        staggered, through pauses and when behind (a table that falls behind takes its
        next slot, never a burst: a burst of every table at once is a thundering herd,
        not a floor). One task for every table (a timer per table and round was most
        of the emulator's cost)."""
        n = max(1, len(self.tables))
        periods = {tid: t.period or 1.0 / self.rate for tid, t in self.tables.items()}
        offsets = {tid: (i / n) * periods[tid] for i, tid in enumerate(self.tables)}

        def next_slot(tid: str, after: float) -> float:
            """The table's first slot at or after ``after``."""
            origin, period = self._base + offsets[tid], periods[tid]
            return origin + max(0, math.ceil((after - origin) / period - 1e-9)) * period

        def schedule(after: float) -> list[tuple[float, str]]:
            heap = [
                (next_slot(tid, after), tid)
                for tid, t in self.tables.items()
                if limit is None or t.seq < limit
            ]
            heapq.heapify(heap)
            return heap

        for t in self.tables.values():
            if limit is not None and t.seq >= limit:
                t.done = True
        heap: list[tuple[float, str]] = []
        playing = False
        while not self._stop.is_set():
            if not self._playing.is_set():
                playing = False
                await self._playing.wait()
                continue
            now = time.monotonic()
            if not playing:  # (re)started: every table from its next slot
                playing = True
                heap = schedule(now)
            made_at = time.time()
            while heap and heap[0][0] <= now:
                _at, tid = heapq.heappop(heap)
                t = self.tables[tid]
                _seq, rid, _raw = t.queue_round()
                self.made[rid] = made_at
                self.stats.generated += 1
                self._wake[tid].set()
                if limit is not None and t.seq >= limit:
                    t.done = True  # the link exits once all are acknowledged
                else:
                    heapq.heappush(heap, (next_slot(tid, now + periods[tid] / 2), tid))
            if not heap:
                if limit is not None:
                    return
                await self._stop.wait()
                return
            await asyncio.sleep(min(0.05, max(0.0, heap[0][0] - time.monotonic())))

    async def _link(self, tid: str) -> None:
        t = self.tables[tid]
        root = self.root(tid)
        attempt = 0
        while True:
            # The last will, sealed at connect time (as the daemon's: the state then).
            offline = t.seal("state", self._state_payload(t, "offline"))
            will = aiomqtt.Will(f"{root}/state", offline, qos=1, retain=True)
            tried = time.time()
            try:
                async with EmuClient(
                    self.host, self.port, identifier=f"{self.client_prefix}-{tid}", will=will,
                    keepalive=15, clean_session=False, timeout=10,
                ) as c:  # fmt: skip
                    tried = 0.0  # connected
                    self.stats.connects += 1
                    attempt = 0
                    t.online = True
                    t.connected_at.append(time.time())
                    await c.subscribe(f"{root}/commands/request", qos=1)
                    await self._state(c, t, "online")
                    listener = asyncio.create_task(self._requests(c, t))
                    wake = self._wake[tid]
                    listener.add_done_callback(functools.partial(_set_event, wake))
                    try:
                        if await self._publish(c, t, listener):
                            return
                    finally:
                        listener.cancel()
                        with contextlib.suppress(BaseException):
                            await listener
                        t.online = False
            except aiomqtt.MqttError:
                t.online = False
            if tried:  # the floor was away when this try began (as the link's down_at)
                t.down_at = tried
            if self._stop.is_set() and not t.unsent:
                return
            await asyncio.sleep(self.backoff(attempt))
            attempt += 1

    async def _publish(self, c: _AckClient, t: EmulatedTable, listener: asyncio.Task[None]) -> bool:
        """Send the table's queues (live first, the backlog at its pace), at most
        :attr:`window` in flight, until the
        emulator stops with nothing left (True) or the connection ends (raises
        :class:`aiomqtt.MqttError`)."""
        wake = self._wake[t.table_id]
        sending = Sending(self, t, c, wake)
        try:
            while True:
                if listener.done():
                    listener.result()  # the connection's end (MqttError), or a bug
                    raise aiomqtt.MqttError("the connection ended")
                sending.fill()
                if self._stop.is_set() and not t.unsent:
                    return True
                wake.clear()
                if sending.room() or sending.state_due:
                    continue
                pause = sending.wait()  # None: until woken; else the backlog's next round's due
                with contextlib.suppress(TimeoutError):  # asyncio.timeout: not wait_for, gh-86296
                    async with asyncio.timeout(None if pause is None else max(pause, 0.001)):
                        await wake.wait()
        finally:
            sending.live = False

    @staticmethod
    def _state_payload(t: EmulatedTable, availability: str) -> dict[str, Any]:
        anchor = t.anchor if t.anchor is not None and t.anchor["seq"] <= t.acked_seq else None
        return {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": t.table_id,
            "availability": availability,
            "phase": "idle",
            "last_round_id": t.last_acked,
            "anchor": anchor if anchor is None or anchor["chain"] is not None else None,
            "emulated": True,
            **({"backlog": t.paced} if t.paced and availability == "online" else {}),
        }

    async def _state(self, c: aiomqtt.Client, t: EmulatedTable, availability: str) -> None:
        await c.publish(
            f"{self.root(t.table_id)}/state",
            t.seal("state", self._state_payload(t, availability)),
            qos=1,
            retain=True,
        )

    async def _requests(self, c: aiomqtt.Client, t: EmulatedTable) -> None:
        async for m in c.messages:
            raw = m.payload
            try:
                req = json.loads(raw if isinstance(raw, (bytes, str)) else str(raw))
            except ValueError:
                continue
            if not isinstance(req, dict) or req.get("command") != "replay_rounds":
                continue
            args = req.get("args") or {}
            first = int(args.get("from_seq", 1))
            to = args.get("to_seq")
            last = int(to or t.seq)
            seqs = [s for s in range(first, min(last, t.seq) + 1) if s in t.sent][:500]
            for s in seqs:
                doc = t.sent[s]
                t.pending.append((json.loads(doc)["round_id"], doc, None))
            self.stats.replays += 1
            self.stats.replayed += len(seqs)
            self.replay_requests.append((t.table_id, first, None if to is None else int(to)))
            self._wake[t.table_id].set()
            answer = {
                "schema_version": PAYLOAD_SCHEMA_VERSION,
                "table_id": t.table_id,
                "request_id": req.get("request_id"),
                "command": "replay_rounds",
                "status": "ok",
                "data": {
                    "from_seq": first,
                    "to_seq": None if to is None else int(to),
                    "queued": len(seqs),
                    "first_seq": seqs[0] if seqs else None,
                    "last_seq": seqs[-1] if seqs else None,
                    "newest_seq": t.seq,
                    "more": bool(seqs) and seqs[-1] < min(last, t.seq),
                },
            }
            await c.publish(
                f"{self.root(t.table_id)}/commands/response",
                t.seal("commands/response", answer),
                qos=1,
            )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tablesim.emulator", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=1883)
    p.add_argument("--tables", type=int, default=100)
    p.add_argument("--rate", type=float, default=1 / 60, help="rounds per second per table")
    p.add_argument("--rounds", type=int, default=None, help="rounds per table, then stop")
    p.add_argument("--no-chain", action="store_true", help="rounds without issue 15's chain")
    p.add_argument("--unsigned", action="store_true", help="sign nothing (tables before issue 28)")
    p.add_argument(
        "--registry", help="write the floor's registry of the tables here (keys/ beside it)"
    )
    args = p.parse_args(argv)

    async def run() -> None:
        emu = Emulator(
            args.host, args.port, args.tables, rate=args.rate, chain=not args.no_chain,
            sign=not args.unsigned,
        )  # fmt: skip
        if args.registry:
            print(f"registry: {emu.write_registry(args.registry)}", flush=True)
        task = asyncio.create_task(emu.run(rounds_per_table=args.rounds))
        if args.rounds is not None:
            await emu.finished(timeout=24 * 3600)
            emu.stop()
        await task
        print(json.dumps(emu.stats.__dict__))

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
