"""Dealer inputs on GPIO with gpiozero's MockFactory: keys, bell, dome; bounce and stuck.

Fantan (58/2004): the result is the remainder 1-4 (art. 3 1) and 2)); betting ends
when the croupier rings the bell (art. 4); the croupier then lifts the metal cover
("campânula") and counts (art. 5 1)) — the dome/cup switch.

Real time: the debounce is 20 ms, so each test takes some tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.base import DeviceEvent, HealthState
from drivers.gpio import DebouncedInput
from drivers.keypad.driver import KeypadDriver
from drivers.keypad.inputs import DomeLockSensor
from tablecommon.events.keypad import (
    Bell,
    ButtonStuck,
    DomeClosed,
    DomeOpened,
    KeypadConfirm,
    KeypadNumber,
    KeypadRejected,
    KeypadResult,
    KeypadVoidRequest,
)

PINS = {"1": 5, "2": 6, "3": 13, "4": 19, "confirm": 26, "void": 21, "bell": 20}
DOME = 16
SETTLE = 0.06  # > debounce (20 ms) with margin for a loaded machine


class Keys:
    def __init__(self, factory: MockFactory, driver: KeypadDriver) -> None:
        self.factory = factory
        self.driver = driver
        self.sub = driver.events()
        self.seen: list[DeviceEvent] = []

    def pin(self, key: str) -> Any:
        return self.factory.pin(PINS.get(key, DOME))

    async def press(self, key: str, hold: float = SETTLE, bounce: int = 0) -> None:
        """Press (line low, pull-up wiring), with contact bounce, hold, release."""
        pin = self.pin(key)
        for _ in range(bounce):
            pin.drive_low()
            await asyncio.sleep(0.001)
            pin.drive_high()
            await asyncio.sleep(0.001)
        pin.drive_low()
        await asyncio.sleep(hold)
        pin.drive_high()
        await asyncio.sleep(SETTLE)

    def events(self) -> list[DeviceEvent]:
        while (ev := self.sub.get_nowait()) is not None:
            if ev.kind != "HealthChanged":
                self.seen.append(ev)
        return self.seen

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events()]


def health_of(driver: Any) -> HealthState:
    """The driver's health now (a call, so mypy does not narrow it across awaits)."""
    state: HealthState = driver.health.state
    return state


@pytest.fixture
async def keys() -> AsyncIterator[Any]:
    made: list[Keys] = []

    async def build(**settings: Any) -> Keys:
        factory = MockFactory()
        driver = KeypadDriver(
            "keypad", {"pins": PINS, "dome_pin": DOME, **settings}, pin_factory=factory
        )
        k = Keys(factory, driver)
        made.append(k)
        await driver.start()
        return k

    yield build
    for k in made:
        await k.driver.stop()


async def test_number_then_confirm_is_the_result(keys: Any) -> None:
    # 58/2004 art. 3 1)-2): the result is 1, 2, 3 or 4
    k = await keys()
    await k.press("3")
    await k.press("confirm")
    ev = k.events()
    assert [e.kind for e in ev if not e.kind.startswith("Dome")] == [
        "KeypadNumber", "KeypadConfirm", "KeypadResult",
    ]  # fmt: skip
    number, confirm, result = (e for e in ev if not e.kind.startswith("Dome"))
    assert isinstance(number, KeypadNumber) and number.value == 3 and number.key == "3"
    assert isinstance(confirm, KeypadConfirm) and confirm.value == 3
    assert isinstance(result, KeypadResult) and result.value == 3
    assert health_of(k.driver) is HealthState.ONLINE


async def test_the_last_number_before_confirm_counts(keys: Any) -> None:
    k = await keys()
    await k.press("1")
    await k.press("4")
    await k.press("confirm")
    assert [e.value for e in k.events() if isinstance(e, KeypadResult)] == [4]


async def test_confirm_alone_has_no_value(keys: Any) -> None:
    k = await keys()
    await k.press("confirm")
    assert [
        (e.kind, getattr(e, "value", None)) for e in k.events() if e.kind.startswith("Keypad")
    ] == [("KeypadConfirm", None)]


async def test_a_stale_number_is_not_confirmed(keys: Any) -> None:
    k = await keys()
    k.driver.settings["confirm_timeout_ms"] = 50
    await k.press("2")
    await asyncio.sleep(0.1)
    await k.press("confirm")
    assert not [e for e in k.events() if isinstance(e, KeypadResult)]


async def test_bell_and_void(keys: Any) -> None:
    # 58/2004 art. 4: betting ends when the croupier rings the bell
    k = await keys()
    await k.press("bell")
    await k.press("void")
    assert [type(e) for e in k.events() if not e.kind.startswith("Dome")] == [
        Bell,
        KeypadVoidRequest,
    ]


async def test_contact_bounce_gives_one_press(keys: Any) -> None:
    k = await keys()
    await k.press("2", bounce=6)
    numbers = [e for e in k.events() if isinstance(e, KeypadNumber)]
    assert [e.value for e in numbers] == [2]
    assert k.driver.keys["2"].bounces > 0


async def test_a_glitch_shorter_than_the_debounce_is_ignored(keys: Any) -> None:
    k = await keys()
    pin = k.pin("bell")
    pin.drive_low()
    await asyncio.sleep(0.005)
    pin.drive_high()
    await asyncio.sleep(SETTLE)
    assert not [e for e in k.events() if isinstance(e, Bell)]


