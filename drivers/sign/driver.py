"""Jackpot sign driver over the reference protocol (``sign-ref``).

Commands: ``show_amount`` (integer minor units), ``show_hit``, ``set_fault`` (the
sign alternates the amount with the fault message), ``clear_fault``. Like the
board, a command never fails because the sign is offline: the state is kept and
sent again, whole, when the sign answers again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from tablecommon.settings import FieldSpec

from ..common import DriverBase
from ..link import Backoff
from ..reflink.display import DisplayState, DisplaySync
from ..reflink.driver import SERIAL_SETTINGS, RefSession, resolve_settings
from ..transport import Opener
from .codec import PROFILE, SignResynced, format_amount

_SIGN_SETTINGS: dict[str, FieldSpec] = {
    "currency": FieldSpec(
        "str",
        "MOP",
        doc="ISO 4217 currency shown",
        check=lambda v: (
            None
            if len(v) == 3 and v.isascii() and v.isalpha() and v.isupper()
            else "must be a 3-letter ISO 4217 code"
        ),
    ),
    "minor_digits": FieldSpec("int", 2, doc="digits of the minor unit", range=(0, 4)),
    "label": FieldSpec("str", "", doc="text shown with the amount, e.g. JACKPOT"),
    "fault_period_ms": FieldSpec(
        "int", 2000, doc="alternation period of amount and fault message", range=(200, 60000)
    ),
}


class SignDriver(DriverBase[SignResynced]):
    """The jackpot sign: its reflink session (``ref``) and display (``screen``)."""

    driver_name = "sign-ref"
    profile = PROFILE
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {**SERIAL_SETTINGS, **_SIGN_SETTINGS}
    FAULT_CONDITIONS = frozenset({"DISPLAY_FAULT"})

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        opener: Opener | None = None,
        pin_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__(name, clock=clock)
        self.settings = resolve_settings(self.SETTINGS, settings, f"devices.{name}")
        self.pin_factory = pin_factory
        self.ref = RefSession(
            self,
            PROFILE,
            self.settings,
            fault_conditions=self.FAULT_CONDITIONS,
            resync=lambda reason: self.screen.resync(reason),
            opener=opener,
            backoff=backoff,
        )
        self.screen = DisplaySync(self, self.ref, state=self.display_state, resynced=self.resynced)
        self.amount: int | None = None
        self.currency: str = self.settings["currency"]
        self.fault_text: str | None = None
        self.hit: tuple[int, str, float | None] | None = None  # amount, text, until (monotonic)

    async def start(self) -> None:
        await self.ref.start()

    async def stop(self) -> None:
        await self.ref.stop()

    def _amount_fields(self, amount: int, currency: str | None = None) -> dict[str, Any]:
        if isinstance(amount, bool) or not isinstance(amount, int) or not 0 <= amount < 1 << 64:
            raise ValueError(
                f"amount must be a non-negative integer count of minor units, got {amount!r}"
            )
        cur = self.currency if currency is None else currency
        if not (
            isinstance(cur, str)
            and len(cur) == 3
            and cur.isascii()
            and cur.isalpha()
            and cur.isupper()
        ):
            raise ValueError(f"currency must be a 3-letter ISO 4217 code, got {cur!r}")
        return {"amount": amount, "digits": self.settings["minor_digits"], "currency": cur}

    async def show_amount(self, amount: int, currency: str | None = None) -> bool:
        """The progressive amount, in minor units (``currency``: the configured one if None)."""
        fields = self._amount_fields(amount, currency)
        self.amount = amount
        self.currency = fields["currency"]
        if self.hit is not None and self.hit[2] is None:
            self.hit = None
        return await self.screen.display("AMOUNT", **fields, label=self.settings["label"])

    async def show_hit(self, amount: int, message: str = "JACKPOT", seconds: int = 30) -> bool:
        """A jackpot hit: ``message`` and the amount won, for ``seconds`` (0: until the next amount)."""
        fields = self._amount_fields(amount)
        self.hit = (amount, message, self.clock() + seconds if seconds else None)
        return await self.screen.display("HIT", **fields, text=message, seconds=seconds)

    async def set_fault(self, message: str) -> bool:
        """Alternate the amount with ``message`` until :meth:`clear_fault`."""
        self.fault_text = message
        return await self.screen.display(
            "FAULT", text=message, period_ms=self.settings["fault_period_ms"]
        )

    async def clear_fault(self) -> bool:
        self.fault_text = None
        return await self.screen.display("FAULT_CLEAR")

    def display_state(self) -> DisplayState:
        """The messages that rebuild the whole sign, in the order they are sent."""
        out: DisplayState = []
        if self.amount is not None:
            out.append(
                ("AMOUNT", {**self._amount_fields(self.amount), "label": self.settings["label"]})
            )
        hit = self.hit
        if hit is not None and (hit[2] is None or hit[2] > self.clock()):
            left = 0 if hit[2] is None else max(1, round(hit[2] - self.clock()))
            out.append(("HIT", {**self._amount_fields(hit[0]), "text": hit[1], "seconds": left}))
        if self.fault_text is not None:
            out.append(
                ("FAULT", {"text": self.fault_text, "period_ms": self.settings["fault_period_ms"]})
            )
        else:
            out.append(("FAULT_CLEAR", {}))
        return out

    def resynced(self, reason: str, messages: int) -> SignResynced:
        return SignResynced(device=self.name, reason=reason, messages=messages)

    def get_status(self) -> dict[str, Any]:
        s = self.settings
        return {
            **super().get_status(),
            **self.ref.get_status(),
            "sign": {
                "amount": self.amount,
                "currency": self.currency,
                "text": None
                if self.amount is None
                else format_amount(self.amount, s["minor_digits"], self.currency),
                "fault": self.fault_text,
                "hit": None
                if self.hit is None
                else {"amount": self.hit[0], "message": self.hit[1]},
            }
        }
