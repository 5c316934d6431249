"""Card shoe / shuffler-dealer driver over the reference protocol (serial or USB bulk).

Registry names: ``shoe-ref`` (serial port by URL) and ``shoe-ref-usb`` (USB bulk
endpoints, found by vendor/product id). Events: :mod:`tablecommon.events.shoe`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
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

from ..common import DriverBase
from ..link import Backoff
from ..reflink.driver import (
    SERIAL_SETTINGS,
    USB_SETTINGS,
    RefSession,
    resolve_settings,
    usb_port,
)
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
#: STATUS conditions that make the shoe FAULT.
FAULT_CONDITIONS = frozenset({"DOOR_OPEN", "JAM"})


class ShoeMachine:
    """What the reference shoe says and does, on any transport (``driver.shoe``): its
    reflink session (``ref``, over ``port``: serial by default), its commands, its
    events (the tracker), the faults it latches and its status."""

    def __init__(
        self,
        driver: DriverBase[ShoeEvent],
        settings: Mapping[str, Any],
        *,
        opener: Opener | None = None,
        port: tuple[Opener, Hashable] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self._driver = driver
        self.ref = RefSession(
            driver,
            PROFILE,
            settings,
            fault_conditions=FAULT_CONDITIONS,
            on_message=self.on_message,
            opener=opener,
            port=port,
            backoff=backoff,
        )
        self.tracker = ShoeTracker(driver.name, settings["decks"])
        self.last_deck_check: DeckChecked | None = None

    # -- commands ---------------------------------------------------------------------
    async def shuffle(self, decks: int = 0) -> None:
        await self.ref.command("SHUFFLE", decks=decks)

    async def request_deck_check(self) -> None:
        await self.ref.command("CHECK_DECK")

    async def deal(self, position: int = 0) -> None:
        await self.ref.command("DEAL", position=position)

    async def clear_fault(self, fault: str | None = None) -> None:
        if fault in FAULT_IDS:
            await self.ref.command("CLEAR_FAULT", fault=FAULT_IDS[fault])
        self.ref.clear_latched(fault)

    # -- events -----------------------------------------------------------------------
    def on_message(self, msg: Message, wire: bytes) -> None:
        """A message the shoe sent on its own: its events."""
        ref = self.ref
        for ev in self.tracker.apply(msg, wire):
            if isinstance(ev, ShuffleFinished):
                for code in LATCHED:
                    ref.latched.pop(code, None)
            if isinstance(ev, ShoeFault):
                if ev.fault in LATCHED:
                    ref.latch_fault(ev.fault, ev.message or ev.fault)
                else:
                    ref.conditions = sorted({*ref.conditions, ev.fault})
                    ref.update_health()
            elif isinstance(ev, ShoeFaultCleared):
                ref.conditions = [c for c in ref.conditions if c != ev.fault]
                ref.update_health()
            elif isinstance(ev, DeckChecked):
                self.last_deck_check = ev
            self._driver.emit(ev)

    def status(self) -> dict[str, Any]:
        t = self.tracker
        last_check = self.last_deck_check
        return {
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


class ShoeDriver(DriverBase[ShoeEvent]):
    """The shoe on a serial port: the shoe (``shoe``) and its reflink session (``ref``)."""

    driver_name = "shoe-ref"
    profile = PROFILE
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {**SERIAL_SETTINGS, **_SHOE_SETTINGS}
    FAULT_CONDITIONS = FAULT_CONDITIONS

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
        self.shoe = ShoeMachine(self, self.settings, opener=opener, backoff=backoff)
        self.ref = self.shoe.ref

    async def start(self) -> None:
        await self.ref.start()

    async def stop(self) -> None:
        await self.ref.stop()

    async def shuffle(self, decks: int = 0) -> None:
        """Start a shuffle (shuffler-dealers); events follow."""
        await self.shoe.shuffle(decks)

    async def request_deck_check(self) -> None:
        """Ask for a deck check; the result arrives as :class:`DeckChecked`."""
        await self.shoe.request_deck_check()

    async def deal(self, position: int = 0) -> None:
        """Ask a dealing machine for one card; it arrives as :class:`CardDealt`."""
        await self.shoe.deal(position)

    async def clear_fault(self, fault: str | None = None) -> None:
        """The dealer handled a latched fault (misread, duplicate, gap)."""
        await self.shoe.clear_fault(fault)

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), **self.ref.get_status(), "shoe": self.shoe.status()}


class UsbShoeDriver(DriverBase[ShoeEvent]):
    """The same shoe on USB bulk endpoints (``usb = "usb:VVVV:PPPP[:SERIAL]"``)."""

    driver_name = "shoe-ref-usb"
    profile = PROFILE
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {**USB_SETTINGS, **_SHOE_SETTINGS}
    FAULT_CONDITIONS = FAULT_CONDITIONS

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        usb_backend: Any = None,
        opener: Opener | None = None,
        pin_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
    ) -> None:
        """``usb_backend``: a pyusb backend (tests pass ``drivers.testing.FakeUsbBackend``)."""
        super().__init__(name, clock=clock)
        self.settings = resolve_settings(self.SETTINGS, settings, f"devices.{name}")
        self.pin_factory = pin_factory
        port = None if opener is not None else usb_port(self.settings, usb_backend)
        self.shoe = ShoeMachine(self, self.settings, opener=opener, port=port, backoff=backoff)
        self.ref = self.shoe.ref

    async def start(self) -> None:
        await self.ref.start()

    async def stop(self) -> None:
        await self.ref.stop()

    async def shuffle(self, decks: int = 0) -> None:
        """Start a shuffle (shuffler-dealers); events follow."""
        await self.shoe.shuffle(decks)

    async def request_deck_check(self) -> None:
        """Ask for a deck check; the result arrives as :class:`DeckChecked`."""
        await self.shoe.request_deck_check()

    async def deal(self, position: int = 0) -> None:
        """Ask a dealing machine for one card; it arrives as :class:`CardDealt`."""
        await self.shoe.deal(position)

    async def clear_fault(self, fault: str | None = None) -> None:
        """The dealer handled a latched fault (misread, duplicate, gap)."""
        await self.shoe.clear_fault(fault)

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), **self.ref.get_status(), "shoe": self.shoe.status()}


__all__ = ["CardDealt", "ShoeDriver", "UsbShoeDriver"]
