"""The stud poker progressive jackpot (61/2004 art. 10, 11) as a pure component.

State in, state out: :func:`settle_round` takes a :class:`JackpotState` (the pool
and what the daemon persists), the round's jackpot bets and each eligible hand's
category, and returns the new state with every contribution and payment itemised.
:func:`void_round` carries a voided round's jackpot bets to the next game (art. 11
1), 4)). Nothing here knows poker: hands arrive as category names.

Money is integer minor units; rates are exact fractions. Named rounding rules:

- ``CONTRIBUTION_ROUNDING`` ("floor, remainder carried"): each round credits to the
  pool the whole minor units of (carried residue + rate x stakes); the exact
  remainder (< 1 minor unit) stays in ``JackpotState.residue`` for the next round,
  so no contribution is ever lost or rounded up.
- ``PERCENT_ROUNDING`` ("floor, remainder stays in the pool"): 10% of the pool for a
  straight flush is rounded down to the minor unit; the odd part stays in the pool.
- ``SPLIT_ROUNDING`` ("odd units to the first hand from the croupier's left"): when
  several royal flushes share one prize (art. 10 5)), each gets the floor of an
  equal share and the odd minor units go to the first of them in paying order, so
  the prize is paid in full.

Order of payment (art. 10 4), 7)): hands are paid left to right from the croupier's
left (ascending seat); when a royal flush's turn comes while a straight flush of the
same round is unpaid, the straight flushes are paid first, then every royal flush
of the round together (they share, art. 10 5)), then the rest left to right. Each
payment reduces the pool by what the pool can bear; a payment larger than the pool
(a fixed sum) is completed by the house (``house_funded``). A percentage prize is
the share of the pool as the payments before it left it (art. 10 7) orders the
straight flushes before the royal precisely because each payment reduces the
pool), never of a pool restarted in the same game. The restart comes once, after
every jackpot prize of the game is paid (art. 10 8): "Depois de efectuado o
pagamento dos prémios do jackpot ... não restando qualquer montante do bolo, o valor
do jackpot recomeça de acordo com o montante mínimo"): an emptied pool restarts
from the seed; with ``reset_rule = "below_seed"`` a pool left below the seed is also
topped up to it. The restart is recorded on the game's last payment (``seeded``).

The meter maximum, its overflow and parameter changes after the next hit are the
table's (``firmware_host/table/jackpot.py``: ``Meter``, :func:`apply_meter` there);
the fields of the same names here exist and are persisted but must keep their
neutral values (``JACKPOT_RESERVED``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..jsonio import JSON
from .errors import ConfigError, RulesError
from .money import fraction_str

#: Hands that win a jackpot prize (art. 10 2)), best first.
JACKPOT_HANDS = ("royal_flush", "straight_flush", "four_of_a_kind", "full_house", "flush")
#: Art. 10 2) (1): the whole pool for a royal flush.
ROYAL_SHARE = Fraction(1)
#: Art. 10 2) (2), 6): a tenth of the pool for each straight flush.
STRAIGHT_FLUSH_SHARE = Fraction(1, 10)
RESET_RULES = ("exhausted", "below_seed")

CONTRIBUTION_ROUNDING = "floor, remainder carried to the next round"
PERCENT_ROUNDING = "floor to the minor unit, remainder stays in the pool"
SPLIT_ROUNDING = "equal floor shares, odd minor units to the first hand from the croupier's left"


class JackpotError(RulesError):
    code = "JACKPOT_INVALID"


@dataclass(frozen=True, slots=True)
class JackpotParams:
    """The jackpot's pay table and meter settings (``[pay_table.stud-poker]``)."""

    #: The jackpot bet's stake, minor units (one fixed amount per table).
    stake: int
    #: Part of each jackpot stake credited to the pool.
    contribution_rate: Fraction
    #: The minimum the pool restarts from (art. 10 8)).
    seed: int
    #: Fixed sums announced on the table (art. 10 2), 3)), minor units.
    royal_flush_fixed: int
    straight_flush_fixed: int
    four_of_a_kind_fixed: int
    full_house_fixed: int
    flush_fixed: int
    reset_rule: str = "exhausted"

    def __post_init__(self) -> None:
        problems = []
        if self.stake < 1:
            problems.append(f"the jackpot stake must be positive, got {self.stake}")
        if not 0 <= self.contribution_rate <= 1:
            problems.append(f"the contribution rate must be 0..1, got {self.contribution_rate}")
        if self.seed < 0:
            problems.append(f"the seed must not be negative, got {self.seed}")
        for hand in JACKPOT_HANDS:
            amount = self.fixed(hand)
            if amount < self.stake:
                problems.append(
                    f"the fixed sum for {hand} ({amount}) is below the jackpot stake ({self.stake})"
                )
        if self.reset_rule not in RESET_RULES:
            problems.append(f"reset_rule must be one of {RESET_RULES}, got {self.reset_rule!r}")
        if problems:
            raise ConfigError("; ".join(problems))

    def fixed(self, hand: str) -> int:
        return int(getattr(self, f"{hand}_fixed"))

    def to_json(self) -> dict[str, JSON]:
        return {
            "stake": self.stake,
            "contribution_rate": fraction_str(self.contribution_rate),
            "seed": self.seed,
            **{f"{h}_fixed": self.fixed(h) for h in JACKPOT_HANDS},
            "reset_rule": self.reset_rule,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> JackpotParams:
        try:
            return JackpotParams(
                stake=_int(data["stake"]),
                contribution_rate=Fraction(str(data["contribution_rate"])),
                seed=_int(data["seed"]),
                royal_flush_fixed=_int(data["royal_flush_fixed"]),
                straight_flush_fixed=_int(data["straight_flush_fixed"]),
                four_of_a_kind_fixed=_int(data["four_of_a_kind_fixed"]),
                full_house_fixed=_int(data["full_house_fixed"]),
                flush_fixed=_int(data["flush_fixed"]),
                reset_rule=str(data.get("reset_rule", "exhausted")),
            )
        except (KeyError, ValueError, TypeError, ZeroDivisionError) as exc:
            if isinstance(exc, RulesError):
                raise
            raise JackpotError(f"jackpot params: {exc!r}") from exc


def _int(v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise JackpotError(f"expected an integer amount of minor units, got {v!r}")
    return v


@dataclass(frozen=True, slots=True)
class JackpotBet:
    """One jackpot bet: the seat it belongs to (1 = first to the croupier's left)."""

    seat: int
    stake: int
    bet_id: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {"seat": self.seat, "stake": self.stake, "bet_id": self.bet_id}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> JackpotBet:
        return JackpotBet(_int(data["seat"]), _int(data["stake"]), str(data.get("bet_id", "")))


@dataclass(frozen=True, slots=True)
class JackpotState:
    """What the daemon persists between rounds."""

    params: JackpotParams
    #: The progressive amount, minor units: never negative.
    pool: int
    #: Exact contributions not yet on the meter (0 <= residue < 1 minor unit).
    residue: Fraction = Fraction(0)
    #: Jackpot bets of a voided game waiting for the seat's next game (art. 11 1), 4)).
    carried: tuple[JackpotBet, ...] = ()
    #: Number of jackpot prizes paid since the meter was installed.
    hits: int = 0
    #: Reserved (later issue): the most the meter may show; None = no maximum.
    meter_max: int | None = None
    #: Reserved (later issue): contributions diverted above ``meter_max``.
    overflow: int = 0
    #: Reserved (later issue): parameters that take effect after the next hit.
    pending_params: JackpotParams | None = None

    def __post_init__(self) -> None:
        if self.pool < 0:
            raise JackpotError(f"the pool cannot be negative, got {self.pool}")
        if not 0 <= self.residue < 1:
            raise JackpotError(f"the residue must be 0 <= r < 1 minor unit, got {self.residue}")
        if self.meter_max is not None or self.overflow or self.pending_params is not None:
            raise JackpotError(
                "meter_max, overflow and pending_params are reserved and not supported yet",
                code="JACKPOT_RESERVED",
            )

    def to_json(self) -> dict[str, JSON]:
        return {
            "pool": self.pool,
            "residue": fraction_str(self.residue),
            "carried": [b.to_json() for b in self.carried],
            "hits": self.hits,
            "params": self.params.to_json(),
            "meter_max": self.meter_max,
            "overflow": self.overflow,
            "pending_params": None,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any], params: JackpotParams | None = None) -> JackpotState:
        """Rebuild a persisted state; ``params`` is used when ``data`` carries none
        (e.g. ``{"pool": 1234500}`` on the command line)."""
        if not isinstance(data, Mapping):
            raise JackpotError(f"a jackpot state is a JSON object, got {data!r}")
        raw_params = data.get("params")
        if raw_params is not None:
            params = JackpotParams.from_json(raw_params)
        if params is None:
            raise JackpotError("the jackpot state carries no params and none were given")
        try:
            residue = Fraction(str(data.get("residue", "0")))
        except (ValueError, ZeroDivisionError) as exc:
            raise JackpotError(f"residue: not an exact fraction: {data.get('residue')!r}") from exc
        return JackpotState(
            params=params,
            pool=_int(data.get("pool", params.seed)),
            residue=residue,
            carried=tuple(JackpotBet.from_json(b) for b in data.get("carried", ())),
            hits=_int(data.get("hits", 0)),
            meter_max=data.get("meter_max"),
            overflow=_int(data.get("overflow", 0)),
            pending_params=None
            if data.get("pending_params") is None
            else JackpotParams.from_json(data["pending_params"]),
        )


def initial_state(params: JackpotParams) -> JackpotState:
    """A new meter: the pool starts at the seed."""
    return JackpotState(params, params.seed)


@dataclass(frozen=True, slots=True)
class Contribution:
    bet: JackpotBet
    #: rate x stake, exact (what this bet adds; the meter credits whole units).
    exact: Fraction


@dataclass(frozen=True, slots=True)
class Payment:
    """One jackpot prize, in paying order."""

    seat: int
    bet_id: str
    hand: str
    #: What the player receives for the jackpot bet (the stake is not returned).
    prize: int
    #: "fixed" or "pool" (the percentage of the pool was larger), art. 10 2).
    basis: str
    from_pool: int
    house_funded: int
    pool_before: int
    #: The pool after this payment (for the game's last payment, after the restart).
    pool_after: int
    #: Seed added after this payment: the restart of art. 10 8), which comes once, after
    #: the game's last jackpot payment (0 on every other payment).
    seeded: int
    #: How many royal flushes shared the prize (1 otherwise).
    shared_by: int = 1

    def to_json(self) -> dict[str, JSON]:
        return {
            "seat": self.seat,
            "bet_id": self.bet_id,
            "hand": self.hand,
            "prize": self.prize,
            "basis": self.basis,
            "from_pool": self.from_pool,
            "house_funded": self.house_funded,
            "pool_before": self.pool_before,
            "pool_after": self.pool_after,
            "seeded": self.seeded,
            "shared_by": self.shared_by,
        }


@dataclass(frozen=True, slots=True)
class JackpotRound:
    """Everything a round did to the jackpot; ``state`` is what to persist."""

    pool_before: int
    contributions: tuple[Contribution, ...]
    credited: int
    payments: tuple[Payment, ...]
    seeded: int
    state: JackpotState

    @property
    def pool_after(self) -> int:
        return self.state.pool

    def to_json(self) -> dict[str, JSON]:
        return {
            "pool_before": self.pool_before,
            "contributions": [
                {"bet_id": c.bet.bet_id, "seat": c.bet.seat, "exact": fraction_str(c.exact)}
                for c in self.contributions
            ],
            "credited": self.credited,
            "payments": [p.to_json() for p in self.payments],
            "paid_from_pool": sum(p.from_pool for p in self.payments),
            "house_funded": sum(p.house_funded for p in self.payments),
            "seeded": self.seeded,
            "pool_after": self.pool_after,
            "rounding": {
                "contribution": CONTRIBUTION_ROUNDING,
                "percentage": PERCENT_ROUNDING,
                "royal_split": SPLIT_ROUNDING,
            },
            "state": self.state.to_json(),
        }


def round_bets(
    state: JackpotState, new_bets: Iterable[JackpotBet], seats_dealt: Iterable[int]
) -> tuple[tuple[JackpotBet, ...], tuple[JackpotBet, ...]]:
    """Split the jackpot bets of a game: (in play this game, still carried).

    A carried bet (art. 11 1), 4)) plays in its seat's next dealt game; a seat
    holding a carried bet may not place a second one in that game.
    """
    dealt = set(seats_dealt)
    new = tuple(new_bets)
    seats_new = {b.seat for b in new}
    playing = [b for b in state.carried if b.seat in dealt]
    for b in playing:
        if b.seat in seats_new:
            raise JackpotError(
                f"seat {b.seat} already has a jackpot bet carried from a void game "
                "(61/2004 art. 11 1))",
                code="JACKPOT_ALREADY_CARRIED",
            )
    still = tuple(b for b in state.carried if b.seat not in dealt)
    return tuple(playing) + new, still


def settle_round(
    state: JackpotState,
    bets: Sequence[JackpotBet],
    hands: Mapping[int, str | None],
) -> JackpotRound:
    """Credit the contributions of ``bets`` and pay every winning hand.

    ``bets`` are the jackpot bets in play this game (see :func:`round_bets`; each
    must have the table's stake); ``hands`` maps each seat whose hand may win a
    prize (its jackpot bet accepted with an ante, art. 10 1)) to its category name,
    or None. Carried bets not in ``bets`` stay carried.
    """
    params = state.params
    seats = [b.seat for b in bets]
    if len(set(seats)) != len(seats):
        raise JackpotError(
            "one jackpot bet per seat (61/2004 art. 2 2), art. 6 1))", code="JACKPOT_DUPLICATE"
        )
    for b in bets:
        if b.stake != params.stake:
            raise JackpotError(
                f"the jackpot bet at seat {b.seat} is {b.stake}; "
                f"this table's jackpot stake is {params.stake}",
                code="JACKPOT_STAKE",
            )
    # Contributions first: the bets were accepted before the cards were dealt.
    contributions = tuple(Contribution(b, params.contribution_rate * b.stake) for b in bets)
    exact = state.residue + sum((c.exact for c in contributions), Fraction(0))
    credited = exact.numerator // exact.denominator
    residue = exact - credited
    pool = state.pool + credited

    by_seat = {b.seat: b for b in bets}
    winners = sorted(
        (seat, hand) for seat, hand in hands.items() if hand in JACKPOT_HANDS and seat in by_seat
    )
    payments: list[Payment] = []
    seeded_total = 0

    def pay(seat: int, hand: str, prize: int, basis: str, shared_by: int = 1) -> None:
        nonlocal pool
        before = pool
        from_pool = min(prize, pool)
        pool -= from_pool
        payments.append(
            Payment(
                seat,
                by_seat[seat].bet_id,
                hand,
                prize,
                basis,
                from_pool,
                prize - from_pool,
                before,
                pool,
                0,
                shared_by,
            )
        )

    def pay_straight_flush(seat: int) -> None:
        pay(
            seat,
            "straight_flush",
            prize_for(params, "straight_flush", pool),
            _basis(params, "straight_flush", pool),
        )

    royals = [s for s, h in winners if h == "royal_flush"]
    pending_sf = [s for s, h in winners if h == "straight_flush"]
    royals_paid = False
    for seat, hand in winners:
        if hand == "straight_flush":
            if seat in pending_sf:
                pending_sf.remove(seat)
                pay_straight_flush(seat)
        elif hand == "royal_flush":
            if royals_paid:
                continue
            for sf_seat in pending_sf:  # art. 10 7): straight flushes before a royal
                pay_straight_flush(sf_seat)
            pending_sf.clear()
            prize_total = prize_for(params, "royal_flush", pool)
            basis = _basis(params, "royal_flush", pool)
            k = len(royals)
            each, odd = divmod(prize_total, k)
            for i, rs in enumerate(royals):  # art. 10 5): shared equally
                pay(rs, "royal_flush", each + (odd if i == 0 else 0), basis, k)
            royals_paid = True
        else:
            pay(seat, hand, params.fixed(hand), "fixed")

    # Art. 10 8): once every prize of the game is paid, an emptied pool restarts at the
    # minimum (below_seed: a pool left below it is topped up); recorded on the last payment.
    if payments and (pool == 0 or (params.reset_rule == "below_seed" and pool < params.seed)):
        seeded_total = max(params.seed - pool, 0)
        pool += seeded_total
        payments[-1] = replace(payments[-1], pool_after=pool, seeded=seeded_total)

    new_state = replace(
        state,
        pool=pool,
        residue=residue,
        carried=tuple(b for b in state.carried if b not in bets),
        hits=state.hits + len(payments),
    )
    return JackpotRound(
        state.pool, contributions, credited, tuple(payments), seeded_total, new_state
    )


def void_round(state: JackpotState, bets: Iterable[JackpotBet]) -> JackpotState:
    """Art. 11 1), 4): a void game's jackpot bets go to the next game, unsettled."""
    carried = list(state.carried)
    for b in bets:
        if b not in carried:
            carried.append(b)
    return replace(state, carried=tuple(carried))


def release_carried(state: JackpotState, seat: int) -> tuple[JackpotState, tuple[JackpotBet, ...]]:
    """Return a seat's carried jackpot bets to the player (the player leaves before
    a next game): the new state and the bets to refund."""
    out = tuple(b for b in state.carried if b.seat == seat)
    return replace(state, carried=tuple(b for b in state.carried if b.seat != seat)), out


def _share(hand: str) -> Fraction | None:
    return {"royal_flush": ROYAL_SHARE, "straight_flush": STRAIGHT_FLUSH_SHARE}.get(hand)


def prize_for(params: JackpotParams, hand: str, pool: int) -> int:
    """Art. 10 2): the prize of ``hand`` with ``pool`` on the meter: the larger of the
    fixed sum and the hand's share of the pool (rounded down, ``PERCENT_ROUNDING``)
    for a royal or straight flush; the fixed sum for the others. A royal prize is
    shared when several royals come in one game (art. 10 5))."""
    share = _share(hand)
    fixed = params.fixed(hand)
    if share is None:
        return fixed
    return max((pool * share).__floor__(), fixed)


def _basis(params: JackpotParams, hand: str, pool: int) -> str:
    share = _share(hand)
    return (
        "pool" if share is not None and (pool * share).__floor__() > params.fixed(hand) else "fixed"
    )


def fixed_return(
    params: JackpotParams, probabilities: Mapping[str, Fraction], pool: int
) -> Fraction:
    """Exact expected amount a jackpot bet receives for a given pool (one hand at
    the table, the pool as it stands), from each hand's probability."""
    return sum((probabilities[h] * prize_for(params, h, pool) for h in JACKPOT_HANDS), Fraction(0))
