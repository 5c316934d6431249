"""What ``tablectl demo`` prints: the game as it plays, as the floor receives it.

Reads only what arrives on the table's topics (``state`` for the phases, ``rounds``,
``events``), so it shows exactly what a floor system would see:

- the phases of each round (betting open, no more bets) from the retained ``state``;
- each finished round: its outcome, one row per bet with its selection in words, and
  for the banked games (Super Pan 9, P'ai Kao) one row per bank layer (the banker's
  capital and result), so that the rows add up to the totals line on screen;
- the board's state after each round (:class:`BoardText`): the history of its results
  (roulette's and fantan's numbers, the dice of sic bo and fish-prawn-crab), baccarat's
  bead plate;
- with ``quiet``: exactly one line per round and nothing else.

What it says of a game is what the game says of itself (``Game.display``): its outcome
in words, its result as a board's history shows it, whether its board shows roads, how
its payloads number the seats. Seats are shown from 1 in every game: mah-jong's rules
core numbers its four seats 0-3 in the payload (seat 0 is East), shown as 1-4.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from firmware_host.config import TableConfig
from firmware_host.games import get_game
from firmware_host.games.roads import Coup
from firmware_host.jsonio import JSON

from .floor_client import FloorMessage

#: Fault events worth a line (the others are the round's ordinary life).
FAULT_EVENTS = ("throw_void", "spin_void", "misdeal", "result_refused", "device_problem")

#: Numbers of the history line, and columns of the bead plate shown.
HISTORY = 16
BEAD_COLUMNS = 12


def out(text: str) -> None:
    print(text, flush=True)


def money(amount: int, cfg: TableConfig) -> str:
    return cfg.money.format(amount)


def seat_label(game: str, seat: JSON) -> str:
    """A seat as the printer shows it: numbered from 1 in every game."""
    if isinstance(seat, int) and not isinstance(seat, bool):
        return str(seat - get_game(game).display.first_seat + 1)
    return "-" if seat is None else str(seat)


def selection_words(game: str, bet_type: str, selection: JSON) -> str:
    """A bet's selection in words (never raw JSON): ``17``, ``1 2 4 5``, ``win 1,
    push 2``, ``hand 2 of r2m1``, ``East, payer``."""
    if selection is None:
        return ""
    if isinstance(selection, bool):
        return "yes" if selection else "no"
    if isinstance(selection, (int, str)):
        return str(selection)
    if isinstance(selection, list):
        return " ".join(selection_words(game, bet_type, x) for x in selection)
    if isinstance(selection, Mapping):
        sel = dict(selection)
        if "win" in sel and "push" in sel:  # fantan nim / nga (58/2004 art. 6)
            return f"win {selection_words(game, bet_type, sel['win'])}, push {sel['push']}"
        if "of" in sel and "hand" in sel:  # blackjack double / split of a main bet
            hand = sel["hand"]
            n = hand + 1 if isinstance(hand, int) else hand
            return f"hand {n} of bet {sel['of']}"
        if "wind" in sel and "role" in sel:  # mah-jong payments
            return f"{WINDS.get(str(sel['wind']), sel['wind'])}, {sel['role']}"
        return ", ".join(f"{k} {selection_words(game, bet_type, v)}" for k, v in sel.items())
    return str(selection)


WINDS = {"E": "East", "S": "South", "W": "West", "N": "North"}


@dataclass(frozen=True)
class Row:
    """One printed row of a round: a bet or a bank layer, with the amounts the totals
    line adds up (``stake`` includes a bank's capital, as the payload's totals do)."""

    who: str
    what: str
    stake: int
    result: str
    net: int
    commission: int

    def text(self, cfg: TableConfig, show_stake: bool = True) -> str:
        stake = f"stake {money(self.stake, cfg):>14}" if show_stake else " " * 20
        extra = f" commission {money(self.commission, cfg)}" if self.commission else ""
        return (
            f"      {self.who:<11} {self.what:<30} {stake}  {self.result.upper():<6} "
            f"net {money(self.net, cfg):>15}{extra}"
        )


def round_rows(r: Mapping[str, JSON]) -> list[Row]:
    """The rows of a round payload: every bet, then every bank layer (banked games)."""
    game = str(r["game"])
    rows = [
        Row(
            who=f"seat {seat_label(game, b.get('seat'))}",
            what=f"{b['bet_type']} {selection_words(game, b['bet_type'], b.get('selection'))}".strip(),
            stake=int(b["stake"]),
            result=str(b["result"]),
            net=int(b["net"]),
            commission=int(b.get("commission") or 0),
        )
        for b in r["bets"]
    ]
    bank = r.get("bank")
    found = r.get("banker")
    banker: Mapping[str, JSON] = found if isinstance(found, Mapping) else {}
    if isinstance(bank, Mapping):
        for layer in bank.get("layers") or []:
            who = str(layer.get("who"))
            what = "capital"
            if who == "banker" and banker.get("place") is not None:
                what = f"capital, place {banker['place']}"
            rows.append(
                Row(
                    who=who,
                    what=what,
                    stake=int(layer.get("capital") or 0),
                    result=str(layer.get("result") or ""),
                    net=int(layer.get("net") or 0),
                    commission=int(layer.get("commission") or 0),
                )
            )
    return rows


def round_line(r: Mapping[str, JSON], count: int, cfg: TableConfig) -> str:
    """The one line of a round in ``--quiet``."""
    t = r["totals"]
    status = "VOID " + str(r.get("void_reason") or "") if r["status"] == "void" else "settled"
    return (
        f"#{count:<4} {r['round_id']}  {status}: {outcome_text(str(r['game']), r['outcome'])}; "
        f"{len(r['bets'])} bets, stakes {money(t['stakes'], cfg)}, house {money(t['house_net'], cfg)}"
    )


@dataclass
class Summary:
    """What the demo says on exit."""

    rounds: int = 0
    void: int = 0
    bets: int = 0
    stakes: int = 0
    players_net: int = 0
    house: int = 0

    def add(self, r: Mapping[str, JSON]) -> None:
        t = r["totals"]
        self.rounds += 1
        self.void += r["status"] == "void"
        self.bets += len(r["bets"])
        self.stakes += int(t["stakes"])
        self.players_net += int(t["net"])
        self.house += int(t["house_net"])

    def lines(self, cfg: TableConfig) -> list[str]:
        settled = self.rounds - self.void
        rounds = f"{settled} round{'s' if settled != 1 else ''} settled"
        if self.void:
            rounds += f", {self.void} void"
        return [
            f"{rounds}, {self.bets} bet{'s' if self.bets != 1 else ''}: stakes "
            f"{money(self.stakes, cfg)}, players net {money(self.players_net, cfg)}, "
            f"house {money(self.house, cfg)}"
        ]


class RoundPrinter:
    """Readable lines for the game as it plays, as the floor receives it."""

    def __init__(self, cfg: TableConfig, quiet: bool) -> None:
        self.cfg = cfg
        self.quiet = quiet
        self.count = 0
        self.seen: set[str] = set()
        self.done = asyncio.Event()
        self.target = 0
        self.phase: str | None = None
        self.board = BoardText(cfg.game_id)
        self.summary = Summary()

    def on_message(self, msg: FloorMessage) -> None:
        if msg.topic == "rounds":
            r = msg.json()
            if r["round_id"] in self.seen:
                return  # QoS 1 may deliver twice; same id, same round
            self.seen.add(r["round_id"])
            self.count += 1
            self.summary.add(r)
            self.board.add(r)
            self.print_round(r)
            if self.target and self.count >= self.target:
                self.done.set()
        elif msg.topic == "state" and not self.quiet:
            with_phase = msg.json()
            if isinstance(with_phase, Mapping):
                self.on_phase(with_phase.get("phase"), with_phase.get("round_id"))
        elif msg.topic == "events" and not self.quiet:
            ev = msg.json()
            if ev["event"] in FAULT_EVENTS:
                out(f"   ! {ev['event']}: {_event_words(ev.get('data', {}))}")

    def on_phase(self, phase: JSON, round_id: JSON) -> None:
        if phase == self.phase:
            return
        self.phase = str(phase) if phase is not None else None
        words = {"open": "betting open", "closed": "no more bets"}.get(str(phase))
        if words:
            out(f"   > {words}  ({round_id})")

    def print_round(self, r: JSON) -> None:
        cfg = self.cfg
        if self.quiet:
            out(round_line(r, self.count, cfg))
            return
        game = str(r["game"])
        t = r["totals"]
        status = "VOID " + (r.get("void_reason") or "") if r["status"] == "void" else "settled"
        out(f"#{self.count:<4} {r['round_id']}  {status}")
        out(f"      outcome: {outcome_text(game, r['outcome'])}")
        show_stake = any(b["stake"] for b in r["bets"]) or "bank" in r
        for row in round_rows(r):
            out(row.text(cfg, show_stake))
        jp = r.get("jackpot") or {}
        jp_text = ""
        if jp.get("pool_after") is not None:
            jp_text = f"; jackpot {money(jp['pool_after'], cfg)}"
            for h in jp.get("hits", []):
                jp_text += f"  HIT {h['hand']} seat {h['seat']} {money(h['prize'], cfg)}"
        rows = len(round_rows(r))
        out(
            f"      totals of the {rows} row{'s' if rows != 1 else ''}: stakes "
            f"{money(t['stakes'], cfg)}, net {money(t['net'], cfg)}, commission "
            f"{money(t['commission'], cfg)}; house {money(t['house_net'], cfg)}{jp_text}"
        )
        for line in self.board.lines():
            out(f"      {line}")


def _event_words(data: JSON) -> str:
    if isinstance(data, Mapping):
        return ", ".join(f"{k} {v}" for k, v in data.items() if v not in (None, "", [], {}))
    return str(data)


# -- the board's state, as text ----------------------------------------------------
def bead_plate(winners: Sequence[str], rows: int = 6) -> list[str]:
    """Baccarat's bead plate as text: one cell per coup, down each column of ``rows``
    then the next column to the right (``B`` banker, ``P`` player, ``T`` tie).

    ``winners`` are the coups' winners as the roads name them (``B``, ``P``, ``T``:
    ``firmware_host.games.roads.Coup``) or as the payload does (banker, player, tie)."""
    words = {"banker": "B", "player": "P", "tie": "T"}
    letters = [words.get(w, w if w in ("B", "P", "T") else "?") for w in winners]
    cols = [letters[i : i + rows] for i in range(0, len(letters), rows)][-BEAD_COLUMNS:]
    return (
        [" ".join(col[i] if i < len(col) else "." for col in cols) for i in range(rows)]
        if cols
        else []
    )


@dataclass
class BoardText:
    """What the table's result board shows, as a few lines of text."""

    game: str
    outcomes: list[JSON] = field(default_factory=list)

    def add(self, r: Mapping[str, JSON]) -> None:
        if r["status"] == "settled" and r.get("outcome") is not None:
            self.outcomes.append(r["outcome"])

    def lines(self) -> list[str]:
        os_ = [o for o in self.outcomes if isinstance(o, Mapping)]
        if not os_:
            return []
        display = get_game(self.game).display
        if display.board is not None and display.board.roads:
            plate = bead_plate([Coup.from_outcome(o).winner for o in os_])
            return ["bead plate (B banker, P player, T tie; newest at the end):"] + [
                "  " + row for row in plate
            ]
        if display.short is not None:
            return ["board: " + _history(display.short(o) for o in os_)]
        return []


def _history(items: Iterable[str]) -> str:
    """The newest result first, then the previous ones (what a board's history shows)."""
    last = list(items)[-HISTORY:]
    return "last " + str(len(last)) + ", newest first: " + " ".join(reversed(last))


def outcome_text(game: str, o: JSON) -> str:
    """One line for a round's published outcome: the game's words for it
    (``Game.display.words``); anything it does not read is shown as JSON."""
    if o is None:
        return "(none)"
    words = get_game(game).display.words
    if words is not None:
        try:
            return words(o)
        except (KeyError, TypeError):
            pass
    text = json.dumps(o, ensure_ascii=False)
    return text if len(text) < 160 else text[:157] + "..."
