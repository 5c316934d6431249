"""Rules core: settlement throughput per game, and ``tablectl math`` time per game.

Settlement is timed on the rules core alone (``game.settle(rules, outcome, bets,
money)``: parse-free, no journal), on rounds built from the games' own material:
random valid bets from :class:`tablesim.players.SimulatedPlayers` against the
game's outcome space (roulette, sic bo, fish-prawn-crab, fantan) or its sample coups
(baccarat); complete blackjack deals played by a simple hit-below-17 strategy from a
shuffled six-deck shoe; the stud poker sample deals with ante/raise/fold bets; super
pan 9 and P'ai Kao tables dealt from a shuffled deck/tile set with one place bet per
place; mah-jong declared wins (no bets: a settled hand's payments are its results).

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
from firmware_host.games import GAME_IDS
from firmware_host.games.base import Bet
from tablesim.players import SimulatedPlayers
from tablesim.tables import table_document

from .common import REPO, Figure, spread

SECTION = "rules core"
JSON = Any


def table_config(game: str) -> TableConfig:
    """The demo table's configuration of ``game`` (limits and house options of the demo)."""
    return validate_document(table_document(game, {}), f"bench:{game}")


Round = tuple[Any, list[Bet]]


def _discrete_rounds(cfg: TableConfig, bets_per_round: int, n: int, seed: int) -> list[Round]:
    game: Any = cfg.game
    rules = cfg.rules
    players = SimulatedPlayers(cfg, seed)
    space = getattr(game, "outcome_space", None)
    if game.game_id == "baccarat" or space is None:
        outcomes = list(game.sample_outcomes(rules))
    else:
        outcomes = [o for o, _p in space(rules)]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        raw = players.many(bets_per_round, f"r{i}")
        bets = [game.parse_bet(rules, b, cfg.limits) for b in raw]
        out.append((rng.choice(outcomes), bets))
    return out


def _blackjack_rounds(cfg: TableConfig, n: int, seed: int) -> list[Round]:
    from firmware_host.games.blackjack import BlackjackDeal
    from firmware_host.games.cards import deck

    game, rules = cfg.game, cfg.rules
    rng = random.Random(seed)
    offered = {bt.name for bt in game.bet_types(rules)}
    out: list[Round] = []
    shoe: list[Any] = []
    while len(out) < n:
        if len(shoe) < 60:
            shoe = list(deck()) * 6
            rng.shuffle(shoe)
        seats = sorted(rng.sample(range(1, 8), 3))
        d = BlackjackDeal.start(rules, seats)
        while True:
            e = d.expect()
            if e.kind == "card":
                d = d.deal(shoe.pop())
            elif e.kind == "decision":
                total = _bj_total(d, e.seat, e.hand)
                action = "hit" if total < 17 and "hit" in e.allowed else "stand"
                if action not in e.allowed:
                    action = next(a for a in e.allowed if a not in ("split", "double", "insurance"))
                assert e.seat is not None
                d = d.decide(e.seat, action, hand=e.hand)
            else:
                break
        bets: list[Bet] = []
        for s in seats:
            raw: dict[str, JSON] = {
                "bet_id": f"m{len(out)}-{s}",
                "seat": s,
                "bet_type": "main",
                "stake": 2500 * rng.randint(1, 8),
            }
            bets.append(game.parse_bet(rules, raw, cfg.limits))
            if "pair" in offered:
                side = {"bet_id": f"p{len(out)}-{s}", "seat": s, "bet_type": "pair", "stake": 2500}
                bets.append(game.parse_bet(rules, side, cfg.limits))
        out.append((d, bets))
    return out


def _bj_total(deal: Any, seat: int | None, hand: int | None) -> int:
    from tablesim.dealer import blackjack_total

    return blackjack_total(deal, seat, hand)


def _stud_rounds(cfg: TableConfig, n: int, seed: int) -> list[Round]:
    game: Any = cfg.game
    rules = cfg.rules
    outcomes = list(game.sample_outcomes(rules))
    rng = random.Random(seed)
    out: list[Round] = []
    for i in range(n):
        o = rng.choice(outcomes)
        bets = []
        for sh in o.hands:
            ante = 10000 * rng.randint(1, 4)
            bets.append(
                game.parse_bet(
                    rules,
                    {
                        "bet_id": f"a{i}-{sh.seat}",
                        "seat": sh.seat,
                        "bet_type": "ante",
                        "stake": ante,
                    },
                    cfg.limits,
                )
            )
            if sh.action == "raise":
                raw = {"bet_id": f"r{i}-{sh.seat}", "seat": sh.seat, "bet_type": "raise",
                       "stake": 2 * ante}  # fmt: skip
                bets.append(game.parse_bet(rules, raw, cfg.limits))
        out.append((o, bets))
    return out


