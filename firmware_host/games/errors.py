"""Error tree of the rules core.

Every rejection carries a stable ``code`` (what floor systems and tests match on)
and a message naming the problem. The classes also inherit the built-in exception
they resemble (``ValueError``), as gpiozero does, so generic callers still work.
The base (:class:`CodedError`), :class:`RulesError` and :class:`OutcomeError` live in
the shared leaf ``tablecommon.errors`` (the card notation, which drivers read too,
raises an outcome error); they are the same classes here.
"""

from __future__ import annotations

from tablecommon.errors import CodedError, OutcomeError, RulesError

__all__ = [
    "BetError",
    "BetNotOffered",
    "CodedError",
    "ConfigError",
    "InvalidSelection",
    "InvalidStake",
    "Misdeal",
    "OutcomeError",
    "RoundStateError",
    "RulesError",
    "StakeNotPayable",
    "StakeOutOfLimits",
    "UnknownBetType",
    "UnknownGame",
]


class BetError(RulesError):
    """A bet that cannot be accepted (unknown type, impossible selection, stake)."""

    code = "BET_INVALID"


class UnknownBetType(BetError):
    code = "BET_UNKNOWN_TYPE"


class InvalidSelection(BetError):
    code = "BET_INVALID_SELECTION"


class InvalidStake(BetError):
    code = "BET_INVALID_STAKE"


class StakeOutOfLimits(BetError):
    code = "BET_STAKE_OUT_OF_LIMITS"


class StakeNotPayable(StakeOutOfLimits):
    """A stake that is not a whole number of the table's payable unit: the table
    could not pay its prize, a whole multiple of it, exactly (docs/rules/money.md)."""

    code = "BET_STAKE_PAYABLE_UNIT"


class BetNotOffered(BetError):
    """The bet type exists in the regulation but this table's layout does not offer it."""

    code = "BET_NOT_OFFERED"


class ConfigError(RulesError):
    """A pay table or rule option outside what the regulation authorises."""

    code = "CONFIG_INVALID"


class UnknownGame(RulesError):
    code = "GAME_UNKNOWN"


class RoundStateError(RulesError):
    """An operation that is not legal in the current state of a hand or round."""

    code = "ROUND_STATE"


class Misdeal(RoundStateError):
    """A card, tile or die the deal does not allow now (one too many, a duplicate, one
    dealt out of turn or to the wrong hand): the one misdeal of every game's deal.

    The deal refuses it and stays as it was. ``correctable`` says whether the
    regulation corrects such an error and the deal goes on (``correction`` says how,
    e.g. baccarat's art. 10: withdraw the card) or the round is void (stud poker's
    art. 11 1)); ``due`` is where the card should have gone, when the deal knows.
    """

    code = "MISDEAL"

    def __init__(
        self,
        message: str,
        *,
        code: str,
        correction: str = "",
        correctable: bool = True,
        due: str | int | None = None,
    ) -> None:
        super().__init__(
            f"{message}; correction: {correction}" if correction else message, code=code
        )
        self.correction = correction
        self.correctable = correctable
        self.due = due
