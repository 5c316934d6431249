"""Latched faults stop play until a logged-in technician clears them, and survive a
restart (GLI-style "errors that survive a power cycle until cleared")."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmware_host.config import validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.table.engine import RoundFault
from tablesim.principals import make_principals


def make(tmp_path: Path, broker) -> TableDaemon:  # type: ignore[no-untyped-def]
    # fantan without its keypad: results entered by people, who sign their commands
    cfg = validate_document(
        {
            "table": {"id": "lf-1", "game": "fantan", "result_source": "manual"},
            "auth": make_principals(tmp_path / "keys").auth_section(),
        }
    )
    return TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(host=broker.host, port=broker.port, protocol=broker.protocol),
    )


async def test_latched_fault_survives_restart_until_cleared(tmp_path: Path, amqtt_broker) -> None:
    d = make(tmp_path, amqtt_broker)
    await d.start()
    d.journal.faults.set_fault("JACKPOT_METER_MISMATCH", "meter 100 != expected 90")
    with pytest.raises(RoundFault) as exc:
        d.parts.engine.open_betting()
    assert exc.value.code == "PLAY_STOPPED"
    await d.stop()

    d = make(tmp_path, amqtt_broker)  # a restart: the fault is still there
    await d.start()
    try:
        with pytest.raises(RoundFault):
            d.parts.engine.open_betting()
        assert "JACKPOT_METER_MISMATCH" in d.parts.link.state["faults"]
        backend = d.parts.console_backend
        backend.clear_fault(
            "JACKPOT_METER_MISMATCH", "meters reconciled with the count room", "tech1"
        )
        d.parts.engine.open_betting()  # play resumes
        assert d.parts.link.state["faults"] == []
        ev = [e for e in d.journal.chain.events(20) if e.kind == "privileged_action"][-1]
        assert ev.data["action"] == "clear_fault" and ev.data["operator"] == "tech1"
    finally:
        await d.stop()