async def test_two_number_keys_together_are_rejected(keys: Any) -> None:
    k = await keys()
    k.pin("1").drive_low()
    await asyncio.sleep(SETTLE)
    k.pin("2").drive_low()
    await asyncio.sleep(SETTLE)
    k.pin("1").drive_high()
    k.pin("2").drive_high()
    await asyncio.sleep(SETTLE)
    await k.press("confirm")
    ev = k.events()
    assert any(isinstance(e, KeypadRejected) and e.key == "2" for e in ev)
    assert not [e for e in ev if isinstance(e, KeypadResult)]


async def test_stuck_key_fault_and_recovery(keys: Any) -> None:
    k = await keys()
    k.driver.keys["bell"].stuck_after = 0.2
    pin = k.pin("bell")
    pin.drive_low()
    await asyncio.sleep(0.35)
    assert health_of(k.driver) is HealthState.FAULT
    assert k.driver.health.code == "KEY_STUCK"
    pin.drive_high()
    await asyncio.sleep(SETTLE)
    assert health_of(k.driver) is HealthState.ONLINE
    stuck = [e for e in k.events() if isinstance(e, ButtonStuck)]
    assert [(e.key, e.stuck) for e in stuck] == [("bell", True), ("bell", False)]
    assert stuck[1].held >= 0.3
    assert len([e for e in k.events() if isinstance(e, Bell)]) == 1  # one press, not two


async def test_an_input_held_at_start_is_not_a_press() -> None:
    """A key held at boot must not enter anything; it becomes "stuck" if it stays down.

    A floating mock pin keeps the level the test gives it before the input opens it
    (a pulled one would be reset to its pull level by gpiozero).
    """
    factory = MockFactory()
    factory.pin(7).drive_high()
    calls: list[str] = []
    inp = DebouncedInput(
        7,
        pin_factory=factory,
        pull_up=None,
        active_state=True,
        debounce=0.02,
        stuck_after=0.15,
        on_press=lambda ts: calls.append("press"),
        on_release=lambda ts, held: calls.append("release"),
        on_stuck=lambda ts: calls.append("stuck"),
        on_unstuck=lambda ts, held: calls.append("unstuck"),
    )
    inp.start()
    try:
        assert inp.active
        await asyncio.sleep(0.25)
        factory.pin(7).drive_low()
        await asyncio.sleep(SETTLE)
        assert calls == ["stuck", "unstuck"]
        factory.pin(7).drive_high()
        await asyncio.sleep(SETTLE)
        factory.pin(7).drive_low()
        await asyncio.sleep(SETTLE)
        assert calls == ["stuck", "unstuck", "press", "release"]
    finally:
        inp.close()


async def test_presses_from_another_thread_reach_the_loop(keys: Any) -> None:
    """lgpio calls back on its own thread: the handoff must bring the edge to the loop."""
    k = await keys()
    pin = k.pin("4")
    t = threading.Thread(target=pin.drive_low)
    t.start()
    t.join()
    await asyncio.sleep(SETTLE)
    t = threading.Thread(target=pin.drive_high)
    t.start()
    t.join()
    await asyncio.sleep(SETTLE)
    assert [e.value for e in k.events() if isinstance(e, KeypadNumber)] == [4]


async def test_dome_reports_its_level_with_debounce(keys: Any) -> None:
    # 58/2004 art. 5 1): the croupier lifts the metal cover to count
    k = await keys()
    pin = k.pin("dome")
    pin.drive_low()  # switch closed: locked (active low, pull-up)
    await asyncio.sleep(0.12)
    for _ in range(5):  # the cover is lifted, with contact bounce
        pin.drive_high()
        await asyncio.sleep(0.002)
        pin.drive_low()
        await asyncio.sleep(0.002)
    pin.drive_high()
    await asyncio.sleep(0.12)
    dome = [e for e in k.events() if isinstance(e, DomeOpened | DomeClosed)]
    assert [(type(e).__name__, e.initial) for e in dome] == [
        ("DomeOpened", True), ("DomeClosed", False), ("DomeOpened", False),
    ]  # fmt: skip
    assert k.driver.dome is not None and not k.driver.dome.locked


async def test_dome_lock_sensor_alone() -> None:
    factory = MockFactory()
    seen: list[tuple[bool, bool]] = []
    dome = DomeLockSensor(
        22,
        pin_factory=factory,
        on_change=lambda ts, locked, initial: seen.append((locked, initial)),
    )
    dome.start()
    try:
        factory.pin(22).drive_low()
        await asyncio.sleep(0.1)
        assert dome.locked
        await asyncio.sleep(0.2)  # a level sensor is never "stuck"
        factory.pin(22).drive_high()
        await asyncio.sleep(0.1)
        assert seen == [(False, True), (True, False), (False, False)]
    finally:
        dome.close()


def test_settings_checks() -> None:
    bad = KeypadDriver.check_settings({"pins": {"x": 2, "1": 3, "2": 4, "3": 4}, "dome_pin": 3})
    assert any(p.startswith("pins.x: unknown key") for p in bad)
    assert any("GPIO4 is also" in p for p in bad)
    assert any(p.startswith("dome_pin:") for p in bad)
    assert KeypadDriver.check_settings({"pins": PINS, "dome_pin": DOME}) == []
