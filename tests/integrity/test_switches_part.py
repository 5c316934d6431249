"""``TableSwitches`` on a journal (issue 32 item 3): which opening raises which alert
(in a round, between rounds with or without a technician, per the switch's
``open_in_round`` and ``technician``), the events in the chain with their outbox
messages, and an event the journal cannot take (a full disk) counted, never raised
into the switch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.switches.bank import SwitchBank
from drivers.switches.settings import SwitchConfig
from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.switches import TableSwitches
from firmware_host.journal import Journal, JournalError

SETTLE = 0.08
PIN = 5


class Table:
    def __init__(self, tmp_path: Path, cfg: SwitchConfig) -> None:
        self.j = Journal(tmp_path / "j.sqlite3")
        self.pins = MockFactory()
        self.round: str | None = None
        self.present: list[str] = []
        self.health: list[tuple[str, Any]] = []
        self.alerts = Alerts(self.j.alerts, self.j.db)
        self.part = TableSwitches(
            SwitchBank([cfg], pin_factory=self.pins, at_rest=True),
            chain=self.j.chain,
            db=self.j.db,
            alerts=self.alerts,
            table_id="t-1",
            round_in_flight=lambda: self.round,
            present=lambda: list(self.present),
            health=lambda name, payload: self.health.append((name, dict(payload))),
        )

    async def open_and_close(self) -> None:
        self.pins.pin(PIN).drive_high()
        await asyncio.sleep(SETTLE)
        self.pins.pin(PIN).drive_low()
        await asyncio.sleep(SETTLE)


@pytest.mark.parametrize(
    ("open_in_round", "technician", "in_round", "present", "expected"),
    [
        (False, True, True, [], "SWITCH_OPENED_IN_ROUND"),
        (False, True, True, ["tech1@serial"], "SWITCH_OPENED_IN_ROUND"),  # in a round all the same
        (False, False, True, [], "SWITCH_OPENED_IN_ROUND"),
        (True, True, True, [], None),  # the tray: the dealer opens it while playing
        (True, False, True, [], None),
        (False, True, False, [], "SWITCH_OPENED_UNATTENDED"),
        (True, True, False, [], "SWITCH_OPENED_UNATTENDED"),
        (False, True, False, ["tech1@socket"], None),
        (False, False, False, [], None),
    ],
)  # fmt: skip
async def test_which_opening_raises_which_alert(
    tmp_path: Path,
    open_in_round: bool,
    technician: bool,
    in_round: bool,
    present: list[str],
    expected: str | None,
) -> None:
    cfg = SwitchConfig(
        name="lid", kind="lid", pin=PIN, open_in_round=open_in_round, technician=technician
    )
    t = Table(tmp_path, cfg)
    t.round = "t-1-000001-abcd" if in_round else None
    t.present = present
    t.part.start()
    try:
        await t.open_and_close()
    finally:
        t.part.stop()
    assert [a.code for a in t.alerts.active()] == ([expected] if expected else [])
    if expected:
        [a] = t.alerts.active()
        assert (a.subject, a.state) == ("lid", "raised")  # held until acknowledged
        assert a.severity == ("critical" if expected.endswith("IN_ROUND") else "warning")
    kinds = [e.kind for e in t.j.chain.events(20) if e.kind.startswith("switch_")]
    assert kinds == ["switch_state", "switch_opened", "switch_closed"]
    opened = t.j.chain.events(1, kind="switch_opened")[0].data
    assert opened["alert"] == expected and opened["technicians"] == present
    assert opened.get("round_id") == t.round
    # each opening and closing has its events message, in order, in the outbox
    msgs = [json.loads(bytes(m.payload)) for m in t.j.outbox.pending(100) if m.topic == "events"]
    assert [(m["event"], m["data"]["gli"]) for m in msgs] == [
        ("switch_opened", "door open"), ("switch_closed", "door closed"),
    ]  # fmt: skip
    assert all(m.get("round_id") == t.round for m in msgs)
    assert t.j.chain.verify().ok
    t.j.close()


async def test_the_critical_kinds(tmp_path: Path) -> None:
    t = Table(tmp_path, SwitchConfig(name="loop", kind="tamper", pin=PIN))
    t.part.start()
    await t.open_and_close()
    t.part.stop()
    [a] = t.alerts.active()
    assert (a.code, a.severity) == ("SWITCH_OPENED_UNATTENDED", "critical")
    opened = t.j.chain.events(1, kind="switch_opened")[0].data
    assert opened["gli"] == "tilt"
    t.j.close()


async def test_an_event_the_journal_cannot_take_is_counted_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Table(tmp_path, SwitchConfig(name="lid", kind="lid", pin=PIN))
    t.present = ["tech1@serial"]
    t.part.start()

    def full(*args: Any, **kwargs: Any) -> Any:
        raise JournalError("database or disk is full", code="DISK_FULL")

    monkeypatch.setattr(t.j.chain, "append_event", full)
    await t.open_and_close()
    sw = t.part.bank.get("lid")
    assert sw is not None and sw.state == "closed"  # the switch goes on
    assert t.part.unjournaled == 2
    assert t.health[-1] == ("lid", {**sw.health.to_json(), "kind": "switch"})
    t.part.stop()
    t.j.close()
