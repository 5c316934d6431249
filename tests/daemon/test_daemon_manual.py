"""The daemon end to end with the manual procedure: commands and bets over MQTT,
the settled round received by a floor subscriber and checked against `tablectl settle`."""

import json
import subprocess
import sys
from pathlib import Path

from firmware_host.config import load_config
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.schemas import validate
from tablesim.floor_client import FloorClient
from tablesim.principals import make_principals
from tablesim.tables import to_toml

FANTAN = """\
version = 1
[table]
id = "ft-1"
game = "fantan"
payable_unit = 100
result_source = "manual"
[limits]
min_stake = 1000
"""


def settle_cli(game: str, outcome: object, bets: list, config: Path) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "firmware_host",
            "settle",
            game,
            "--outcome",
            json.dumps(outcome),
            "--bets",
            json.dumps(bets),
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


async def test_manual_round_over_mqtt(broker, tmp_path: Path) -> None:
    path = tmp_path / "fantan.toml"
    principals = make_principals(tmp_path / "keys")
    path.write_text(FANTAN + to_toml({"auth": principals.auth_section()}))
    cfg = load_config(path)
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(
            host=broker.host, port=broker.port, protocol=broker.protocol, reconnect_min_ms=50
        ),
    )
    await d.start()
    await d.parts.link.wait_subscribed(30)
    try:
        async with FloorClient(broker.host, broker.port, cfg.table_id, signers=principals) as floor:
            r = await floor.command("open_betting")
            assert r["status"] == "ok", r
            bets = [
                {
                    "bet_id": "a",
                    "seat": 1,
                    "bet_type": "nga",
                    "selection": {"win": [1, 2], "push": 3},
                    "stake": 1000,
                },
                {"bet_id": "b", "seat": 2, "bet_type": "fan", "selection": 3, "stake": 2500},
                {
                    "bet_id": "c",
                    "seat": 3,
                    "bet_type": "nim",
                    "selection": {"win": 2, "push": 1},
                    "stake": 1500,
                },
            ]
            for b in bets:
                resp = await floor.place(b)
                assert resp["status"] == "accepted", resp
                validate("bet_response", resp)
            bad = await floor.place({**bets[0], "bet_id": "z", "stake": -1})
            assert (bad["status"], bad["code"]) == ("rejected", "BET_INVALID_STAKE")
            assert (await floor.command("close_betting"))["status"] == "ok"
            late = await floor.place({**bets[1], "bet_id": "late"})
            assert late["code"] == "BETTING_CLOSED"
            assert (await floor.command("result", outcome={"number": 1}))["status"] == "ok"
            rnd = await floor.next_round()
            validate("round", rnd)
            ref = settle_cli("fantan", {"number": 1}, bets, path)
            assert rnd["bets"] == ref["bets"] and rnd["totals"] == ref["totals"]
            assert rnd["outcome"] == ref["outcome"]
            assert rnd["status"] == "settled" and rnd["table_id"] == "ft-1"
            for msg in floor.messages:
                if msg.topic == "events":
                    validate("event", msg.json())
                elif msg.topic == "state":
                    validate("state", msg.json())
    finally:
        await d.stop()
