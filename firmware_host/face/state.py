"""What the table's result board shows, as plain data and pure transitions.

:class:`BoardState` is the board's whole display: the phase message ("place your
bets", "no more bets", the result, "void" and its reason), the lit areas of the
layout, the roulette or fantan number with its history, and the baccarat coups of the
shoe with their roads. Each transition (:func:`opened`, :func:`closed`,
:func:`settled`, :func:`voided`, :func:`new_shoe`) returns a new state; nothing here
does I/O, so the same code rebuilds the board from the journal after a restart
(:func:`rebuilt`), drives the devices, fills the retained ``board`` topic and can be
drawn as text by the demo.

What a board shows is what the game says of it (``Game.display.board``, a
:class:`~firmware_host.games.describe.Board`): its layout's areas, each lit when the bet
it shows wins by the game's own verdict (:func:`~firmware_host.games.base.winning_areas`:
the winning areas of the dice for sic bo and fish-prawn-crab, the number for roulette
and fantan, the winner and pairs for baccarat), the number with its history, the roads
of the shoe. Nothing here knows a game by its id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..games import get_game
from ..games import roads as br
from ..games.base import winning_areas
from ..games.describe import Board
from ..jsonio import JSON

#: Numbers of history the board keeps (the board protocol carries up to 20).
HISTORY_MAX = 20
#: Outcomes the board keeps for a game whose board has neither a number history nor
#: roads (the dice games, the card and tile games): the history a screen shows.
RECENT_MAX = 10

#: The phase messages (``message`` in the ``board`` topic).
IDLE, PLACE_BETS, NO_MORE_BETS, RESULT, VOID = (
    "idle",
    "place_your_bets",
    "no_more_bets",
    "result",
    "void",
)


def board_of(game_id: str) -> Board | None:
    """The result board of a ``game_id`` table, as the game describes it, or None."""
    return get_game(game_id).display.board


def layout_of(game_id: str) -> str | None:
    """The board layout that shows ``game_id``'s results, or None (no result board)."""
    board = board_of(game_id)
    return None if board is None else board.layout


@dataclass(frozen=True)
class BoardState:
    """What the result board shows (and the ``board`` topic carries)."""

    game: str
    layout: str | None
    phase: str = "idle"
    message: str = IDLE
    round_id: str | None = None
    seq: int | None = None
    #: The last settled round's outcome as published (None before the first).
    outcome: JSON = None
    #: The round whose outcome that is (``round_id`` and ``seq`` move on when the next
    #: round opens; the last result stays that of this round).
    outcome_round_id: str | None = None
    outcome_seq: int | None = None
    #: The lit areas of the layout (the winning areas of the last result).
    lit: tuple[str, ...] = ()
    #: Roulette or fantan: the last number, and the earlier ones, most recent first.
    number: int | None = None
    history: tuple[int, ...] = ()
    #: Baccarat: the coups of the current shoe, oldest first.
    coups: tuple[br.Coup, ...] = ()
    #: Seq of the last round before the current shoe (None: no shoe change recorded).
    shoe_after_seq: int | None = None
    void_reason: str | None = None
    #: The last settled rounds' outcomes as published, most recent first, each with its
    #: ``seq`` (``{"seq": n, "outcome": {...}}``), for a board that keeps no number
    #: history and no roads (:attr:`keeps_recent`); empty otherwise.
    recent: tuple[JSON, ...] = ()
    #: The dealer on duty (None: nobody signed in), as the table's roster says.
    dealer: str | None = None

    @property
    def board(self) -> Board | None:
        """The game's board, when this state is of its layout."""
        if self.layout is None:
            return None
        board = board_of(self.game)
        return board if board is not None and board.layout == self.layout else None

    @property
    def shows_number(self) -> bool:
        board = self.board
        return board is not None and board.number is not None

    @property
    def shows_roads(self) -> bool:
        board = self.board
        return board is not None and board.roads

    @property
    def keeps_recent(self) -> bool:
        """Whether the board keeps the last outcomes (:attr:`recent`): it shows no
        number history and no roads."""
        return not (self.shows_number or self.shows_roads)

    def roads(self) -> br.Roads:
        return br.roads(self.coups)

    def to_json(self) -> dict[str, JSON]:
        """The ``board`` topic's body (``board.json`` without its common head)."""
        return {
            "game": self.game,
            "layout": self.layout,
            "phase": self.phase,
            "message": self.message,
            "round_id": self.round_id,
            "seq": self.seq,
            "outcome": self.outcome,
            "outcome_round_id": self.outcome_round_id,
            "outcome_seq": self.outcome_seq,
            "lit": list(self.lit),
            "number": self.number,
            "history": list(self.history),
            "void_reason": self.void_reason,
            "roads": self.roads().to_json() if self.shows_roads else None,
            "recent": list(self.recent),
            "dealer": self.dealer,
        }


