"""Maintenance between rounds (issue 35) through the real daemon and mosquitto: a table
mid-round finishes the round, then refuses to open one (``MAINTENANCE``), the retained
``state`` says ``maintenance``; it survives a restart; only a supervisor may ask; the
download log (``software_installed``) is journaled once per installation and published."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from firmware_host import __version__
from firmware_host.config import load_config
from firmware_host.daemon import TableDaemon
from firmware_host.integrity.installs import RECORD
from firmware_host.mqtt import MqttSettings
from firmware_host.schemas import validate
from tablesim.floor_client import FloorClient
from tablesim.principals import make_principals
from tablesim.tables import to_toml
from tests.daemon._mqtt_support import Collector

pytestmark = pytest.mark.mosquitto

FANTAN = """\
version = 1
[table]
id = "ft-m"
game = "fantan"
payable_unit = 100
result_source = "manual"
[limits]
min_stake = 1000
"""
BET = {"bet_id": "b1", "seat": 1, "bet_type": "fan", "selection": 3, "stake": 2500}


def _daemon(path: Path, tmp: Path, broker: Any) -> TableDaemon:
    return TableDaemon(
        load_config(path),
        state_dir=tmp / "state",
        runtime_dir=tmp,
        mqtt=MqttSettings(host=broker.host, port=broker.port, reconnect_min_ms=50),
    )


def _events(floor: Collector, kind: str) -> list[dict[str, Any]]:
    out = []
    for m in floor.messages:
        if m.topic.endswith("/events"):
            body = m.json()
            if body.get("event") == kind:
                validate("event", body)
                out.append(body)
    return out


async def test_a_table_mid_round_finishes_it_then_opens_none(
    mosquitto_broker: Any, tmp_path: Path
) -> None:
    path = tmp_path / "fantan.toml"
    principals = make_principals(tmp_path / "keys")
    path.write_text(FANTAN + to_toml({"auth": principals.auth_section()}))
    (tmp_path / "state").mkdir()
    # The package's postinst appends its line to the installation log.
    (tmp_path / "state" / RECORD).write_text(json.dumps({
        "action": "installed", "to_version": __version__, "from_version": None,
        "by": "ansible:ops-7", "at": "2026-05-09T07:00:00Z",
    }) + "\n")  # fmt: skip
    events = await Collector(
        mosquitto_broker.host, mosquitto_broker.port, "casino/tables/ft-m/events"
    ).start()
    d = _daemon(path, tmp_path, mosquitto_broker)
    await d.start()
    await d.parts.link.wait_subscribed(30)
    pit, dealer = principals.signer("pit"), principals.signer("dealer")
    try:
        async with FloorClient(
            mosquitto_broker.host, mosquitto_broker.port, "ft-m", signers=principals
        ) as floor:
            assert (await floor.command("open_betting"))["status"] == "ok"
            rid = floor.round_in_progress
            assert (await floor.place(BET))["status"] == "accepted"
            # A dealer may not take the table out of play.
            r = await floor.command("maintenance", signer=dealer, reason="update")
            assert (r["status"], r["code"]) == ("error", "NOT_PERMITTED"), r
            r = await floor.command("maintenance", signer=pit, reason="update to 0.2.0")
            assert r["status"] == "ok", r
            assert r["data"]["maintenance"]["by"] == "mqtt:pit"
            # The round in progress goes on: bets, close, result.
            await floor.until(
                lambda: isinstance(floor.state, dict) and floor.state.get("maintenance"),
                what="state.maintenance",
            )
            assert floor.state["phase"] == "open" and floor.state["round_id"] == rid
            late = {**BET, "bet_id": "b2", "seat": 2}
            assert (await floor.place(late))["status"] == "accepted"
            assert (await floor.command("close_betting"))["status"] == "ok"
            assert (await floor.command("result", outcome={"number": 3}))["status"] == "ok"
            rnd = await floor.next_round()
            assert rnd["round_id"] == rid and rnd["status"] == "settled"
            assert len(rnd["bets"]) == 2
            # ... and then no round opens, with its code.
            r = await floor.command("open_betting")
            assert (r["status"], r["code"]) == ("error", "MAINTENANCE"), r
            await floor.until(lambda: floor.phase == "idle", what="idle")
            validate("state", floor.state)
            assert floor.state["maintenance"]["reason"] == "update to 0.2.0"
            # Asked again: as it stands, nothing new journaled.
            again = await floor.command("maintenance", signer=pit, reason="again")
            assert again["data"]["maintenance"]["reason"] == "update to 0.2.0"
            await floor.until(lambda: bool(_events(events, "maintenance")), what="event")
            started = _events(events, "maintenance")
            assert [e["data"]["active"] for e in started] == [True]
            installs = _events(events, "software_installed")
            assert len(installs) == 1, installs
            data = installs[0]["data"]
            assert data["to_version"] == __version__ and data["from_version"] is None
            assert data["installed_by"] == "ansible:ops-7"
            assert data["verification"] is None  # no [software] on this test table
    finally:
        await d.stop()

    # A restart inside maintenance (the update restarts the daemon) keeps it.
    d = _daemon(path, tmp_path, mosquitto_broker)
    await d.start()
    await d.parts.link.wait_subscribed(30)
    try:
        async with FloorClient(
            mosquitto_broker.host, mosquitto_broker.port, "ft-m", signers=principals,
            client_id="floor-after-restart",
        ) as floor:
            await floor.until(
                lambda: isinstance(floor.state, dict) and floor.state.get("availability") == "online"
                and floor.state.get("maintenance") is not None, what="online in maintenance",
            )  # fmt: skip
            r = await floor.command("open_betting")
            assert r["code"] == "MAINTENANCE", r
            r = await floor.command("end_maintenance", signer=dealer)
            assert r["code"] == "NOT_PERMITTED", r
            r = await floor.command("end_maintenance", signer=pit, reason="updated")
            assert r["status"] == "ok" and r["data"]["ended"]["reason"] == "update to 0.2.0"
            await floor.until(lambda: floor.state.get("maintenance") is None, what="in play")
            r = await floor.command("end_maintenance", signer=pit)
            assert r["code"] == "NOT_IN_MAINTENANCE", r
            assert (await floor.command("open_betting"))["status"] == "ok"
            # The same software: no second entry in the download log.
            assert len(_events(events, "software_installed")) == 1
    finally:
        await d.stop()
        await events.stop()
    from firmware_host.journal.settings import JournalSettings

    j = JournalSettings(path=str(tmp_path / "state" / "journal.sqlite3")).open()
    try:
        assert [e.kind for e in j.chain.events(500)].count("software_installed") == 1
        assert [e.data["active"] for e in j.chain.events(50, kind="maintenance")] == [True, False]
    finally:
        j.close()
