"""Reference lit-result-board protocol (profile 3 over reflink, RS-485 addressed), sans-I/O.

``docs/protocols/board.md`` is the specification. The board is an output device:
the host sends what to show, the board acknowledges. Each display message replaces
its own layer (lamps, number, road); the host keeps the layers and sends them all
again whenever the board comes back (resynchronisation).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base import DeviceEvent
from ..reflink.messages import MessageDef, Profile, Sender, f

PROFILE_ID = 3
GAMES = {1: "roulette", 2: "fantan"}
GAME_IDS = {v: k for k, v in GAMES.items()}
#: The numbers each NUMBER layer shows (lowest, highest), by the protocol's game code.
NUMBER_RANGES = {"roulette": (0, 36), "fantan": (1, 4)}
MAX_HISTORY = 20

#: MESSAGE kinds: the phase message a board shows beside its layers.
MESSAGE_KINDS = {"idle": 0, "place_your_bets": 1, "no_more_bets": 2, "result": 3, "void": 4}

PROFILE = Profile(
    "board",
    PROFILE_ID,
    1,
    1,
    (
        MessageDef(0x40, "CLEAR", Sender.HOST, (), "Every layer off."),
        MessageDef(
            0x41,
            "LAMPS",
            Sender.HOST,
            (
                f("mode", "u8", "0 steady, 1 blinking"),
                f(
                    "bitmap",
                    "bytes",
                    "lamp i is bit (i mod 8) of byte i div 8; lamps not in the map are off",
                ),
            ),
            "The lamps of the layout's areas: exactly these are lit.",
        ),
        MessageDef(
            0x42,
            "NUMBER",
            Sender.HOST,
            (
                f("game", "u8", "1 roulette (0..36), 2 fantan (1..4)"),
                f("number", "u8", "the result to show"),
                f("history", "bytes", f"earlier results, most recent first (up to {MAX_HISTORY})"),
            ),
            "A number and its history.",
        ),
        MessageDef(
            0x43,
            "ROAD",
            Sender.HOST,
            (
                f(
                    "entries",
                    "bytes",
                    "baccarat coups oldest first: winner (1 B, 2 P, 3 T) | 0x10 banker pair "
                    "| 0x20 player pair",
                ),
            ),
            "The baccarat road of the shoe; the board draws its own road views from it.",
        ),
        MessageDef(
            0x44,
            "LAMP_TEST",
            Sender.HOST,
            (f("ms", "u16", "duration of the test"),),
            "Light every lamp and segment for ``ms``, then show the layers again.",
        ),
        MessageDef(
            0x45,
            "MESSAGE",
            Sender.HOST,
            (
                f(
                    "kind",
                    "u8",
                    "0 none, 1 place your bets, 2 no more bets, 3 result, 4 void",
                ),
                f("text", "text", "shown with it (a void's reason), may be empty"),
            ),
            "The phase message (since version 1.1; a 1.0 board is never sent it).",
        ),
    ),
    conditions={0: "LAMP_FAILURE", 1: "STATE_LOST", 2: "LAMP_TEST"},
)

#: STATUS bit meaning the board has no state (power-up): the host sends it all again.
STATE_LOST_BIT = 1 << 1


def check_number(game: str, number: int) -> None:
    lo, hi = NUMBER_RANGES[game]
    if isinstance(number, bool) or not isinstance(number, int) or not lo <= number <= hi:
        raise ValueError(f"{game} number must be {lo}..{hi}, got {number!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardResynced(DeviceEvent):
    """The board came back (or restarted) and was sent its whole display state again."""

    reason: str
    messages: int = 0
