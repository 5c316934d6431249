"""What the demo prints adds up (issue 17 point 6, issue 16 item 5): for every game's
recorded rounds (tests/golden), the rows shown sum to the totals line shown, every
selection is in words, seats are numbered from 1, and the board shows the history."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from firmware_host.config import validate_document
from firmware_host.games import GAME_IDS
from tablesim.floor_client import FloorMessage
from tablesim.printer import BoardText, RoundPrinter, bead_plate, round_rows, selection_words
from tablesim.tables import table_document

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def rounds_of(game: str) -> list[dict[str, Any]]:
    rounds: list[dict[str, Any]] = json.loads((GOLDEN / f"{game}.json").read_text())
    for i, r in enumerate(rounds):
        r.setdefault("round_id", f"demo-{game}-{i + 1:06d}-00000000")
    return rounds


@pytest.mark.parametrize("game", GAME_IDS)
def test_rows_add_up_to_the_totals(game: str) -> None:
    """The payload's totals (computed by the rules core) equal the sums of the rows the
    printer shows: a banked game's banker has its row (261/96/M, 195/92/M: the banker's
    capital is staked against the places)."""
    for r in rounds_of(game):
        rows = round_rows(r)
        t = r["totals"]
        assert sum(x.stake for x in rows) == t["stakes"], r["seq"]
        assert sum(x.net for x in rows) == t["net"], r["seq"]
        assert sum(x.commission for x in rows) == t["commission"], r["seq"]


@pytest.mark.parametrize("game", GAME_IDS)
def test_printed_round_has_no_raw_json_and_seats_from_one(
    game: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = validate_document(table_document(game, {}), game)
    p = RoundPrinter(cfg, quiet=False)
    for r in rounds_of(game):
        p.on_message(FloorMessage("rounds", json.dumps(r).encode(), False, 0.0))
    printed = capsys.readouterr().out
    rows = [ln for ln in printed.splitlines() if ln.strip().startswith("seat ")]
    assert rows
    for ln in rows:
        assert "{" not in ln and "[" not in ln, ln
        seat = int(re.match(r"\s*seat (\d+)", ln).group(1))  # type: ignore[union-attr]
        assert 1 <= seat <= 9, ln


def test_quiet_prints_one_line_per_round(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = validate_document(table_document("roulette", {}), "roulette")
    p = RoundPrinter(cfg, quiet=True)
    state = {"availability": "online", "phase": "open", "round_id": "x"}
    p.on_message(FloorMessage("state", json.dumps(state).encode(), True, 0.0))
    for r in rounds_of("roulette"):
        p.on_message(FloorMessage("rounds", json.dumps(r).encode(), False, 0.0))
    assert len(capsys.readouterr().out.splitlines()) == len(rounds_of("roulette"))


def test_phases_are_shown_once_each(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = validate_document(table_document("fantan", {}), "fantan")
    p = RoundPrinter(cfg, quiet=False)
    for phase in ("idle", "open", "open", "closed", "idle"):
        body = {"availability": "online", "phase": phase, "round_id": "r1"}
        p.on_message(FloorMessage("state", json.dumps(body).encode(), True, 0.0))
    printed = capsys.readouterr().out
    assert printed.count("betting open") == 1 and printed.count("no more bets") == 1


@pytest.mark.parametrize(
    ("game", "bet_type", "selection", "words"),
    [
        ("fantan", "nim", {"push": 2, "win": 1}, "win 1, push 2"),
        ("fantan", "nga", {"push": 2, "win": [1, 3]}, "win 1 3, push 2"),
        ("blackjack", "double", {"of": "r2m4", "hand": 0}, "hand 1 of bet r2m4"),
        ("mahjong", "payment", {"wind": "E", "role": "payer"}, "East, payer"),
        ("roulette", "corner", [13, 14, 16, 17], "13 14 16 17"),
        ("baccarat", "banker", None, ""),
    ],
)
def test_selections_in_words(game: str, bet_type: str, selection: Any, words: str) -> None:
    assert selection_words(game, bet_type, selection) == words


def test_bead_plate_fills_columns_of_six_top_down() -> None:
    """The bead plate is read down each column of six, then the next column to the right."""
    winners = ["banker"] * 6 + ["player", "tie"]
    assert bead_plate(winners) == ["B P", "B T", "B .", "B .", "B .", "B ."]


def test_board_history_newest_first() -> None:
    board = BoardText("roulette")
    for n, colour in ((17, "red"), (0, "green"), (22, "black")):
        board.add({"status": "settled", "outcome": {"number": n, "colour": colour}})
    board.add({"status": "void", "outcome": None})
    assert board.lines() == ["board: last 3, newest first: 22B 0G 17R"]
