"""A dealer's sign-in entered on the GPIO keypad (issue 19, item 4): ``sign_in``, the
dealer number, ``confirm``, the PIN, ``confirm``.

On MockFactory pins in real time (debounce 20 ms): the sequence, contact bounce, a
stuck key, cancel, and the fantan keys untouched by an entry. The state machine is
also fuzzed directly (seeded random key sequences with synthetic times) against a
small reference model written here, and no digit entered ever shows in an event's
JSON, its frame log, the counters or the status."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.base import DeviceEvent, HealthState
from drivers.keypad.driver import KeypadDriver
from tablecommon.events.keypad import KeypadSignIn, KeypadSignInRejected

DIGITS = "0123456789"
PINS = {d: 2 + i for i, d in enumerate(DIGITS)}  # BCM 2..11
PINS.update({"confirm": 12, "void": 13, "bell": 16, "sign_in": 17})
SETTLE = 0.06


class Keys:
    def __init__(self, factory: MockFactory, driver: KeypadDriver) -> None:
        self.factory, self.driver = factory, driver
        self.sub = driver.events()
        self.seen: list[DeviceEvent] = []

    async def press(self, key: str, hold: float = SETTLE, bounce: int = 0) -> None:
        pin = self.factory.pin(PINS[key])
        for _ in range(bounce):
            pin.drive_low()
            await asyncio.sleep(0.001)
            pin.drive_high()
            await asyncio.sleep(0.001)
        pin.drive_low()
        await asyncio.sleep(hold)
        pin.drive_high()
        await asyncio.sleep(SETTLE)

    async def type(self, keys: list[str], **kw: Any) -> None:
        for key in keys:
            await self.press(key, **kw)

    def events(self) -> list[DeviceEvent]:
        while (ev := self.sub.get_nowait()) is not None:
            if ev.kind != "HealthChanged":
                self.seen.append(ev)
        return self.seen


@pytest.fixture
async def keys() -> AsyncIterator[Any]:
    made: list[Keys] = []

    async def build(**settings: Any) -> Keys:
        factory = MockFactory()
        driver = KeypadDriver("keypad", {"pins": PINS, **settings}, pin_factory=factory)
        k = Keys(factory, driver)
        made.append(k)
        await driver.start()
        return k

    yield build
    for k in made:
        await k.driver.stop()


def entry(number: str, pin: str) -> list[str]:
    return ["sign_in", *number, "confirm", *pin, "confirm"]


def leaks(driver: KeypadDriver, events: list[DeviceEvent], pin: str) -> list[str]:
    """Where the PIN's digits show: event JSON, frames, counters, status."""
    found = []
    for e in events:
        if pin in json.dumps(e.to_json()) or pin in repr(e):
            found.append(f"event {e.kind}")
    frames = b" ".join(data for _, _, data in driver.frames)
    if pin.encode() in frames:
        found.append("frames")
    counted = [k for k in driver.counters if k.startswith("press.") and k[6:] in DIGITS]
    if counted:
        found.append(f"counters {counted}")
    if pin in json.dumps(driver.get_status(), default=str):
        found.append("status")
    return found


async def test_a_sign_in_on_the_keys_with_bounce(keys: Any) -> None:
    k = await keys()
    await k.type(entry("1042", "739215"), bounce=3)
    ev = k.events()
    assert [e.kind for e in ev] == ["KeypadSignInStarted", "KeypadSignIn"]
    got = ev[-1]
    assert isinstance(got, KeypadSignIn) and (got.dealer_number, got.pin) == ("1042", "739215")
    assert "pin" not in got.to_json() and "739215" not in repr(got)
    assert leaks(k.driver, ev, "739215") == []
    assert k.driver.get_status()["signing_in"] is False


async def test_the_fantan_keys_do_nothing_else_during_an_entry(keys: Any) -> None:
    """1-4 and confirm inside an entry are digits and the end of a field: no result
    (58/2004 art. 3 2): a result is a number confirmed) and no betting opened."""
    k = await keys()
    await k.type(["sign_in", "3", "confirm", "2", "4", "1", "1", "confirm"])
    await k.type(["2", "confirm"])  # after the entry: a fantan result again
    kinds = [e.kind for e in k.events()]
    assert kinds == ["KeypadSignInStarted", "KeypadSignIn", "KeypadNumber", "KeypadConfirm",
                     "KeypadResult"]  # fmt: skip


