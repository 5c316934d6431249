"""Lit result board drivers: the RS-485 reference protocol (``board-ref``) and a
board of LEDs on GPIO pins (``board-gpio``, gpiozero ``LEDBoard``).

Both take the same commands: ``use_areas`` (the game's areas, told by the table: the
default lamp order), ``show_areas``, ``show_number`` (roulette or fantan, with history),
``show_road`` (baccarat), ``show_message`` (the phase message), ``lamp_test``,
``clear``. Which areas a result lights is the game's to say (the table's result board,
``firmware_host/face``), never the driver's. A display command never fails
because the board is offline: the driver keeps the display state, reports the
board offline, and sends the whole state again when it answers again (returns
False meanwhile).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from tablecommon.settings import FieldSpec

from ..base import DeviceTimeout, DriverError, HealthState, LinkError
from ..common import DriverBase
from ..link import Backoff
from ..reflink.display import DisplayState, DisplaySync
from ..reflink.driver import SERIAL_SETTINGS, RefSession, resolve_settings
from ..transport import Opener
from .codec import GAME_IDS, MAX_HISTORY, MESSAGE_KINDS, PROFILE, BoardResynced, check_number
from .layouts import LayoutError, RoadEntry, bitmap, lamp_map, lamps_for


class Unsupported(DriverError):
    code = "UNSUPPORTED"


def _layout_check(v: str) -> str | None:
    return None if v.strip() else "a board's layout is the layout of its table's game"


_DISPLAY_SETTINGS: dict[str, FieldSpec] = {
    "layout": FieldSpec(
        "str",
        required=True,
        doc="sicbo, fish-prawn-crab, roulette, fantan or baccarat",
        check=_layout_check,
    ),
    "lamps": FieldSpec("table", {}, doc="area -> lamp number; empty: the layout's default order"),
    "history": FieldSpec(
        "int", 12, doc="numbers of history shown (roulette, fantan)", range=(0, MAX_HISTORY)
    ),
}


def _check_lamps(settings: Mapping[str, Any]) -> list[str]:
    """The lamp numbers of a lamp map (its areas are the game's: the table checks them)."""
    lamps = settings.get("lamps") or {}
    bad = [
        k
        for k, v in lamps.items()
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2040
    ]
    return [f"lamps.{k}: lamp number must be an integer 0..2039" for k in bad]


class BoardFace:
    """What a board shows, as both board drivers keep it (``driver.face``): the layout,
    area -> lamp, the lit areas, the number and its history, the phase message."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.layout: str = settings["layout"]
        self._lamp_overrides: dict[str, int] | None = settings["lamps"] or None
        #: The game's areas, in their default lamp order (:meth:`use_areas`).
        self.areas: tuple[str, ...] = ()
        self.lamps: dict[str, int] = lamp_map((), self._lamp_overrides)
        self.history: collections.deque[int] = collections.deque(
            maxlen=settings["history"] or None
        )
        self.current: int | None = None
        self.lit_areas: tuple[str, ...] = ()
        self.message: tuple[str, str] = ("idle", "")

    def use_areas(self, areas: Sequence[str]) -> None:
        """The areas of the table's game, in their default lamp order (area ``i`` is lamp
        ``i``), unless the configuration maps them (``lamps``)."""
        self.areas = tuple(areas)
        self.lamps = lamp_map(self.areas, self._lamp_overrides)

    def _number_game(self) -> str:
        if self.layout not in GAME_IDS:
            raise LayoutError(f"a {self.layout} board does not show numbers")
        return self.layout

    def push_number(self, number: int, history: Sequence[int] | None) -> tuple[int, ...]:
        """``number`` shown now: the previous one goes to the history (or ``history``,
        most recent first, replaces it); the history to show, most recent first."""
        game = self._number_game()
        check_number(game, number)
        if history is not None:
            for n in history:
                check_number(game, n)
            self.history.clear()
            self.history.extend(reversed(list(history)[: self.history.maxlen]))
        elif self.current is not None:
            self.history.append(self.current)
        self.current = number
        return tuple(reversed(self.history))

    def clear(self) -> None:
        """Nothing shown (the lit areas are set by the driver's ``show_areas``)."""
        self.current = None
        self.history.clear()

    def status(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "areas": list(self.lit_areas),
            "number": self.current,
            "history": list(reversed(self.history)),
            "message": {"kind": self.message[0], "text": self.message[1]},
        }

    def message_fields(self, kind: str, text: str) -> dict[str, Any]:
        """Keep the phase message; its fields as the board takes them."""
        if kind not in MESSAGE_KINDS:
            raise ValueError(
                f"message kind must be one of {', '.join(MESSAGE_KINDS)}, got {kind!r}"
            )
        self.message = (kind, text)
        return {
            "kind": MESSAGE_KINDS[kind],
            "text": text.encode("utf-8")[:200].decode("utf-8", "ignore"),
        }


class BoardDriver(DriverBase[BoardResynced]):
    """The reference RS-485 board. Several boards may share one port (one bus): each
    holds its reflink session (``ref``), its display (``screen``) and what it shows
    (``face``)."""

    driver_name = "board-ref"
    profile = PROFILE
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {**SERIAL_SETTINGS, **_DISPLAY_SETTINGS}
    FAULT_CONDITIONS = frozenset({"LAMP_FAILURE"})

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
        self.face = BoardFace(self.settings)
        self.layout = self.face.layout
        #: Display layers, in the order a resync sends them: message name -> fields.
        self.layers: dict[str, dict[str, Any]] = {}

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        return _check_lamps(settings)

    async def start(self) -> None:
        await self.ref.start()

    async def stop(self) -> None:
        await self.ref.stop()

    async def _show(self, name: str, **values: Any) -> bool:
        """Keep the layer, send it; False if the board did not take it (offline)."""
        if name == "CLEAR":
            self.layers.clear()
        else:
            self.layers[name] = values
        return await self.screen.display(name, **values)

    async def show_areas(self, areas: Iterable[str], *, blink: bool = False) -> bool:
        """Light exactly these areas (names absent from the lamp map are skipped)."""
        self.face.lit_areas = tuple(areas)
        lamps = lamps_for(self.face.lit_areas, self.face.lamps)
        return await self._show("LAMPS", mode=int(blink), bitmap=bitmap(lamps))

    def use_areas(self, areas: Sequence[str]) -> None:
        """The areas of the table's game (the table tells them; see :class:`BoardFace`)."""
        self.face.use_areas(areas)

    async def show_number(self, number: int, history: Sequence[int] | None = None) -> bool:
        """Show a roulette or fantan number; the previous one goes to the history
        (or give ``history``, most recent first)."""
        hist = self.face.push_number(number, history)
        return await self._show(
            "NUMBER", game=GAME_IDS[self.layout], number=number, history=bytes(hist)
        )

    async def show_road(self, entries: Iterable[RoadEntry | str]) -> bool:
        """The baccarat road of the shoe so far, oldest first (``"B"``, ``"Pp"``, ``"Tbp"``...)."""
        road = [e if isinstance(e, RoadEntry) else RoadEntry.parse(e) for e in entries]
        if len(road) > 255:
            road = road[-255:]
        return await self._show("ROAD", entries=bytes(e.to_byte() for e in road))

    async def show_message(self, kind: str, text: str = "") -> bool:
        """The phase message (``place_your_bets``, ``no_more_bets``, ``result``, ``void``
        with its reason, ``idle``); a board of version 1.0 has none: kept, not sent."""
        values = self.face.message_fields(kind, text)
        if not self._has_messages():
            self.layers["MESSAGE"] = values
            return True
        return await self._show("MESSAGE", **values)

    def _has_messages(self) -> bool:
        return not self.ref.ident or int(self.ref.ident.get("minor", 0)) >= 1

    async def lamp_test(self, ms: int = 3000) -> bool:
        async with self.screen.lock:
            try:
                await self.ref.command("LAMP_TEST", ms=ms)
            except (DeviceTimeout, LinkError):
                return False
        return True

    async def clear(self) -> bool:
        self.face.lit_areas = ()
        self.face.clear()
        return await self._show("CLEAR")

    def display_state(self) -> DisplayState:
        """The messages that rebuild the whole board, in the order they are sent."""
        layers = [
            (name, values)
            for name, values in self.layers.items()
            if name != "MESSAGE" or self._has_messages()  # a 1.0 board has no MESSAGE layer
        ]
        return [("CLEAR", {}), *layers]

    def resynced(self, reason: str, messages: int) -> BoardResynced:
        return BoardResynced(device=self.name, reason=reason, messages=messages)

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), **self.ref.get_status(), "board": self.face.status()}


