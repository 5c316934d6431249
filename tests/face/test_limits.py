"""The retained ``limits`` topic (issue 33): what a screen facing the players shows of
the table's minimum and maximum per bet type, with the currency."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from firmware_host.config import load_config
from firmware_host.face.limits import TableLimits, limits_body
from firmware_host.schemas import validate
from firmware_host.table.extension import TableExtensions
from firmware_host.table.phase import Phase
from tests.face.test_board_extension import head

ROOT = Path(__file__).resolve().parents[2]


def test_the_limits_are_the_tables_file_bet_type_by_bet_type() -> None:
    """config/roulette.toml: MOP 25 to 50,000 at the table, MOP 2,000 at most on a
    pleno (60/2004 art. 6 1)); the figures are the file's, read here as text."""
    cfg = load_config(ROOT / "config" / "roulette.toml")
    body = limits_body(cfg.game, cfg.rules, cfg.limits, cfg.money, cfg.name)
    assert (body["currency"], body["minor_digits"], body["payable_unit"]) == ("MOP", 2, 100)
    assert (body["min_stake"], body["max_stake"]) == (2500, 5_000_000)
    rows = {r["bet_type"]: r for r in body["bet_types"]}  # type: ignore[union-attr,index]
    assert (rows["straight"]["min"], rows["straight"]["max"]) == (2500, 200_000)
    assert (rows["red"]["min"], rows["red"]["max"]) == (2500, 5_000_000)
    assert rows["straight"]["article"].startswith("60/2004 art. 6 1)")
    assert rows["straight"]["pays"] == "35:1" and body["name"] == "Roulette 1, main floor"
    # every bet type the game offers, in its order
    assert list(rows) == [bt.name for bt in cfg.game.bet_types(cfg.rules)]
    validate("limits", head(body, "limits"))


def test_the_stud_jackpot_bet_has_its_own_small_minimum() -> None:
    cfg = load_config(ROOT / "config" / "stud-poker.toml")
    body = limits_body(cfg.game, cfg.rules, cfg.limits, cfg.money)
    rows = {r["bet_type"]: r for r in body["bet_types"]}  # type: ignore[union-attr,index]
    assert set(rows) == {"ante", "raise", "jackpot"}
    validate("limits", head(body, "limits"))


def test_published_at_start_and_again_when_betting_opens_after_a_change() -> None:
    cfg = load_config(ROOT / "config" / "roulette.toml")
    now = [cfg.limits]
    out: list[dict] = []
    ext = TableExtensions()
    t = TableLimits(ext, game=cfg.game, rules=cfg.rules, money=cfg.money,
                    limits=lambda: now[0], publish=lambda b: out.append(dict(b)))  # fmt: skip
    assert len(out) == 1
    t.phase_changed(Phase.OPEN, None)
    assert len(out) == 1  # unchanged: not published again
    now[0] = replace(cfg.limits, min_stake=5000)  # a SIGHUP reload
    t.phase_changed(Phase.CLOSED, None)
    assert len(out) == 1
    t.phase_changed(Phase.OPEN, None)
    assert len(out) == 2 and out[-1]["min_stake"] == 5000


def test_a_refused_publication_is_tried_again_at_the_next_round() -> None:
    cfg = load_config(ROOT / "config" / "roulette.toml")
    out: list[dict] = []
    fail = [True]

    def publish(body: object) -> None:
        if fail[0]:
            raise OSError("the link is not there yet")
        out.append(dict(body))  # type: ignore[call-overload]

    t = TableLimits(TableExtensions(), game=cfg.game, rules=cfg.rules, money=cfg.money,
                    limits=lambda: cfg.limits, publish=publish)  # fmt: skip
    fail[0] = False
    t.phase_changed(Phase.OPEN, None)
    assert len(out) == 1
