"""Mah-jong as a game of the rules core: settlement mapping, tablectl score / settle /
math, the configuration of [pay_table.mahjong] and [rules.mahjong] (135/91/M)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from firmware_host.cli import main
from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games import MoneyRules
from firmware_host.games.errors import RulesError, UnknownBetType
from firmware_host.games.mahjong import GAME as G
from firmware_host.games.mahjong import MahjongRules

ROOT = Path(__file__).resolve().parents[2]
CONV = MahjongRules()

HAND: dict[str, Any] = {
    "stake": "25/50",
    "banker": 0,
    "winner": 1,
    "round_wind": "E",
    "concealed": "123m 456m 789p RD RD RD 5s",
    "win": {"tile": "5s", "by": "discard", "from": 3},
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_settlement_one_result_per_seat_art_7_8() -> None:
    s = G.settle(CONV, G.parse_outcome(CONV, HAND), [], MoneyRules())
    by_seat = {r.bet.seat: r for r in s.results}
    assert set(by_seat) == {0, 1, 2, 3}
    # One fan at 25/50: share MOP 50; the banker pays double (art. 7); commission MOP 10 (art. 8 (a)).
    assert by_seat[1].amounts.result == "win"
    assert (by_seat[1].amounts.payout, by_seat[1].amounts.commission, by_seat[1].amounts.net) == (
        20000,
        1000,
        19000,
    )
    assert [by_seat[s].amounts.net for s in (0, 2, 3)] == [-10000, -5000, -5000]
    assert (
        s.totals.net == -1000
        and s.totals.commission == 1000
        and s.totals.to_json()["house_net"] == 1000
    )
    assert by_seat[0].bet.selection == {"wind": "E", "role": "payer"} and by_seat[0].bet.stake == 0
    assert s.extras["mahjong"]["fan"] == 1


def test_false_win_settlement_has_no_commission_art_8() -> None:
    raw = {**HAND, "concealed": "123m 456m 789p RD RD RD 6s"}
    s = G.settle(CONV, G.parse_outcome(CONV, raw), [], MoneyRules())
    assert s.totals.commission == 0 and s.totals.net == 0
    assert {r.bet.seat: r.amounts.result for r in s.results} == {
        0: "win",
        1: "lose",
        2: "win",
        3: "win",
    }


def test_mahjong_takes_no_bets() -> None:
    with pytest.raises(UnknownBetType):
        G.parse_bets(CONV, [{"bet_type": "win", "stake": 100}])
    assert G.bet_types(CONV) == ()


def test_math_says_there_is_no_house_edge() -> None:
    report = G.math(CONV)
    assert report.lines == () and report.details["house_edge"] is None
    assert "no house edge" in report.details["note"]
    first = report.details["commission_table"][0]
    assert first == {
        "stake": "25/50",
        "commission": 1000,
        "kai_vu": 2500,
        "one_fan": 5000,
        "double_fan": 10000,
        "commission_of_kai_vu_win": "10.0%",
    }
    with pytest.raises(RulesError):
        G.math(CONV, rounds=10)


def test_score_report_names_everything_an_inspector_checks() -> None:
    data, text = G.score_report(CONV, HAND)
    assert data["valid"] and data["fan"] == 1 and data["patterns"][0]["key"] == "dragon_set"
    for needle in (
        "Valid: 135/91/M art. 4 (a)",
        "pung  RD RD RD",
        "Conjunto de trunfo",
        "art. 6 (a) (2)",
        "Fan: 1: one fan",
        "seat 0 (E, banker)",
        "pays MOP 100.00",
        "receives MOP 200.00",
        "Commission (135/91/M art. 8 (a), $25/$50): MOP 10.00",
    ):
        assert needle in text, needle


def test_tablectl_score_mahjong(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(
        capsys,
        "score",
        "mahjong",
        "--hand",
        json.dumps(HAND),
        "--config",
        str(ROOT / "config" / "mahjong.toml"),
    )
    assert rc == 0 and "Fan: 1: one fan" in out
    rc, out, _ = run(capsys, "score", "mahjong", "--hand", json.dumps(HAND), "--json")
    assert rc == 0 and json.loads(out)["payments"][1]["amount"] == 20000


def test_tablectl_score_refuses_an_impossible_hand(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(
        capsys, "score", "mahjong", "--hand", json.dumps({**HAND, "concealed": "RD " * 13})
    )
    assert rc == 2 and "MAHJONG_TILE_COUNT" in err


def test_tablectl_settle_mahjong(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(
        capsys,
        "settle",
        "mahjong",
        "--outcome",
        json.dumps(HAND),
        "--bets",
        "[]",
        "--config",
        str(ROOT / "config" / "mahjong.toml"),
    )
    assert rc == 0
    data = json.loads(out)
    assert sum(b["net"] for b in data["bets"]) + data["totals"]["commission"] == 0
    assert data["mahjong"]["grade"] == "one fan"


def test_simplified_example_config_and_score(capsys: pytest.CaptureFixture[str]) -> None:
    hand = {
        "stake": "100/200",
        "seats": [0, 1],
        "banker": 0,
        "winner": 1,
        "round_wind": "E",
        "concealed": "123m GD",
        "win": {"tile": "GD", "by": "discard", "from": 0, "tile_seen": True},
    }
    rc, out, _ = run(
        capsys,
        "score",
        "mahjong",
        "--hand",
        json.dumps(hand),
        "--config",
        str(ROOT / "config" / "mahjong-simplified.toml"),
    )
    assert rc == 0 and "one fan" in out and "art. 8 (b)" in out


@pytest.mark.parametrize("name", ["mahjong.toml", "mahjong-simplified.toml"])
def test_example_configs_are_valid(capsys: pytest.CaptureFixture[str], name: str) -> None:
    rc, out, _ = run(capsys, "check-config", str(ROOT / "config" / name))
    assert rc == 0 and "ok" in out


def _doc(**sections: Any) -> dict[str, Any]:
    return {"version": 1, "table": {"id": "mj", "game": "mahjong"}, **sections}


@pytest.mark.parametrize(
    ("pay", "rules", "needle"),
    [
        ({"amounts": {"40/80": [1, 2, 3]}}, {}, "not a stake level"),
        ({"amounts": {"25/50": [1, 2]}}, {}, "give 3 single-share amounts"),
        ({"amounts": {"25/50": [3, 2, 1]}}, {}, "never lower for a higher grade"),
        ({"amounts": {"25/50": [1, 2, 3]}}, {"variant": "simplified"}, "not a stake level"),
        ({}, {"variant": "riichi"}, "authorised choices"),
        # issue 12 point 6: the printed form is read as the regulation means it ...
        (
            {"amounts": {"$ 100,00/ $ 200,00": [1, 2, 3], "100/200": [1, 2, 3]}},
            {},
            "are the same stake level 100/200",
        ),
        # ... and what is ambiguous is refused, not read 100 times too high
        ({"amounts": {"1,0000/2,0000": [1, 2, 3]}}, {}, "not written in an accepted form"),
        ({"amounts": {"$1,000/$2,000": [1, 2, 3]}}, {}, "thousands or decimals?"),
    ],
)
def test_pay_table_is_checked_art_6_8(
    pay: dict[str, Any], rules: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ConfigInvalid) as e:
        validate_document(_doc(pay_table={"mahjong": pay}, rules={"mahjong": rules}))
    assert needle in "\n".join(e.value.errors)


def test_pay_table_key_as_the_regulation_prints_it_art_8() -> None:
    # "$ 100,00/ $ 200,00" (135/91/M art. 8 (a)) is the level 100/200, not 10,000/20,000.
    cfg = validate_document(_doc(pay_table={"mahjong": {"amounts": {"$ 100,00/ $ 200,00": [
        10000, 20000, 40000]}}}))  # fmt: skip
    raw = {
        "stake": "100/200",
        "banker": 0,
        "winner": 0,
        "round_wind": "E",
        "concealed": "12m 456p 789s 222p 55m",
        "win": {"tile": "3m", "by": "self_drawn"},
    }
    s = G.settle(cfg.rules, G.parse_outcome(cfg.rules, raw), [], cfg.money)
    assert s.extras["mahjong"]["payments"][0]["amount"] == 3 * 2 * 10000


def test_default_pay_table_follows_the_stake_level_decision() -> None:
    cfg = validate_document(_doc(rules={"mahjong": {"variant": "simplified"}}))
    assert cfg.rules.variant == "simplified" and cfg.rules.amounts == {}
    raw = {
        "stake": "300/600",
        "banker": 0,
        "winner": 0,
        "round_wind": "E",
        "concealed": "12m 5p5p",
        "win": {"tile": "3m", "by": "self_drawn"},
    }
    s = G.settle(cfg.rules, G.parse_outcome(cfg.rules, raw), [], cfg.money)
    # Kai vu = the first figure, MOP 300, a share; the banker receives double from three.
    assert s.extras["mahjong"]["payments"][0]["amount"] == 3 * 2 * 30000


def test_doc_example_is_true() -> None:
    """docs/rules/mahjong.md's declared win: North pays MOP 400 for all (art. 10 (a) 1))."""
    text = (ROOT / "docs" / "rules" / "mahjong.md").read_text(encoding="utf-8")
    example = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    data, _ = G.score_report(CONV, example)
    assert data["valid"] and [p["key"] for p in data["patterns"]] == ["full_flush"]
    assert {p["seat"]: p["amount"] for p in data["payments"]} == {0: 0, 1: 40000, 2: 0, 3: -40000}
    assert data["liability"]["seat"] == 3 and "10 (a) 1)" in data["liability"]["cases"][0]