class GpioBoardDriver(DriverBase[BoardResynced]):
    """A board of LEDs on GPIO pins (gpiozero ``LEDBoard``); lamp ``i`` is ``pins[i]``.

    It can light areas and numbers (the number's own lamp, e.g. area ``"17"``);
    it has no history or road display. What it shows is its ``face``.
    """

    driver_name = "board-gpio"
    SETTINGS: ClassVar[dict[str, FieldSpec]] = {
        "pins": FieldSpec(
            "int_list",
            required=True,
            doc="BCM pins of the lamps, lamp 0 first",
            check=lambda v: (
                None
                if all(0 <= p <= 27 for p in v) and len(set(v)) == len(v)
                else "pins must be distinct BCM numbers 0..27"
            ),
        ),
        "active_high": FieldSpec("bool", True, doc="a lamp is lit when its pin is high"),
        "blink_ms": FieldSpec("int", 500, doc="blink half-period", range=(50, 5000)),
        **_DISPLAY_SETTINGS,
    }

    def __init__(
        self, name: str, settings: Mapping[str, Any], *, pin_factory: Any = None, **_: Any
    ) -> None:
        super().__init__(name)
        self.settings = resolve_settings(self.SETTINGS, settings, f"devices.{name}")
        self.face = BoardFace(self.settings)
        self.layout = self.face.layout
        self.pin_factory = pin_factory
        self.leds: Any = None
        self._test_task: asyncio.Task[None] | None = None
        self._lit: list[int] = []
        self._blink = False

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        problems = _check_lamps(settings)
        if not problems:
            n = len(settings["pins"])
            lamps = settings.get("lamps") or {}
            over = sorted(a for a, i in lamps.items() if i >= n)
            if over:
                problems.append(f"lamps: {', '.join(over[:5])} beyond the {n} pins")
        return problems

    @classmethod
    def used_pins(cls, settings: Mapping[str, Any]) -> Iterable[tuple[str, int]]:
        return [(f"pins[{i}]", p) for i, p in enumerate(settings.get("pins") or ())]

    async def start(self) -> None:
        if self.leds is not None:
            return
        from gpiozero import LEDBoard

        from ..gpio import require_pin_factory

        require_pin_factory(self.pin_factory, self.name)
        try:
            self.leds = LEDBoard(
                *self.settings["pins"],
                active_high=self.settings["active_high"],
                pin_factory=self.pin_factory,
            )
        except Exception as exc:  # gpiozero raises many kinds (pin in use, no such pin)
            self.set_health(HealthState.FAULT, "GPIO", f"cannot open the LED pins: {exc}")
            return
        self.set_health(HealthState.ONLINE)

    async def stop(self) -> None:
        if self._test_task is not None:
            self._test_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._test_task
            self._test_task = None
        if self.leds is not None:
            self.leds.close()
            self.leds = None
        self.set_health(HealthState.OFFLINE, "STOPPED", "stopped")
        self.hub.close()

    def _apply(self) -> None:
        if self.leds is None or self._test_task is not None:
            return
        n = len(self.leds)
        want = [i for i in self._lit if i < n]
        self.leds.off()
        if not want:
            return
        if self._blink:
            half = self.settings["blink_ms"] / 1000
            for i in want:
                self.leds[i].blink(on_time=half, off_time=half)
        else:
            for i in want:
                self.leds[i].on()

    @property
    def lit(self) -> list[int]:
        """The lamps meant to be lit now (a lamp test aside)."""
        return list(self._lit)

    async def show_areas(self, areas: Iterable[str], *, blink: bool = False) -> bool:
        self.face.lit_areas = tuple(areas)
        self._lit, self._blink = lamps_for(self.face.lit_areas, self.face.lamps), blink
        self._apply()
        return self.leds is not None

    def use_areas(self, areas: Sequence[str]) -> None:
        """The areas of the table's game (the table tells them; see :class:`BoardFace`)."""
        self.face.use_areas(areas)

    async def show_number(self, number: int, history: Sequence[int] | None = None) -> bool:
        self.face.push_number(number, history)
        return await self.show_areas([str(number)])

    async def show_road(self, entries: Iterable[RoadEntry | str]) -> bool:
        raise Unsupported(f"{self.name}: an LED board has no baccarat road display")

    async def show_message(self, kind: str, text: str = "") -> bool:
        """Kept for the status: an LED board has no text display."""
        self.face.message_fields(kind, text)
        return self.leds is not None

    async def clear(self) -> bool:
        self.face.clear()
        return await self.show_areas(())

    async def lamp_test(self, ms: int = 3000) -> bool:
        if self.leds is None:
            return False
        if self._test_task is not None:
            self._test_task.cancel()
        self.leds.on()
        self._test_task = asyncio.create_task(self._end_test(ms / 1000))
        return True

    async def _end_test(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        self._test_task = None
        self._apply()

    def get_status(self) -> dict[str, Any]:
        out = super().get_status()
        out["board"] = {
            **self.face.status(),
            "lamps": self.lit,
            "testing": self._test_task is not None,
        }
        return out
