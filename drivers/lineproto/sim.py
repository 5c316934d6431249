"""``tablectl sim line-wheel --protocol FILE --capture CAPTURE``: a capture replayed as
a simulated device, on a pseudo-terminal or a TCP port.

What the device sent (a frame log's RX lines, or a raw capture cut by the file's
framing) is written again to each host that connects, with the capture's own timing
(``--speed`` times faster; a pause longer than ``max_gap`` seconds, a capture's
session break, is cut to it), each line ended as the device ends them (CR LF for
``end = "CR or LF"``). Without a capture it speaks the file's example lines in turn,
``[framing] status_every_ms`` apart, for ever (a result's example ``[results] lines``
times in a row, so that it is confirmed). ``loop``: the capture again from its
start when it ends (else the device falls silent, and a driver then reports it so).

What the host sends is read as the file's commands and reported (:attr:`heard`, and
``tablectl sim``'s output); the replay does not answer them (a capture's answers are
replayed where the capture has them). What it replays is read back through the file
(a tracker of its own): ``tablectl sim`` prints each result as it goes by.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..capture import is_frame_log, read_capture
from ..testing import Faults, FaultyConnection
from ..transport import Connection, PtyServer, TcpServer, cancel_and_wait, serve_pty, serve_tcp
from .framing import LineSplitter
from .rules import Line, Matcher
from .spec import Protocol
from .tracker import make_tracker

__all__ = ["ReplaySim", "replay_lines"]


def replay_lines(protocol: Protocol, capture: bytes | None) -> list[tuple[float, bytes]]:
    """(seconds since the previous line, line) of what the device sent."""
    every = protocol.framing.status_every
    if capture is None:  # the examples; a result's as many times as confirm it
        return [(every, ex.encode(protocol.framing.encoding, "replace"))
                for rule in protocol.rules for ex in rule.examples
                for _ in range(protocol.results.lines if rule.result == "shows" else 1)]  # fmt: skip
    out: list[tuple[float, bytes]] = []
    if not is_frame_log(capture):
        return [(every, piece) for piece in LineSplitter(protocol.framing).feed(capture)
                if isinstance(piece, bytes)]  # fmt: skip
    last: float | None = None
    for rec in read_capture(capture):
        if rec.direction != "RX":
            continue
        gap = 0.0 if last is None or rec.time is None else max(0.0, rec.time - last)
        last = rec.time if rec.time is not None else last
        out.append((gap, rec.data))
    return out


class ReplaySim:
    """A device replaying what a capture recorded it sending."""

    def __init__(
        self,
        protocol: Protocol,
        capture: bytes | None = None,
        *,
        speed: float = 1.0,
        loop: bool | None = None,
        max_gap: float = 2.0,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be above 0")
        self.protocol = protocol
        self.lines = replay_lines(protocol, capture)
        if not self.lines:
            raise ValueError("the capture holds no line the device sent")
        self.speed = speed
        self.loop = capture is None if loop is None else loop
        self.max_gap = max_gap
        self.faults = Faults()
        end = protocol.framing.end
        self.end = b"\r\n" if end is None else end
        self.sent = 0
        self.heard: list[tuple[str, bytes]] = []  # (command name or "?", the line)
        self.results: list[str] = []  # what the replay shows, read back through the file
        self._matcher = Matcher(protocol)
        self._tracker = make_tracker(protocol, "sim")
        self._commands = {
            name: re.compile(_template(cmd.send)) for name, cmd in protocol.commands.items()
        }
        self._servers: list[PtyServer | TcpServer] = []

    # ------------------------------------------------------------------ serving
    async def serve(self, conn: Connection) -> None:
        """One host's connection: the replay to it, its lines read (a transport Handler)."""
        faulty = FaultyConnection(conn, tx=self.faults)
        reader = asyncio.create_task(self._read(faulty))
        try:
            await self._replay(faulty)
            await reader
        finally:
            await cancel_and_wait(reader)

    async def _replay(self, conn: Connection) -> None:
        while True:
            for gap, line in self.lines:
                await asyncio.sleep(min(gap / self.speed, self.max_gap))
                await conn.write(line + self.end)
                self.sent += 1
                self._read_back(line)
            if not self.loop:
                return

    async def _read(self, conn: Connection) -> None:
        splitter = LineSplitter(self.protocol.framing)
        with contextlib.suppress(Exception):
            while True:
                for piece in splitter.feed(await conn.read()):
                    if isinstance(piece, bytes):
                        self.heard.append((self._command_of(piece), piece))

    def _command_of(self, line: bytes) -> str:
        text = line.decode(self.protocol.framing.encoding, "replace")
        return next((n for n, rx in self._commands.items() if rx.fullmatch(text)), "?")

    def _read_back(self, line: bytes) -> None:
        item = self._matcher.match(line)
        if not isinstance(item, Line):
            return
        for event in self._tracker.feed(item, 0.0):
            text = _result_text(event)
            if text:
                self.results.append(text)

    async def serve_pty(self, link: str | Path | None = None) -> PtyServer:
        server = await serve_pty(self.serve, link)
        self._servers.append(server)
        return server

    async def serve_tcp(self, *, host: str = "127.0.0.1", port: int = 0) -> TcpServer:
        server = await serve_tcp(self.serve, host, port)
        self._servers.append(server)
        return server

    async def close(self) -> None:
        for server in self._servers:
            await server.close()
        self._servers.clear()


def _template(send: str) -> str:
    """A command's ``send`` as a pattern recognising the lines it makes."""
    parts = re.split(r"(\{[^{}]*\})", send)
    return "".join(f"(?P<{p[1:-1]}>.+?)" if p.startswith("{") else re.escape(p) for p in parts)


def _result_text(event: Any) -> str:
    kind = type(event).__name__
    if kind == "WinningNumber":
        return f"spin {event.spin:03d}: {event.pocket}"
    if kind == "CardDealt":
        return f"card {event.seq}: {event.card}"
    if kind == "DiceRead":
        return f"shake {event.shake}: {' '.join(map(str, event.dice))}"
    return ""


def build(protocol: Protocol, options: Mapping[str, Any]) -> ReplaySim:
    """The simulator of ``tablectl sim`` from its options (``capture``, ``speed``,
    ``loop``)."""
    capture = options.get("capture")
    data = Path(str(capture)).read_bytes() if capture else None
    loop = options.get("loop")
    return ReplaySim(
        protocol, data, speed=float(options.get("speed", 1.0)),
        loop=None if loop is None else str(loop).lower() in ("1", "on", "true", "yes"),
    )  # fmt: skip