def opened(s: BoardState, round_id: str, seq: int) -> BoardState:
    """Betting open: "place your bets", the last result's lamps off (the number, its
    history and the roads stay: they are history)."""
    return replace(
        s,
        phase="open",
        message=PLACE_BETS,
        round_id=round_id,
        seq=seq,
        lit=(),
        void_reason=None,
    )


def closed(s: BoardState) -> BoardState:
    """No more bets."""
    return replace(s, phase="closed", message=NO_MORE_BETS)


def idle(s: BoardState) -> BoardState:
    """Between rounds: the message of the last round stays."""
    return replace(s, phase="idle")


def settled(s: BoardState, payload: Mapping[str, Any], rules: Any = None) -> BoardState:
    """A settled round: its result lit (the areas whose bet wins under ``rules``, the
    game's defaults if not given), the number pushed on the history, the coup on the
    roads."""
    outcome = payload.get("outcome")
    out = replace(
        s,
        phase="idle",
        message=RESULT,
        round_id=payload.get("round_id"),
        seq=payload.get("seq"),
        outcome=outcome,
        outcome_round_id=payload.get("round_id"),
        outcome_seq=payload.get("seq"),
        void_reason=None,
        lit=(),
        recent=_recent(s, payload) if isinstance(outcome, Mapping) else s.recent,
    )
    board = s.board
    if not isinstance(outcome, Mapping) or board is None:
        return out
    game = get_game(s.game)
    lit = winning_areas(game, game.default_rules() if rules is None else rules, outcome)
    out = replace(out, lit=lit)
    if board.number is not None:
        history = s.history if s.number is None else (s.number, *s.history)
        number = int(outcome[board.number])
        out = replace(out, number=number, history=history[:HISTORY_MAX])
    if out.shows_roads:
        out = replace(out, coups=(*s.coups, br.Coup.from_outcome(outcome)))
    return out


def _recent(s: BoardState, payload: Mapping[str, Any]) -> tuple[JSON, ...]:
    """``s.recent`` with the settled round of ``payload`` on top (when kept)."""
    if not s.keeps_recent:
        return ()
    entry: JSON = {"seq": payload.get("seq"), "outcome": payload.get("outcome")}
    return (entry, *s.recent)[:RECENT_MAX]


def voided(s: BoardState, payload: Mapping[str, Any]) -> BoardState:
    """A voided round: "void" with the reason; nothing lit; history and roads unchanged."""
    return replace(
        s,
        phase="idle",
        message=VOID,
        round_id=payload.get("round_id"),
        seq=payload.get("seq"),
        lit=(),
        void_reason=str(payload.get("void_reason") or "void"),
    )


def new_shoe(s: BoardState, after_seq: int | None) -> BoardState:
    """A new shoe: the roads start again."""
    return replace(s, coups=(), shoe_after_seq=after_seq)


def rebuilt(
    game: str,
    layout: str | None,
    payloads: Iterable[Mapping[str, Any]],
    *,
    shoe_after_seq: int | None = None,
    rules: Any = None,
) -> BoardState:
    """The board after a restart, from the journal's finished rounds (oldest first):
    their history, and the coups of the rounds after ``shoe_after_seq`` (the last new
    shoe) on the roads."""
    s = BoardState(game, layout, shoe_after_seq=shoe_after_seq)
    for p in payloads:
        seq = p.get("seq")
        if p.get("status") == "settled":
            before = s.coups
            s = settled(s, p, rules)
            if shoe_after_seq is not None and isinstance(seq, int) and seq <= shoe_after_seq:
                s = replace(s, coups=before)  # a round of an earlier shoe
        elif p.get("status") == "void":
            s = voided(s, p)
    return s
