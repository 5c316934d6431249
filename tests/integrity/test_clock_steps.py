"""Clock steps (issue 37): the wall clock compared with the monotonic clock on every
tick; a step beyond the tolerance journaled with both times, published, and raised
(``CLOCK_STEP``, held until acknowledged); the shift's figures on the monotonic clock,
so that a step of 2 hours backwards or 30 hours forwards mid-shift makes no duration
negative and publishes no phantom shift. Both clocks are injected."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from firmware_host.auth import TableIdentity
from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.clock import StepWatch
from firmware_host.integrity.pace import DealerRoster, PaceMonitor
from firmware_host.journal import Journal
from firmware_host.schemas import validate
from firmware_host.table.extension import TableExtensions
from firmware_host.table.phase import Phase
from firmware_host.timefmt import iso_utc

HOUR = 3600.0


class Clocks:
    """The wall clock and the monotonic clock: time passing moves both, a step only the
    wall clock."""

    def __init__(self, wall: datetime) -> None:
        self.now = wall
        self.mono = 12345.0

    def wall(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
        self.mono += seconds

    def step(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Table:
    """The daemon's wiring of the step watch and the pace (``daemon.py``), with the
    extensions' ticks driven by hand."""

    def __init__(self, tmp_path: Path, clocks: Clocks, *, tolerance_ms: int = 1000) -> None:
        self.clocks = clocks
        self.j = Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate(),
                         clock=lambda: clocks.now.astimezone(UTC))  # fmt: skip
        self.alerts = Alerts(self.j.alerts, self.j.db)
        self.ext = TableExtensions()
        self.roster = DealerRoster(self.j.chain, clock=clocks.wall)
        self.pace = PaceMonitor(self.ext, roster=self.roster, chain=self.j.chain, table_id="T1",
                                shift_start_hour=6, shift_hours=8, clock=clocks.wall,
                                monotonic=clocks.monotonic)  # fmt: skip
        self.steps = StepWatch(self.ext, alerts=self.alerts, chain=self.j.chain, table_id="T1",
                               tolerance_ms=tolerance_ms, wall=clocks.wall,
                               monotonic=clocks.monotonic, synchronised=lambda: True)  # fmt: skip
        self.steps.add_listener(self.pace.clock_stepped)

    def play(self, hours: float, *, round_s: float = 60, idle_s: float = 60) -> int:
        """Rounds of ``round_s`` with ``idle_s`` idle after each, ticking every 15 s of
        each; returns the rounds played."""
        n = 0
        for _ in range(round(hours * HOUR / (round_s + idle_s))):
            self.pace.phase_changed(Phase.OPEN, None)
            self.wait(round_s)
            self.pace.round_settled({})
            self.pace.phase_changed(Phase.IDLE, None)
            self.wait(idle_s)
            n += 1
        return n

    def wait(self, seconds: float) -> None:
        while seconds > 0:
            dt = min(15.0, seconds)
            self.clocks.advance(dt)
            seconds -= dt
            self.ext.tick()

    def reports(self) -> list[dict]:
        return [e.data for e in self.j.chain.events(1000) if e.kind == "shift_report"]


def test_a_step_is_journaled_with_both_times_and_held_until_acknowledged(tmp_path: Path) -> None:
    c = Clocks(datetime(2026, 5, 9, 10, 0, tzinfo=UTC))
    t = Table(tmp_path, c)
    t.wait(60)
    c.step(0.9)  # within the tolerance (1 s): not a step
    t.wait(60)
    assert t.j.alerts.active() == [] and t.steps.steps == 0
    before = (iso_utc(c.now), round(c.mono * 1000))  # the last tick's reading
    c.advance(0.5)  # half a second passes, then the step
    c.step(-2 * HOUR)
    assert t.steps.check() == -7_200_000  # the step alone, not the time that passed
    (a,) = t.j.alerts.active()
    assert a.code == "CLOCK_STEP" and a.severity == "warning" and a.state == "raised"
    assert "7200.000 s backwards" in a.message
    assert "reported it synchronised" in a.message
    (ev,) = [e for e in t.j.chain.events(50) if e.kind == "clock_step"]
    assert ev.data == {
        "step_ms": -7_200_000, "wall_before": before[0], "wall_after": iso_utc(c.now),
        "monotonic_before_ms": before[1], "monotonic_after_ms": before[1] + 500,
        "tolerance_ms": 1000, "synchronised": True,
    }  # fmt: skip
    (msg,) = [m for m in t.j.outbox.pending() if m.topic == "events"]
    published = json.loads(msg.payload)
    validate("event", published)
    assert published["event"] == "clock_step" and published["data"]["step_ms"] == -7_200_000
    t.wait(60)  # the next ticks: no step
    assert t.j.alerts.active()[0].count == 1
    t.alerts.acknowledge(a.id, by="console:tech1", reason="technician set the clock by hand")
    assert t.j.alerts.active() == []  # momentary: cleared once acknowledged
    c.step(30 * HOUR)
    t.wait(1)
    (b,) = t.j.alerts.active()
    assert b.code == "CLOCK_STEP" and b.id != a.id and b.evidence["step_ms"] == 108_000_000
    assert t.j.chain.verify().ok


