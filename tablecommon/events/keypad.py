"""Events of the dealer inputs (the keypad, the bell, the dome), whatever drives them
(``keypad-gpio``): the keypad procedure and the console's dealer sign-in match on
them. Each has ``key``: the input that produced it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .base import DeviceEvent

__all__ = [
    "Bell",
    "ButtonStuck",
    "DomeClosed",
    "DomeOpened",
    "KeypadConfirm",
    "KeypadEvent",
    "KeypadNumber",
    "KeypadRejected",
    "KeypadResult",
    "KeypadSignIn",
    "KeypadSignInRejected",
    "KeypadSignInStarted",
    "KeypadVoidRequest",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadEvent(DeviceEvent):
    """Base of every event of the dealer's keypad and its inputs (bell, dome)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadNumber(KeypadEvent):
    """A number key (fantan 1-4): the result about to be confirmed."""

    key: str
    value: int


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadConfirm(KeypadEvent):
    """The confirm key; ``value`` is the number key pressed before it (None if none)."""

    key: str = "confirm"
    value: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadResult(KeypadEvent):
    """A number confirmed by the confirm key: the dealer's result (fantan 1-4)."""

    key: str = "confirm"
    value: int


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadVoidRequest(KeypadEvent):
    """The dealer asks to void the round (an operator confirms it)."""

    key: str = "void"


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadRejected(KeypadEvent):
    """Input that cannot be taken (two number keys at once, confirm with no number)."""

    key: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Bell(KeypadEvent):
    """The croupier's bell / no-more-bets button."""

    key: str = "bell"


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonStuck(KeypadEvent):
    """An input held longer than ``stuck_ms`` (``stuck=True``), or released again."""

    key: str
    stuck: bool = True
    held: float = 0.0  # seconds held, on release


@dataclass(frozen=True, slots=True, kw_only=True)
class DomeOpened(KeypadEvent):
    """The dome (dice) or cup (fantan) is unlocked / lifted; ``initial``: so at start."""

    key: str = "dome"
    initial: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DomeClosed(KeypadEvent):
    """The dome is down and locked; ``initial``: so at start."""

    key: str = "dome"
    initial: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadSignInStarted(KeypadEvent):
    """The ``sign_in`` key: the digit keys now enter a dealer number, then a PIN."""

    key: str = "sign_in"


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadSignIn(KeypadEvent):
    """A dealer number and PIN entered (each ended by ``confirm``). The PIN is never in
    :meth:`to_json`, a log line or ``repr``: only the table's check reads it."""

    key: str = "confirm"
    dealer_number: str
    pin: str = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        out = DeviceEvent.to_json(self)
        out.pop("pin", None)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class KeypadSignInRejected(KeypadEvent):
    """A sign-in entry given up: cancelled (``void``), timed out, too long, a key
    stuck, or ``confirm`` with nothing entered. Not a device problem."""

    key: str
    reason: str
