"""A simulated floor system: the other end of the MQTT contract.

Used by ``tablectl demo`` (players placing bets, the croupier's commands, the
printout of settled rounds), the end-to-end tests and the benchmarks. The daemon
itself never imports this module: its only MQTT code is ``firmware_host/mqtt.py``.

Besides requests and their responses it keeps what a floor system knows of the
table from its topics (``docs/mqtt.md``): the last retained ``state`` (availability,
phase, round in flight) and the ids of the rounds received on ``rounds``;
:meth:`FloorClient.until` waits for a condition on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiomqtt

from firmware_host.jsonio import JSON


@dataclass(frozen=True)
class FloorMessage:
    topic: str  # relative to the table root
    payload: bytes
    retain: bool
    at: float  # time.perf_counter() on receipt

    def json(self) -> JSON:
        return json.loads(self.payload)


@dataclass
class FloorClient:
    """Subscribes to a table's root, sends requests, awaits their responses."""

    host: str
    port: int
    table_id: str
    prefix: str = "casino"
    client_id: str = "floor-sim"
    messages: list[FloorMessage] = field(default_factory=list)
    on_message: Callable[[FloorMessage], None] | None = None
    #: The table's last ``state`` payload (availability, game, phase, round_id...).
    state: JSON = None
    #: Ids of the rounds received on ``rounds`` (settled or void).
    finished: set[str] = field(default_factory=set)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _client: aiomqtt.Client | None = None
    _task: asyncio.Task[None] | None = None
    _pending: dict[str, asyncio.Future[JSON]] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _rounds: asyncio.Queue[JSON] = field(default_factory=asyncio.Queue)

    @property
    def root(self) -> str:
        return f"{self.prefix}/tables/{self.table_id}"

    async def start(self, timeout: float = 30.0) -> None:
        """Connect and subscribe to the table's root; TimeoutError if no broker answers."""
        self._task = asyncio.create_task(self._run(), name=f"floor-client-{self.client_id}")
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            await self.stop()
            raise TimeoutError(
                f"no MQTT broker answered at {self.host}:{self.port} within {timeout:g} s"
            ) from None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    async def __aenter__(self) -> FloorClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _run(self) -> None:
        while True:
            try:
                async with aiomqtt.Client(
                    self.host, self.port, identifier=self.client_id, keepalive=10
                ) as c:
                    self._client = c
                    await c.subscribe(f"{self.root}/#", qos=1)
                    self._ready.set()
                    async for m in c.messages:
                        raw = m.payload
                        payload = (
                            bytes(raw) if isinstance(raw, (bytes, bytearray)) else str(raw).encode()
                        )
                        rel = m.topic.value[len(self.root) + 1 :]
                        msg = FloorMessage(rel, payload, bool(m.retain), time.perf_counter())
                        self.messages.append(msg)
                        self._dispatch(msg)
            except aiomqtt.MqttError:
                self._client = None
                await asyncio.sleep(0.2)

    def _dispatch(self, msg: FloorMessage) -> None:
        if msg.topic in ("bets/response", "commands/response"):
            with contextlib.suppress(ValueError):
                data = msg.json()
                fut = self._pending.pop(str(data.get("request_id")), None)
                if fut is not None and not fut.done():
                    fut.set_result(data)
        elif msg.topic == "rounds":
            with contextlib.suppress(ValueError):
                payload = msg.json()
                self.finished.add(str(payload.get("round_id")))
                self._rounds.put_nowait(payload)
        elif msg.topic == "state":
            with contextlib.suppress(ValueError):
                self.state = msg.json()
        self._changed.set()
        if self.on_message is not None:
            self.on_message(msg)

    # -- the table as the floor sees it ----------------------------------------------
    @property
    def phase(self) -> str | None:
        """The table's phase (``idle``, ``open``, ``closed``...) by its last ``state``."""
        return self.state.get("phase") if isinstance(self.state, dict) else None

    @property
    def round_id(self) -> str | None:
        """The round in flight by the table's last ``state``."""
        return self.state.get("round_id") if isinstance(self.state, dict) else None

    async def until(self, cond: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
        """Until ``cond()`` holds (checked on every message received); TimeoutError
        naming ``what`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"table {self.table_id}: {what or 'condition'} not seen within {timeout:g} s"
                )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def wait_online(self, since: datetime, timeout: float = 30.0) -> JSON:
        """Until the table says ``online`` on a connection made at ``since`` or later (a
        retained ``online`` of an earlier run does not count). The table publishes it
        once its request topics are subscribed: requests sent from then on are read."""

        def online() -> bool:
            st = self.state
            if not isinstance(st, dict) or st.get("availability") != "online":
                return False
            try:
                return datetime.fromisoformat(str(st.get("since"))) >= since
            except ValueError:
                return False

        await self.until(online, timeout, "availability online")
        return self.state

    async def wait_phase(self, *phases: str, new_round: bool = False, timeout: float = 30.0) -> str:
        """Until the table's phase is one of ``phases`` (with ``new_round``: for a round
        not yet received on ``rounds``); returns the round id in flight (or "")."""

        def reached() -> bool:
            if self.phase not in phases:
                return False
            return not new_round or (
                self.round_id is not None and self.round_id not in self.finished
            )

        await self.until(reached, timeout, f"phase {'/'.join(phases)}")
        return self.round_id or ""

    async def request(self, kind: str, body: Mapping[str, JSON], timeout: float = 30.0) -> JSON:
        """Send on ``<kind>/request`` (``bets`` or ``commands``), await the response."""
        while self._client is None:
            await asyncio.sleep(0.05)
        rid = f"{self.client_id}-{next(self._ids)}"
        fut: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        payload = json.dumps({"request_id": rid, **body})
        await self._client.publish(f"{self.root}/{kind}/request", payload, qos=1)
        return await asyncio.wait_for(fut, timeout)

    async def send_raw(self, kind: str, payload: bytes) -> None:
        while self._client is None:
            await asyncio.sleep(0.05)
        await self._client.publish(f"{self.root}/{kind}/request", payload, qos=1)

    async def command(self, command: str, **args: JSON) -> JSON:
        body: dict[str, JSON] = {"command": command}
        if args:
            body["args"] = args
        return await self.request("commands", body)

    async def place(self, bet: Mapping[str, JSON]) -> JSON:
        return await self.request("bets", {"action": "place", "bet": dict(bet)})

    async def next_round(self, timeout: float = 30.0) -> JSON:
        return await asyncio.wait_for(self._rounds.get(), timeout)