async def test_void_cancels_and_a_stuck_key_gives_up(keys: Any) -> None:
    k = await keys(stuck_ms=500)
    await k.type(["sign_in", "7", "void"])
    await k.type(["sign_in", "7", "confirm", "5"])
    await k.press("6", hold=0.7)  # held past stuck_ms during the PIN
    rejected = [e for e in k.events() if isinstance(e, KeypadSignInRejected)]
    assert [(e.key, e.reason) for e in rejected] == [
        ("void", "sign-in cancelled"), ("digit", "key 6 stuck during the sign-in"),
    ]  # fmt: skip
    assert not any(isinstance(e, KeypadSignIn) for e in k.events())
    assert k.driver.get_status()["signing_in"] is False
    assert k.driver.health.state is HealthState.ONLINE  # released again


def test_settings_take_the_digit_and_sign_in_keys() -> None:
    assert KeypadDriver.check_settings({"pins": PINS}) == []
    bad = KeypadDriver.check_settings({"pins": {"pin": 3, "sign_in": 3, "0": 3}})
    assert any("pins.pin: unknown key" in b for b in bad)
    assert any("GPIO3 is also" in b for b in bad)


# -- the state machine, fuzzed ---------------------------------------------------------
class Model:
    """What a sign-in entry should give, written from the docs (not the driver)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.open = False
        self.number = ""
        self.pin: str | None = None
        self.last = 0.0
        self.out: list[tuple[str, ...]] = []

    def key(self, key: str, t: float) -> None:
        if self.open and t - self.last > self.timeout:
            self.open = False
            self.out.append(("rejected",))
        if key == "sign_in":
            self.open, self.number, self.pin, self.last = True, "", None, t
            self.out.append(("started",))
            return
        if not self.open or key not in (*DIGITS, "confirm", "void"):
            return
        self.last = t
        if key == "void":
            self.open = False
            self.out.append(("rejected",))
        elif key == "confirm":
            if self.pin is None and self.number:
                self.pin = ""
            elif self.pin:
                self.open = False
                self.out.append(("signed_in", self.number, self.pin))
            else:
                self.open = False
                self.out.append(("rejected",))
        elif self.pin is None:
            if len(self.number) == 8:
                self.open = False
                self.out.append(("rejected",))
            else:
                self.number += key
        elif len(self.pin) == 12:
            self.open = False
            self.out.append(("rejected",))
        else:
            self.pin += key


@pytest.mark.parametrize("seed", range(20))
def test_fuzzed_key_sequences_match_the_model(seed: int) -> None:
    rng = random.Random(seed)
    driver = KeypadDriver("keypad", {"pins": PINS, "confirm_timeout_ms": 5000})
    got: list[DeviceEvent] = []
    driver.emit = got.append  # type: ignore[method-assign]
    model = Model(5.0)
    weights = {"sign_in": 3, "confirm": 4, "void": 1, "bell": 1, **{d: 3 for d in DIGITS}}
    t = 0.0
    typed = []
    for _ in range(400):
        key = rng.choices(list(weights), list(weights.values()))[0]
        t += rng.choice((0.2, 0.5, 1.0, 6.0)) if rng.random() < 0.05 else 0.3
        typed.append(key)
        before = len(got)
        open_before = model.open and t - model.last <= model.timeout
        driver._press(key, t)
        model.key(key, t)
        if open_before and key != "sign_in" and key != "bell":
            # inside an entry: never a fantan number, a confirm (betting) or a result
            assert not {e.kind for e in got[before:]} & {
                "KeypadNumber",
                "KeypadConfirm",
                "KeypadResult",
                "KeypadRejected",
            }, typed
    mine = []
    for e in got:
        if e.kind == "KeypadSignInStarted":
            mine.append(("started",))
        elif isinstance(e, KeypadSignIn):
            mine.append(("signed_in", e.dealer_number, e.pin))
        elif isinstance(e, KeypadSignInRejected):
            mine.append(("rejected",))
    assert mine == model.out, typed
    for e in got:
        if isinstance(e, KeypadSignIn):
            assert "pin" not in e.to_json() and "pin=" not in repr(e)
