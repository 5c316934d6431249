"""Who pays whom: art. 7 (the banker pays and receives double), art. 8 (the house's
commission by stake level), art. 9 (a) 4) / (b) 3) (the winner receives no more than
his capital), art. 10 (the discarder who pays for the other two, and the false win).

The regulation fixes the fan of a hand and the commission of each stake level but
not what a kai vu, one fan or double fan is worth: that is the pay table
(``[pay_table.mahjong] amounts``), one *single share* per grade and stake level, in
minor units. Its default (a documented decision) reads the level's two figures as
the kai vu and the one-fan share, and double fan as twice one fan: "$25/$50" pays
25, 50 and 100 patacas a share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import ConfigError, OutcomeError
from .declared import DISCARDS, SELF_DRAWN, DeclaredWin, parse_level
from .patterns import Score
from .tiles import GREEN, WIND_LETTERS, is_dragon, is_honour, is_wind, tile_str

Level = tuple[int, int]

#: Art. 8 (a) and (b): stake level ("modalidade de aposta", 限紅) -> commission, in patacas.
COMMISSION: dict[str, dict[Level, int]] = {
    "conventional": {
        (25, 50): 10, (50, 100): 20, (100, 200): 40, (200, 400): 80, (300, 600): 120,
        (500, 1000): 200, (1000, 2000): 400, (2000, 4000): 800, (3000, 6000): 1200,
        (5000, 10000): 2000, (10000, 20000): 4000,
    },
    "simplified": {
        (100, 200): 20, (200, 400): 40, (300, 600): 60, (500, 1000): 100, (1000, 2000): 200,
        (2000, 4000): 400, (3000, 6000): 600, (5000, 10000): 1000, (10000, 20000): 2000,
        (20000, 40000): 4000, (30000, 60000): 6000,
    },
}  # fmt: skip
COMMISSION_ARTICLE = {"conventional": "135/91/M art. 8 (a)", "simplified": "135/91/M art. 8 (b)"}

#: The grades of a hand, by fan (art. 6 (a) (1)-(3), (b) (1)-(2)).
GRADES: dict[str, tuple[str, ...]] = {
    "conventional": ("kai vu", "one fan", "double fan"),
    "simplified": ("kai vu", "one fan"),
}


def level_text(level: Level) -> str:
    return f"{level[0]}/{level[1]}"


def default_amounts(variant: str, level: Level, minor_digits: int) -> tuple[int, ...]:
    """The decision: first figure = kai vu, second = one fan, twice the second = double fan."""
    unit = _unit(minor_digits)
    a, b = level[0] * unit, level[1] * unit
    return (a, b, 2 * b) if variant == "conventional" else (a, b)


def check_amounts(variant: str, amounts: Mapping[str, Sequence[int]]) -> str | None:
    """Config check of ``[pay_table.mahjong] amounts`` for ``variant``; an error text or None."""
    levels = COMMISSION[variant]
    grades = GRADES[variant]
    seen: dict[Level, str] = {}
    for key, values in amounts.items():
        try:
            level = parse_level(key)
        except OutcomeError as exc:
            return f"amounts: {exc.message}"
        if level not in levels:
            known = ", ".join(level_text(lv) for lv in levels)
            return (
                f"amounts: {key!r} (read as {level_text(level)}) is not a stake level of "
                f"{COMMISSION_ARTICLE[variant]} ({variant}); levels: {known}"
            )
        if level in seen:
            return (
                f"amounts: {seen[level]!r} and {key!r} are the same stake level "
                f"{level_text(level)}; give it once"
            )
        seen[level] = key
        if len(values) != len(grades):
            return (
                f"amounts.{key!r}: give {len(grades)} single-share amounts in minor units "
                f"({', '.join(grades)}), got {list(values)}"
            )
        if any(v <= 0 for v in values) or list(values) != sorted(values):
            return (
                f"amounts.{key!r}: amounts must be positive and never lower for a higher grade "
                f"({', '.join(grades)}; 135/91/M art. 6), got {list(values)}"
            )
    return None


def effective_table(
    variant: str, amounts: Mapping[str, Sequence[int]], minor_digits: int
) -> dict[Level, tuple[int, ...]]:
    """Every stake level of the variant -> its single-share amounts (configured or default)."""
    configured = {parse_level(k): tuple(v) for k, v in amounts.items()}
    return {
        lv: configured.get(lv) or default_amounts(variant, lv, minor_digits)
        for lv in COMMISSION[variant]
    }


def commission_amount(variant: str, level: Level, minor_digits: int) -> int:
    return COMMISSION[variant][level] * _unit(minor_digits)


def _unit(minor_digits: int) -> int:
    """Minor units in one pataca (the regulation's figures are in patacas)."""
    return int(10**minor_digits)


@dataclass(frozen=True, slots=True)
class Payment:
    seat: int
    #: winner, payer, liable (pays for the others), relieved (his share moved to the liable
    #: player), false_winner, compensated.
    role: str
    #: What art. 7 alone makes this seat pay (negative) or receive, before liability and cap.
    share: int
    #: What the seat pays (negative) or receives, before the commission.
    amount: int


@dataclass(frozen=True, slots=True)
class Liability:
    """A discarder who bears the loss of the other two (art. 10), or why he does not."""

    seat: int | None
    cases: tuple[str, ...]
    exemptions: tuple[str, ...]

    @property
    def applies(self) -> bool:
        return self.seat is not None and bool(self.cases) and not self.exemptions


@dataclass(frozen=True, slots=True)
class PaymentPlan:
    grade: str
    #: The pay table's single share for the hand's grade (or the false win's amounts).
    single_share: int
    payments: tuple[Payment, ...]
    liability: Liability
    #: The commission of art. 8 for the stake level, and what is taken (never more than
    #: the winner receives; none on a false win).
    commission_table: int
    commission: int
    capital: int | None
    capped: bool
    notes: tuple[str, ...] = ()

    def winner_received(self) -> int:
        return sum(p.amount for p in self.payments if p.role == "winner")


A10A = "135/91/M art. 10 (a)"
A10B = "135/91/M art. 10 (b)"


def _in_view(win: DeclaredWin, score: Score, concealed_kong_in_view: bool) -> list[int]:
    """Tiles (one per set) of the winner's sets on the table «à vista» before the win."""
    return [g.tile for g in score.sets if g.declared and (g.exposed or concealed_kong_in_view)]


def liability(win: DeclaredWin, score: Score, concealed_kong_in_view: bool = False) -> Liability:
    """Art. 10 (a) 1)-6) with the exemptions 9)-10); art. 10 (b) 1)-2) with 4)."""
    if not score.valid:
        return Liability(None, (), ())
    keys = {h.pattern.key for h in score.hits}
    discarder = win.source if win.by in DISCARDS else None
    cases: list[str] = []
    seat = discarder
    c = win.conduct
    if win.variant == "conventional":
        view = _in_view(win, score, concealed_kong_in_view)
        if discarder is not None:
            if "full_flush" in keys and len(view) >= 3:
                cases.append(
                    f"{A10A} 1): ch'êng iat sêk with {len(view)} sets in view on the table"
                )
            if "big_dragons" in keys and is_dragon(win.tile) and sum(map(is_dragon, view)) >= 2:
                cases.append(
                    f"{A10A} 3): tai sam un completed by a discarded dragon, two dragon sets in view"
                )
            if "big_winds" in keys and is_wind(win.tile) and sum(map(is_wind, view)) >= 3:
                cases.append(
                    f"{A10A} 3): tai sei hei completed by a discarded wind, three wind sets in view"
                )
            if c.withheld_last_honour:
                cases.append(f"{A10A} 4): kept the last dragon or wind and discarded another tile")
            if c.broke_pung and not c.ready:
                cases.append(f"{A10A} 5): not ready, discarded a tile of a pung in hand")
            if c.ready and c.broke_ready_hand:
                cases.append(f"{A10A} 6): ready, broke his hand with the discard")
        elif (
            win.by in SELF_DRAWN
            and win.after_claim
            and "full_flush" in keys
            and len(win.melds) == 4
        ):
            last = win.melds[-1]
            prior = sum(1 for m in win.melds[:3] if not m.concealed or concealed_kong_in_view)
            if last.source is not None and not last.concealed and prior == 3:
                seat = last.source
                cases.append(
                    f"{A10A} 2): fed the fourth set of a ch'êng iat sêk with three sets in "
                    "view, and the winner drew his winning tile next"
                )
        exemptions = []
        if cases:
            if keys & {"all_terminals", "all_honours"}:
                exemptions.append(f"{A10A} 9): the hand is cheng iu or chun chu")
            if seat == discarder and is_honour(win.tile):
                if win.tile_seen is None:
                    raise OutcomeError(
                        f"the liability of art. 10 (a) depends on whether {tile_str(win.tile)} had "
                        "been seen on the table before it was discarded (art. 10 (a) 10)): set "
                        "win.tile_seen",
                        code="MAHJONG_MISSING_FACT",
                    )
                if not win.tile_seen:
                    exemptions.append(
                        f"{A10A} 10): the discarded {tile_str(win.tile)} was a dragon or "
                        "wind not yet in view on the table"
                    )
    else:
        if discarder is not None:
            if c.withheld_last_honour:
                cases.append(f"{A10B} 1): kept the fourth green dragon and discarded another tile")
            if c.ready and c.broke_pung:
                cases.append(f"{A10B} 2): ready, discarded a tile of a pung in hand")
        exemptions = []
        if cases and win.tile == GREEN:
            if win.tile_seen is None:
                raise OutcomeError(
                    "the liability of art. 10 (b) depends on whether the green dragon had been seen "
                    "on the table before it was discarded (art. 10 (b) 4)): set win.tile_seen",
                    code="MAHJONG_MISSING_FACT",
                )
            if not win.tile_seen:
                exemptions.append(f"{A10B} 4): the discarded green dragon was not yet in view")
    return Liability(seat if cases else None, tuple(cases), tuple(exemptions))


def _cap(amounts: list[int], cap: int, unit: int) -> list[int]:
    """Scale what the payers owe so the winner receives ``cap`` (rounded down to the
    payable unit), shares in proportion; left-over units go to the largest remainders,
    ties to the first payer in the order of play after the winner."""
    total = sum(amounts)
    units = cap // unit
    exact = [a * units for a in amounts]  # / total, in units
    base = [e // total for e in exact]
    left = units - sum(base)
    order = sorted(range(len(amounts)), key=lambda i: (-(exact[i] % total), i))
    for i in order[:left]:
        base[i] += 1
    return [b * unit for b in base]


def plan(
    win: DeclaredWin,
    score: Score,
    table: Mapping[Level, tuple[int, ...]],
    minor_digits: int,
    payable_unit: int = 1,
    concealed_kong_in_view: bool = False,
) -> PaymentPlan:
    """The payments of one game, every seat's, before and after liability and the cap."""
    variant = win.variant
    amounts = table[win.stake]
    for a in amounts:
        if a % payable_unit:
            raise ConfigError(
                f"pay_table.mahjong.amounts.{level_text(win.stake)!r}: {a} is not a multiple of the "
                f"table's payable unit {payable_unit}"
            )
    commission_table = commission_amount(variant, win.stake, minor_digits)
    # Order of play after the winner: who gets left-over units of a capped payment.
    others = _after(win.winner, win.seats)
    if not score.valid:
        return _false_win(win, score, amounts, others, commission_table)

    share = amounts[score.fan]
    dues = [share * (2 if win.banker in (s, win.winner) else 1) for s in others]
    liab = liability(win, score, concealed_kong_in_view)
    owed = list(dues)
    roles = ["payer"] * len(others)
    notes = []
    if liab.applies:
        assert liab.seat is not None
        total = sum(dues)
        owed = [total if s == liab.seat else 0 for s in others]
        roles = ["liable" if s == liab.seat else "relieved" for s in others]
    capped = False
    if win.capital is not None and sum(owed) > win.capital:
        capped = True
        notes.append(
            f"the winner receives no more than his capital of {win.capital} minor units "
            f"(135/91/M art. 9 ({'a) 4' if variant == 'conventional' else 'b) 3'}))"
        )
        owed = _cap(owed, win.capital, payable_unit)
    received = sum(owed)
    payments = [Payment(win.winner, "winner", sum(dues), received)]
    payments += [
        Payment(s, r, -d, -o) for s, r, d, o in zip(others, roles, dues, owed, strict=True)
    ]
    payments.sort(key=lambda p: p.seat)
    commission = min(commission_table, received)
    if commission < commission_table:
        notes.append("the commission is limited to what the winner receives")
    return PaymentPlan(
        GRADES[variant][score.fan],
        share,
        tuple(payments),
        liab,
        commission_table,
        commission,
        win.capital,
        capped,
        tuple(notes),
    )


def _after(seat: int, seats: Sequence[int]) -> list[int]:
    order = sorted(seats)
    i = order.index(seat)
    return order[i + 1 :] + order[:i]


def _false_win(
    win: DeclaredWin,
    score: Score,
    amounts: tuple[int, ...],
    others: list[int],
    commission_table: int,
) -> PaymentPlan:
    """Art. 10 (a) 8): a banker pays each player double fan; any other player pays the
    banker double fan and the other two one fan. Art. 10 (b) 3): one fan to each."""
    if win.variant == "conventional":
        one, double = amounts[1], amounts[2]
        comp = [double if (win.winner == win.banker or s == win.banker) else one for s in others]
        art = f"{A10A} 7)-8)"
    else:
        comp = [amounts[1]] * len(others)
        art = f"{A10B} 3)"
    payments = [Payment(win.winner, "false_winner", -sum(comp), -sum(comp))]
    payments += [Payment(s, "compensated", c, c) for s, c in zip(others, comp, strict=True)]
    payments.sort(key=lambda p: p.seat)
    return PaymentPlan(
        "false win",
        amounts[1],
        tuple(payments),
        Liability(None, (), ()),
        commission_table,
        0,
        win.capital,
        False,
        (
            f"false win («jogo nulo»): compensation of {art}",
            "no game is won, so no commission is taken (art. 8)",
        ),
    )


def seat_label(win: DeclaredWin, seat: int) -> str:
    wind = WIND_LETTERS[win.wind_of(seat)]
    return f"seat {seat} ({wind}{', banker' if seat == win.banker else ''})"
