"""The one base of every coded error in the project, and the rules-core errors the
shared facts raise.

Every rejection carries a stable ``code`` (what floor systems and tests match on) and
a message naming the problem. :class:`RulesError` and :class:`OutcomeError` are the
rules core's (``firmware_host.games.errors`` re-exports them with the rest of its
tree); they live here because the card notation (:mod:`tablecommon.cards`), which the
shoe's driver reads too, refuses a card that cannot be read as an outcome error.
"""

from __future__ import annotations


class CodedError(Exception):
    """The one base of every coded error in the project (rules core, journal, floor
    requests, drivers): a stable ``code`` that floor systems and tests match on, and a
    message naming what is at fault. Subclasses also inherit the built-in they
    resemble."""

    code = "ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class RulesError(CodedError, ValueError):
    """Base of every error the rules core raises on bad input."""

    code = "RULES_ERROR"


class OutcomeError(RulesError):
    """A round outcome that is impossible or malformed (a die face 7, number 37, a card
    that cannot be read)."""

    code = "OUTCOME_INVALID"
