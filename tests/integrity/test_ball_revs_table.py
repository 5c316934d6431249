"""End to end: a roulette table with a GPIO wheel (MockFactory pins driven by the wheel
simulator) whose ball-track sensor counts the ball's revolutions; a spin outside the
configured band raises WHEEL_BALL_REVS, an operator acknowledges it at the console,
and the audit chain shows both."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.gpio_wheel.sim import GpioWheelSim, VirtualClock
from firmware_host.config import validate_document

INDEX, INDEX_B, BALL, TRACK = 5, 13, 6, 19


async def test_a_gpio_wheel_table_raises_and_acknowledges_the_ball_revolutions_alert(
    tmp_path: Path, amqtt_broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import firmware_host.devices as devices_mod
    from firmware_host.daemon import TableDaemon
    from firmware_host.journal import AuditKey, Journal
    from firmware_host.mqtt import MqttSettings

    factory = MockFactory()
    clock = VirtualClock()
    sim = GpioWheelSim(factory, index_pin=INDEX, ball_pin=BALL, index_b_pin=INDEX_B,
                       ball_track_pin=TRACK, clock=clock, seed=11)  # fmt: skip
    # the wheel's driver runs on the simulator's clock (dozens of turns in milliseconds)
    real_create = devices_mod.create_driver
    monkeypatch.setattr(devices_mod, "create_driver", lambda name, c, **kw: real_create(
        name, c, clock=clock, tick_interval=0.005, **kw))  # fmt: skip
    cfg = validate_document(
        {
            "table": {"id": "gw-1", "game": "roulette"},
            "devices": {"wheel": {
                "driver": "gpio-wheel", "index_pin": INDEX, "index_b_pin": INDEX_B,
                "ball_pin": BALL, "ball_track_pin": TRACK, "index_pocket": sim.calibrate(),
                "arm_delay_ms": 1000,
            }},
            "integrity": {"wheel_serial": "GW-77", "ball_revs_min": 6, "ball_revs_max": 16},
        }
    )  # fmt: skip
    d = TableDaemon(cfg, state_dir=tmp_path, runtime_dir=tmp_path, pin_factory=factory,
                    mqtt=MqttSettings(host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol))  # fmt: skip
    assert not d.plan.problems

    async def until(pred: Any, what: str) -> None:
        for _ in range(2000):
            if pred():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"not reached: {what}")

    await d.start()
    try:
        e, alerts, j = d.parts.engine, d.parts.console_backend.alerts_board, d.journal
        assert e is not None and alerts is not None and j is not None
        await sim.run(5.0)  # the rotor turns: a game opens
        settled = 0

        async def play(number: int, revs: float) -> None:
            nonlocal settled
            assert await sim.spin(number, ball_revs=revs) == number
            await sim.run(2.0)
            settled += 1
            await until(lambda: len(j.recall(10)) >= settled, "the round settled")

        await play(17, 11.5)  # 11 or 12 revolutions: inside the band
        assert sim.last_track_passes in (11, 12)
        assert alerts.codes() == []
        await play(26, 3.5)  # 3 or 4: too few
        assert sim.last_track_passes in (3, 4)
        await until(lambda: alerts.codes() == ["WHEEL_BALL_REVS"], "the alert")
        (a,) = alerts.active()
        assert a.evidence["revs"] == sim.last_track_passes and a.evidence["serial"] == "GW-77"
        assert a.evidence["number"] == 26 and a.state == "raised"
        rounds = [r.settlement for r in j.recall(10)]
        assert [r["outcome"]["number"] for r in rounds if isinstance(r, dict)][:2] == [26, 17]
        await play(5, 12.5)  # inside again: the alert stays until acknowledged
        assert alerts.codes() == ["WHEEL_BALL_REVS"]
        await d.parts.console_backend.command(
            "ack_alert", {"alert_id": a.id, "reason": "ball and track inspected"},
            operator="pit-boss",
        )  # fmt: skip
        await until(lambda: alerts.codes() == [], "the acknowledgement")
    finally:
        await d.stop()
    key = AuditKey.load(tmp_path / "audit.key")
    with Journal(tmp_path / "journal.sqlite3", audit_key=key) as j:
        assert j.chain.verify().ok
        mine = [ev for ev in j.chain.events(1000)
                if isinstance(ev.data, dict) and ev.data.get("alert_id") == a.id]  # fmt: skip
        assert [ev.kind for ev in mine] == ["alert_raised", "alert_acknowledged", "alert_cleared"]
        assert mine[1].data["by"] == "console:pit-boss"
        assert mine[1].data["reason"] == "ball and track inspected"
