"""The result board follows the rounds (issue 16 item 1): the state by phase, what is
lit per the regulations, the rebuild after a restart, and a board that never holds up
play."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from firmware_host.auth import TableIdentity
from firmware_host.config import validate_document
from firmware_host.face import state as st
from firmware_host.face.board import (
    BoardDevice,
    BoardWriter,
    ResultBoard,
    TableStatistics,
    board_problems,
)
from firmware_host.journal import Journal
from firmware_host.schemas import PAYLOAD_SCHEMA_VERSION, validate
from firmware_host.table.engine import RoundEngine
from firmware_host.table.extension import TableExtensions
from tests.signing import as_published


class FakeBoard:
    """A board device that records what it was asked to show; ``delay``: how long each
    display command takes (a board that stopped answering takes retries x timeout)."""

    def __init__(self, layout: str, delay: float = 0.0) -> None:
        self.name = "board"
        self.layout = layout
        self.delay = delay
        self.calls: list[tuple[str, Any]] = []
        self.areas: tuple[str, ...] = ()

    def use_areas(self, areas: Sequence[str]) -> None:
        self.areas = tuple(areas)

    async def _take(self, what: str, arg: Any) -> bool:
        if self.delay:
            await asyncio.sleep(self.delay)
        self.calls.append((what, arg))
        return True

    async def show_areas(self, areas: Iterable[str], *, blink: bool = False) -> bool:
        return await self._take("areas", tuple(areas))

    async def show_number(self, number: int, history: Sequence[int] | None = None) -> bool:
        return await self._take("number", (number, tuple(history or ())))

    async def show_road(self, entries: Iterable[Any]) -> bool:
        return await self._take("road", tuple(entries))

    async def show_message(self, kind: str, text: str = "") -> bool:
        return await self._take("message", (kind, text))


def table(
    tmp_path: Path, game: str, board: FakeBoard | None = None
) -> tuple[RoundEngine, ResultBoard, list[dict], Journal]:
    cfg = validate_document(
        {"table": {"id": "t-1", "game": game}, "limits": {"min_stake": 100, "max_stake": 100000}}
    )
    j = Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate())
    ext = TableExtensions()
    published: list[dict] = []
    rb = ResultBoard(
        ext,
        game_id=game,
        publish=lambda body: published.append(dict(body)),
        boards=[board] if board else [],
        shoe_log=j.chain,
    )
    return RoundEngine(cfg, j, extensions=ext), rb, published, j


def head(body: dict, topic: str = "board") -> dict:
    """``body`` as the link publishes it: the common head, signed."""
    return as_published(
        topic,
        {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": "t-1",
            "updated_at": "2026-05-09T07:35:08.642Z",
            **body,
        },
    )


def play(e: RoundEngine, outcome: dict) -> dict:
    e.open_betting()
    e.close_betting()
    return dict(e.submit_result(outcome))


def test_the_board_follows_the_phases_and_lights_the_sicbo_result(tmp_path: Path) -> None:
    e, rb, published, j = table(tmp_path, "sicbo")
    e.open_betting()
    assert (rb.state.phase, rb.state.message, rb.state.lit) == ("open", "place_your_bets", ())
    e.close_betting()
    assert rb.state.message == "no_more_bets"
    payload = e.submit_result({"dice": [1, 2, 3]})
    # 57/2004 art. 3 2): the winning areas lit. 1-2-3: total 6, small (art. 7), even,
    # singles 1, 2, 3 (art. 5 3)), total 6 (art. 5 6)), the combinations 1-2, 1-3, 2-3
    # (art. 5 11)), three 1-2-3 (art. 5 10)) and the four-number areas holding 1, 2, 3.
    lit = set(rb.state.lit)
    assert {"small", "even", "single-1", "single-2", "single-3", "total-6"} <= lit
    assert {"combo-1-2", "combo-1-3", "combo-2-3", "three-1-2-3", "four-1-2-3-4"} <= lit
    assert not lit & {"big", "odd", "any-triple", "single-4", "double-1"}
    assert rb.state.message == "result" and rb.state.outcome == payload["outcome"]
    for body in published:
        validate("board", head(body))


def test_a_triple_lights_neither_small_nor_big(tmp_path: Path) -> None:
    # 57/2004 art. 7: small and big lose on a triple; art. 5 4), 5): the triple wins.
    e, rb, _, j = table(tmp_path, "sicbo")
    play(e, {"dice": [4, 4, 4]})
    assert {"triple-4", "any-triple", "double-4", "even", "total-12"} <= set(rb.state.lit)
    assert not {"small", "big"} & set(rb.state.lit)


def test_fish_prawn_crab_lights_figures_and_colours(tmp_path: Path) -> None:
    # 59/2004 art. 3 2) lit board; art. 1 1): 1 fish red, 5 crab green, 6 rooster red.
    e, rb, _, j = table(tmp_path, "fish-prawn-crab")
    play(e, {"dice": [1, 5, 6]})
    assert {"fish", "crab", "rooster", "two-red", "one-green", "big"} <= set(rb.state.lit)


def test_roulette_number_and_history_and_a_void_with_its_reason(tmp_path: Path) -> None:
    e, rb, _, j = table(tmp_path, "roulette")
    for n in (17, 0, 32):
        play(e, {"number": n})
    assert (rb.state.number, rb.state.history, rb.state.lit) == (32, (0, 17), ("32",))
    e.open_betting()
    e.void_round("ball left the wheel")
    assert (rb.state.message, rb.state.void_reason, rb.state.lit) == (
        "void",
        "ball left the wheel",
        (),
    )
    assert rb.state.number == 32 and rb.state.history == (0, 17)  # history unchanged


def test_fantan_lights_its_number(tmp_path: Path) -> None:
    # 58/2004 art. 5 2): the light of the winning number is lit; a count of 8 buttons
    # leaves 0, which counts as 4 (art. 3 2)).
    e, rb, _, j = table(tmp_path, "fantan")
    play(e, {"buttons": 8})
    assert (rb.state.number, rb.state.lit) == (4, ("4",))


def baccarat_outcome(winner: str) -> dict:
    """Naturals (55/2004 art. 9: neither side draws on 8 or 9)."""
    return {
        "banker": {"banker": ["9D", "KC"], "player": ["8H", "KS"], "tie": ["8D", "KC"]}[winner],
        "player": {"banker": ["8H", "KS"], "player": ["9D", "KC"], "tie": ["8H", "KS"]}[winner],
    }


def test_baccarat_roads_on_the_board_and_a_new_shoe(tmp_path: Path) -> None:
    e, rb, published, j = table(tmp_path, "baccarat")
    for w in ("banker", "banker", "player", "tie"):
        play(e, baccarat_outcome(w))
    assert [str(c) for c in rb.state.coups] == ["B", "B", "P", "T"]
    assert rb.state.lit == ("tie",)
    roads = published[-1]["roads"]
    assert [c["winner"] for c in roads["big_road"]] == ["B", "B", "P"]
    assert roads["big_road"][-1]["ties"] == 1
    validate("board", head(published[-1]))
    e.new_shoe(source="test")
    assert rb.state.coups == () and rb.state.shoe_after_seq == 4
    play(e, baccarat_outcome("player"))
    assert [str(c) for c in rb.state.coups] == ["P"]


def test_after_a_restart_the_board_is_rebuilt_from_the_journal(tmp_path: Path) -> None:
    e, rb, _, j = table(tmp_path, "baccarat")
    for w in ("banker", "player"):
        play(e, baccarat_outcome(w))
    e.new_shoe(source="test")
    for w in ("player", "player", "banker"):
        play(e, baccarat_outcome(w))
    e.open_betting()  # a round in flight: voided at the restart
    before = rb.state
    j.close()

    e2, rb2, _, _ = table(tmp_path, "baccarat")
    e2.resume()
    assert rb2.state.coups == before.coups  # the roads of the current shoe only
    assert rb2.state.message == "void" and "restarted" in (rb2.state.void_reason or "")


def test_roulette_history_rebuilt(tmp_path: Path) -> None:
    e, rb, _, j = table(tmp_path, "roulette")
    for n in (5, 12, 0, 36):
        play(e, {"number": n})
    before = rb.state
    j.close()
    e2, rb2, _, _ = table(tmp_path, "roulette")
    e2.resume()
    assert (rb2.state.number, rb2.state.history, rb2.state.lit) == (
        before.number,
        before.history,
        before.lit,
    )


async def test_a_slow_board_never_delays_a_settlement(tmp_path: Path) -> None:
    # A board that takes a second per message: the engine's settle returns at once and
    # the board catches up with the latest state, not every intermediate one.
    board = FakeBoard("roulette", delay=1.0)
    e, rb, _, j = table(tmp_path, "roulette", board)
    assert isinstance(board, BoardDevice)
    task = asyncio.create_task(rb.run())
    try:
        t0 = time.perf_counter()
        for n in (1, 2, 3):
            play(e, {"number": n})
        assert time.perf_counter() - t0 < 0.5
        await asyncio.wait_for(rb.writers[0].idle(), 15)
        assert ("number", (3, (2, 1))) in board.calls
        assert board.calls[-1][0] in ("number", "areas", "message")
    finally:
        task.cancel()


async def test_the_writer_sends_only_what_changed() -> None:
    board = FakeBoard("roulette")
    w = BoardWriter(board)
    task = asyncio.create_task(w.run())
    try:
        s = st.BoardState("roulette", "roulette")
        s = st.settled(s, {"round_id": "r1", "seq": 1, "outcome": {"number": 7}})
        w.want(s)
        await asyncio.wait_for(w.idle(), 5)
        assert {c[0] for c in board.calls} == {"message", "areas", "number"}
        board.calls.clear()
        w.want(st.opened(s, "r2", 2))
        await asyncio.wait_for(w.idle(), 5)
        assert board.calls == [("message", ("place_your_bets", "")), ("areas", ())]
    finally:
        task.cancel()


def test_a_board_must_have_the_layout_of_the_game() -> None:
    assert board_problems("roulette", [("b", "board", {"layout": "roulette"})]) == []
    # its lamp map names areas of the game's board (the driver cannot know them)
    (bad,) = board_problems(
        "sicbo", [("b", "board", {"layout": "sicbo", "lamps": {"nonsense": 1}})]
    )
    assert bad == "devices.b.lamps: sicbo: unknown areas in the lamp map: nonsense"
    assert board_problems("sicbo", [("b", "board", {"layout": "sicbo", "lamps": {"big": 1}})]) == []
    (problem,) = board_problems("roulette", [("b", "board", {"layout": "sicbo"})])
    assert "devices.b" in problem and "'sicbo'" in problem
    assert board_problems("blackjack", [("b", "board", {"layout": "baccarat"})])
    assert board_problems("roulette", [("w", "wheel", {})]) == []


def test_statistics_follow_the_rounds_and_restart(tmp_path: Path) -> None:
    cfg = validate_document({"table": {"id": "t-1", "game": "roulette"}})
    j = Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate())
    ext = TableExtensions()
    out: list[dict] = []
    TableStatistics(ext, game_id="roulette", publish=lambda b: out.append(dict(b)))
    e = RoundEngine(cfg, j, extensions=ext)
    for n in (1, 2, 0, 19):
        play(e, {"number": n})
    body = out[-1]
    assert body["rounds"] == 4 and body["last"] == [19, 0, 2, 1]
    # red 1 and 19, black 2 (the wheel's colours, 60/2004 art. 1); zero is neither
    assert body["chances"] == {
        "red": 2, "black": 1, "zero": 1, "odd": 2, "even": 1, "low": 2, "high": 1,
    }  # fmt: skip
    validate("stats", head(body, "stats"))
    j.close()
    ext2, out2 = TableExtensions(), []
    TableStatistics(ext2, game_id="roulette", publish=lambda b: out2.append(dict(b)))
    RoundEngine(
        cfg, Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate()), extensions=ext2
    ).resume()
    assert out2[-1] == body
    assert TableStatistics.applies("sicbo") and not TableStatistics.applies("baccarat")


@pytest.mark.parametrize("game", ["blackjack", "mahjong"])
def test_a_game_without_a_layout_has_a_board_topic_and_no_board_device(game: str) -> None:
    """Issue 33: every table publishes ``board`` (the players' screen reads it); a lit
    board device is still refused where the game has no layout."""
    assert ResultBoard.applies(game) and st.layout_of(game) is None
    assert board_problems(game, [("board", "board", {"layout": "sicbo"})])


def test_the_board_keeps_the_last_ten_outcomes_and_rebuilds_them(tmp_path: Path) -> None:
    """Issue 33: a board with no number history and no roads keeps the last 10 settled
    outcomes, most recent first, with their seq; a void adds none; a restart rebuilds
    them from the journal."""
    e, rb, published, j = table(tmp_path, "sicbo")
    throws = [[1 + i % 6, 1 + (i * 2) % 6, 1 + (i * 5) % 6] for i in range(12)]
    seqs = []
    for dice in throws:
        seqs.append(play(e, {"dice": dice})["seq"])
    e.open_betting()
    e.void_round("test void")
    want = [{"seq": q, "dice": d} for q, d in zip(seqs[::-1][:10], throws[::-1][:10], strict=True)]
    got = [{"seq": r["seq"], "dice": r["outcome"]["dice"]} for r in rb.state.to_json()["recent"]]
    assert got == want
    for body in published[-3:]:
        validate("board", head(body))
    j.close()
    e2, rb2, _, j2 = table(tmp_path, "sicbo")
    e2.resume()
    assert rb2.state.to_json()["recent"] == rb.state.to_json()["recent"]
    j2.close()
    e3, rb3, _, j3 = table(tmp_path / "r", "roulette")  # a number history: no recent
    play(e3, {"number": 5})
    assert rb3.state.to_json()["recent"] == [] and rb3.state.history == ()
    j3.close()


def test_a_card_games_board_and_the_dealer_on_duty(tmp_path: Path) -> None:
    """A stud poker table's board: no layout, its hands in ``recent``; the dealer on
    duty is on the board, and the board is published again when the dealer changes."""
    on_duty = ["ana"]
    published: list[dict] = []
    rb = ResultBoard(TableExtensions(), game_id="stud-poker", publish=published.append,
                     dealer=lambda: on_duty[0])  # fmt: skip
    outcome = {"dealer": ["7H", "TH", "7S", "TD", "6H"], "dealer_hand": "two_pairs",
               "dealer_qualifies": True, "up_card": "6H", "seats": {}}  # fmt: skip
    rb.round_settled({"round_id": "t-1-000001-aa", "seq": 1, "status": "settled",
                      "outcome": outcome})  # fmt: skip
    body = published[-1]
    assert body["layout"] is None and body["lit"] == [] and body["number"] is None
    assert body["recent"] == [{"seq": 1, "outcome": outcome}] and body["dealer"] == "ana"
    validate("board", head(body))
    on_duty[0] = "bruno"
    rb.refresh()
    assert published[-1]["dealer"] == "bruno" and len(published) == 2


def test_the_last_result_keeps_its_round_when_the_next_opens(tmp_path: Path) -> None:
    """Issue 33: ``round_id``/``seq`` follow the round in progress; the last result's own
    round (``outcome_round_id``, ``outcome_seq``) stays that of the settled round through
    the next round's opening and closing, and through a void; it is rebuilt after a
    restart."""
    e, rb, published, j = table(tmp_path, "roulette")
    first = play(e, {"number": 17})
    e.open_betting()
    body = published[-1]
    assert body["message"] == "place_your_bets" and body["seq"] == first["seq"] + 1
    assert (body["outcome_round_id"], body["outcome_seq"]) == (first["round_id"], first["seq"])
    assert body["outcome"] == first["outcome"]
    validate("board", head(body))
    e.close_betting()
    e.void_round("wheel fault")
    body = published[-1]
    assert body["message"] == "void" and body["outcome_seq"] == first["seq"]
    j.close()
    e2, rb2, _, j2 = table(tmp_path, "roulette")
    e2.resume()
    assert (rb2.state.outcome_round_id, rb2.state.outcome_seq) == (first["round_id"], first["seq"])
    j2.close()
