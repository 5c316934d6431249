"""SIGHUP: the keys that are safe to reload are applied, the others are named as
needing a restart, a broken file is refused and the running configuration kept;
every reload is in the event log."""

from __future__ import annotations

from pathlib import Path

from firmware_host.config import load_config
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from tablesim.principals import make_principals
from tablesim.tables import to_toml

BASE = """\
version = 1
[table]
id = "rl-1"
game = "sicbo"
result_source = "manual"
[limits]
min_stake = {min_stake}
[pay_table.sicbo]
total_5 = {total_5}
"""


async def test_reload_applies_safe_keys_and_names_the_rest(tmp_path: Path, amqtt_broker) -> None:
    path = tmp_path / "table.toml"
    AUTH = to_toml({"auth": make_principals(tmp_path / "keys").auth_section()})
    path.write_text(BASE.format(min_stake=100, total_5=18) + AUTH)
    d = TableDaemon(
        load_config(path),
        config_path=path,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(
            host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol
        ),
    )
    await d.start()
    try:
        path.write_text(BASE.format(min_stake=500, total_5=30) + AUTH)
        result = d.reload()
        assert result["applied"] == ["limits"]
        assert result["needs_restart"] == ["rules"]
        assert d.parts.engine.cfg.limits.min_stake == 500
        assert d.parts.engine.rules.total_5 == 18  # a pay table changes only with a restart
        d.parts.engine.open_betting()
        low = d.parts.engine.desk.place({"bet_id": "x", "bet_type": "big", "stake": 200})
        assert low.code == "BET_STAKE_OUT_OF_LIMITS"
        path.write_text("[table\nbroken")
        refused = d.reload()
        assert refused["applied"] == [] and refused["errors"]
        assert d.parts.engine.cfg.limits.min_stake == 500
        kinds = [e.kind for e in d.journal.chain.events(20)]
        assert "config_reload" in kinds and "config_reload_refused" in kinds
    finally:
        await d.stop()
