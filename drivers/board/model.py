"""The simulated lit result board, sans-I/O: it keeps what it displays."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..reflink.device import DeviceModel, Refuse
from ..reflink.messages import Message, RefusedReason
from .codec import GAMES, MESSAGE_KINDS, NUMBER_RANGES, PROFILE
from .layouts import LayoutError, RoadEntry, from_bitmap


class BoardModel(DeviceModel):
    profile = PROFILE
    model = "board simulator"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.clock = clock
        self.reboot()

    def reboot(self) -> None:
        """Power-up state: nothing shown, state lost until the host sends it."""
        self.lamps: list[int] = []
        self.blink = False
        self.number: tuple[str, int, tuple[int, ...]] | None = None
        self.road: tuple[str, ...] = ()
        self.message: tuple[int, str] | None = None
        self.state_lost = True
        self.test_until = 0.0
        self.lamp_failure = False
        self.shown = 0  # display messages carried out

    def on_request(self, msg: Message) -> bytes:
        n = msg.name
        if n == "CLEAR":
            self.lamps, self.number, self.road, self.blink = [], None, (), False
            self.message = None
        elif n == "LAMPS":
            if msg["mode"] > 1:
                raise Refuse(RefusedReason.BAD_ARGUMENT, f"lamp mode {msg['mode']}")
            self.lamps, self.blink = from_bitmap(msg["bitmap"]), bool(msg["mode"])
        elif n == "NUMBER":
            game = GAMES.get(msg["game"])
            lo, hi = NUMBER_RANGES[game] if game else (0, -1)
            if game is None or not all(lo <= x <= hi for x in (msg["number"], *msg["history"])):
                raise Refuse(RefusedReason.BAD_ARGUMENT, "bad game or number")
            self.number = (game, msg["number"], tuple(msg["history"]))
        elif n == "ROAD":
            try:
                self.road = tuple(str(RoadEntry.from_byte(b)) for b in msg["entries"])
            except LayoutError as exc:
                raise Refuse(RefusedReason.BAD_ARGUMENT, str(exc)) from None
        elif n == "MESSAGE":
            if msg["kind"] not in MESSAGE_KINDS.values():
                raise Refuse(RefusedReason.BAD_ARGUMENT, f"message kind {msg['kind']}")
            self.message = (msg["kind"], msg["text"])
        elif n == "LAMP_TEST":
            self.test_until = self.clock() + msg["ms"] / 1000
            return b""
        else:
            return super().on_request(msg)
        self.state_lost = False
        self.shown += 1
        return b""

    def conditions(self) -> int:
        testing = self.clock() < self.test_until
        return int(self.lamp_failure) | int(self.state_lost) << 1 | int(testing) << 2

    def snapshot(self) -> dict[str, object]:
        return {
            "lamps": list(self.lamps),
            "blink": self.blink,
            "number": self.number,
            "road": self.road,
            "message": self.message,
            "state_lost": self.state_lost,
        }
