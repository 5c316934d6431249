"""The clock's synchronisation state (issue 19, item 6).

The table stamps every event of its journal with UTC wall time and the event log's id,
a monotonic sequence (order never depends on the wall clock, which NTP may step). The
wall time is only as good as its synchronisation: :class:`ClockWatch` asks the system
(``timedatectl``, else ``chronyc``) every ``[integrity] clock_check_s`` and raises the
lasting alert ``CLOCK_UNSYNCHRONISED`` once the clock has been unsynchronised (or its
state unknown) for longer than ``clock_unsync_max_s``; the alert's condition ends when
the clock is synchronised again, and it clears once an operator acknowledged it.

The probe is injected (tests give their own); :func:`system_probe` is the real one.

**Steps** (issue 37). Synchronised or not, the wall clock can be stepped (by the time
service, ``date -s``, a suspend): :class:`StepWatch` compares the wall clock with the
monotonic clock on every tick of the table's extensions. On Linux both advance at the
same rate (NTP's slewing and frequency corrections apply to both), so their difference
changes only when the wall clock is stepped; a change beyond ``[integrity]
clock_step_tolerance_ms`` is a step: the ``clock_step`` event (journaled with both
times before and after, published on ``events``) and the alert ``CLOCK_STEP``, held
until acknowledged. The listeners (the shift's pace) are told; every duration the
table reports is measured on the monotonic clock. At start-up the wall clock is also
compared with the journal's last event: a clock behind it went back while the table
was down.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..journal import AuditLog
from ..jsonio import JSON
from ..table.extension import TableExtension, TableExtensions
from ..timefmt import iso_utc, utc_now
from .alerts import Alerts
from .events import table_event

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

    def synchronised(self) -> bool | None:
        """What the time service last said (None: not asked yet)."""
        return self.state.synchronised if self.state is not None else None

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


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


class StepWatch(TableExtension):
    """The wall clock against the monotonic clock, on every tick (``tick``, or
    :meth:`check`): a step beyond ``tolerance_ms`` is journaled with both times and
    raises ``CLOCK_STEP``. ``synchronised``: what the time service last said (the
    :class:`ClockWatch`'s state), recorded with the step."""

    name = "clock-step"

    def __init__(
        self,
        extensions: TableExtensions | None,
        *,
        alerts: Alerts,
        chain: AuditLog,
        table_id: str,
        tolerance_ms: int,
        wall: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        synchronised: Callable[[], bool | None] = lambda: None,
    ) -> None:
        self.alerts = alerts
        self.chain = chain
        self.table_id = table_id
        self.tolerance_ms = tolerance_ms
        self.wall = wall
        self.monotonic = monotonic
        self.synchronised = synchronised
        self.steps = 0
        self._last = (wall(), monotonic())
        self._listeners: list[Callable[[int], None]] = []
        if extensions is not None:
            extensions.add(self)

    def add_listener(self, callback: Callable[[int], None]) -> None:
        """``callback(step_ms)`` after every step (+ forwards, - backwards)."""
        self._listeners.append(callback)

    def tick(self) -> None:
        self.check()

    def check(self) -> int | None:
        """Compare the clocks now with the last reading: the step in milliseconds if
        beyond the tolerance (recorded, raised, told), else None."""
        wall, mono = self.wall(), self.monotonic()
        (wall0, mono0), self._last = self._last, (wall, mono)
        step = (wall - wall0).total_seconds() - (mono - mono0)
        if not self.tolerance_ms or abs(step) * 1000 <= self.tolerance_ms:
            return None
        self._step(_ms(step), {
            "wall_before": iso_utc(wall0), "wall_after": iso_utc(wall),
            "monotonic_before_ms": _ms(mono0), "monotonic_after_ms": _ms(mono),
        })  # fmt: skip
        return _ms(step)

    def at_start(self, recent: int = 50) -> int | None:
        """The wall clock against the journal's latest event (among its last ``recent``:
        those the start itself wrote are stamped now): behind it by more than the
        tolerance, the clock went back while the table was down (or before it)."""
        if not self.tolerance_ms:
            return None
        latest: tuple[datetime, Any] | None = None
        for ev in self.chain.events(recent):
            try:
                at = datetime.fromisoformat(str(ev.at).replace("Z", "+00:00"))
            except ValueError:
                continue
            if latest is None or at >= latest[0]:  # the later of equal times
                latest = (at, ev)
        wall = self.wall()
        if latest is None or latest[0] - wall <= timedelta(milliseconds=self.tolerance_ms):
            return None
        before, ev = latest
        step_ms = -_ms((before - wall).total_seconds())
        self._step(step_ms, {
            "wall_before": iso_utc(before), "wall_after": iso_utc(wall),
            "monotonic_before_ms": None, "monotonic_after_ms": _ms(self.monotonic()),
            "before": f"the journal's latest event ({ev.kind}, id {ev.id})",
        })  # fmt: skip
        return step_ms

    def _step(self, step_ms: int, times: dict[str, JSON]) -> None:
        self.steps += 1
        synced = self.synchronised()
        data: dict[str, JSON] = {
            "step_ms": step_ms, **times, "tolerance_ms": self.tolerance_ms,
            "synchronised": synced,
        }  # fmt: skip
        table_event(self.chain, self.table_id, "clock_step", data, at=self.wall())
        way = "forwards" if step_ms > 0 else "backwards"
        state = {True: "while the time service reported it synchronised",
                 False: "while the time service reported it unsynchronised",
                 None: "(the time service's state unknown)"}[synced]  # fmt: skip
        self.alerts.raise_(
            "CLOCK_STEP",
            f"the wall clock stepped {abs(step_ms) / 1000:.3f} s {way} against the monotonic "
            f"clock {state}, from {times['wall_before']} to {times['wall_after']}; durations "
            "are measured on the monotonic clock",
            evidence=data,
        )
        log.warning("clock stepped %+d ms (%s -> %s)", step_ms, times["wall_before"],
                    times["wall_after"])  # fmt: skip
        for cb in list(self._listeners):
            try:
                cb(step_ms)
            except Exception:  # a listener must never stop the watch
                log.exception("clock step: listener failed")
