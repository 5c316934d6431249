"""Card shoe / shuffler-dealer driver over the reference protocol (serial or USB bulk).

Registry names: ``shoe-ref`` (serial port by URL) and ``shoe-ref-usb`` (USB bulk
endpoints, found by vendor/product id). Events: :mod:`tablecommon.events.shoe`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

from tablecommon.events.shoe import (
    CardDealt,
    DeckChecked,
    ShoeEvent,
    ShoeFault,
    ShoeFaultCleared,
    ShuffleFinished,
)
from tablecommon.settings import FieldSpec

from ..reflink.driver import SERIAL_SETTINGS, USB_SETTINGS, RefDriver
from ..reflink.messages import Message
from ..transport import Opener
from .codec import FAULT_IDS, PROFILE, ShoeTracker

_SHOE_SETTINGS: dict[str, FieldSpec] = {
    "decks": FieldSpec(
        "int", 8, doc="decks the shoe holds (duplicate and deck checks)", range=(1, 12)
    ),
}

#: Faults that stay until the dealer clears them (``clear_fault``) or the next shuffle.
LATCHED = ("MISREAD", "DUPLICATE_CARD", "SEQUENCE_GAP")


class ShoeDriver(RefDriver[ShoeEvent]):
    driver_name = "shoe-ref"
    profile = PROFILE
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {**SERIAL_SETTINGS, **_SHOE_SETTINGS}
    FAULT_CONDITIONS = frozenset({"DOOR_OPEN", "JAM"})

    def __init__(self, name: str, settings: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(name, settings, **kwargs)
        self.tracker = ShoeTracker(name, self.settings["decks"])
        self.last_deck_check: DeckChecked | None = None

    # -- commands ---------------------------------------------------------------------
    async def shuffle(self, decks: int = 0) -> None:
        """Start a shuffle (shuffler-dealers); events follow."""
        await self.command("SHUFFLE", decks=decks)

    async def request_deck_check(self) -> None:
        """Ask for a deck check; the result arrives as :class:`DeckChecked`."""
        await self.command("CHECK_DECK")

    async def deal(self, position: int = 0) -> None:
        """Ask a dealing machine for one card; it arrives as :class:`CardDealt`."""
        await self.command("DEAL", position=position)

    async def clear_fault(self, fault: str | None = None) -> None:
        """The dealer handled a latched fault (misread, duplicate, gap)."""
        if fault in FAULT_IDS:
            await self.command("CLEAR_FAULT", fault=FAULT_IDS[fault])
        self.clear_latched(fault)

    # -- events -----------------------------------------------------------------------
    def on_message(self, msg: Message, wire: bytes) -> None:
        for ev in self.tracker.apply(msg, wire):
            if isinstance(ev, ShuffleFinished):
                for code in LATCHED:
                    self._latched.pop(code, None)
            if isinstance(ev, ShoeFault):
                if ev.fault in LATCHED:
                    self.latch_fault(ev.fault, ev.message or ev.fault)
                else:
                    self.conditions = sorted({*self.conditions, ev.fault})
                    self.update_health()
            elif isinstance(ev, ShoeFaultCleared):
                self.conditions = [c for c in self.conditions if c != ev.fault]
                self.update_health()
            elif isinstance(ev, DeckChecked):
                self.last_deck_check = ev
            self.emit(ev)

    def status_extra(self) -> dict[str, Any]:
        t = self.tracker
        last_check = self.last_deck_check
        return {
            "shoe": {
                "decks": t.decks,
                "shuffle": t.shuffle,
                "cards_dealt": t.last_seq,
                "last_card": t.last_card,
                "last_deck_check": None
                if last_check is None
                else {
                    "ok": last_check.ok,
                    "missing": list(last_check.missing),
                    "extra": list(last_check.extra),
                },
            }
        }


class UsbShoeDriver(ShoeDriver):
    """The same shoe on USB bulk endpoints (``usb = "usb:VVVV:PPPP[:SERIAL]"``)."""

    driver_name = "shoe-ref-usb"
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {**USB_SETTINGS, **_SHOE_SETTINGS}

    def __init__(
        self, name: str, settings: Mapping[str, Any], *, usb_backend: Any = None, **kwargs: Any
    ) -> None:
        self._usb_backend = (
            usb_backend  # a pyusb backend; tests pass drivers.testing.FakeUsbBackend
        )
        super().__init__(name, settings, **kwargs)

    def make_opener(self) -> tuple[Opener, Hashable]:
        from ..usb import parse_usb_url, usb_opener

        ident = parse_usb_url(self.settings["usb"])
        opener = usb_opener(
            ident.vendor_id,
            ident.product_id,
            serial_number=ident.serial_number,
            interface=self.settings["interface"],
            reset_after=self.settings["reset_after"],
            backend=self._usb_backend,
        )
        return opener, ("usb", self.settings["usb"])


__all__ = ["CardDealt", "ShoeDriver", "UsbShoeDriver"]
