"""Every game end to end: a simulator (or the inspector's declaration) produces the
result, bets arrive over MQTT, the floor receives each settled round once per id,
and its settlement equals `tablectl settle` on the same inputs and configuration.

Runs against amqtt (embedded, always) and against mosquitto when installed
(`.ci/run` installs it and makes it mandatory)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from firmware_host.config import load_config
from firmware_host.games import GAME_IDS
from firmware_host.games.errors import BetError
from firmware_host.schemas import validate
from tablesim.demo import DemoTable

ROUNDS = 3


def input_bets(cfg: Any, round_payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The bets as placed (results stripped), leaving out what the settlement derived
    (blackjack split/double hands, mah-jong payments, banker shares)."""
    out = []
    for b in round_payload["bets"]:
        raw = {k: b[k] for k in ("bet_id", "seat", "bet_type", "selection", "stake")}
        try:
            cfg.game.parse_bet(cfg.rules, raw)
        except BetError:
            continue
        out.append(raw)
    return out


def settle_cli(game: str, config: str, outcome: Any, bets: list[dict[str, Any]]) -> dict[str, Any]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "firmware_host",
            "settle",
            game,
            "--config",
            config,
            "--outcome",
            json.dumps(outcome),
            "--bets",
            json.dumps(bets),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def strip_jackpot(bets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in bets if b["bet_type"] != "jackpot"]


async def play_and_check(game: str, broker_url: str | None) -> None:
    async with DemoTable(game, broker=broker_url, speed=8.0, seed=7, bets=5) as t:
        rounds = await t.play(ROUNDS)
        assert (
            subprocess.run(
                [sys.executable, "-m", "firmware_host", "check-config", str(t.config_path)],
                capture_output=True,
            ).returncode
            == 0
        )
        cfg = load_config(t.config_path)
        for r in rounds:
            validate("round", r)
            assert r["game"] == game and r["status"] == "settled", r.get("void_reason")
            bets = input_bets(cfg, r)
            ref = settle_cli(game, str(t.config_path), r["outcome"], bets)
            if game == "stud-poker":  # the jackpot pool before the round is the table's own state
                assert strip_jackpot(r["bets"]) == strip_jackpot(ref["bets"])
            else:
                assert r["bets"] == ref["bets"]
                assert r["totals"] == ref["totals"]
        # once per id: QoS 1 may repeat, never two different rounds under one id
        assert len({r["round_id"] for r in rounds}) == len(rounds) == ROUNDS
        assert [r["seq"] for r in rounds] == sorted(r["seq"] for r in rounds)


@pytest.mark.parametrize("game", GAME_IDS)
async def test_game_end_to_end_amqtt(game: str) -> None:
    await play_and_check(game, None)


@pytest.mark.parametrize("game", GAME_IDS)
async def test_game_end_to_end_mosquitto(game: str, mosquitto_broker: Any) -> None:
    await play_and_check(game, mosquitto_broker.endpoint.url)
