"""A simulated floor system: the other end of the MQTT contract.

Used by ``tablectl demo`` (players placing bets, the croupier's commands, the
printout of settled rounds), the end-to-end tests and the benchmarks. The daemon
itself never imports this module: its only MQTT code is ``firmware_host/mqtt/``.

Besides requests and their responses it keeps what a floor system knows of the
table from its topics (``docs/mqtt.md``): the last retained ``state`` (availability,
phase, round in flight) and the ids of the rounds received on ``rounds``;
:meth:`FloorClient.until` waits for a condition on them.

It is also the reference *signing client* (``docs/security.md``): with ``signers``,
every request is signed by the principal whose role allows it, and every command
names its round as the floor last saw it (``round_id``; ``after_round_id`` for
``open_betting``), as the table requires. The answer to a signed request is the
response naming its request id AND the principal that signed it: a refusal that
names no principal (a request the table could not authenticate, which anyone can make
the table send under any request id) is kept in :attr:`FloorClient.unverified` and
never taken for it.
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

from firmware_host.auth import Signer
from firmware_host.commands import CATALOGUE
from firmware_host.jsonio import JSON

from .principals import Principals


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
    #: Who signs the requests (None: unsigned, for a table with signatures off).
    signers: Principals | None = None
    #: The broker account (``tablectl rollout``: the updater's), if the broker asks one.
    username: str | None = None
    password: str | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _client: aiomqtt.Client | None = None
    _task: asyncio.Task[None] | None = None
    _pending: dict[str, asyncio.Future[JSON]] = field(default_factory=dict)
    #: The principal whose answer each pending request waits for (None: any answer).
    _expect: dict[str, str | None] = field(default_factory=dict)
    #: Answers under a pending request id that named another principal or none: not
    #: the table's answer to our request (a forger's request under our id, refused).
    unverified: list[JSON] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _rounds: asyncio.Queue[JSON] = field(default_factory=asyncio.Queue)
    #: The round opened by our last open_betting, until the table's state catches up.
    _opened: str | None = None
    #: The table's latest round as last heard (state, rounds, or our open_betting).
    _last: str | None = None

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
                    self.host, self.port, identifier=self.client_id, keepalive=10,
                    username=self.username, password=self.password,
                ) as c:  # fmt: skip
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
                rid = str(data.get("request_id"))
                expected = self._expect.get(rid)
                if (
                    rid in self._pending
                    and expected is not None
                    and (not isinstance(data, dict) or data.get("principal") != expected)
                ):
                    self.unverified.append(data)
                else:
                    fut = self._pending.pop(rid, None)
                    self._expect.pop(rid, None)
                    if fut is not None and not fut.done():
                        fut.set_result(data)
        elif msg.topic == "rounds":
            with contextlib.suppress(ValueError):
                payload = msg.json()
                self.finished.add(str(payload.get("round_id")))
                self._last = str(payload.get("round_id"))
                self._rounds.put_nowait(payload)
        elif msg.topic == "state":
            with contextlib.suppress(ValueError):
                self.state = msg.json()
                if isinstance(self.state, dict) and self.state.get("last_round_id"):
                    self._last = str(self.state["last_round_id"])
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

    @property
    def round_in_progress(self) -> str | None:
        """The round in flight as the floor last heard of it: the table's ``state``, or
        the round our last ``open_betting`` opened (until it is finished)."""
        rid = self.round_id
        if rid and rid not in self.finished:
            return str(rid)
        if self._opened and self._opened not in self.finished:
            return self._opened
        return None

    @property
    def last_round_id(self) -> str | None:
        """The table's latest round as the floor last heard of it (what ``open_betting``
        follows)."""
        return self._last

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

    def new_request_id(self) -> str:
        return f"{self.client_id}-{next(self._ids)}"

    def sign(
        self, kind: str, body: Mapping[str, JSON], signer: Signer | None = None
    ) -> dict[str, JSON]:
        """``body`` as sent on ``<kind>/request``: signed by ``signer``, or by the
        principal of ``signers`` whose role allows it (unsigned without either)."""
        permission = str(body.get("command") or body.get("action") or "")
        if signer is None and self.signers is not None:
            signer = self.signers.signer_for(permission)
        if signer is None:
            return dict(body)
        return signer.sign(f"{kind}/request", self.table_id, body)

    async def request(
        self,
        kind: str,
        body: Mapping[str, JSON],
        timeout: float = 30.0,
        *,
        request_id: str | None = None,
        signer: Signer | None = None,
    ) -> JSON:
        """Send on ``<kind>/request`` (``bets`` or ``commands``), signed, await the
        response. ``request_id``: to retry a request (signed again) under its id."""
        while self._client is None:
            await asyncio.sleep(0.05)
        rid = request_id or self.new_request_id()
        fut: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        signed = self.sign(kind, {"request_id": rid, **body}, signer)
        self._pending[rid] = fut
        principal = signed.get("principal") if "signature" in signed else None
        self._expect[rid] = principal if isinstance(principal, str) else None
        payload = json.dumps(signed)
        await self._client.publish(f"{self.root}/{kind}/request", payload, qos=1)
        answer = await asyncio.wait_for(fut, timeout)
        if (
            body.get("command") == "open_betting"
            and isinstance(answer, dict)
            and answer.get("status") == "ok"
        ):
            self._opened = self._last = str(answer["data"]["round_id"])
        return answer

    async def send_raw_awaiting(
        self, kind: str, payload: bytes, request_id: str, timeout: float = 30.0
    ) -> JSON:
        """Publish ``payload`` as is (a replay, a forgery) and await the answer to
        ``request_id``."""
        while self._client is None:
            await asyncio.sleep(0.05)
        fut: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        self._expect[request_id] = None  # whatever answers it (a test of the table)
        await self._client.publish(f"{self.root}/{kind}/request", payload, qos=1)
        return await asyncio.wait_for(fut, timeout)

    async def send_raw(self, kind: str, payload: bytes) -> None:
        while self._client is None:
            await asyncio.sleep(0.05)
        await self._client.publish(f"{self.root}/{kind}/request", payload, qos=1)

    def command_body(
        self, command: str, *, round_id: str | None = None, **args: JSON
    ) -> dict[str, JSON]:
        """A command naming its round as its spec's scope says
        (``firmware_host/commands.py``): ``round_id`` (default: the round in progress as
        the floor last heard), for ``open_betting`` and ``new_shoe`` the round it follows
        (default: the table's latest round), for ``jackpot_paid`` the round of the hit
        (only if given); nothing for a command about the table. A command the table does
        not know names the round in progress (it is refused as such)."""
        body: dict[str, JSON] = {"command": command}
        spec = CATALOGUE.get(command)
        scope = spec.scope if spec is not None else "round"
        if scope == "follows":
            body["after_round_id"] = round_id if round_id is not None else self.last_round_id
        elif scope == "round" or (scope == "hit" and round_id):
            body["round_id"] = round_id if round_id is not None else self.round_in_progress
        if args:
            body["args"] = args
        return body

    async def command(
        self,
        command: str,
        *,
        round_id: str | None = None,
        request_id: str | None = None,
        signer: Signer | None = None,
        **args: JSON,
    ) -> JSON:
        body = self.command_body(command, round_id=round_id, **args)
        return await self.request("commands", body, request_id=request_id, signer=signer)

    async def place(
        self,
        bet: Mapping[str, JSON],
        *,
        round_id: str | None = None,
        request_id: str | None = None,
        signer: Signer | None = None,
    ) -> JSON:
        body: dict[str, JSON] = {
            "action": "place",
            "round_id": round_id if round_id is not None else self.round_in_progress,
            "bet": dict(bet),
        }
        return await self.request("bets", body, request_id=request_id, signer=signer)

    async def cancel(
        self,
        bet_id: str,
        *,
        round_id: str | None = None,
        request_id: str | None = None,
        signer: Signer | None = None,
    ) -> JSON:
        body: dict[str, JSON] = {
            "action": "cancel",
            "round_id": round_id if round_id is not None else self.round_in_progress,
            "bet_id": bet_id,
        }
        return await self.request("bets", body, request_id=request_id, signer=signer)

    async def next_round(self, timeout: float = 30.0) -> JSON:
        return await asyncio.wait_for(self._rounds.get(), timeout)
