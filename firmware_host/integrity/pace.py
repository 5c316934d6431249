"""Pace and people (issue 19, item 4): the dealer on duty, games per hour per table and
per dealer, idle time and voids, reported per shift.

- :class:`DealerRoster`: who deals at the table. A dealer signs in from the console
  (``dealer NAME``, an operator logged in), at the keypad, or with the signed command
  ``dealer_sign_in``: a principal signs in only as the dealer it is bound to
  (``[auth.principals.<name>] dealer``, by default its own name), a supervisor
  (``dealer_sign_in_others``, the ``pit_supervisor`` role) another dealer; anything
  else is refused ``DEALER_NOT_BOUND`` (issue 29: the dealer in every round payload is
  the one who signed). Out with ``dealer-out`` / ``dealer_sign_out``; each change an
  event of the audit log naming who signed in whom and by what authority; the dealer
  on duty survives a restart (read back from the log) and is in every round payload
  (``dealer``, null when nobody signed in).
- :class:`PaceMonitor`: an extension that counts the shift's settled and voided rounds,
  per dealer too, and the table's idle time (no round in progress); at the end of each
  shift the report is the ``shift_report`` event (event log and the ``events`` topic),
  and the console's ``pace`` shows the shift so far.

**Durations on the monotonic clock** (issue 37). Every duration (idle time, time on
duty, a shift's elapsed time) is a difference of monotonic readings, never of wall
times, so a step of the wall clock (``clock.py``, ``CLOCK_STEP``) can make none
negative or appear from nothing. A shift lasts its hours on the monotonic clock: a step
never ends a shift nor starts one. When it ends, the next shift is the one the wall
clock is in (never an earlier one than the shift that ended), and it ends when the wall
clock reaches its end: after a step forwards the next shift is shorter by the step, or
only the rest of the one the wall clock is in (the shifts skipped over are not
reported: no time passed in them); after a step backwards the next shift lasts longer
by the step. Each report lists the steps seen during its shift (``clock_steps_ms``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..auth import AuthSettings
from ..journal import AuditLog, OutboxMessage, RoundRecord
from ..jsonio import JSON
from ..schemas import PAYLOAD_SCHEMA_VERSION
from ..table.commands import CommandCall, Commands
from ..table.extension import TableExtension, TableExtensions
from ..table.phase import Phase
from ..table.reading import RequestError
from ..timefmt import iso_utc, utc_now

#: A dealer's name: as a principal's (printable, no spaces).
DEALER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}$")


class DealerRoster:
    """The dealer on duty (one at a time), kept in the audit log."""

    def __init__(
        self,
        chain: AuditLog,
        *,
        clock: Callable[[], datetime] = utc_now,
        auth: AuthSettings | None = None,
    ) -> None:
        """``auth``: who is bound to which dealer (None: nobody may sign in another
        dealer by command, a principal only its own name)."""
        self.chain = chain
        self.clock = clock
        self.auth = auth
        self.on_duty: str | None = None
        self.since: str | None = None
        self._listeners: list[Callable[[str | None, str | None], None]] = []
        last = chain.events(1, kind="dealer_signed_in")
        out = chain.events(1, kind="dealer_signed_out")
        if last and (not out or out[-1].id < last[-1].id):
            self.on_duty = str(last[-1].data["dealer"])
            self.since = str(last[-1].at)

    def add_listener(self, cb: Callable[[str | None, str | None], None]) -> None:
        """``cb(old, new)`` after every change (the pace counts per dealer)."""
        self._listeners.append(cb)

    def current(self) -> str | None:
        return self.on_duty

    def sign_in(
        self, dealer: str, *, via: str, by: str, authority: str | None = None
    ) -> dict[str, JSON]:
        """``authority``: how a signed command was allowed to (``bound``: the dealer its
        principal is bound to; ``supervisor``: another, by a supervisor; ``unverified``:
        a table without signatures), recorded in the audit log with who did it."""
        if not DEALER_NAME.match(dealer):
            raise RequestError("MALFORMED_REQUEST", f"{dealer!r} is not a dealer's name")
        old = self.on_duty
        data: dict[str, JSON] = {"dealer": dealer, "via": via, "by": by, "replaces": old}
        if authority is not None:
            data["authority"] = authority
        ev = self.chain.append_event("dealer_signed_in", data)
        self.on_duty, self.since = dealer, str(ev.at)
        for cb in list(self._listeners):
            cb(old, dealer)
        return {"dealer": dealer, "since": self.since, "replaces": old}

    def sign_out(self, *, via: str, by: str) -> dict[str, JSON]:
        old = self.on_duty
        if old is None:
            raise RequestError("NO_DEALER", "no dealer is signed in at this table")
        self.chain.append_event("dealer_signed_out", {"dealer": old, "via": via, "by": by})
        self.on_duty = self.since = None
        for cb in list(self._listeners):
            cb(old, None)
        return {"dealer": None, "signed_out": old}

    def register_commands(self, commands: Commands) -> None:
        """The table's commands this answers (their specs: ``firmware_host/commands.py``)."""
        commands.register("dealer_sign_in", self.command_in)
        commands.register("dealer_sign_out", self.command_out)

    def command_in(self, call: CommandCall) -> JSON:
        """``dealer_sign_in``: the dealer the principal is bound to, or the one
        ``args.dealer`` names if it is that one, or if the principal may sign in others
        (a pit supervisor); else ``DEALER_NOT_BOUND``. At the console (``dealer NAME``)
        the operator, logged in at the table, signs in the dealer named."""
        requested = call.args.get("dealer")
        if requested is not None and not isinstance(requested, str):
            raise RequestError("MALFORMED_REQUEST", "dealer_sign_in's 'dealer' must be a name")
        if call.console:
            if requested is None:
                raise RequestError("MALFORMED_REQUEST", "at the console, name the dealer")
            return self.sign_in(requested, via=call.via, by=call.source)
        name = call.who.name if call.who is not None else ""
        if self.auth is not None and not self.auth.signatures:  # a bench: nobody is known
            dealer, authority = requested or name, "unverified"
        else:
            try:
                dealer, authority = (self.auth or AuthSettings()).sign_in_as(name, requested)
            except ValueError as exc:
                raise RequestError("DEALER_NOT_BOUND", str(exc)) from None
        return self.sign_in(dealer, via=call.via, by=call.source, authority=authority)

    def command_out(self, call: CommandCall) -> JSON:
        return self.sign_out(via=call.via, by=call.source)


