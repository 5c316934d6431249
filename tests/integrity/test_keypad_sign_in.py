"""A dealer signs in on the keypad (issue 19, item 4): the PIN checked like the
console's operators' (PBKDF2 hash, decoy for an unknown number, lockout after wrong
PINs that survives a restart), the dealer on duty in the rounds; and end to end, a
fantan table whose GPIO keypad (MockFactory) takes a sign-in and then plays on."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from gpiozero.pins.mock import MockFactory

from firmware_host.config import validate_document
from firmware_host.console.keypad import KeypadSignInDesk
from firmware_host.console.lockout import Lockout
from firmware_host.console.settings import hash_pin
from firmware_host.integrity.pace import DealerRoster
from firmware_host.journal import Journal
from tablecommon.events.keypad import KeypadSignIn

ANA = ("1042", "739215")
BO = ("7", "4444")


class Wall:
    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t


def desk(j: Journal, wall: Wall, roster: DealerRoster | None = None) -> KeypadSignInDesk:
    dealers = {ANA[0]: ("ana", hash_pin(ANA[1])), BO[0]: ("bo", hash_pin(BO[1]))}
    lock = Lockout(3, 300, clock=lambda: wall.t, wall=wall)
    return KeypadSignInDesk(roster or DealerRoster(j.chain), dealers, lock, j.chain)


def attempt(number: str, pin: str) -> KeypadSignIn:
    return KeypadSignIn(device="keypad", monotonic=0.0, dealer_number=number, pin=pin)


async def test_right_wrong_unknown_and_the_lockout_across_a_restart(tmp_path: Path) -> None:
    wall = Wall()
    j = Journal(tmp_path / "j.sqlite3")
    d = desk(j, wall)
    assert await d.sign_in("keypad", attempt(*ANA)) == "signed_in"
    assert d.roster.current() == "ana"
    (ev,) = [e for e in j.chain.events(50) if e.kind == "dealer_signed_in"]
    assert ev.data["via"] == "keypad" and ev.data["by"] == "keypad:keypad:1042"
    # wrong PIN, an unknown number (checked against the decoy), wrong again: locked (3)
    assert await d.sign_in("keypad", attempt(BO[0], "4445")) == "wrong"
    assert await d.sign_in("keypad", attempt("999", BO[1])) == "wrong"
    # a restart between tries keeps the count (2 of 3)
    d = desk(j, wall)
    assert d.lockout.failures == 2
    assert await d.sign_in("keypad", attempt(BO[0], "0000")) == "wrong"
    assert d.lockout.locked() == 300
    # the right PIN while locked: refused, and the lockout survives a restart
    assert await d.sign_in("keypad", attempt(*BO)) == "locked"
    wall.t += 100
    d = desk(j, wall)
    assert 199 <= d.lockout.locked() <= 200
    assert await d.sign_in("keypad", attempt(*BO)) == "locked"
    wall.t += 201
    assert await d.sign_in("keypad", attempt(*BO)) == "signed_in"
    assert d.roster.current() == "bo"
    kinds = [e.kind for e in j.chain.events(100)]
    assert kinds.count("keypad_sign_in_failed") == 3 and kinds.count("keypad_lockout") == 1
    assert kinds.count("keypad_sign_in_refused") == 2
    # no PIN anywhere in the audit log
    text = json.dumps([e.data for e in j.chain.events(100)])
    for pin in (ANA[1], BO[1], "4445", "0000"):
        assert f'"{pin}"' not in text and pin not in text.replace("1800000", "")
    assert j.chain.verify().ok


async def test_the_loop_keeps_running_while_a_pin_is_hashed(tmp_path: Path) -> None:
    """PBKDF2 (200,000 iterations) in a worker thread: a heartbeat on the loop ticks
    before the check answers (ordering, not timing)."""
    wall = Wall()
    j = Journal(tmp_path / "j.sqlite3")
    d = desk(j, wall)
    ticks = 0
    done = asyncio.Event()

    async def beat() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(beat())
    await d.on_device_event("keypad", attempt(*ANA))
    await d.idle()
    done.set()
    await task
    assert ticks > 10 and d.roster.current() == "ana"


async def test_a_fantan_table_signs_a_dealer_in_from_its_keypad(
    tmp_path: Path, amqtt_broker: Any
) -> None:
    from firmware_host.daemon import TableDaemon
    from firmware_host.mqtt import MqttSettings
    from firmware_host.table.engine import Phase

    pins = {d: 2 + i for i, d in enumerate("0123456789")}
    pins.update({"confirm": 12, "void": 13, "bell": 16, "sign_in": 17})
    factory = MockFactory()
    cfg = validate_document(
        {
            "table": {"id": "kp-2", "game": "fantan"},
            "devices": {"keypad": {"driver": "keypad-gpio", "pins": pins}},
            "console": {"dealers": {ANA[0]: {"name": "ana", "pin_hash": hash_pin(ANA[1])}}},
        }
    )
    d = TableDaemon(cfg, state_dir=tmp_path, runtime_dir=tmp_path, pin_factory=factory,
                    mqtt=MqttSettings(host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol))  # fmt: skip

    async def press(key: str) -> None:
        pin = factory.pin(pins[key])
        pin.drive_low()
        await asyncio.sleep(0.08)
        pin.drive_high()
        await asyncio.sleep(0.08)

    async def until(pred: Any) -> None:
        for _ in range(1000):
            if pred():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("not reached")

    await d.start()
    try:
        e = d.parts.engine
        assert e is not None and d.parts.dealers is not None
        for key in ["sign_in", *ANA[0], "confirm", *ANA[1], "confirm"]:
            await press(key)
        await until(lambda: d.parts.dealers.current() == "ana")  # type: ignore[union-attr]
        assert e.phase is Phase.IDLE  # the confirms of the entry opened no betting
        await press("confirm")  # and the keypad plays fantan again
        await until(lambda: e.phase is Phase.OPEN)
        await press("bell")
        await until(lambda: e.phase is Phase.CLOSED)
        await press("3")
        await press("confirm")
        await until(lambda: e.phase is Phase.IDLE)
        (payload,) = [r.settlement for r in d.journal.recall(1)]  # type: ignore[union-attr]
        assert isinstance(payload, dict) and payload["dealer"] == "ana"
    finally:
        await d.stop()
