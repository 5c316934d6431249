"""Money, odds and the rounding of payouts.

Amounts are ``int`` counts of the currency's minor unit (avos for MOP, cents for
HKD). Odds and commission rates are :class:`fractions.Fraction`. Nothing here
ever touches a float.

A bet's exact prize is ``stake * odds``; its exact commission ``prize * rate``.
A prize that is a whole multiple of the stake (35 to 1, "uma vez a importância da
aposta") is paid exactly, never rounded: the table refuses at placement a stake it
could not pay that way (:class:`~base.Limits`, ``BET_STAKE_PAYABLE_UNIT``). Only a
genuinely fractional amount (fantan's 1/2 and 1/3 odds, 5% commissions, a blackjack
3:2 on an odd stake) is rounded to the table's *smallest payable unit* by a named
rule; the part that is not paid is reported as ``breakage`` (an exact fraction of
the minor unit), never mixed into the commission, so that nothing is lost from the
books. See ``docs/rules/money.md``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from .errors import ConfigError, InvalidStake

Result = Literal["win", "lose", "push"]


class Rounding(enum.Enum):
    """How an exact amount that is not a whole payable unit is rounded.

    ``FLOOR`` (the default, "the house never overpays"): the player's net win is
    the exact net win rounded *down* to the payable unit; a partial loss (a
    surrendered blackjack) is rounded *up* against the player. The gross prize is
    rounded down and the commission is what makes up the difference, so that
    ``payout - commission == net`` always holds in integers.

    ``NEAREST`` (an alternative a house may have authorised): the net is rounded
    to the nearest payable unit, an exact half going to the house.
    """

    FLOOR = "floor"
    NEAREST = "nearest"


@dataclass(frozen=True, slots=True)
class MoneyRules:
    """The table's money settings, from the ``[table]`` configuration section."""

    currency: str = "MOP"
    #: Digits after the decimal point of the currency's major unit (MOP: 2 -> avos).
    minor_digits: int = 2
    #: The smallest amount the table can hand over, in minor units (a MOP 1 chip = 100).
    payable_unit: int = 1
    rounding: Rounding = Rounding.FLOOR

    def __post_init__(self) -> None:
        if not isinstance(self.payable_unit, int) or self.payable_unit < 1:
            raise ConfigError(f"payable_unit must be a positive integer, got {self.payable_unit!r}")
        if not isinstance(self.minor_digits, int) or not 0 <= self.minor_digits <= 4:
            raise ConfigError(f"minor_digits must be 0..4, got {self.minor_digits!r}")

    def round_gain(self, exact: Fraction) -> int:
        """Round an exact amount owed *to the player* (never more than exact under FLOOR)."""
        return _round_ratio(exact.numerator, exact.denominator, self.payable_unit, self.rounding)

    def round_loss(self, exact: Fraction) -> int:
        """Round an exact amount owed *by the player* (never less than exact under FLOOR;
        under NEAREST an exact half goes to the house, so the loss is rounded up)."""
        return -_round_ratio(-exact.numerator, exact.denominator, self.payable_unit, self.rounding)

    def round_commission(self, exact: Fraction) -> int:
        """A commission the regulation fixes as a rate of a prize (5%), to the *minor*
        unit: it is kept, not handed over, so the payable unit does not apply; a
        fraction of a minor unit is rounded as an amount owed by the player (up under
        FLOOR, to the nearest with halves up under NEAREST). What the payable unit
        does not let the table pay is breakage, never commission."""
        return -_round_ratio(-exact.numerator, exact.denominator, 1, self.rounding)

    def format(self, amount: int) -> str:
        """Human-readable amount, e.g. ``MOP 1,234.50``; for display only."""
        sign = "-" if amount < 0 else ""
        major, minor = divmod(abs(amount), 10**self.minor_digits)
        if self.minor_digits:
            return f"{sign}{self.currency} {major:,}.{minor:0{self.minor_digits}d}"
        return f"{sign}{self.currency} {major:,}"