@dataclass
class _Counts:
    games: int = 0
    voids: int = 0
    seconds: float = 0.0


@dataclass
class Shift:
    """One shift: its nominal bounds (wall time, for the report) and the monotonic
    instants its elapsed time counts from (``began``) and it ends at (``ends``)."""

    start: datetime
    end: datetime
    began: float
    ends: float
    table: _Counts = field(default_factory=_Counts)
    dealers: dict[str, _Counts] = field(default_factory=dict)
    idle_seconds: float = 0.0
    #: The wall clock's steps seen during the shift (milliseconds, + forwards).
    clock_steps_ms: list[int] = field(default_factory=list)

    def report(self, mono: float, table_id: str) -> dict[str, JSON]:
        elapsed = max(min(mono, self.ends) - self.began, 1.0)

        def rate(games: int, seconds: float) -> int:
            return round(games * 3600 / seconds) if seconds >= 60 else 0

        return {
            "table_id": table_id,
            "shift_start": iso_utc(self.start),
            "shift_end": iso_utc(self.end),
            "games": self.table.games,
            "voids": self.table.voids,
            "games_per_hour": rate(self.table.games, elapsed),
            "voids_per_hour": rate(self.table.voids, elapsed),
            "idle_seconds": round(self.idle_seconds),
            "dealers": {
                name: {"games": c.games, "voids": c.voids, "seconds_on_duty": round(c.seconds),
                       "games_per_hour": rate(c.games, c.seconds)}
                for name, c in sorted(self.dealers.items())
            },
            "clock_steps_ms": list(self.clock_steps_ms),
        }  # fmt: skip

    def copy(self) -> Shift:
        return Shift(self.start, self.end, self.began, self.ends, _Counts(**vars(self.table)),
                     {k: _Counts(**vars(v)) for k, v in self.dealers.items()},
                     self.idle_seconds, list(self.clock_steps_ms))  # fmt: skip


