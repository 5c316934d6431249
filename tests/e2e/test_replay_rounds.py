"""Issue 18 item 1 over a real mosquitto: a floor ingest's signed ``replay_rounds``
brings the table's finished rounds back on ``rounds``, each byte for byte the message
first published (so a consumer's dedup by ``round_id`` and ``seq`` just works)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from firmware_host.config import validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from tablesim.floor_client import FloorClient
from tablesim.principals import make_principals

ROLES = {"dealer": ("dealer",), "floor": ("floor_system",), "ingest": ("floor_ingest",)}


async def test_replayed_rounds_are_the_published_bytes(
    tmp_path: Path, mosquitto_broker: Any
) -> None:
    principals = make_principals(tmp_path / "keys", ROLES)
    doc = {
        "table": {"id": "rp-1", "game": "roulette", "result_source": "manual"},
        "limits": {"min_stake": 100, "max_stake": 1_000_000},
        "auth": principals.auth_section(),
    }
    mqtt = MqttSettings(host=mosquitto_broker.host, port=mosquitto_broker.port, reconnect_min_ms=50)
    d = TableDaemon(validate_document(doc), state_dir=tmp_path, runtime_dir=tmp_path, mqtt=mqtt)
    await d.start()
    await d.parts.link.wait_subscribed(30)
    floor = FloorClient(mosquitto_broker.host, mosquitto_broker.port, "rp-1", signers=principals)
    await floor.start()
    try:
        for i in range(4):
            assert (await floor.command("open_betting"))["status"] == "ok"
            bet = {"bet_id": f"b{i}", "seat": 1, "bet_type": "red", "stake": 1000}
            assert (await floor.place(bet))["status"] == "accepted"
            assert (await floor.command("close_betting"))["status"] == "ok"
            r = await floor.command("result", outcome={"number": 3 + i})
            assert r["status"] == "ok", r
            await floor.next_round()
        first = [m.payload for m in floor.messages if m.topic == "rounds"]
        assert len(first) == 4
        answer = await floor.command(
            "replay_rounds", signer=principals.signer("ingest"), from_seq=2, to_seq=4
        )
        assert answer["status"] == "ok", answer
        assert answer["data"]["queued"] == 3 and answer["data"]["last_seq"] == 4
        for _ in range(3):
            await floor.next_round()
        await asyncio.sleep(0.2)  # nothing more is coming
        rounds = [m.payload for m in floor.messages if m.topic == "rounds"]
        assert rounds[4:] == first[1:4]  # byte for byte, in seq order
    finally:
        await floor.stop()
        await d.stop()
