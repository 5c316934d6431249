"""Pace and people (issue 19, item 4): the dealer signs in (console, signed command),
every round payload carries the dealer on duty, the dealer survives a restart; games
and voids per hour per table and per dealer, idle time, and the shift report published
at the end of each shift (clock injected)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from firmware_host.auth import TableIdentity
from firmware_host.integrity.pace import DealerRoster, PaceMonitor, shift_bounds
from firmware_host.journal import Journal
from firmware_host.schemas import validate
from firmware_host.table.extension import TableExtensions
from firmware_host.table.phase import Phase
from tests.signing import as_published
from tests.table.floor_support import make_table


class Clock:
    """The wall clock (``now``, called) and the monotonic clock (``monotonic``): time
    passing moves both (:meth:`advance`, or ``now +=``), a step moves the wall only."""

    def __init__(self, now: datetime) -> None:
        self._now = now
        self.mono = 5000.0

    @property
    def now(self) -> datetime:
        return self._now

    @now.setter
    def now(self, value: datetime) -> None:  # time passes: both clocks move
        self.mono += (value - self._now).total_seconds()
        self._now = value

    def step(self, seconds: float) -> None:
        """The wall clock stepped; no time passed."""
        self._now += timedelta(seconds=seconds)

    def monotonic(self) -> float:
        return self.mono

    def __call__(self) -> datetime:
        return self._now


def test_shift_bounds_in_local_time() -> None:
    local = datetime(2026, 5, 9, 5, 30).astimezone()  # before the 06:00 shift
    start, end = shift_bounds(local, 6, 8)
    assert (start.hour, end.hour) == (22, 6) and end - start == timedelta(hours=8)
    start, end = shift_bounds(local.replace(hour=14, minute=59), 6, 8)
    assert (start.hour, end.hour) == (14, 22)


def test_rates_per_table_and_dealer_and_the_shift_report(tmp_path: Path) -> None:
    t0 = datetime(2026, 5, 9, 6, 0).astimezone()  # a shift starts
    clock = Clock(t0)
    j = Journal(
        tmp_path / "j.sqlite3",
        identity=TableIdentity.generate(),
        clock=lambda: clock.now.astimezone(UTC),
    )
    roster = DealerRoster(j, clock=clock)
    pace = PaceMonitor(TableExtensions(), roster=roster, journal=j, table_id="T1",
                       shift_start_hour=6, shift_hours=8, clock=clock,
                       monotonic=clock.monotonic)  # fmt: skip
    roster.sign_in("ana", via="console", by="console:tech1")
    # ana deals 2 hours: 100 games, 2 voids; each round takes 60 s, 12 s idle between
    for i in range(102):
        pace.phase_changed(Phase.OPEN, None)
        clock.now += timedelta(seconds=60)
        (pace.round_voided if i % 51 == 50 else pace.round_settled)({})
        pace.phase_changed(Phase.IDLE, None)
        clock.now += timedelta(seconds=10.588)
    roster.sign_in("bo", via="mqtt", by="mqtt:pit")  # bo takes over
    for _ in range(30):
        pace.round_settled({})
        clock.now += timedelta(seconds=120)
    now = pace.current()
    assert now["games"] == 130 and now["voids"] == 2
    assert now["dealers"]["ana"]["games"] == 100 and now["dealers"]["bo"]["games"] == 30
    # ana: 100 games in 102 x 70.588 s = 7200 s: 50 an hour; bo: 30 in 3600 s: 30 an hour
    assert now["dealers"]["ana"]["games_per_hour"] == 50
    assert (
        now["dealers"]["bo"]["seconds_on_duty"] == 3600
        and now["dealers"]["bo"]["games_per_hour"] == 30
    )
    assert now["idle_seconds"] == pytest.approx(102 * 10.588 + 3600, abs=2)
    # the shift ends at 14:00: its report is published (events) and journaled
    clock.now = t0 + timedelta(hours=8, seconds=1)
    pace.tick()
    (ev,) = [e for e in j.events(500) if e.kind == "shift_report"]
    assert ev.data["games"] == 130 and ev.data["games_per_hour"] == round(130 / 8)
    assert ev.data["dealers"]["bo"]["seconds_on_duty"] == 8 * 3600 - 7200  # to the shift's end
    (msg,) = [m for m in j.outbox_pending() if m.topic == "events"]
    validate("event", json.loads(msg.payload))
    assert pace.current()["games"] == 0  # the next shift starts from nothing


def test_every_round_payload_carries_the_dealer_and_it_survives_a_restart(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    roster = DealerRoster(t.journal)
    t.engine._dealer = roster.current  # the daemon passes it to the constructor
    t.engine.open_betting()
    t.engine.close_betting()
    payload = t.engine.submit_result({"number": 7})
    assert payload["dealer"] is None
    validate("round", as_published("rounds", payload))
    roster.sign_in("dealer-07", via="console", by="console:tech1")
    t.engine.open_betting()
    payload = t.engine.void_round("test")
    assert payload["dealer"] == "dealer-07"
    validate("round", as_published("rounds", payload))
    assert DealerRoster(t.journal).current() == "dealer-07"  # read back from the log
    roster.sign_out(via="console", by="console:tech1")
    assert DealerRoster(t.journal).current() is None


def test_the_dealer_signs_in_with_a_signed_command(tmp_path: Path) -> None:
    from firmware_host.table.floor import FloorRequests

    t = make_table(tmp_path)
    roster = DealerRoster(t.journal, auth=t.floor.auth.settings)
    t.floor = FloorRequests(t.engine, t.floor.procedure, auth=t.floor.auth)
    roster.register_commands(t.floor.commands)

    def cmd(who: str, command: str, **args: object) -> dict:
        body = {"command": command, **({"args": args} if args else {})}
        return t.send("commands/request", t.build("commands/request", who, body))

    r = cmd("dealer", "dealer_sign_in")
    assert r["status"] == "ok" and r["data"]["dealer"] == "dealer", r
    r = cmd("pit", "dealer_sign_in", dealer="dealer-2")
    assert r["status"] == "ok" and r["data"]["replaces"] == "dealer"
    r = cmd("pos", "dealer_sign_in")
    assert r["code"] == "NOT_PERMITTED"
    r = cmd("dealer", "dealer_sign_out")
    assert r["status"] == "ok" and roster.current() is None
    ins = [e.data for e in t.journal.events(50) if e.kind == "dealer_signed_in"]
    assert [(d["dealer"], d["by"]) for d in ins] == [
        ("dealer", "mqtt:dealer"),
        ("dealer-2", "mqtt:pit"),
    ]
