"""The table's switches through the running daemon and a broker (issue 32 item 3): an
opening in a round raises an alert held until acknowledged; an opening between rounds
with a technician logged in at the console is journaled and published and raises
nothing; the same opening with nobody logged in raises its alert; a stuck switch is a
device fault; and ``tablectl audit verify`` passes over all of it.

The daemon is given gpiozero's MockFactory (a simulated table: its switches start
closed, at rest) and the test drives the mock pins as the doors would."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from gpiozero.pins.mock import MockFactory

from firmware_host.cli import main
from firmware_host.config import validate_document
from firmware_host.console import hash_pin
from firmware_host.daemon import TableDaemon
from firmware_host.journal import AuditKey, Journal
from firmware_host.mqtt import MqttSettings
from firmware_host.schemas import validate
from tablesim.floor_client import FloorClient
from tablesim.principals import make_principals

PIN = "2468"
SETTLE = 0.1  # > bounce (20 ms), with margin for a loaded machine
LID, DROP, TRAY, DROP_B = 5, 6, 13, 19


def table(tmp_path: Path, principals: Any) -> Any:
    return validate_document(
        {
            "table": {"id": "sw-1", "game": "fantan", "result_source": "manual"},
            "auth": principals.auth_section(),
            "console": {"operators": {"tech1": {"pin_hash": hash_pin(PIN)}}},
            "daemon": {"simulated": True},
            "switches": {
                "lid": {"kind": "lid", "pin": LID},
                "drop": {"kind": "drop_box", "pin": DROP, "pin_b": DROP_B},
                "tray": {"kind": "tray", "pin": TRAY, "open_in_round": True,
                         "technician": False},
            },
        }
    )  # fmt: skip


def events_of(floor: FloorClient, kind: str) -> list[dict[str, Any]]:
    out = []
    for m in floor.messages:
        if m.topic == "events":
            body = json.loads(m.payload)
            if body["event"] == kind:
                validate("event", body)
                out.append(body)
    return out


async def test_openings_in_a_round_and_between_rounds(tmp_path: Path, broker: Any) -> None:
    principals = make_principals(tmp_path / "keys")
    cfg = table(tmp_path, principals)
    pins = MockFactory()
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        pin_factory=pins,
        mqtt=MqttSettings(
            host=broker.host, port=broker.port, protocol=broker.protocol, reconnect_min_ms=50
        ),
    )
    await d.start()
    assert d.parts is not None and d.journal is not None
    p, j = d.parts, d.journal
    await p.link.wait_subscribed(30)

    async def drive(pin: int, high: bool) -> None:
        pins.pin(pin).drive_high() if high else pins.pin(pin).drive_low()
        await asyncio.sleep(SETTLE)

    async def drop_box(opened: bool) -> None:
        """The changeover switch moves: its contacts swap 2 ms apart (both open for that
        instant, break before make: within the bounce time, not a fault). The loop is
        held meanwhile (a blocking sleep: each edge is timestamped when it happens, so a
        loaded machine cannot stretch the 2 ms)."""
        pins.pin(DROP_B).drive_high()  # (already high when closing)
        time.sleep(0.002)
        pins.pin(DROP).drive_high() if opened else pins.pin(DROP).drive_low()
        if opened:
            time.sleep(0.002)
            pins.pin(DROP_B).drive_low()
        await asyncio.sleep(SETTLE)

    try:
        async with FloorClient(broker.host, broker.port, cfg.table_id, signers=principals) as floor:
            # the simulated table's switches start closed and quiet
            assert p.switches.states() == {"lid": "closed", "drop": "closed", "tray": "closed"}
            assert [e.data["switch"] for e in j.chain.events(50, kind="switch_state")] == [
                "lid", "drop", "tray"
            ]  # fmt: skip
            assert p.alerts.active() == []

            # 1. the lid opens while betting is open: SWITCH_OPENED_IN_ROUND, held
            rnd = p.engine.open_betting(source="test")
            t0 = time.monotonic()
            pins.pin(LID).drive_high()
            while not j.chain.events(1, kind="switch_opened"):
                await asyncio.sleep(0.002)
            t1 = time.monotonic()
            await floor.until(lambda: len(events_of(floor, "switch_opened")) == 1, what="opened")
            # measured, not asserted: the contact's change to the journal's commit and to
            # the floor's copy of the event
            print(
                f"lid opened -> switch_opened journaled {(t1 - t0) * 1000:.0f} ms (bounce 20 "
                f"ms), received by the floor {(time.monotonic() - t0) * 1000:.0f} ms"
            )
            await drive(LID, False)
            await floor.until(lambda: len(events_of(floor, "switch_closed")) == 1, what="closed")
            opened = events_of(floor, "switch_opened")
            assert len(opened) == 1
            ev = opened[0]
            assert ev["round_id"] == rnd.round_id
            assert ev["data"]["switch"] == "lid" and ev["data"]["gli"] == "door open"
            assert ev["data"]["alert"] == "SWITCH_OPENED_IN_ROUND"
            assert events_of(floor, "switch_closed")[0]["data"]["gli"] == "door closed"
            [alert] = p.alerts.active()
            assert (alert.code, alert.subject, alert.state) == (
                "SWITCH_OPENED_IN_ROUND", "lid", "raised"
            )  # fmt: skip
            # the tray may open during a round (open_in_round): journaled, no alert
            await drive(TRAY, True)
            await drive(TRAY, False)
            await floor.until(lambda: len(events_of(floor, "switch_closed")) == 2, what="tray")
            tray = [e for e in events_of(floor, "switch_opened") if e["data"]["switch"] == "tray"]
            assert tray and tray[0]["data"]["alert"] is None
            assert len(p.alerts.active()) == 1
            p.engine.void_round("switch test", source="test")

            # the alert is held: still there after the round, until acknowledged
            await asyncio.sleep(SETTLE)
            assert [a.state for a in p.alerts.active()] == ["raised"]

            # 2. between rounds, a technician logged in: the drop box opens, no alert
            session = d.new_session("test")
            await session.handle("login tech1")
            assert "logged in" in " ".join(await session.handle(PIN))
            await drop_box(opened=True)
            await floor.until(
                lambda: any(e["data"]["switch"] == "drop" for e in events_of(floor, "switch_opened")),
                what="the drop box opened",
            )  # fmt: skip
            drop = [e for e in events_of(floor, "switch_opened") if e["data"]["switch"] == "drop"]
            assert "round_id" not in drop[0]
            assert drop[0]["data"]["technicians"] == ["tech1@test"]
            assert drop[0]["data"]["alert"] is None
            assert drop[0]["data"]["gli"] == "drop door open"
            assert [a.code for a in p.alerts.active()] == ["SWITCH_OPENED_IN_ROUND"]
            await drop_box(opened=False)

            # 3. the technician logs out: the same opening is unattended
            await session.handle("logout")
            await drop_box(opened=True)
            await floor.until(
                lambda: len([e for e in events_of(floor, "switch_opened")
                             if e["data"]["switch"] == "drop"]) == 2,
                what="the drop box opened again",
            )  # fmt: skip
            codes = sorted(a.code for a in p.alerts.active())
            assert codes == ["SWITCH_OPENED_IN_ROUND", "SWITCH_OPENED_UNATTENDED"]
            unattended = next(a for a in p.alerts.active() if a.code.endswith("UNATTENDED"))
            assert unattended.severity == "critical"  # the drop box

            # acknowledged at the console with a reason: it clears
            await session.handle("login tech1")
            await session.handle(PIN)
            for a in p.alerts.active():
                out = await session.handle(f"ack {a.id} seen on camera, drop team")
                assert "error" not in " ".join(out), out
            assert p.alerts.active() == []
            # the console's devices shows them
            shown = "\n".join(await session.handle("devices"))
            drop_shown = shown.split("drop:", 1)[1].split("tray:", 1)[0]
            assert "kind: drop_box" in drop_shown and "state: open" in drop_shown, shown
            # the switches' devices/<name> say online
            await floor.until(
                lambda: any(m.topic == "devices/drop" for m in floor.messages), what="devices"
            )
            last = [json.loads(m.payload) for m in floor.messages if m.topic == "devices/drop"]
            validate("device", last[-1])
            assert (last[-1]["kind"], last[-1]["state"]) == ("switch", "online")
    finally:
        await d.stop()

    # the chain verifies (tablectl audit verify) and holds every opening and closing
    assert main(["audit", "verify", "--journal", str(tmp_path / "journal.sqlite3")]) == 0
    key = AuditKey.load(tmp_path / "audit.key")
    with Journal(tmp_path / "journal.sqlite3", audit_key=key, readonly=True) as ro:
        kinds = [e.kind for e in ro.chain.events(1000) if e.kind.startswith("switch_")]
        assert kinds.count("switch_opened") == 4 and kinds.count("switch_closed") == 3


async def test_a_stuck_switch_is_a_device_fault(tmp_path: Path, broker: Any) -> None:
    principals = make_principals(tmp_path / "keys")
    cfg = table(tmp_path, principals)
    pins = MockFactory()
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        pin_factory=pins,
        mqtt=MqttSettings(
            host=broker.host, port=broker.port, protocol=broker.protocol, reconnect_min_ms=50
        ),
    )
    await d.start()
    assert d.parts is not None
    p = d.parts
    await p.link.wait_subscribed(30)
    try:
        async with FloorClient(broker.host, broker.port, cfg.table_id, signers=principals) as floor:
            # the drop box's other contact cut: both contacts read high, no valid state
            pins.pin(DROP).drive_high()
            await asyncio.sleep(SETTLE)
            await floor.until(lambda: len(events_of(floor, "switch_fault")) == 1, what="fault")
            fault = events_of(floor, "switch_fault")[0]["data"]
            assert (fault["switch"], fault["code"]) == ("drop", "SWITCH_INVALID")
            assert events_of(floor, "switch_opened") == []  # its state is unknown
            [alert] = p.alerts.active()
            assert (alert.code, alert.subject, alert.condition) == ("SWITCH_FAULT", "drop", True)

            def health() -> str:
                msgs = [json.loads(m.payload) for m in floor.messages if m.topic == "devices/drop"]
                return str(msgs[-1]["state"]) if msgs else ""

            await floor.until(lambda: health() == "fault", what="devices/drop in fault")
            # repaired, with the box open: recovered, then the opening (unattended)
            pins.pin(DROP_B).drive_low()
            await asyncio.sleep(SETTLE)
            await floor.until(lambda: len(events_of(floor, "switch_opened")) == 1, what="open")
            assert events_of(floor, "switch_opened")[0]["data"]["after_fault"] is True
            await floor.until(lambda: health() == "online", what="devices/drop online")
            fault_alert = next(a for a in p.alerts.active() if a.code == "SWITCH_FAULT")
            assert fault_alert.condition is False  # over: it clears once acknowledged
    finally:
        await d.stop()
    assert main(["audit", "verify", "--journal", str(tmp_path / "journal.sqlite3")]) == 0