def _banked_rounds(cfg: TableConfig, n: int, seed: int) -> list[Round]:
    game, rules = cfg.game, cfg.rules
    rng = random.Random(seed)
    out: list[Round] = []
    for i in range(n):
        if game.game_id == "super-pan-9":
            from firmware_host.games.cards import deck

            places = rules.places
            items = [str(c) for c in deck()]
            extra: dict[str, JSON] = {"declared": 0}
        else:
            from firmware_host.games.paikao import FULL_SET

            places = 8
            items = [str(t) for t in FULL_SET]
            extra = {"set_game": 1}
        rng.shuffle(items)
        banker = rng.randint(1, places)
        raw_bets = [
            {"bet_id": f"b{i}-{p}", "seat": p, "bet_type": "place", "selection": p,
             "stake": 2500 * rng.randint(1, 10)}
            for p in range(1, places + 1) if p != banker
        ]  # fmt: skip
        raw_outcome = {
            "banker": banker,
            "banker_capital": 1_000_000,
            "casino_capital": 0,
            "dice": [rng.randint(1, 6) for _ in range(4)],
            "hands": {str(p): items[2 * (p - 1) : 2 * p] for p in range(1, places + 1)},
            "bet_order": [b["bet_id"] for b in raw_bets],
            **extra,
        }
        outcome = game.parse_outcome(rules, raw_outcome)
        out.append((outcome, [game.parse_bet(rules, b, cfg.limits) for b in raw_bets]))
    return out


def _mahjong_rounds(cfg: TableConfig, n: int) -> list[Round]:
    game: Any = cfg.game
    outcomes = list(game.sample_outcomes(cfg.rules))
    return [(outcomes[i % len(outcomes)], []) for i in range(n)]


def build_rounds(
    game_id: str, n: int, bets_per_round: int = 100, seed: int = 1
) -> tuple[TableConfig, list[Round]]:
    cfg = table_config(game_id)
    if game_id in ("roulette", "sicbo", "fish-prawn-crab", "fantan", "baccarat"):
        return cfg, _discrete_rounds(cfg, bets_per_round, n, seed)
    if game_id == "blackjack":
        return cfg, _blackjack_rounds(cfg, n, seed)
    if game_id == "stud-poker":
        return cfg, _stud_rounds(cfg, n, seed)
    if game_id in ("super-pan-9", "paikao"):
        return cfg, _banked_rounds(cfg, n, seed)
    if game_id == "mahjong":
        return cfg, _mahjong_rounds(cfg, n)
    raise ValueError(f"no round builder for {game_id}")


def settle_throughput(game_id: str, *, rounds: int, repeats: int, seed: int = 1) -> Figure:
    """Bets (results) settled per second by ``game.settle``, median of ``repeats`` runs."""
    small = game_id not in ("roulette", "sicbo", "fish-prawn-crab", "fantan", "baccarat")
    # Games with a few bets per round get ten times the rounds (similar work per pass).
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
    what = "hands (payments as results)" if game_id == "mahjong" else "bet results"
    return Figure(
        SECTION,
        f"settle {game_id}",
        st["median"],
        "results/s",
        st,
        note=f"{len(built)} rounds x {per_round:.1f} {what} per round ({bets_in} bets in)",
    )


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


def math_time(game_id: str, *, repeats: int) -> Figure:
    """``tablectl math GAME --json`` in a fresh process per run."""
    cmds: list[float] = []
    walls: list[float] = []
    method = None
    details: JSON = None
    extra = ["--decks", "8"] if game_id == "baccarat" else []
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
    goal = ok = None
    if game_id == "baccarat":
        goal, ok = "< 1 s (8 decks exact)", st["median"] < 1.0
    return Figure(SECTION, f"math {game_id}", st["median"], "s", st, goal=goal, ok=ok, note=note)


def run_settle(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    figs: list[Figure] = []
    rounds = 60 if quick else 400
    repeats = 3 if quick else 7
    for g in GAME_IDS:
        log(f"  settle {g}")
        try:
            figs.append(settle_throughput(g, rounds=rounds, repeats=repeats))
        except Exception as exc:  # one game's failure must not hide the others
            figs.append(
                Figure(SECTION, f"settle {g}", None, "results/s", skipped=f"error: {exc!r}")
            )
    return figs


def run_math(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    figs: list[Figure] = []
    for g in GAME_IDS:
        log(f"  math {g}")
        heavy = g in ("blackjack", "stud-poker")
        reps = 1 if quick and heavy else (3 if quick or heavy else 5)
        figs.append(math_time(g, repeats=reps))
    return figs
