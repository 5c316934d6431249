"""The theoretical win of a settled round (issue 34): each bet's exact house edge and
theoretical win, and the round's totals, added to the round payload (``docs/mqtt.md``,
"Theoretical win").

The rules core says each bet's edge (:meth:`~firmware_host.games.base.Game.bet_edge`,
:mod:`firmware_host.games.edges`); here it is written on the bet's line of the payload:

- ``edge``: the house edge as an exact fraction of the stake (``"1/37"``), or null where
  the bet's expectation is counted in another bet's (a blackjack double or split, the
  stud raise) or the house is not a party (``theo_basis`` ``none``);
- ``theo_exact``: ``stake * edge``, an exact fraction of the minor unit (``"0"`` where
  ``edge`` is null);
- ``theo``: ``theo_exact`` rounded to the minor unit, the nearest, an exact half to the
  even one (:func:`~firmware_host.games.edges.theo_minor`).

The round's ``totals`` carry ``theo_exact`` (the exact sum of its bets') and ``theo``
(that sum rounded once by the same rule, so not always the sum of the bets' ``theo``);
``theo_basis`` says how the game's edges are obtained (``exact``, ``strategy``, ``none``).
A void round's bets and totals carry zeros: nothing was at risk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..games.base import Bet, Game
from ..games.edges import theo_minor
from ..games.money import MoneyRules, fraction_str
from ..jsonio import JSON

#: What a bet line and the totals of a round where nothing was at risk carry.
NO_THEO: dict[str, JSON] = {"edge": None, "theo_exact": "0", "theo": 0}


def jackpot_pool(body: Mapping[str, JSON]) -> int | None:
    """The progressive pool a round was played with (its jackpot summary's
    ``pool_before``), or None."""
    jp = body.get("jackpot")
    pool = jp.get("pool_before") if isinstance(jp, dict) else None
    return pool if isinstance(pool, int) and not isinstance(pool, bool) else None


#: One bet's theoretical win: its exact theo, and its line's ``edge``, ``theo_exact``, ``theo``.
BetTheo = tuple[Fraction, JSON, str, int]


@dataclass(frozen=True, slots=True)
class Theo:
    """The theoretical win of a round's bets computed before its result (while the ball
    spins, ``table/ahead.py``): each bet's, in the bets' order, by ``bet_id``; computed
    with no progressive pool (a game with a jackpot is never computed ahead)."""

    bet_ids: tuple[str, ...]
    lines: tuple[BetTheo, ...]
    #: The exact sum of the lines' theoretical win.
    total: Fraction


def bet_theo(
    game: Game[Any, Any],
    rules: Any,
    money: MoneyRules,
    bet_type: str,
    selection: JSON,
    stake: int,
    *,
    pool: int | None = None,
    seen: dict[tuple[str, str, int], BetTheo] | None = None,
) -> BetTheo:
    """One bet's theoretical win (see the module docstring); ``seen``: what the other
    bets of the round already computed (their type, selection and stake repeat)."""
    key = (bet_type, repr(selection), stake)
    got = seen.get(key) if seen is not None else None
    if got is None:
        bet = Bet("theo", 0, bet_type, selection, stake)
        edge = game.bet_edge(rules, bet, money, jackpot_pool=pool) if stake > 0 else None
        exact = Fraction(0) if edge is None else edge * stake
        edge_text = None if edge is None else fraction_str(edge)
        got = (exact, edge_text, fraction_str(exact), theo_minor(exact))
        if seen is not None:
            seen[key] = got
    return got


def _known_lines(known: Theo | None, lines: list[JSON]) -> tuple[BetTheo, ...] | None:
    """``known``'s lines when it is of these very bets (the same ids in the same order)."""
    if known is None or len(known.bet_ids) != len(lines):
        return None
    for line, bet_id in zip(lines, known.bet_ids, strict=True):
        if not isinstance(line, dict) or line.get("bet_id") != bet_id:
            return None
    return known.lines


def with_theo(
    game: Game[Any, Any],
    rules: Any,
    money: MoneyRules,
    body: dict[str, JSON],
    *,
    pool: int | None = None,
    known: Theo | None = None,
) -> dict[str, JSON]:
    """``body`` (a settlement's JSON: ``bets``, ``totals``) with each bet's ``edge``,
    ``theo_exact`` and ``theo``, the totals' ``theo_exact`` and ``theo``, and
    ``theo_basis``; ``pool``: the progressive pool the round was played with (else its
    ``jackpot`` summary's); ``known``: the bets' theoretical win computed ahead (used
    when it is of these very bets and there is no pool, else computed here). Changes
    ``body``'s lines in place (they are the settlement's own)."""
    if pool is None:
        pool = jackpot_pool(body)
    total = Fraction(0)
    lines = body.get("bets")
    assert isinstance(lines, list)
    ahead = _known_lines(known, lines) if pool is None else None
    if ahead is not None and known is not None:
        total = known.total
        for line, got in zip(lines, ahead, strict=True):
            assert isinstance(line, dict)
            line["edge"], line["theo_exact"], line["theo"] = got[1:]
    else:
        # the bets of a round repeat their type, selection and stake: each computed once
        seen: dict[tuple[str, str, int], BetTheo] = {}
        for line in lines:
            assert isinstance(line, dict)
            stake = line["stake"]
            assert isinstance(stake, int)
            got = bet_theo(
                game, rules, money, str(line["bet_type"]), line.get("selection"), stake,
                pool=pool, seen=seen,
            )  # fmt: skip
            total += got[0]
            line["edge"], line["theo_exact"], line["theo"] = got[1:]
    totals = body.get("totals")
    assert isinstance(totals, dict)
    totals["theo_exact"] = fraction_str(total)
    totals["theo"] = theo_minor(total)
    body["theo_basis"] = game.edge_basis
    return body


def without_theo(body: dict[str, JSON], basis: str) -> dict[str, JSON]:
    """A void round's ``body``: every line and the totals at zero, and the basis."""
    lines = body.get("bets")
    assert isinstance(lines, list)
    for line in lines:
        assert isinstance(line, dict)
        line.update(NO_THEO)
    totals = body.get("totals")
    assert isinstance(totals, dict)
    totals.update(theo_exact="0", theo=0)
    body["theo_basis"] = basis
    return body


def warm(game: Game[Any, Any], rules: Any, money: MoneyRules) -> None:
    """Compute (and so cache) the edges of every bet type of the table once, with the
    smallest stake: a game whose edges take a while to compute (blackjack's) does it at
    start-up, not in its first round's settlement."""
    for bt in game.bet_types(rules):
        try:
            sel = game.canonical_selection(rules, bt.name, None)
        except Exception:  # a bet type that needs a selection: its edges come when bet
            continue
        game.bet_edge(rules, Bet("warm", 0, bt.name, sel, 1), money)
