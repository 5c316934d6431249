"""Rules core: settlement throughput per game, and ``tablectl math`` time per game.

Settlement is timed on the rules core alone (``game.settle(rules, outcome, bets,
money)``: parse-free, no journal), on rounds built from what each game says of its
demo (``Game.demo``), as ``tablectl demo`` plays it, never from its id: random valid
bets from :class:`tablesim.players.SimulatedPlayers` against the game's outcome space
(roulette, sic bo, fish-prawn-crab, fantan) or its sample outcomes (baccarat); the
bets made at the seats and complete deals through the deal interface, from shuffled
cards, with the players' decisions (blackjack, stud poker); the rounds people declare
(super pan 9 and P'ai Kao dealt from a shuffled deck or tile set, a place bet at every
place); mah-jong declared wins (no bets: a settled hand's payments are its results).

``tablectl math`` is timed as the user runs it: a fresh ``python -m firmware_host
math GAME --json`` process per run (wall time, and the time of the command itself
inside it, interpreter start-up and imports excluded). Blackjack and stud poker are
seeded simulations at their default sizes; the others are exact.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from firmware_host.config import TableConfig, validate_document
from firmware_host.games import GAME_IDS, get_game
from firmware_host.games.base import Bet, DiscreteGame
from firmware_host.games.cards import deck
from firmware_host.games.describe import DemoRound, sample_outcome
from firmware_host.table.theo import with_theo
from tablesim.players import SimulatedPlayers
from tablesim.tables import table_document

from .common import REPO, Figure, spread

SECTION = "rules core"
JSON = Any


def table_config(game: str) -> TableConfig:
    """The demo table's configuration of ``game`` (limits and house options of the demo)."""
    return validate_document(table_document(game, {}), f"bench:{game}")


Round = tuple[Any, list[Bet]]


def _layout_rounds(cfg: TableConfig, bets_per_round: int, n: int, seed: int) -> list[Round]:
    """The players bet on the layout; the outcomes are the game's outcome space (a game
    of one outcome and independent bets) or its sample outcomes."""
    game: Any = cfg.game
    rules = cfg.rules
    players = SimulatedPlayers(cfg, seed)
    if isinstance(game, DiscreteGame):
        outcomes = [o for o, _p in game.outcome_space(rules)]
    else:
        outcomes = list(game.sample_outcomes(rules))
    rng = random.Random(seed)
    out = []
    for i in range(n):
        raw = players.many(bets_per_round, f"r{i}")
        bets = [game.parse_bet(rules, b, cfg.limits) for b in raw]
        out.append((rng.choice(outcomes), bets))
    return out


def _dealt_rounds(cfg: TableConfig, n: int, seed: int) -> list[Round]:
    """The bets made at the seats, then the deal through the deal interface: cards from
    a shuffled shoe of the rules' decks (a fresh deck every round where the game says
    so), the players' decisions and the bets they create."""
    game, rules, demo = cfg.game, cfg.rules, cfg.game.demo
    assert demo.seated is not None and demo.decide is not None
    rng = random.Random(seed)
    decks = int(getattr(rules, "decks", 1))
    out: list[Round] = []
    shoe: list[Any] = []
    while len(out) < n:
        if game.fresh_deck_each_round(rules) or len(shoe) < 60:
            shoe = list(deck()) * decks
            rng.shuffle(shoe)
        raw = demo.seated(rules, rng, DemoRound(len(out), f"r{len(out)}", 0))
        bets = [game.parse_bet(rules, b, cfg.limits) for b in raw]
        deal = game.start_deal(rules, bets)
        while (e := deal.expect()).kind in ("card", "decision"):
            if e.kind == "card":
                deal = deal.deal(shoe.pop())
                continue
            choice = demo.decide(rules, rng, e, deal)
            before, deal = deal, game.decide(rules, deal, choice)
            created = game.decision_bets(rules, before, choice["seat"], choice["action"], bets)
            bets += [game.parse_bet(rules, b, cfg.limits) for b in created]
        out.append((deal.outcome(), bets))
    return out


def _declared_rounds(cfg: TableConfig, n: int, seed: int) -> list[Round]:
    """The rounds people declare, as the game's demo declares them (a bet at every
    place of a banker game), or its sample outcomes without bets (mah-jong)."""
    game: Any = cfg.game
    rules = cfg.rules
    rng = random.Random(seed)
    out: list[Round] = []
    for i in range(n):
        if game.demo.declared is None:
            out.append((game.parse_outcome(rules, sample_outcome(game, rules, i)), []))
            continue
        raw_bets, raw_outcome = game.demo.declared(rules, rng, DemoRound(i, f"r{i}", 99))
        bets = [game.parse_bet(rules, b, cfg.limits) for b in raw_bets or []]
        out.append((game.parse_outcome(rules, raw_outcome), bets))
    return out


def build_rounds(
    game_id: str, n: int, bets_per_round: int = 100, seed: int = 1
) -> tuple[TableConfig, list[Round]]:
    cfg = table_config(game_id)
    demo = cfg.game.demo
    if demo.bet is not None:
        return cfg, _layout_rounds(cfg, bets_per_round, n, seed)
    if demo.seated is not None:
        return cfg, _dealt_rounds(cfg, n, seed)
    return cfg, _declared_rounds(cfg, n, seed)


