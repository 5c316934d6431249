"""The clock's synchronisation state (issue 19, item 6).

The table stamps every event of its journal with UTC wall time and the event log's id,
a monotonic sequence (order never depends on the wall clock, which NTP may step). The
wall time is only as good as its synchronisation: :class:`ClockWatch` asks the system
(``timedatectl``, else ``chronyc``) every ``[integrity] clock_check_s`` and raises the
lasting alert ``CLOCK_UNSYNCHRONISED`` once the clock has been unsynchronised (or its
state unknown) for longer than ``clock_unsync_max_s``; the alert's condition ends when
the clock is synchronised again, and it clears once an operator acknowledged it.

The probe is injected (tests give their own); :func:`system_probe` is the real one.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from .alerts import Alerts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClockState:
    #: True synchronised, False not, None: cannot tell (no tool answered).
    synchronised: bool | None
    #: Which tool answered (``timedatectl``, ``chronyc``, ``none``) and what it said.
    source: str
    detail: str = ""


def parse_timedatectl(text: str) -> bool | None:
    """``timedatectl show -p NTPSynchronized --value``: ``yes`` or ``no``."""
    value = text.strip().lower()
    return True if value == "yes" else False if value == "no" else None


def parse_chronyc(text: str) -> bool | None:
    """``chronyc tracking``: synchronised when its leap status is normal (or a leap is
    announced) and it names a reference; ``Not synchronised`` otherwise."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip()
    leap = fields.get("leap status", "").lower()
    if not leap:
        return None
    if "not synchronised" in leap:
        return False
    ref = fields.get("reference id", "")
    return leap in ("normal", "insert second", "delete second") and not ref.startswith("00000000")


def _run(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def system_probe() -> ClockState:
    """Ask ``timedatectl`` (systemd-timesyncd or chrony behind it), else ``chronyc``."""
    if shutil.which("timedatectl"):
        text = _run(["timedatectl", "show", "-p", "NTPSynchronized", "--value"])
        if text is not None and (state := parse_timedatectl(text)) is not None:
            return ClockState(state, "timedatectl", text.strip())
    if shutil.which("chronyc"):
        text = _run(["chronyc", "tracking"])
        if text is not None and (state := parse_chronyc(text)) is not None:
            return ClockState(state, "chronyc", text.strip().splitlines()[-1] if text else "")
    return ClockState(None, "none", "neither timedatectl nor chronyc answered")


class ClockWatch:
    """The synchronisation state, checked periodically; the alert when it lasts."""

    def __init__(
        self,
        alerts: Alerts,
        *,
        unsync_max_s: int,
        check_s: int = 60,
        probe: Callable[[], ClockState] = system_probe,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.alerts = alerts
        self.unsync_max_s = unsync_max_s
        self.check_s = check_s
        self.probe = probe
        self.monotonic = monotonic
        self.state: ClockState | None = None
        self._bad_since: float | None = None
        self._raised = False

    def check(self, state: ClockState | None = None) -> ClockState:
        """One check (``state``: already probed; else the probe runs here)."""
        st = state if state is not None else self.probe()
        self.state = st
        now = self.monotonic()
        if st.synchronised:
            self._bad_since = None
            if self._raised:
                self._raised = False
                self.alerts.end("CLOCK_UNSYNCHRONISED", evidence={"source": st.source})
                log.info("clock synchronised again (%s)", st.source)
            return st
        if self._bad_since is None:
            self._bad_since = now
        lasted = now - self._bad_since
        if self.unsync_max_s and lasted >= self.unsync_max_s and not self._raised:
            self._raised = True
            what = "unsynchronised" if st.synchronised is False else "of unknown synchronisation"
            self.alerts.raise_(
                "CLOCK_UNSYNCHRONISED",
                f"the system clock has been {what} for {int(lasted)} s (bound "
                f"{self.unsync_max_s} s): event times may be wrong ({st.source})",
                evidence={"source": st.source, "detail": st.detail[:200],
                          "seconds": int(lasted), "bound_s": self.unsync_max_s},
            )  # fmt: skip
        return st

    async def run(self) -> None:
        """Check every ``check_s`` until cancelled (the probe in a worker thread)."""
        while True:
            state = await asyncio.to_thread(self.probe)
            self.check(state)
            await asyncio.sleep(self.check_s)