def _round_ratio(num: int, den: int, unit: int, rule: Rounding) -> int:
    """Round the exact amount ``num / den`` (``den > 0``) to a multiple of ``unit``,
    in integers only (the settlement of every bet comes through here).

    Rounding *down* always favours the house: for an amount the player receives it
    pays less; for an amount the player pays, passed negated, it takes more. So
    FLOOR rounds down, and NEAREST rounds to the nearest multiple with an exact
    half going down.
    """
    d = den * unit
    q, r = divmod(num, d)  # floor division: 0 <= r < d
    if r and rule is Rounding.NEAREST and 2 * r > d:
        q += 1
    return q * unit


#: The largest stake (and limit) any table accepts, minor units: MOP 10,000,000,000.00.
#: Every prize of it still fits the journal's 64-bit integers (the largest multiple
#: of any regulation, 5000 to 1, times this is below 2**63).
MAX_STAKE = 10**12


class OversizedNumber:
    """What :func:`parse_json_int` makes of an integer too long to be an amount.

    Python refuses to convert a decimal text of more than 4300 digits (a guard
    against quadratic-time parsing), so ``json.loads`` would raise a bare
    ``ValueError`` on such a stake and the request would fail without naming what is
    wrong. Kept as this marker instead, it is refused by every check like any other
    value of the wrong type (``BET_INVALID_STAKE`` for a stake)."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"


#: Digits above which a JSON integer is kept as an :class:`OversizedNumber`.
MAX_JSON_INT_DIGITS = 30


def parse_json_int(text: str) -> int | OversizedNumber:
    """``parse_int`` for ``json.loads`` wherever amounts arrive from outside (MQTT
    requests, ``tablectl settle --bets``): an integer of more than
    :data:`MAX_JSON_INT_DIGITS` digits is no amount of money and becomes an
    :class:`OversizedNumber` that the checks refuse with their own code."""
    digits = len(text) - (text[0] == "-")
    if digits > MAX_JSON_INT_DIGITS:
        return OversizedNumber(digits)
    return int(text)


def check_stake(stake: object) -> int:
    """A stake must be a positive integer count of minor units (never a float, never
    bool), at most :data:`MAX_STAKE`."""
    if isinstance(stake, bool) or not isinstance(stake, int):
        raise InvalidStake(f"stake must be a positive integer number of minor units, got {stake!r}")
    if stake <= 0:
        raise InvalidStake(f"stake must be positive, got {stake}")
    if stake > MAX_STAKE:
        raise InvalidStake(
            f"stake {stake} is above {MAX_STAKE}, the largest amount a table accepts"
        )
    return stake


_ZERO = Fraction(0)
_ONE = Fraction(1)


def _fraction(value: Fraction | int) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(value)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the rules say of one bet, before money is rounded.

    - ``win``: the player keeps the stake and receives ``stake * odds``, less
      ``commission_rate`` of that prize.
    - ``push``: the stake is returned.
    - ``lose``: the player loses ``loss_fraction`` of the stake (1 unless a rule
      returns part of it, like blackjack's surrender or five-card half stake).
    """

    result: Result
    odds: Fraction = _ZERO
    commission_rate: Fraction = _ZERO
    loss_fraction: Fraction = _ONE
    #: Short reason shown to supervisors, e.g. "zero: only a straight on 0 wins (60/2004 art. 8)".
    reason: str = ""

    @staticmethod
    def win(odds: Fraction | int, commission_rate: Fraction = _ZERO, reason: str = "") -> Verdict:
        return Verdict("win", _fraction(odds), _fraction(commission_rate), _ONE, reason)

    @staticmethod
    def lose(reason: str = "", loss_fraction: Fraction = _ONE) -> Verdict:
        return Verdict("lose", loss_fraction=_fraction(loss_fraction), reason=reason)

    @staticmethod
    def push(reason: str = "") -> Verdict:
        return Verdict("push", loss_fraction=_ZERO, reason=reason)

    def net_per_unit(self) -> Fraction:
        """Exact expected-value contribution per unit staked (no rounding): for math."""
        if self.result == "win":
            return self.odds * (1 - self.commission_rate)
        if self.result == "push":
            return Fraction(0)
        return -self.loss_fraction


