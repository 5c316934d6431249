"""Support for the whole-daemon fault tests: seeds, reports, delivery checks, requests
that give up when a fault strikes, and small statistics."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from firmware_host.table.extension import TableExtension
from tablesim.floor_client import FloorClient
from tablesim.principals import Principals, make_principals
from tablesim.tables import to_toml

JSON = Any

REPO = Path(__file__).resolve().parents[2]

#: One seed for every random choice of the fault tests (kill moments, bets, outcomes).
SEED = int(os.environ.get("TABLECTL_FAULT_SEED", "20260508"))


def report(capsys: pytest.CaptureFixture[str], title: str, lines: Iterable[str]) -> None:
    """Print a test's counts so that they show in CI logs even without ``-s``."""
    with capsys.disabled():
        print(f"\n  [fault] {title}")
        for line in lines:
            print(f"    {line}")


def kv(**items: object) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in items.items())


def pct(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of ``values``, nearest rank (no interpolation)."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
    return s[k]


def ms_summary(seconds: Sequence[float]) -> str:
    """``n, p50, p90, p99, max`` of durations, in milliseconds."""
    if not seconds:
        return "n 0"
    v = [x * 1000 for x in seconds]
    return (
        f"n {len(v)}, p50 {statistics.median(v):.1f} ms, p90 {pct(v, 0.9):.1f} ms, "
        f"p99 {pct(v, 0.99):.1f} ms, max {max(v):.1f} ms"
    )


class Deliveries:
    """The floor's view of ``rounds``: first deliveries in arrival order, duplicates
    checked byte for byte (QoS 1 may repeat a message, never change it)."""

    def __init__(self, payloads: Iterable[bytes]) -> None:
        self.first: dict[str, bytes] = {}
        self.order: list[str] = []
        self.duplicates = 0
        self.conflicts: list[str] = []
        self.total = 0
        for raw in payloads:
            self.total += 1
            rid = json.loads(raw)["round_id"]
            if rid in self.first:
                self.duplicates += 1
                if raw != self.first[rid]:
                    self.conflicts.append(rid)
                continue
            self.first[rid] = raw
            self.order.append(rid)

    def payload(self, round_id: str) -> JSON:
        return json.loads(self.first[round_id])

    def seqs(self) -> list[int]:
        return [int(json.loads(self.first[r])["seq"]) for r in self.order]


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def nodelay(floor: FloorClient) -> None:
    """TCP_NODELAY on the floor client's current socket (it has none of its own: each
    request would otherwise wait ~40 ms for a delayed ACK on loopback)."""
    client = floor._client
    sock: Any = client._client.socket() if client is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Requests:
    """Requests over the simulated floor client that give up, instead of hanging,
    when ``abort`` is set (the broker or the daemon was just killed).

    A request that gave up may still have reached the table (or may reach it later:
    a broker keeps QoS 1 requests for the daemon's persistent session), so callers
    decide what to do next from the table's state, never by blindly resending.
    """

    def __init__(self, floor: FloorClient, timeout: float = 10.0) -> None:
        self.floor = floor
        self.timeout = timeout
        self.abort = asyncio.Event()
        self.sent = 0
        self.gave_up = 0

    async def request(self, kind: str, body: Mapping[str, JSON]) -> JSON | None:
        self.sent += 1
        nodelay(self.floor)
        req = asyncio.ensure_future(self.floor.request(kind, body, timeout=self.timeout))
        req.add_done_callback(_retrieve)
        stop = asyncio.ensure_future(self.abort.wait())
        try:
            done, _ = await asyncio.wait({req, stop}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            req.cancel()  # our caller was cancelled: do not leave the request running
            raise
        finally:
            stop.cancel()
        if req in done:
            with contextlib.suppress(TimeoutError, aiomqtt.MqttError):
                return req.result()
        else:
            req.cancel()
            with contextlib.suppress(BaseException):
                await req
        self.gave_up += 1
        return None

    async def command(self, command: str, **args: JSON) -> JSON | None:
        # named for the round the floor last saw (issue 14: commands name their round)
        return await self.request("commands", self.floor.command_body(command, **args))

    async def place(self, bet: Mapping[str, JSON]) -> JSON | None:
        return await self.request(
            "bets", {"action": "place", "round_id": self.floor.round_in_progress, "bet": dict(bet)}
        )

    def send_nowait(self, kind: str, body: Mapping[str, JSON]) -> asyncio.Task[JSON | None]:
        """Send and do not wait (the caller kills something right after)."""
        return asyncio.ensure_future(self.request(kind, body))


def signed_setup(directory: Path) -> tuple[str, Principals]:
    """Fresh principals' keys in ``directory`` and the ``[auth]`` TOML naming them: the
    fault tests run with signed requests, as a casino floor does."""
    principals = make_principals(directory)
    return to_toml({"auth": principals.auth_section()}), principals


def signed(principals: Principals, table_id: str, kind: str, body: Mapping[str, JSON]) -> bytes:
    """``body`` (with its request_id) signed by the principal whose role allows it, as
    bytes for the table's own request handler."""
    permission = str(body.get("command") or body.get("action"))
    signer = principals.signer_for(permission)
    assert signer is not None, permission
    return json.dumps(signer.sign(f"{kind}/request", table_id, body)).encode()


async def wait_online(floor: FloorClient, after: float, timeout: float = 30.0) -> None:
    """Until the table says ``online`` on its retained ``state`` (received after the
    ``time.perf_counter()`` value ``after``): its link is connected and subscribed."""

    def online() -> bool:
        for m in reversed(floor.messages):
            if m.at <= after:
                return False
            if m.topic == "state" and json.loads(m.payload).get("availability") == "online":
                return True
        return False

    await wait_until(online, timeout, "the table's state online")


async def wait_until(pred: Any, timeout: float, what: str, poll: float = 0.01) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(poll)


class NotifySocket:
    """The systemd notification socket, to know when a started daemon is READY."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.setblocking(False)

    async def wait_ready(self, proc: asyncio.subprocess.Process, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if proc.returncode is not None:
                raise AssertionError(f"the daemon exited with {proc.returncode} before READY")
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"no READY=1 within {timeout} s")
            with contextlib.suppress(TimeoutError):
                data = await asyncio.wait_for(loop.sock_recv(self.sock, 4096), min(left, 0.5))
                if b"READY=1" in data.split(b"\n"):
                    return

    def close(self) -> None:
        self.sock.close()


class DaemonProcess:
    """``python -m firmware_host run`` as a child process, killed and restarted."""

    def __init__(
        self, config: Path, state: Path, notify: NotifySocket, log: Path, floor: FloorClient
    ) -> None:
        self.floor = floor
        self.config = config
        self.state = state
        self.notify = notify
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0
        self.kills = 0
        self.ready_times: list[float] = []

    async def start(self) -> None:
        env = dict(os.environ, NOTIFY_SOCKET=str(self.notify.path), PYTHONPATH=str(REPO))
        env.pop("WATCHDOG_USEC", None)
        t0 = time.perf_counter()
        with open(self.log, "ab") as logf:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "firmware_host", "run",
                "--config", str(self.config), "--state-dir", str(self.state),
                "--runtime-dir", str(self.state), "--log-level", "WARNING",
                stdin=asyncio.subprocess.DEVNULL, stdout=logf, stderr=logf, env=env,
            )  # fmt: skip
        self.starts += 1
        await self.notify.wait_ready(self.proc, 30)
        self.ready_times.append(time.perf_counter() - t0)
        await wait_online(self.floor, t0)  # subscribed: requests reach it from now on

    async def kill(self) -> None:
        assert self.proc is not None and self.proc.returncode is None, "daemon not running"
        self.proc.send_signal(signal.SIGKILL)
        rc = await self.proc.wait()
        assert rc == -signal.SIGKILL, rc
        self.kills += 1

    async def terminate(self) -> int:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), 30)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


class RoundRecorder(TableExtension):
    """A table extension that keeps every finished round's payload (settled or void)."""

    name = "test-recorder"

    def __init__(self, out: list[dict[str, Any]]) -> None:
        self.out = out

    def round_settled(self, payload: Mapping[str, Any]) -> None:
        self.out.append(dict(payload))

    round_voided = round_settled
