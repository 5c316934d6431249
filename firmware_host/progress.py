"""What a long-running command says while it runs (``tablectl view``, ``floor-ingest
run``, ``run``): one line when a link (a broker, a database) comes up, one when it is
lost or cannot be reached (the retries after it are silent), one when it answers again
(with how long it was down), and a periodic one-line summary of progress.

:class:`LinkWatch` keeps one link's state and writes those lines; :func:`every` writes
a line built by its caller every so many seconds; :class:`Since` gives the growth of a
counter since the last summary (``12 (+3)``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

__all__ = ["LinkWatch", "Since", "duration", "every"]


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 04 min``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class LinkWatch:
    """One link's connection lines: ``up()`` when it connects, ``down(error)`` when it
    is lost or a connection fails. Lines, each naming ``what`` (``broker
    127.0.0.1:1883``, ``database sqlite:///floor.sqlite3``):

    - the first connection: ``connected to WHAT`` (info);
    - a connection lost, or the first that fails: ``lost WHAT: ERROR; retrying (one
      line when it answers)`` or ``cannot reach WHAT: ERROR; retrying ...`` (warning);
      the failed attempts after it write nothing;
    - the connection back: ``connected to WHAT again after 3 min 05 s without it (12
      failed attempts)`` (info)."""

    def __init__(
        self,
        log: logging.Logger,
        who: str,
        what: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.who = who
        self.what = what
        self.clock = clock
        self.connected = False
        self.ever_connected = False
        #: When the outage began (None while connected, or before the first attempt).
        self.down_since: float | None = None
        self.last_error = ""
        self.failed_attempts = 0
        self.outages = 0

    def up(self, detail: str = "") -> None:
        if self.connected:
            return
        if self.down_since is None:
            extra = f" ({detail})" if detail else ""
            self.log.info("%s: connected to %s%s", self.who, self.what, extra)
        else:
            n = self.failed_attempts
            self.log.info(
                "%s: connected to %s again after %s without it (%d failed attempt%s%s)",
                self.who, self.what, duration(self.clock() - self.down_since),
                n, "" if n == 1 else "s", f"; {detail}" if detail else "",
            )  # fmt: skip
        self.connected = self.ever_connected = True
        self.down_since = None
        self.failed_attempts = 0

    def down(self, error: str) -> None:
        from .cliargs import plain_words

        error = plain_words(error)
        self.last_error = error
        if self.down_since is not None:  # the same outage: counted, not logged
            self.failed_attempts += 1
            return
        if self.connected:
            self.outages += 1
            self.failed_attempts = 0
            self.log.warning(
                "%s: lost %s: %s; retrying (one line when it answers)", self.who, self.what, error
            )
        else:
            self.failed_attempts = 1
            self.log.warning(
                "%s: cannot reach %s: %s; retrying (one line when it answers)",
                self.who, self.what, error,
            )  # fmt: skip
        self.connected = False
        self.down_since = self.clock()

    def state(self) -> str:
        """For a progress line: ``broker X connected``, ``broker X NOT connected for
        2 min 10 s (ERROR)``."""
        if self.connected:
            return f"{self.what} connected"
        if self.down_since is None:
            return f"{self.what} not connected yet"
        return (
            f"{self.what} NOT connected for {duration(self.clock() - self.down_since)} "
            f"({self.last_error})"
        )


class Since:
    """Counters and their growth since the previous summary: ``text("stored", 12)`` is
    ``12 (+3)`` when the previous call for ``stored`` saw 9."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def text(self, name: str, total: int) -> str:
        grew = total - self._last.get(name, 0)
        self._last[name] = total
        return f"{total} (+{grew})"


async def every(seconds: float, line: Callable[[], str], log: logging.Logger) -> None:
    """Log ``line()`` (info) every ``seconds`` until cancelled; nothing when
    ``seconds`` is 0. A line that fails to build is logged once as such, never stops
    the command."""
    if seconds <= 0:
        return
    failed = False
    while True:
        await asyncio.sleep(seconds)
        try:
            text = line()
        except Exception:
            if not failed:
                log.exception("progress line failed")
            failed = True
            continue
        log.info("%s", text)