@dataclass(frozen=True, slots=True)
class Amounts:
    """A settled bet's money, all in minor units except the exact ``breakage``.

    On a win ``payout - commission == net`` and ``net + breakage`` is the exact net
    the regulation gives (prize less commission): the commission is the regulation's
    rate of the prize, and what the payable unit does not let the table pay is the
    breakage, never a part of the commission (so ``payout`` is the prize less the
    breakage)."""

    result: Result
    #: Gross prize paid on top of the returned stake (0 unless a win): ``net + commission``.
    payout: int
    #: Commission kept by the house out of the prize: the regulation's rate of the
    #: exact prize, to the minor unit (a fraction of a minor unit rounded for the house).
    commission: int
    #: The player's net change: ``payout - commission`` on a win, 0 on a push, ``-lost`` on a loss.
    net: int
    #: Exact amount (minor units) the rounding rule did not pay: exact net minus ``net``.
    breakage: Fraction


def settle_amounts(stake: int, verdict: Verdict, money: MoneyRules) -> Amounts:
    """Turn a verdict into integer money by the table's rounding rule.

    A prize that is a whole multiple of the stake, without commission, is paid
    exactly whatever the payable unit (60/2004 art. 7, 57/2004 and 59/2004 art. 6 fix
    it as a multiple; a stake the table could not pay so is refused at placement).
    Otherwise the exact net is rounded to the payable unit, the commission is the
    regulation's rate of the exact prize to the minor unit, and the rest is breakage.

    Integer arithmetic on the fractions' numerators and denominators (a ``Fraction``
    is built only for a breakage that is not zero): this is the hot path of every
    settlement, and exactly what the ``Fraction`` expressions in the comments say.
    """
    check_stake(stake)
    if verdict.result == "push":
        return _PUSH
    unit, rule = money.payable_unit, money.rounding
    if verdict.result == "lose":
        ln, ld = verdict.loss_fraction.numerator, verdict.loss_fraction.denominator
        if ln == ld:  # the whole stake: the chips on the layout, nothing to round
            return Amounts("lose", 0, 0, -stake, _ZERO)
        exact_n = stake * ln  # exact loss = stake * loss_fraction = exact_n / ld
        lost = min(-_round_ratio(-exact_n, ld, unit, rule), stake)
        # breakage is exact net minus paid net: (-exact_loss) - (-lost)
        return Amounts("lose", 0, 0, -lost, _ratio(lost * ld - exact_n, ld))
    odds, rate = verdict.odds, verdict.commission_rate
    # exact prize = stake * odds = prize_n / prize_d
    prize_n, prize_d = stake * odds.numerator, odds.denominator
    rn, rd = rate.numerator, rate.denominator
    if rn == 0:
        if prize_d == 1:  # a whole multiple of the stake: paid exactly, never rounded
            return Amounts("win", prize_n, 0, prize_n, _ZERO)
        net = _round_ratio(prize_n, prize_d, unit, rule)
        return Amounts("win", net, 0, net, _ratio(prize_n - net * prize_d, prize_d))
    # exact net = prize * (1 - rate) = net_n / net_d
    net_n = prize_n * (rd - rn)
    net_d = prize_d * rd
    net = _round_ratio(net_n, net_d, unit, rule)
    # exact commission = prize * rate, owed by the player: to the minor unit, a
    # fraction of a unit rounded as a loss is (up under FLOOR, halves up under NEAREST)
    commission = -_round_ratio(-prize_n * rn, net_d, 1, rule)  # money.round_commission
    return Amounts("win", net + commission, commission, net, _ratio(net_n - net * net_d, net_d))


def _ratio(num: int, den: int) -> Fraction:
    return _ZERO if num == 0 else Fraction(num, den)


_PUSH = Amounts("push", 0, 0, 0, _ZERO)


def fraction_str(value: Fraction) -> str:
    """Canonical text of an exact fraction: ``"3/4"``, ``"-1/37"``, ``"0"``."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def parse_fraction(text: str) -> Fraction:
    return Fraction(text)
