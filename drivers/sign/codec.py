"""Reference jackpot-sign protocol (profile 4 over reflink), sans-I/O.

``docs/protocols/sign.md`` is the specification. Amounts are integer minor units
with the number of minor digits and the ISO 4217 currency: the sign formats them;
no float ever crosses the wire.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base import DeviceEvent
from ..reflink.messages import MessageDef, Profile, Sender, f

PROFILE_ID = 4

PROFILE = Profile(
    "sign",
    PROFILE_ID,
    1,
    0,
    (
        MessageDef(
            0x40,
            "AMOUNT",
            Sender.HOST,
            (
                f("amount", "u64", "minor units"),
                f("digits", "u8", "minor digits of the currency (MOP 2)"),
                f("currency", "ascii3"),
                f("label", "text", "shown with the amount, may be empty"),
            ),
            "The progressive amount to show.",
        ),
        MessageDef(
            0x41,
            "HIT",
            Sender.HOST,
            (
                f("amount", "u64", "minor units won"),
                f("digits", "u8"),
                f("currency", "ascii3"),
                f("text", "text", "hit message"),
                f(
                    "seconds",
                    "u16",
                    "how long to show it before the amount again; 0 = until the next command",
                ),
            ),
            "A jackpot hit.",
        ),
        MessageDef(
            0x42,
            "FAULT",
            Sender.HOST,
            (
                f("text", "text", "fault message"),
                f(
                    "period_ms",
                    "u16",
                    "alternation period: the amount for one period, the message for the next",
                ),
            ),
            "Show the amount alternating with a fault message until FAULT_CLEAR.",
        ),
        MessageDef(0x43, "FAULT_CLEAR", Sender.HOST, (), "Stop the fault alternation."),
    ),
    conditions={0: "DISPLAY_FAULT", 1: "STATE_LOST"},
)


def format_amount(amount: int, digits: int, currency: str) -> str:
    """``MOP 1,234.56``: how the reference sign renders an amount (integer arithmetic only)."""
    if amount < 0 or not 0 <= digits <= 4:
        raise ValueError(f"cannot show amount {amount} with {digits} digits")
    whole, frac = divmod(amount, 10**digits)
    text = f"{whole:,}"
    if digits:
        text += f".{frac:0{digits}d}"
    return f"{currency} {text}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SignResynced(DeviceEvent):
    """The sign came back (or restarted) and was sent its state again."""

    reason: str
    messages: int = 0
