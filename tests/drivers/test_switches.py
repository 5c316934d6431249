"""The table's switches (issue 32 item 3): every kind on gpiozero's MockFactory, contact
bounce, a stuck changeover switch, chatter, an unreadable pin; and the contact tracker
against a reference model on random edge sequences.

Real time on the mock pins: bounce 20 ms, so each test takes some tens of milliseconds.
The tracker's own tests feed it times directly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.switches.bank import SwitchBank
from drivers.switches.contact import ContactTracker, Reading
from drivers.switches.events import SwitchChanged, SwitchEvent, SwitchFault, SwitchRecovered
from drivers.switches.settings import SWITCH_KINDS, SwitchConfig
from tablecommon.events.base import HealthState

SETTLE = 0.08  # > bounce (20 ms), with margin for a loaded machine
OP, C, X = Reading.OPEN, Reading.CLOSED, Reading.INVALID


# -- the tracker, sans I/O -----------------------------------------------------------------
def tracker(bounce: float = 0.02, chatter: float = 1.0, changes: int = 6) -> ContactTracker:
    return ContactTracker(bounce=bounce, chatter=chatter, chatter_changes=changes)


def run(t: ContactTracker, steps: list[tuple[float, Reading]], until: float) -> list[str]:
    """Feed raw readings at their times, polling at every deadline, until ``until``."""
    out: list[str] = []
    pending = list(steps)
    while True:
        due = t.deadline()
        nxt = pending[0][0] if pending else None
        if due is not None and (nxt is None or due <= nxt) and due <= until:
            out += [f"{c.what}{':' + c.code if c.code else ''}" for c in t.poll(due)]
        elif nxt is not None and nxt <= until:
            at, r = pending.pop(0)
            out += [f"{c.what}{':' + c.code if c.code else ''}" for c in t.reading(at, r)]
        else:
            return out


def test_a_bounce_shorter_than_the_bounce_time_is_absorbed() -> None:
    t = tracker()
    assert t.start(0.0, C) == []
    # the lid opens with five bounces of 1 ms, then stays open
    steps = [(1.0 + i * 0.001, OP if i % 2 == 0 else C) for i in range(11)]
    assert run(t, steps, 2.0) == ["opened"]
    assert t.bounces == 10 and t.reported is OP


def test_a_glitch_that_comes_back_reports_nothing() -> None:
    t = tracker()
    t.start(0.0, C)
    assert run(t, [(1.0, OP), (1.005, C)], 2.0) == []
    assert t.reported is C and t.bounces == 2


def test_open_then_close() -> None:
    t = tracker()
    t.start(0.0, C)
    assert run(t, [(1.0, OP), (3.0, C)], 4.0) == ["opened", "closed"]


def test_a_changeover_switch_reading_alike_is_invalid_then_recovers() -> None:
    t = tracker()
    t.start(0.0, C)
    assert run(t, [(1.0, X), (5.0, OP)], 6.0) == ["fault:SWITCH_INVALID", "recovered:SWITCH_INVALID",
                                                "opened"]  # fmt: skip


def test_invalid_at_start_is_a_fault_and_its_state_comes_with_the_recovery() -> None:
    t = tracker()
    assert [c.code for c in t.start(0.0, X)] == ["SWITCH_INVALID"]
    assert run(t, [(1.0, C)], 2.0) == ["recovered:SWITCH_INVALID", "closed"]


def test_bounce_that_never_ends_is_chatter() -> None:
    t = tracker(chatter=0.5)
    t.start(0.0, C)
    # a change every 5 ms (never stable 20 ms) for 2 s, then quiet closed
    steps = [(1.0 + i * 0.005, OP if i % 2 == 0 else C) for i in range(400)]
    steps.append((3.0, C))
    out = run(t, steps, 5.0)
    # found 0.5 s after the bounce began; recovered 0.5 s after the last change; it
    # ended as it started (closed): nothing to report
    assert out == ["fault:SWITCH_CHATTER", "recovered:SWITCH_CHATTER"]


def test_too_many_changes_is_chatter_even_when_each_is_stable() -> None:
    t = tracker(chatter=1.0, changes=6)
    t.start(0.0, C)
    # each level stable 50 ms (> bounce): accepted, but 20 changes a second
    steps = [(1.0 + i * 0.05, OP if i % 2 == 0 else C) for i in range(20)]
    out = run(t, steps, 4.0)
    assert out[:6] == ["opened", "closed"] * 3
    assert out[6] == "fault:SWITCH_CHATTER"
    # the last raw reading (i = 19) is closed: quiet for 1 s, recovered, state unchanged
    assert out[7:] == ["recovered:SWITCH_CHATTER"]


def test_a_state_changed_under_a_fault_is_reported_after_it() -> None:
    t = tracker(chatter=0.5)
    t.start(0.0, C)
    steps = [(1.0 + i * 0.005, OP if i % 2 == 0 else C) for i in range(201)]  # ends open
    changes: list[Any] = []
    for at, r in steps:
        changes += t.reading(at, r)
    changes += t.poll(3.0)
    assert [(c.what, c.after_fault) for c in changes][-2:] == [("recovered", False),
                                                              ("opened", True)]  # fmt: skip


def reference(
    start: Reading, steps: list[tuple[float, Reading]], until: float, bounce: float
) -> list[str]:
    """Independent of the tracker: the readings that lasted at least ``bounce`` (their
    segment, from its change to the next or to ``until``), consecutive repeats dropped,
    after the starting one."""
    segments = []
    for i, (at, r) in enumerate(steps):
        end = steps[i + 1][0] if i + 1 < len(steps) else until
        segments.append((r, end - at))
    out, last = [], start
    for r, length in segments:
        if length >= bounce and r is not last:
            out.append("opened" if r is OP else "closed")
            last = r
    return out


@settings(max_examples=1000)
@given(
    st.sampled_from([OP, C]),
    st.lists(st.tuples(st.integers(1, 60), st.sampled_from([OP, C])), max_size=60),
)
def test_the_tracker_agrees_with_the_reference_model(
    start: Reading, raw: list[tuple[int, Reading]]
) -> None:
    # milliseconds between raw changes, 1-60 ms around a 20 ms bounce, in whole
    # milliseconds (the tracker takes any unit: exact sums, no rounding at the edge);
    # chatter off (a window longer than the run, and more changes than it can hold)
    t = ContactTracker(bounce=20, chatter=100_000, chatter_changes=100)
    t.start(0, start)
    steps: list[tuple[float, Reading]] = []
    now, level = 0, start
    for gap_ms, r in raw:
        now += gap_ms
        if r is not level:  # a raw *change* (gpiozero reports edges)
            steps.append((now, r))
            level = r
    until = now + 1000
    assert run(t, steps, until) == reference(start, steps, until, 20)


@settings(max_examples=1000)
@given(
    st.sampled_from([OP, C]),
    st.lists(st.tuples(st.integers(1, 60), st.sampled_from([OP, C, X])), max_size=80),
)
def test_with_chatter_and_invalid_readings_the_reports_stay_consistent(
    start: Reading, raw: list[tuple[int, Reading]]
) -> None:
    # chatter on (a 200 ms window, 3 changes), invalid readings of a changeover switch
    t = ContactTracker(bounce=20, chatter=200, chatter_changes=3)
    t.start(0, start)
    steps: list[tuple[float, Reading]] = []
    now, level = 0, start
    for gap_ms, r in raw:
        now += gap_ms
        if r is not level:
            steps.append((now, r))
            level = r
    out = run(t, steps, now + 1000)
    state, faulted = start, ""
    for what in out:
        if what.startswith("fault"):
            # one fault at a time; an invalid switch that also changes too often is
            # escalated to chatter (the recovery then ends it)
            assert faulted in ("", "fault:SWITCH_INVALID") and what != faulted, out
            faulted = what
        elif what.startswith("recovered"):
            assert faulted == "fault:" + what.split(":")[1], out  # ends the fault in place
            faulted = ""
        else:
            assert not faulted, out  # nothing reported while the state is unknown
            assert what == ("closed" if state is OP else "opened"), out  # a change, never twice
            state = OP if what == "opened" else C
    # a second after the last change the contact is quiet: no fault left, and the last
    # report is the last valid reading
    if level is not X:
        assert not faulted and state is level, out


# -- on gpiozero's MockFactory ---------------------------------------------------------------
class Bench:
    def __init__(self, factory: MockFactory, bank: SwitchBank) -> None:
        self.factory = factory
        self.bank = bank
        self.events: list[SwitchEvent] = []

    def pin(self, n: int) -> Any:
        return self.factory.pin(n)

    def seen(self, cls: type[SwitchEvent] = SwitchEvent) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]

    def states(self) -> list[tuple[str, str, bool]]:
        return [(e.device, e.state, e.initial) for e in self.seen(SwitchChanged)]


@pytest.fixture
async def bench() -> AsyncIterator[Callable[..., Bench]]:
    made: list[Bench] = []

    def build(*configs: SwitchConfig, at_rest: bool = False) -> Bench:
        factory = MockFactory()
        b = Bench(factory, SwitchBank(configs, pin_factory=factory, at_rest=at_rest))
        made.append(b)
        return b

    yield build
    for b in made:
        b.bank.stop()


def start(b: Bench) -> None:
    b.bank.start(b.events.append)


async def bounce(pin: Any, high: bool, edges: int, gap: float = 0.001) -> None:
    """``edges`` bounces of ``gap`` seconds before the contact settles at ``high``. The
    loop is held meanwhile (a blocking sleep): each edge is timestamped when it happens,
    so a loaded machine cannot stretch the bounce beyond the bounce time."""
    for i in range(edges):
        pin.drive_high() if (i % 2 == 0) == high else pin.drive_low()
        time.sleep(gap)
    pin.drive_high() if high else pin.drive_low()


@pytest.mark.parametrize("kind", list(SWITCH_KINDS))
async def test_every_kind_opens_and_closes_with_bounce(
    bench: Callable[..., Bench], kind: str
) -> None:
    # the default wiring: a switch to ground (pull-up) closed by the shut door
    b = bench(SwitchConfig(name=f"s-{kind}", kind=kind, pin=5), at_rest=True)  # shut
    start(b)
    assert b.states() == [(f"s-{kind}", "closed", True)]
    assert b.bank.get(f"s-{kind}").health.state is HealthState.ONLINE  # type: ignore[union-attr]
    await bounce(b.pin(5), True, edges=7)  # opened, 7 bounces of 1 ms
    await asyncio.sleep(SETTLE)
    await bounce(b.pin(5), False, edges=5)
    await asyncio.sleep(SETTLE)
    changes = b.seen(SwitchChanged)[1:]
    assert [(e.state, e.switch_kind) for e in changes] == [("open", kind), ("closed", kind)]
    assert all(e.bounces > 0 for e in changes)
    assert b.seen(SwitchFault) == []


async def test_a_cut_wire_reads_open(bench: Callable[..., Bench]) -> None:
    # pull-up and nothing pulling the line down: the wire is cut, or the door open
    b = bench(SwitchConfig(name="lid", kind="lid", pin=5))
    start(b)
    assert b.states() == [("lid", "open", True)]


@pytest.mark.parametrize(
    ("pull", "open_level", "closed_high"),
    [("up", "low", True), ("down", "high", False), ("down", "low", True), ("none", "high", False)],
)
async def test_other_wirings(
    bench: Callable[..., Bench], pull: str, open_level: str, closed_high: bool
) -> None:
    b = bench(SwitchConfig(name="box", kind="cash_box", pin=6, pull=pull, open_level=open_level))
    pin = b.pin(6)
    start(b)
    pin.drive_high() if closed_high else pin.drive_low()
    await asyncio.sleep(SETTLE)
    assert b.bank.get("box").state == "closed"  # type: ignore[union-attr]
    pin.drive_low() if closed_high else pin.drive_high()
    await asyncio.sleep(SETTLE)
    assert b.bank.get("box").state == "open"  # type: ignore[union-attr]


async def test_a_simulated_table_starts_with_its_switches_closed_and_quiet(
    bench: Callable[..., Bench],
) -> None:
    b = bench(
        SwitchConfig(name="lid", kind="lid", pin=5),
        SwitchConfig(name="drop", kind="drop_box", pin=6, pin_b=7),
        SwitchConfig(name="tray", kind="tray", pin=8, pull="down", open_level="low"),
        at_rest=True,
    )
    start(b)
    await asyncio.sleep(SETTLE)
    assert b.states() == [("lid", "closed", True), ("drop", "closed", True),
                          ("tray", "closed", True)]  # fmt: skip
    assert len(b.events) == 3


async def test_a_stuck_changeover_switch_is_a_fault_until_it_reads_valid(
    bench: Callable[..., Bench],
) -> None:
    b = bench(SwitchConfig(name="drop", kind="drop_box", pin=5, pin_b=6), at_rest=True)
    start(b)
    sw = b.bank.get("drop")
    assert sw is not None and sw.state == "closed"
    # at rest pin 5 is low (its contact closed) and pin 6 high; the wire of pin 5's
    # contact is cut: both read high (pull-ups), alike
    b.pin(5).drive_high()
    await asyncio.sleep(SETTLE)
    faults = b.seen(SwitchFault)
    assert [f.code for f in faults] == ["SWITCH_INVALID"]
    assert sw.health.state is HealthState.FAULT and sw.health.code == "SWITCH_INVALID"
    assert sw.state == "unknown"
    # repaired: the box is open (pin 5 high, pin 6 low)
    b.pin(6).drive_low()
    await asyncio.sleep(SETTLE)
    rec = b.seen(SwitchRecovered)
    assert [r.code for r in rec] == ["SWITCH_INVALID"]
    last = b.seen(SwitchChanged)[-1]
    assert (last.state, last.after_fault) == ("open", True)
    assert sw.health.state is HealthState.ONLINE


async def test_a_shorted_changeover_switch_is_invalid(bench: Callable[..., Bench]) -> None:
    b = bench(SwitchConfig(name="logic", kind="logic", pin=5, pin_b=6), at_rest=True)
    start(b)
    b.pin(6).drive_low()  # both contacts to ground
    await asyncio.sleep(SETTLE)
    assert [f.code for f in b.seen(SwitchFault)] == ["SWITCH_INVALID"]


async def test_chatter_beyond_bounce_is_a_fault_then_recovers(bench: Callable[..., Bench]) -> None:
    b = bench(SwitchConfig(name="tamper", kind="tamper", pin=5, chatter_ms=200), at_rest=True)
    start(b)
    pin = b.pin(5)
    # a change every 5 ms for 0.4 s: never stable 20 ms. The loop is held meanwhile (a
    # blocking sleep): each edge is timestamped when it happens (LoopHandoff), so a
    # loaded machine cannot stretch the gaps the tracker sees
    for i in range(80):
        pin.drive_high() if i % 2 == 0 else pin.drive_low()
        time.sleep(0.005)
    pin.drive_low()  # settles closed
    await asyncio.sleep(0.01)
    sw = b.bank.get("tamper")
    assert sw is not None
    assert [f.code for f in b.seen(SwitchFault)] == ["SWITCH_CHATTER"]
    assert sw.health.state is HealthState.FAULT and sw.state == "unknown"
    await asyncio.sleep(0.2 + SETTLE)
    assert [r.code for r in b.seen(SwitchRecovered)] == ["SWITCH_CHATTER"]
    assert sw.health.state is HealthState.ONLINE and sw.state == "closed"
    # nothing reported while its state was unknown, and it ended as it started
    kinds = [type(e).__name__ for e in b.events]
    fault, rec = kinds.index("SwitchFault"), kinds.index("SwitchRecovered")
    assert "SwitchChanged" not in kinds[fault:rec] and kinds[rec + 1 :] == []
    assert b.states()[-1][1] == "closed"


async def test_a_pin_that_cannot_be_read_is_a_fault(bench: Callable[..., Bench]) -> None:
    from gpiozero import DigitalInputDevice

    b = bench(SwitchConfig(name="lid", kind="lid", pin=5))
    other = DigitalInputDevice(5, pin_factory=b.factory)  # someone holds the pin
    try:
        start(b)
    finally:
        other.close()
    faults = b.seen(SwitchFault)
    assert [f.code for f in faults] == ["SWITCH_UNREADABLE"]
    assert "GPIO[5]" in faults[0].message
    sw = b.bank.get("lid")
    assert sw is not None and sw.health.state is HealthState.FAULT and sw.state == "unknown"


async def test_a_disabled_switch_is_not_read(bench: Callable[..., Bench]) -> None:
    b = bench(SwitchConfig(name="lid", kind="lid", pin=5, enabled=False))
    start(b)
    assert len(b.bank) == 0 and b.events == []


async def test_a_handler_that_raises_does_not_stop_the_switch(bench: Callable[..., Bench]) -> None:
    b = bench(SwitchConfig(name="lid", kind="lid", pin=5), at_rest=True)
    seen: list[SwitchEvent] = []

    def handler(e: SwitchEvent) -> None:
        seen.append(e)
        raise RuntimeError("the journal is full")

    b.bank.start(handler)
    b.pin(5).drive_high()
    await asyncio.sleep(SETTLE)
    b.pin(5).drive_low()
    await asyncio.sleep(SETTLE)
    assert [getattr(e, "state", "") for e in seen] == ["closed", "open", "closed"]
