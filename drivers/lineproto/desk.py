"""The host's side of a file's ``[[command]]`` tables on a live link: one command at a
time, its answer recognised among the lines (:meth:`Command.answers`), the periodic
ones (``every_ms``) sent while the link is up."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..base import DeviceTimeout, DriverError, FrameLog, LinkError
from .commands import Command, CommandError
from .rules import Line
from .spec import Protocol

log = logging.getLogger(__name__)

__all__ = ["CommandDesk", "CommandRefused"]


class CommandRefused(DriverError):
    """The device's answer says the command was not done (or it cannot be sent)."""

    code = "COMMAND_REFUSED"


class CommandDesk:
    """Sends a protocol's commands on a link and waits for their answers."""

    def __init__(
        self,
        protocol: Protocol,
        write: Callable[[bytes], Awaitable[None]],
        frames: FrameLog,
        counters: collections.Counter[str],
        *,
        name: str,
        timeout: float,
    ) -> None:
        self.protocol = protocol
        self._write = write
        self.frames = frames
        self.counters = counters
        self.name = name
        self.timeout = timeout
        self._lock = asyncio.Lock()
        self._waiting: tuple[Command, asyncio.Future[Line]] | None = None

    def has(self, name: str) -> bool:
        return name in self.protocol.commands

    async def send(self, name: str, values: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
        """Send command ``name``; return its answer's fields ({} for a command without
        ``reply``). Raises :class:`CommandRefused` (unknown, a value refused, an answer
        that says no) or :class:`~drivers.base.DeviceTimeout`."""
        cmd = self.protocol.commands.get(name)
        if cmd is None:
            known = ", ".join(self.protocol.commands) or "none"
            raise CommandRefused(
                f"{self.name}: the protocol has no command {name!r} (its commands: {known})"
            )
        f = self.protocol.framing
        try:
            data = cmd.render(values or {}, f.encoding, f.send_end)
        except CommandError as exc:
            raise CommandRefused(f"{self.name}: {exc}") from None
        async with self._lock:
            fut: asyncio.Future[Line] = asyncio.get_running_loop().create_future()
            self._waiting = (cmd, fut) if cmd.reply else None
            try:
                self.frames.tx(data.rstrip(b"\r\n"))
                self.counters[f"tx.{name}"] += 1
                await self._write(data)
                if cmd.reply is None:
                    return {}
                try:
                    async with asyncio.timeout(self.timeout):
                        line = await fut
                except TimeoutError:
                    self.counters["tx.timeouts"] += 1
                    raise DeviceTimeout(f"{self.name}: no answer to {name}") from None
            finally:
                self._waiting = None
        if not cmd.accepted(line):
            raise CommandRefused(f"{self.name}: {name} answered {line.raw.decode('latin-1')!r}")
        return dict(line.fields)

    def on_line(self, line: Line) -> bool:
        """Whether ``line`` answers the command waiting (it is then no event)."""
        waiting = self._waiting
        if waiting is None or waiting[1].done() or not waiting[0].answers(line):
            return False
        waiting[1].set_result(line)
        return True

    async def poll(self, connected: Callable[[], bool]) -> None:
        """Send the periodic commands (``every_ms``) while the link is up, for ever."""
        periodic = [c for c in self.protocol.commands.values() if c.every]
        if not periodic:
            return
        step = min(c.every or 1.0 for c in periodic)
        due = {c.name: 0.0 for c in periodic}
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(step)
            now = loop.time()
            for c in periodic:
                if connected() and now >= due[c.name] and not self._lock.locked():
                    due[c.name] = now + (c.every or step)
                    with contextlib.suppress(DriverError, LinkError):
                        await self.send(c.name)
