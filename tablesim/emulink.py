"""One emulated table's connection (``tablesim.emulator``): its MQTT client and what one
connection sends, the live rounds first and the backlog beside them at the link's pace."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import math
import socket
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import aiomqtt
from aiomqtt.client import _set_client_socket_defaults

from firmware_host.mqtt.client import _AckClient
from firmware_host.mqtt.pace import BacklogPace

if TYPE_CHECKING:
    from .emulator import EmulatedTable, Emulator

#: The outbox entries a daemon's round makes: its three events (``betting_open``,
#: ``betting_closed``, ``result``), its two anchors and the round (checked against the
#: round engine in tests/floor_ingest/test_emulator_pace.py). The emulator publishes the
#: round and one anchor, but paces a backlog when the link would: more than a window of
#: *entries* (it counted two a round, and sent up to 8 rounds at once where a table
#: paces 3).
DAEMON_ENTRIES_PER_ROUND = 6


class EmuClient(_AckClient):
    """The link's client (PUBACKs by callback, refusals kept) without its burst reader:
    that reader asks ``select()``, which takes no descriptor above 1023, and an emulator
    of more than about a thousand tables holds more connections than that in one
    process (each connection failed with "filedescriptor out of range in select()").
    The tables read little (a replay request now and then): aiomqtt's own reader does."""

    def _on_socket_open(self, client: Any, userdata: Any, sock: Any) -> None:
        aiomqtt.Client._on_socket_open(self, client, userdata, sock)

    async def __aenter__(self) -> EmuClient:
        """aiomqtt's connect (2.5), but on the event loop: aiomqtt runs paho's blocking
        connect in the loop's executor (six threads here), and a thousand tables' tries
        waited there for the interpreter's lock behind the loop: after a broker's
        return the last table took a second and more to come back (a thousand clients
        connecting on a busy loop: 0.3-1.3 s through the executor, 0.22-0.23 s on the loop).
        The TCP connection is made with the loop's non-blocking ``sock_connect`` and
        handed to paho, which then only writes its CONNECT. (A real table is one
        client: the daemon keeps aiomqtt's own.)"""
        if self._lock.locked():
            raise aiomqtt.MqttReentrantError("The client is not reentrant")
        await self._lock.acquire()
        try:
            sock = await self._tcp()
            self._client._create_socket_connection = lambda: sock  # type: ignore[method-assign]
            self._client_connect()
            _set_client_socket_defaults(self._client.socket(), self._socket_options)
        except (OSError, TimeoutError) as exc:
            self._lock.release()
            raise aiomqtt.MqttError(str(exc) or type(exc).__name__) from None
        try:
            await self._wait_for(self._connected, timeout=None)
        except aiomqtt.MqttError:
            self._lock.release()
            self._connected = asyncio.get_running_loop().create_future()
            raise
        if self._disconnected.done():
            self._disconnected = asyncio.get_running_loop().create_future()
        return self

    async def _tcp(self) -> socket.socket:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.timeout):
            infos: list[tuple[socket.AddressFamily, Any]]
            try:  # an address as it stands (the benchmark's): no lookup
                family = ipaddress.ip_address(self._hostname).version
                infos = [(socket.AF_INET6 if family == 6 else socket.AF_INET,
                          (self._hostname, self._port))]  # fmt: skip
            except ValueError:  # a name: looked up (in the executor, as asyncio does)
                found = await loop.getaddrinfo(self._hostname, self._port,
                                               type=socket.SOCK_STREAM)  # fmt: skip
                infos = [(f, addr) for f, _t, _p, _c, addr in found]
            for i, (family_, address) in enumerate(infos):  # each in turn, as paho's
                sock = socket.socket(family_, socket.SOCK_STREAM)
                sock.setblocking(False)
                try:
                    await loop.sock_connect(sock, address)
                    return sock
                except OSError:
                    sock.close()
                    if i == len(infos) - 1:
                        raise
                except BaseException:
                    sock.close()
                    raise
        raise OSError(f"no address for {self._hostname!r}")


