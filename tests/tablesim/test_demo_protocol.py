"""The demo's MQTT version (issue 28): its embedded amqtt speaks MQTT 3.1.1 only, so the
demo's table runs 3.1.1 there, said in its table file, and the demo says that a refused
publication could not be detected; with ``--broker`` it runs MQTT 5, the table's default,
and a broker that refuses an MQTT 5 connection is named at once."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from firmware_host.cliargs import CliError
from tablesim.broker import AMQTT_PROTOCOL, EmbeddedBroker
from tablesim.demo import DemoTable, run_demo


async def test_the_embedded_demo_runs_mqtt_3_1_1_and_says_refusals_cannot_be_seen(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert AMQTT_PROTOCOL == EmbeddedBroker.protocol == "3.1.1"
    assert DemoTable("fantan").protocol == "3.1.1"
    assert DemoTable("fantan", broker="mqtt://127.0.0.1:1883").protocol == "5"
    async with DemoTable("fantan", speed=20.0, seed=1, bets=1) as t:
        written = tomllib.loads(t.config_path.read_text())
        assert written["mqtt"]["protocol"] == "3.1.1"  # said, not defaulted
        assert t.daemon is not None and t.daemon.parts.link is not None
        assert t.daemon.parts.link.refusals == "undetectable"
    rc = await run_demo(
        game="fantan", rounds=1, broker=None, speed=20.0, seed=1, bets=1, quiet=False
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "embedded amqtt on 127.0.0.1:" in out and ", MQTT 3.1.1" in out
    assert "a publication the broker refused could not be detected here" in out


async def test_the_demo_names_a_broker_that_does_not_speak_mqtt_5(
    amqtt_process: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(CliError) as exc:
        await run_demo(
            game="fantan", rounds=1, broker=amqtt_process.url, speed=20.0, seed=1, bets=1,
            quiet=True,
        )  # fmt: skip
    assert exc.value.code == "BROKER_NOT_MQTT5"
    assert "does not speak MQTT 5" in exc.value.message