def settle_throughput(game_id: str, *, rounds: int, repeats: int, seed: int = 1) -> Figure:
    """Bets (results) settled per second by ``game.settle``, median of ``repeats`` runs."""
    # Games whose bets are not made on the layout by the players have a few a round:
    # they get ten times the rounds (similar work per pass).
    small = get_game(game_id).demo.bet is None
    cfg, built = build_rounds(game_id, rounds * 10 if small else rounds, seed=seed)
    game, rules, money = cfg.game, cfg.rules, cfg.money
    results_per_pass = sum(len(game.settle(rules, o, b, money).results) for o, b in built)
    bets_in = sum(len(b) for _o, b in built)
    rates: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for o, b in built:
            game.settle(rules, o, b, money)
        rates.append(results_per_pass / (time.perf_counter() - t0))
    st = spread(rates)
    per_round = results_per_pass / len(built)
    takes_bets = bool(game.bet_types(rules))
    what = "bet results" if takes_bets else "hands (payments as results)"
    return Figure(
        SECTION,
        f"settle {game_id}",
        st["median"],
        "results/s",
        st,
        note=f"{len(built)} rounds x {per_round:.1f} {what} per round ({bets_in} bets in)",
    )


def theo_cost(game_id: str, *, rounds: int, repeats: int, seed: int = 1) -> Figure:
    """What the round payload's theoretical win (issue 34, ``table/theo.py``) costs, as a
    ratio of the settlement's own time in the same run: per round, ``with_theo`` over the
    settlement's JSON (less that JSON's making) against ``game.settle``."""
    small = get_game(game_id).demo.bet is None
    cfg, built = build_rounds(game_id, rounds * 10 if small else rounds, seed=seed)
    game, rules, money = cfg.game, cfg.rules, cfg.money
    settled = [game.settle(rules, o, b, money) for o, b in built]
    for st in settled:  # the edges' caches warm, as the daemon warms them at start-up
        with_theo(game, rules, money, st.to_json())
    ratios: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for o, b in built:
            game.settle(rules, o, b, money)
        t1 = time.perf_counter()
        for st in settled:
            st.to_json()
        t2 = time.perf_counter()
        for st in settled:
            with_theo(game, rules, money, st.to_json())
        t3 = time.perf_counter()
        ratios.append(((t3 - t2) - (t2 - t1)) / (t1 - t0))
    spr = spread(ratios)
    bets = sum(len(b) for _o, b in built)
    return Figure(SECTION, f"theoretical win {game_id}", spr["median"], "x settle", spr,
                  note=f"{len(built)} rounds, {bets} bets; the payload's edges against the "
                  "settlement, same run")  # fmt: skip


MATH_CHILD = r"""
import contextlib, io, json, sys, time
t0 = time.perf_counter()
from firmware_host import cli
t1 = time.perf_counter()
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = cli.main(sys.argv[1:])
t2 = time.perf_counter()
data = json.loads(buf.getvalue()) if rc == 0 else None
print(json.dumps({"rc": rc, "import_s": t1 - t0, "command_s": t2 - t1,
                  "method": data.get("method") if data else None,
                  "details": data.get("details") if data else None}))
"""


#: Goals of the issues for a game's ``tablectl math``: its flags, the goal in words and
#: its time (baccarat's exact edges over eight decks in under a second).
GOALS: dict[str, tuple[list[str], str, float]] = {
    "baccarat": (["--decks", "8"], "< 1 s (8 decks exact)", 1.0),
}


def math_time(game_id: str, *, repeats: int) -> Figure:
    """``tablectl math GAME --json`` in a fresh process per run."""
    cmds: list[float] = []
    walls: list[float] = []
    method = None
    details: JSON = None
    extra, goal_words, goal_s = GOALS.get(game_id, ([], None, None))
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", MATH_CHILD, "math", game_id, "--json", *extra],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=600,
        )
        walls.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            return Figure(
                SECTION, f"math {game_id}", None, "s", skipped=f"failed: {proc.stderr[-200:]}"
            )
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        if res["rc"] != 0:
            return Figure(SECTION, f"math {game_id}", None, "s", skipped=f"exit {res['rc']}")
        cmds.append(res["command_s"])
        method, details = res["method"], res["details"]
    st = spread(cmds)
    st["wall"] = spread(walls)
    note = f"method {method}"
    if isinstance(details, dict):
        keep = {k: v for k, v in details.items() if k in ("rounds", "seed", "decks")}
        if keep:
            note += " " + json.dumps(keep)
    note += f"; process wall median {st['wall']['median']:.2f} s (interpreter + imports included)"
    ok = None if goal_s is None else st["median"] < goal_s
    return Figure(
        SECTION, f"math {game_id}", st["median"], "s", st, goal=goal_words, ok=ok, note=note
    )


def run_settle(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    figs: list[Figure] = []
    rounds = 60 if quick else 400
    repeats = 3 if quick else 7
    for g in GAME_IDS:
        log(f"  settle {g}")
        try:
            figs.append(settle_throughput(g, rounds=rounds, repeats=repeats))
            figs.append(theo_cost(g, rounds=rounds, repeats=repeats))
        except Exception as exc:  # one game's failure must not hide the others
            figs.append(
                Figure(SECTION, f"settle {g}", None, "results/s", skipped=f"error: {exc!r}")
            )
    return figs


def run_math(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    figs: list[Figure] = []
    for g in GAME_IDS:
        log(f"  math {g}")
        heavy = "rounds" in get_game(g).math_options  # the seeded simulations, by rounds
        reps = 1 if quick and heavy else (3 if quick or heavy else 5)
        figs.append(math_time(g, repeats=reps))
    return figs
