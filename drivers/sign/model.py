"""The simulated jackpot sign, sans-I/O: it keeps what it shows and renders it at time t."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..reflink.device import DeviceModel, Refuse
from ..reflink.messages import Message, RefusedReason
from .codec import PROFILE, format_amount

#: With nothing heard from the host for this long, the sign alternates "NO LINK".
NO_HOST_AFTER = 10.0
NO_HOST_TEXT = "NO LINK"


class SignModel(DeviceModel):
    profile = PROFILE
    model = "sign simulator"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.clock = clock
        self.last_heard = clock()
        self.reboot()

    def handle(self, address: int, payload: bytes) -> bytes:
        self.last_heard = self.clock()
        return super().handle(address, payload)

    def reboot(self) -> None:
        self.amount: tuple[int, int, str, str] | None = None
        self.hit: tuple[str, float | None] | None = None  # text, until
        self.fault: tuple[str, float, float] | None = None  # text, period, since
        self.state_lost = True

    def on_request(self, msg: Message) -> bytes:
        now = self.clock()
        n = msg.name
        if n in ("AMOUNT", "HIT"):
            if msg["digits"] > 4:
                raise Refuse(RefusedReason.BAD_ARGUMENT, f"{msg['digits']} minor digits")
            text = format_amount(msg["amount"], msg["digits"], msg["currency"])
            if n == "AMOUNT":
                self.amount = (
                    msg["amount"],
                    msg["digits"],
                    msg["currency"],
                    f"{msg['label']} {text}".strip(),
                )
            else:
                until = now + msg["seconds"] if msg["seconds"] else None
                self.hit = (f"{msg['text']} {text}".strip(), until)
        elif n == "FAULT":
            if msg["period_ms"] == 0:
                raise Refuse(RefusedReason.BAD_ARGUMENT, "alternation period 0")
            self.fault = (msg["text"], msg["period_ms"] / 1000, now)
        elif n == "FAULT_CLEAR":
            self.fault = None
        else:
            return super().on_request(msg)
        if n == "AMOUNT" and self.hit is not None and self.hit[1] is None:
            self.hit = None  # a hit shown "until the next command" ends with the next amount
        self.state_lost = False
        return b""

    def display(self, now: float | None = None) -> str:
        """What the sign shows at ``now``."""
        t = self.clock() if now is None else now
        if self.hit is not None and (self.hit[1] is None or t < self.hit[1]):
            return self.hit[0]
        amount = self.amount[3] if self.amount else "----"
        if self.fault is not None:
            text, period, since = self.fault
            return text if int((t - since) / period) % 2 else amount
        quiet = t - self.last_heard
        if quiet > NO_HOST_AFTER:  # the sign's own watchdog: the host is gone; 2 s each
            return NO_HOST_TEXT if int((quiet - NO_HOST_AFTER) / 2) % 2 == 0 else amount
        return amount

    def conditions(self) -> int:
        return int(self.state_lost) << 1
