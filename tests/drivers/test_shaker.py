"""Dice shaker: the reference protocol, the driver back to back with its simulator
over fault-injecting transports, every fault knob, and the dome and bell on GPIO.

57/2004 art. 3 3) and 59/2004 art. 3 3): dice stacked or tilted void the round
(it is shaken again), so every die carries its lie.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from gpiozero.pins.mock import MockFactory
from hypothesis import given
from hypothesis import strategies as st

from drivers.base import DeviceTimeout, HealthState
from drivers.reflink.bench import (
    FAST,
    SIM_TIMERS,
    Bench,
    collect,
    drain,
    driver_kwargs,
    wait_for,
    wait_online,
)
from drivers.reflink.driver import CommandRefused
from drivers.reflink.messages import MessageError, Sender
from drivers.shaker.codec import PROFILE, ShakerTracker, die_from_byte, die_to_byte
from drivers.shaker.driver import ShakerDriver
from drivers.shaker.model import ShakerModel
from drivers.shaker.sim import ShakerSimulator
from drivers.testing import Faults
from tablecommon.events.shaker import (
    Bell,
    DiceRead,
    DiceUnreadable,
    DomeClosed,
    DomeOpened,
    InputStuck,
    NoShake,
    ShakeFinished,
    ShakeRequested,
    ShakerFault,
    ShakeStarted,
)

# docs/protocols/shaker.md: lie in the high nibble (0 flat, 1 tilted, 2 stacked), face low.
DOC_DICE = {0x03: (3, "flat"), 0x16: (6, "tilted"), 0x21: (1, "stacked"), 0x20: (0, "stacked")}


@pytest.mark.parametrize(("byte", "die"), DOC_DICE.items())
def test_die_byte_as_documented(byte: int, die: tuple[int, str]) -> None:
    assert die_from_byte(byte) == die
    assert die_to_byte(*die) == byte


@given(st.integers(0, 255))
def test_die_byte_raises_only_message_error(b: int) -> None:
    try:
        face, lie = die_from_byte(b)
    except MessageError:
        return
    assert die_to_byte(face, lie) == b
    assert face != 0 or lie != "flat"  # a flat die is always read


def test_tracker_checks_the_number_of_dice() -> None:
    t = ShakerTracker(dice=3)
    four = PROFILE.decode(PROFILE.encode("DICE", shake=1, dice=bytes([1, 2, 3, 4])), Sender.DEVICE)
    (ev,) = t.apply(four)
    assert isinstance(ev, ShakerFault) and ev.fault == "DICE_COUNT"
    two = PROFILE.decode(PROFILE.encode("DICE", shake=1, dice=bytes([1, 2])), Sender.DEVICE)
    with pytest.raises(MessageError):
        t.apply(two)


def test_model_sequence_and_knobs() -> None:
    m = ShakerModel(dice=3, seed=4)
    t = ShakerTracker(dice=3)

    def evs() -> list[object]:
        return [e for p in m.take_outbox() for e in t.apply(PROFILE.decode(p, Sender.DEVICE))]

    faces = m.shake()
    kinds = evs()
    assert [type(e) for e in kinds] == [ShakeRequested, ShakeStarted, ShakeFinished, DiceRead]
    last = kinds[-1]
    assert isinstance(last, DiceRead) and last.dice == faces and last.valid
    m.inject("stacked")
    m.shake()
    (read,) = [e for e in evs() if isinstance(e, DiceRead)]
    assert read.flags.count("stacked") == 2 and not read.valid  # void: shaken again (art. 3 3))
    m.inject("tilted")
    m.shake()
    (read,) = [e for e in evs() if isinstance(e, DiceRead)]
    assert read.flags.count("tilted") == 1 and not read.valid
    m.inject("no_shake")
    m.shake()
    assert [type(e).__name__ for e in evs()] == ["ShakeRequested", "NoShake"]
    m.inject("unreadable")
    m.shake()
    assert [type(e) for e in evs()][-1] is DiceUnreadable


async def rig(
    dice: int = 3, rx: Faults | None = None, tx: Faults | None = None, **settings: object
) -> tuple[ShakerSimulator, Bench, ShakerDriver]:
    sim = ShakerSimulator(dice=dice, seed=21, timers=SIM_TIMERS)
    bench = Bench(sim, rx=rx, tx=tx)
    drv = ShakerDriver(
        "shaker", {"port": "unused", "dice": dice, **FAST, **settings}, **driver_kwargs(bench)
    )
    return sim, bench, drv


@pytest.mark.parametrize(
    ("rx", "tx"),
    [
        (Faults(chunk_size=1), Faults(chunk_size=1)),
        (Faults(garbage_rate=0.01, seed=1), Faults(garbage_rate=0.01, seed=2)),
        (Faults(drop_rate=0.2, seed=3), Faults(drop_rate=0.2, seed=4)),
    ],
    ids=["byte-at-a-time", "garbage-1pct", "dropped-writes"],
)
async def test_every_dice_result_arrives_exactly(rx: Faults, tx: Faults) -> None:
    sim, bench, drv = await rig(rx=rx, tx=tx)
    sim.faults.garbage_rate = rx.garbage_rate
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv)
        for i in range(30):
            if i % 3 == 0:
                # a command whose every retransmission was lost fails; whether the shaker
                # carried it out or not, what it sent must arrive exactly once
                with contextlib.suppress(DeviceTimeout):
                    await drv.request_shake()
            else:
                await sim.throw()
        await asyncio.sleep(0)
        got = await collect(sub, DiceRead, len(sim.sent_dice), timeout=20)
        assert [(e.shake, e.dice, e.flags) for e in got] == sim.sent_dice
        assert not [e for e in drain(sub) if isinstance(e, ShakerFault)]
        await wait_online(drv)
    finally:
        await drv.stop()
        await bench.close()


async def test_four_dice_faults_silence_and_unplug() -> None:
    sim, bench, drv = await rig(dice=4)
    sub = drv.events()
    await drv.start()
    try:
        await wait_online(drv)
        await sim.throw((6, 6, 5, 1))
        (read,) = await collect(sub, DiceRead, 1)
        assert read.dice == (6, 6, 5, 1) and read.valid
        sim.inject("stacked")
        await drv.request_shake()
        (read,) = await collect(sub, DiceRead, 1)
        assert not read.valid
        sim.inject("no_shake")
        await drv.request_shake()
        (ns,) = await collect(sub, NoShake, 1)
        assert ns.reason == "motor"
        sim.inject("unreadable")
        await sim.press_button()
        (un,) = await collect(sub, DiceUnreadable, 1)
        assert un.reason == "image"
        await drv.read_dice()  # re-read the last dice
        (again,) = await collect(sub, DiceRead, 1)
        assert again.dice == read.dice

        bench.opener.rx.silent = True
        await wait_for(lambda: drv.health.state is HealthState.OFFLINE)
        await sim.throw((1, 2, 3, 4))
        bench.opener.rx.silent = False
        await wait_online(drv)
        (late,) = await collect(sub, DiceRead, 1)
        assert late.dice == (1, 2, 3, 4)

        bench.unplug()
        await wait_for(lambda: drv.health.code == "LINK_DOWN")
        bench.replug()
        await wait_online(drv)
        sim.model.dome_open = True
        with pytest.raises(CommandRefused):
            await drv.request_shake()
    finally:
        await drv.stop()
        await bench.close()


async def test_dome_and_bell_on_gpio_with_bounce_and_stuck() -> None:
    factory = MockFactory()
    dome, bell = factory.pin(17), factory.pin(27)
    # switches to ground with external pull-ups: low = active
    dome.drive_low()  # the dome is open at start
    bell.drive_high()
    sim, bench, drv = await rig(
        dome_pin=17, bell_pin=27, pull="none", debounce_ms=10, bell_stuck_s=1
    )
    drv.pin_factory = factory
    sub = drv.events()
    await drv.start()
    try:
        (opened,) = await collect(sub, DomeOpened, 1)
        assert opened.initial
        dome.drive_high()  # closed
        await collect(sub, DomeClosed, 1)
        # a bouncing contact: many edges within the debounce time are one press
        for _ in range(5):
            bell.drive_low()
            bell.drive_high()
        bell.drive_low()
        await collect(sub, Bell, 1)
        bell.drive_high()
        await asyncio.sleep(0.05)
        assert not [e for e in drain(sub) if isinstance(e, Bell)]
        dome.drive_low()
        await collect(sub, DomeOpened, 1)
        assert drv.get_status()["shaker"]["dome_open"] is True
        dome.drive_high()
        await collect(sub, DomeClosed, 1)
        bell.drive_low()  # held down: stuck after bell_stuck_s
        await collect(sub, Bell, 1)
        (stuck,) = await collect(sub, InputStuck, 1, timeout=3)
        assert stuck.input == "bell" and stuck.stuck
        await wait_for(lambda: drv.health.code == "BELL_STUCK")
        bell.drive_high()
        (unstuck,) = await collect(sub, InputStuck, 1)
        assert not unstuck.stuck
        await wait_online(drv)
    finally:
        await drv.stop()
        await bench.close()


def test_used_pins_for_the_registry() -> None:
    assert list(ShakerDriver.used_pins({"dome_pin": 17, "bell_pin": None})) == [("dome_pin", 17)]