def shift_bounds(now: datetime, start_hour: int, hours: int) -> tuple[datetime, datetime]:
    """The shift holding ``now`` (local time of ``now``'s zone): shifts of ``hours``
    starting at ``start_hour`` every day."""
    local = now.astimezone()
    anchor = local.replace(hour=start_hour, minute=0, second=0, microsecond=0)
    if anchor > local:
        anchor -= timedelta(days=1)
    n = int((local - anchor).total_seconds() // (hours * 3600))
    start = anchor + timedelta(hours=hours * n)
    return start, start + timedelta(hours=hours)


class PaceMonitor(TableExtension):
    """Games, voids and idle time of the shift, per table and per dealer; every
    duration on the monotonic clock (``monotonic``), the wall clock (``clock``) only
    naming the shifts."""

    name = "pace"

    def __init__(
        self,
        extensions: TableExtensions,
        *,
        roster: DealerRoster,
        chain: AuditLog,
        table_id: str,
        shift_start_hour: int = 6,
        shift_hours: int = 8,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.roster = roster
        self.chain = chain
        self.table_id = table_id
        self.start_hour = shift_start_hour
        self.hours = shift_hours
        self.clock = clock
        self.monotonic = monotonic
        now, mono = clock(), monotonic()
        start, end = shift_bounds(now, shift_start_hour, shift_hours)
        # the time of the shift before the table started counts in its elapsed time
        self.shift = Shift(start, end, mono - (now - start).total_seconds(),
                           mono + (end - now).total_seconds())  # fmt: skip
        self._idle_since: float | None = mono
        self._duty_since: float | None = mono if roster.current() else None
        roster.add_listener(self._dealer_changed)
        extensions.add(self)

    def _dealer(self) -> _Counts | None:
        d = self.roster.current()
        return self.shift.dealers.setdefault(d, _Counts()) if d else None

    def _since(self, since: float, mono: float) -> float:
        """Seconds from ``since`` (or the shift's beginning, if later) to ``mono``."""
        return max(0.0, mono - max(since, self.shift.began))

    def _dealer_changed(self, old: str | None, new: str | None) -> None:
        mono = self._roll()
        if old is not None and self._duty_since is not None:
            self.shift.dealers.setdefault(old, _Counts()).seconds += self._since(
                self._duty_since, mono
            )
        self._duty_since = mono if new is not None else None
        if new is not None:
            self.shift.dealers.setdefault(new, _Counts())

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        mono = self._roll()
        if phase == Phase.IDLE:
            self._idle_since = mono
        elif self._idle_since is not None:
            self.shift.idle_seconds += self._since(self._idle_since, mono)
            self._idle_since = None

    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        self._roll()
        self.shift.table.games += 1
        if (c := self._dealer()) is not None:
            c.games += 1

    def round_voided(self, payload: Mapping[str, JSON]) -> None:
        self._roll()
        self.shift.table.voids += 1
        if (c := self._dealer()) is not None:
            c.voids += 1

    def tick(self) -> None:
        self._roll()

    def clock_stepped(self, step_ms: int) -> None:
        """The wall clock stepped (``clock.StepWatch``): noted in the shift's report;
        no duration changes (they are all monotonic)."""
        self._roll()
        self.shift.clock_steps_ms.append(step_ms)

    def current(self) -> dict[str, JSON]:
        """The shift so far (the console's ``pace``)."""
        mono = self._roll()
        return self._closed_copy(mono).report(mono, self.table_id)

    def _closed_copy(self, mono: float) -> Shift:
        """The shift with the time running now (idle, on duty) counted up to ``mono``."""
        s = self.shift.copy()
        end = min(mono, s.ends)
        if self._idle_since is not None:
            s.idle_seconds += self._since(self._idle_since, end)
        d = self.roster.current()
        if d is not None and self._duty_since is not None:
            s.dealers.setdefault(d, _Counts()).seconds += self._since(self._duty_since, end)
        return s

    def _roll(self) -> float:
        """At the end of a shift (on the monotonic clock): its report published, the
        next shift begins (the one the wall clock is in, never an earlier one). Returns
        the monotonic time now."""
        mono = self.monotonic()
        while mono >= self.shift.ends:
            done = self._closed_copy(self.shift.ends)
            report = done.report(self.shift.ends, self.table_id)
            now = self.clock()
            payload: dict[str, JSON] = {
                "schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": self.table_id,
                "event": "shift_report", "at": iso_utc(now), "data": report,
            }  # fmt: skip
            self.chain.append_event(
                "shift_report", report, outbox=[OutboxMessage("events", payload)]
            )
            ended, at = self.shift, now - timedelta(seconds=mono - self.shift.ends)
            start, end = shift_bounds(max(at, ended.end), self.start_hour, self.hours)
            self.shift = Shift(start, end, ended.ends, ended.ends + (end - at).total_seconds())
        return mono