def test_two_hours_backwards_mid_shift(tmp_path: Path) -> None:
    start = datetime(2026, 5, 9, 6, 0).astimezone()  # a shift starts (06:00 to 14:00)
    c = Clocks(start)
    t = Table(tmp_path, c)
    t.roster.sign_in("ana", via="console", by="console:tech1")
    assert t.play(4) == 120  # 06:00 to 10:00: 2 hours in rounds, 2 hours idle
    c.step(-2 * HOUR)  # the wall clock goes back to 08:00, the table idle
    now = t.pace.current()  # before any tick noticed the step
    assert now["idle_seconds"] == 2 * HOUR and now["dealers"]["ana"]["seconds_on_duty"] == 4 * HOUR
    t.wait(1)
    assert [a.code for a in t.j.alerts.active()] == ["CLOCK_STEP"]
    now = t.pace.current()
    assert now["idle_seconds"] == 2 * HOUR + 1 and now["games"] == 120
    assert now["dealers"]["ana"]["seconds_on_duty"] == 4 * HOUR + 1
    assert now["clock_steps_ms"] == [-7_200_000]
    t.wait(HOUR - 1)
    assert t.play(3) == 90  # 4 hours after the step (wall 12:00): the shift's 8 hours
    (report,) = t.reports()  # the shift lasted its 8 hours on the monotonic clock
    assert (report["shift_start"], report["shift_end"]) == (iso_utc(start),
                                                            iso_utc(start + timedelta(hours=8)))  # fmt: skip
    assert report["games"] == 210 and report["games_per_hour"] == round(210 / 8)
    assert report["idle_seconds"] == 8 * HOUR - 210 * 60
    assert report["dealers"]["ana"]["seconds_on_duty"] == 8 * HOUR
    assert report["clock_steps_ms"] == [-7_200_000]
    # the next shift (14:00 to 22:00) ends when the wall clock reaches its end: 10 hours
    t.wait(10 * HOUR - 60)
    assert len(t.reports()) == 1
    t.wait(120)
    second = t.reports()[1]
    assert second["shift_start"] == iso_utc(start + timedelta(hours=8))
    assert second["idle_seconds"] == 10 * HOUR and second["clock_steps_ms"] == []
    assert second["dealers"]["ana"]["seconds_on_duty"] == 10 * HOUR
    assert all(r["idle_seconds"] >= 0 for r in t.reports())


def test_thirty_hours_forwards_mid_shift(tmp_path: Path) -> None:
    start = datetime(2026, 5, 9, 6, 0).astimezone()
    c = Clocks(start)
    t = Table(tmp_path, c)
    t.roster.sign_in("ana", via="console", by="console:tech1")
    t.play(4)  # to 10:00
    c.step(30 * HOUR)  # the wall clock says 16:00 the next day
    t.wait(60)
    assert [a.code for a in t.j.alerts.active()] == ["CLOCK_STEP"]
    assert t.reports() == []  # no shift skipped over is reported
    now = t.pace.current()
    assert now["shift_start"] == iso_utc(start) and now["idle_seconds"] == 2 * HOUR + 60
    assert t.play(59 * 240 / HOUR, idle_s=180) == 59  # to 13:57 (wall: 19:57 the next day)
    t.wait(179)
    assert t.reports() == []
    t.wait(1)  # 14:00 on the monotonic clock
    (report,) = t.reports()  # the shift in progress, its 8 hours, once
    assert report["shift_start"] == iso_utc(start) and report["games"] == 179
    assert report["idle_seconds"] == 8 * HOUR - 179 * 60
    assert report["dealers"]["ana"]["seconds_on_duty"] == 8 * HOUR
    assert report["clock_steps_ms"] == [108_000_000]
    # then the shift the wall clock is in (14:00 to 22:00 the next day), from 20:00 on:
    # it ends 2 hours later, when the wall clock reaches 22:00
    t.wait(2 * HOUR - 1)
    assert len(t.reports()) == 1
    t.wait(1)
    second = t.reports()[1]
    assert second["shift_start"] == iso_utc(start + timedelta(hours=32))
    assert second["idle_seconds"] == 2 * HOUR and second["games"] == 0
    assert all(r["idle_seconds"] <= 8 * HOUR for r in t.reports())


def test_two_hours_forwards_the_next_shift_is_shorter(tmp_path: Path) -> None:
    start = datetime(2026, 5, 9, 6, 0).astimezone()
    c = Clocks(start)
    t = Table(tmp_path, c)
    t.wait(4 * HOUR)
    c.step(2 * HOUR)  # 10:00 -> 12:00
    t.wait(4 * HOUR)  # the shift's 8 hours: the wall clock says 16:00
    (first,) = t.reports()
    assert first["idle_seconds"] == 8 * HOUR and first["clock_steps_ms"] == [7_200_000]
    t.wait(6 * HOUR - 1)  # the next shift (14:00 to 22:00) ends at 22:00 on the wall clock
    assert len(t.reports()) == 1
    t.wait(1)
    second = t.reports()[1]
    assert second["shift_start"] == iso_utc(start + timedelta(hours=8))
    assert second["idle_seconds"] == 6 * HOUR


def test_a_clock_behind_the_journal_at_start_up(tmp_path: Path) -> None:
    c = Clocks(datetime(2026, 5, 9, 10, 0, tzinfo=UTC))
    t = Table(tmp_path, c)
    t.j.chain.append_event("power_up", {})
    assert t.steps.at_start() is None  # the clock is where the journal left it
    c.step(-3 * HOUR)  # the table restarts with the clock 3 hours behind its journal
    assert t.steps.at_start() == -3 * 3_600_000
    (a,) = t.j.alerts.active()
    assert a.code == "CLOCK_STEP" and a.evidence["monotonic_before_ms"] is None
    assert "power_up" in a.evidence["before"]
