"""Money, odds and the rounding of payouts.

Amounts are ``int`` counts of the currency's minor unit (avos for MOP, cents for
HKD). Odds and commission rates are :class:`fractions.Fraction`. Nothing here
ever touches a float.

A bet's exact prize is ``stake * odds``; its exact commission ``prize * rate``.
When those are not whole multiples of the table's *smallest payable unit* (fantan's
1/2 and 1/3 odds, 5% commissions, a blackjack 3:2 on an odd stake), a named rounding
rule decides what is paid, and the part that is not paid is reported as
``breakage`` (an exact fraction of the minor unit) so that nothing is lost from the
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
        return _round(exact, self.payable_unit, self.rounding, toward_house_is_down=True)

    def round_loss(self, exact: Fraction) -> int:
        """Round an exact amount owed *by the player* (never less than exact under FLOOR)."""
        return -_round(-exact, self.payable_unit, self.rounding, toward_house_is_down=False)

    def format(self, amount: int) -> str:
        """Human-readable amount, e.g. ``MOP 1,234.50``; for display only."""
        sign = "-" if amount < 0 else ""
        major, minor = divmod(abs(amount), 10**self.minor_digits)
        if self.minor_digits:
            return f"{sign}{self.currency} {major:,}.{minor:0{self.minor_digits}d}"
        return f"{sign}{self.currency} {major:,}"


def _round(exact: Fraction, unit: int, rule: Rounding, *, toward_house_is_down: bool) -> int:
    """Round ``exact`` to a multiple of ``unit``.

    ``toward_house_is_down`` tells which direction favours the house: down for
    amounts the player receives, up for amounts (expressed negated) the player
    pays. Returns an int multiple of ``unit``.
    """
    q = exact / unit
    floor = q.numerator // q.denominator
    if floor == q:
        return floor * unit
    if rule is Rounding.FLOOR:
        return floor * unit
    frac = q - floor
    if frac > Fraction(1, 2):
        return (floor + 1) * unit
    if frac < Fraction(1, 2):
        return floor * unit
    # An exact half goes to the house.
    return (floor if toward_house_is_down else floor + 1) * unit


def check_stake(stake: object) -> int:
    """A stake must be a positive integer count of minor units (never a float, never bool)."""
    if isinstance(stake, bool) or not isinstance(stake, int):
        raise InvalidStake(f"stake must be a positive integer number of minor units, got {stake!r}")
    if stake <= 0:
        raise InvalidStake(f"stake must be positive, got {stake}")
    return stake


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
    odds: Fraction = Fraction(0)
    commission_rate: Fraction = Fraction(0)
    loss_fraction: Fraction = Fraction(1)
    #: Short reason shown to supervisors, e.g. "zero: only a straight on 0 wins (60/2004 art. 8)".
    reason: str = ""

    @staticmethod
    def win(
        odds: Fraction | int, commission_rate: Fraction = Fraction(0), reason: str = ""
    ) -> Verdict:
        return Verdict("win", Fraction(odds), Fraction(commission_rate), Fraction(1), reason)

    @staticmethod
    def lose(reason: str = "", loss_fraction: Fraction = Fraction(1)) -> Verdict:
        return Verdict("lose", loss_fraction=Fraction(loss_fraction), reason=reason)

    @staticmethod
    def push(reason: str = "") -> Verdict:
        return Verdict("push", loss_fraction=Fraction(0), reason=reason)

    def net_per_unit(self) -> Fraction:
        """Exact expected-value contribution per unit staked (no rounding): for math."""
        if self.result == "win":
            return self.odds * (1 - self.commission_rate)
        if self.result == "push":
            return Fraction(0)
        return -self.loss_fraction


@dataclass(frozen=True, slots=True)
class Amounts:
    """A settled bet's money, all in minor units except the exact ``breakage``."""

    result: Result
    #: Gross prize paid on top of the returned stake (0 unless a win).
    payout: int
    #: Commission kept by the house out of the prize.
    commission: int
    #: The player's net change: ``payout - commission`` on a win, 0 on a push, ``-lost`` on a loss.
    net: int
    #: Exact amount (minor units) the rounding rule did not pay: exact net minus ``net``.
    breakage: Fraction


def settle_amounts(stake: int, verdict: Verdict, money: MoneyRules) -> Amounts:
    """Turn a verdict into integer money by the table's rounding rule."""
    check_stake(stake)
    if verdict.result == "push":
        return Amounts("push", 0, 0, 0, Fraction(0))
    if verdict.result == "lose":
        exact_loss = stake * verdict.loss_fraction
        lost = money.round_loss(exact_loss)
        lost = min(lost, stake)
        # breakage is exact net minus paid net: (-exact_loss) - (-lost)
        return Amounts("lose", 0, 0, -lost, lost - exact_loss)
    exact_prize = stake * verdict.odds
    exact_net = exact_prize * (1 - verdict.commission_rate)
    net = money.round_gain(exact_net)
    payout = money.round_gain(exact_prize)
    if payout < net:  # NEAREST can round the net up past a prize rounded down
        payout = net
    return Amounts("win", payout, payout - net, net, exact_net - net)


def fraction_str(value: Fraction) -> str:
    """Canonical text of an exact fraction: ``"3/4"``, ``"-1/37"``, ``"0"``."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def parse_fraction(text: str) -> Fraction:
    return Fraction(text)