class Sending:
    """One connection's publications of one table: the heads of its queues in flight,
    at most the emulator's window, the live rounds (``pending``) first and the backlog
    beside them at the pace (:class:`~firmware_host.mqtt.pace.BacklogPace`); a round
    leaves its queue when its PUBACK comes (a broker answers a connection's QoS 1
    publications in the order it received them, MQTT 3.1.1 section 4.6, and each queue
    is sent in its order). What the connection had in flight when it ended is sent
    again on the next one."""

    __slots__ = ("c", "emu", "in_flight", "live", "pace", "root", "sent", "state_due", "t", "wake")

    def __init__(self, emu: Emulator, t: EmulatedTable, c: _AckClient, wake: asyncio.Event) -> None:
        self.emu, self.t, self.c, self.wake = emu, t, c, wake
        self.root = emu.root(t.table_id)
        self.in_flight: deque[tuple[tuple[str, bytes, bytes | None], bool]] = deque()
        #: In flight from each queue (False: live, True: backlog): its first ones.
        self.sent = {False: 0, True: 0}
        self.live = True
        # What waits now and was made before the last backoff's wait and before the last
        # failed try began is the backlog: paced when more than a window's entries (a
        # daemon's round makes DAEMON_ENTRIES_PER_ROUND), as the link decides; what was
        # made since is live.
        self.pace = BacklogPace(emu.backlog_per_minute, emu.window, emu.backoff_cap)
        waiting = [*t.backlog, *t.pending]
        cut = min(time.time() - self.pace.recent_s, t.down_at or math.inf)
        t.down_at = 0.0
        old = 0
        while old < len(waiting) and emu.made.get(waiting[old][0], 0.0) < cut:
            old += 1
        said = t.paced
        if self.pace.begin(DAEMON_ENTRIES_PER_ROUND * old, time.monotonic()):
            t.backlog, t.pending = deque(waiting[:old]), deque(waiting[old:])
            top = int(waiting[old - 1][0].rsplit("-", 2)[-2])
            t.paced = {"to_seq": top, "per_minute": emu.backlog_per_minute}
        else:  # unpaced: one queue, in order
            t.backlog, t.pending, t.paced = deque(), deque(waiting), None
        self.state_due = t.paced != said  # where the backlog ends, said again

    def _next(self, now: float) -> tuple[tuple[str, bytes, bytes | None], bool] | None:
        t, sent = self.t, self.sent
        if len(self.in_flight) >= self.emu.window:
            return None
        if sent[False] < len(t.pending):
            return t.pending[sent[False]], False
        if sent[True] < len(t.backlog) and self.pace.allowed(now):
            return t.backlog[sent[True]], True
        return None

    def room(self) -> bool:
        """Whether a round could go now."""
        return self._next(time.monotonic()) is not None

    def wait(self) -> float | None:
        """Seconds until the backlog's next round may go (None: nothing waits for it)."""
        if self.sent[True] >= len(self.t.backlog) or len(self.in_flight) >= self.emu.window:
            return None
        return self.pace.wait(time.monotonic())

    def fill(self) -> None:
        """Hand the client the queues' next rounds (each after its anchor), and the
        table's state when due."""
        t, emu, paho = self.t, self.emu, self.c._client
        now = time.monotonic()
        while (nxt := self._next(now)) is not None:
            entry, paced = nxt
            rid, raw, anchor = entry
            if paced:
                self.pace.spend(now)
            if anchor is not None:
                # Before the round, on the same connection (in order), not waited for:
                # the round's PUBACK follows its own. Unretained when older than one
                # handed over already (a backlog's, after a live one).
                seq = int(rid.rsplit("-", 2)[-2])
                paho.publish(f"{self.root}/anchor", anchor, qos=1, retain=seq >= t.anchor_top)
                t.anchor_top = max(t.anchor_top, seq)
            if rid in emu.published:
                emu.stats.resent += 1
            else:
                emu.published[rid] = time.time()
            self.in_flight.append(nxt)
            self.sent[paced] += 1
            self.c.send(
                f"{self.root}/rounds", raw, qos=1, retain=False,
                on_ack=functools.partial(self.acked, entry),
            )  # fmt: skip
        if self.state_due:
            self.state_due = False
            state = t.seal("state", emu._state_payload(t, "online"))
            paho.publish(f"{self.root}/state", state, qos=1, retain=True)

    def acked(self, entry: tuple[str, bytes, bytes | None], _refused: Any) -> None:
        """The broker's PUBACK of ``entry`` (a refusal counts as an answer, as aiomqtt's
        ``publish`` took it)."""
        t, emu = self.t, self.emu
        if not self.live or not self.in_flight or self.in_flight[0][0] is not entry:
            return  # this connection ended meanwhile: sent again on the next one
        _, paced = self.in_flight.popleft()
        queue = t.backlog if paced else t.pending
        if queue and queue[0] is entry:
            queue.popleft()
            self.sent[paced] -= 1
        emu.stats.published += 1
        rid = entry[0]
        acked_seq = int(rid.rsplit("-", 2)[-2])  # our own id form
        if acked_seq > t.acked_seq:
            t.acked_seq, t.last_acked = acked_seq, rid
        if t.paced and not t.backlog:
            t.paced, self.state_due = None, True  # the backlog is handed over
        if (emu.state_every and t.seq % emu.state_every == 0) or (t.done and not t.unsent):
            self.state_due = True
        self.wake.set()
