"""``keypad-gpio``: the dealer's keys, the bell and the dome/cup switch on GPIO pins.

Every key is a :class:`~drivers.gpio.DebouncedInput` (a press counts once the
level has been stable for ``debounce_ms``; a key held ``stuck_ms`` is reported
stuck and the device FAULT until it is released). Keys:

- ``"1"`` .. ``"4"``: the fantan result (58/2004: the remainder 1-4);
- ``confirm``: confirms the number pressed before it (``KeypadResult``); alone it
  is a plain ``KeypadConfirm`` (the round logic uses it to open betting);
- ``void``: ``KeypadVoidRequest`` (an operator confirms the void);
- ``bell``: ``Bell`` (no more bets);
- ``sign_in`` (optional), with the digit keys ``"0"`` .. ``"9"`` (``"1"`` .. ``"4"``
  are the fantan keys): a dealer signs in. ``sign_in``, the dealer number,
  ``confirm``, the PIN, ``confirm``: ``KeypadSignIn(dealer_number, pin)``, checked by
  the table (``firmware_host/console/keypad.py``). While an entry is open the digit
  keys and ``confirm`` only enter it (no result, no betting opened); ``void`` cancels
  it; an entry idle ``confirm_timeout_ms``, too long, or met by a stuck key is given
  up (``KeypadSignInRejected``). No event, log line or frame names a digit entered.

Two number keys down at once, or a number older than ``confirm_timeout_ms``, are
rejected rather than guessed.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from tablecommon.events.keypad import (
    Bell,
    ButtonStuck,
    DomeClosed,
    DomeOpened,
    KeypadConfirm,
    KeypadEvent,
    KeypadNumber,
    KeypadRejected,
    KeypadResult,
    KeypadSignIn,
    KeypadSignInRejected,
    KeypadSignInStarted,
    KeypadVoidRequest,
)
from tablecommon.settings import FieldSpec

from ..base import HealthState
from ..common import DriverBase
from ..gpio import DebouncedInput, require_pin_factory
from .inputs import DomeLockSensor

__all__ = ["KEYS", "KeypadDriver"]

NUMBER_KEYS = ("1", "2", "3", "4")
DIGIT_KEYS = tuple("0123456789")
KEYS = (*DIGIT_KEYS, "confirm", "void", "bell", "sign_in")
#: The longest dealer number and PIN an entry takes (a PIN is 4-12 digits).
MAX_DEALER_DIGITS = 8
MAX_PIN_DIGITS = 12


class KeypadDriver(DriverBase[KeypadEvent]):
    """Dealer keypad, bell and dome switch on GPIO."""

    driver_name = "keypad-gpio"

    SETTINGS: ClassVar[dict[str, FieldSpec]] = {
        "pins": FieldSpec(
            "table",
            required=True,
            doc='key -> BCM pin, keys among "0".."9" confirm void bell sign_in '
            '("1".."4": fantan results; sign_in and the digits: a dealer signs in)',
        ),
        "dome_pin": FieldSpec(
            "int", None, doc="BCM pin of the dome/cup switch (optional)", range=(0, 53)
        ),
        "dome_active_means_locked": FieldSpec(
            "bool", True, doc="the dome input is active (closed) when the dome is locked"
        ),
        "pull": FieldSpec(
            "str",
            "up",
            doc="up: switches to ground (active low); down: to 3.3 V",
            choices=("up", "down"),
        ),
        "debounce_ms": FieldSpec("int", 20, doc="a level must be stable this long", range=(1, 500)),
        "stuck_ms": FieldSpec(
            "int", 10000, doc="a key held this long is reported stuck", range=(500, 600000)
        ),
        "confirm_timeout_ms": FieldSpec(
            "int",
            30000,
            doc="a number not confirmed within this time is forgotten; a sign-in entry idle "
            "this long is given up",
            range=(1000, 600000),
        ),
    }

    @classmethod
    def check_settings(cls, values: Mapping[str, Any]) -> list[str]:
        problems = []
        pins = values.get("pins") or {}
        seen: dict[int, str] = {}
        for key, pin in pins.items():
            if key not in KEYS:
                problems.append(f"pins.{key}: unknown key; keys: {', '.join(KEYS)}")
            elif isinstance(pin, bool) or not isinstance(pin, int) or not 0 <= pin <= 53:
                problems.append(f"pins.{key}: expected a BCM pin number 0..53, got {pin!r}")
            elif pin in seen:
                problems.append(f"pins.{key}: GPIO{pin} is also pins.{seen[pin]}")
            else:
                seen[pin] = key
        if values.get("dome_pin") is not None and values["dome_pin"] in seen:
            problems.append(f"dome_pin: GPIO{values['dome_pin']} is also a key")
        if not pins:
            problems.append("pins: at least one key is needed")
        return problems

    @classmethod
    def used_pins(cls, settings: Mapping[str, Any]) -> Iterable[tuple[str, int]]:
        for key, pin in (settings.get("pins") or {}).items():
            yield f"pins.{key}", int(pin)
        if settings.get("dome_pin") is not None:
            yield "dome_pin", int(settings["dome_pin"])

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        pin_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name, clock=clock)
        s = {k: spec.default for k, spec in self.SETTINGS.items()}
        s.update(settings)
        self.settings = s
        self.pin_factory = pin_factory
        self.keys: dict[str, DebouncedInput] = {}
        self.dome: DomeLockSensor | None = None
        self.pending: tuple[int, float] | None = None  # (number, time pressed)
        self.stuck: set[str] = set()
        self.last: KeypadEvent | None = None
        #: A sign-in being entered: [dealer digits, PIN digits or None, last key time].
        self.entry: list[Any] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        if self.keys or self.dome:
            return
        require_pin_factory(self.pin_factory, self.name)
        s = self.settings
        pull_up = s["pull"] == "up"
        for key, pin in dict(s["pins"]).items():
            inp = DebouncedInput(
                int(pin),
                pin_factory=self.pin_factory,
                label=key,
                pull_up=pull_up,
                debounce=s["debounce_ms"] / 1000,
                stuck_after=s["stuck_ms"] / 1000,
                on_press=functools.partial(self._press, key),
                on_stuck=functools.partial(self._stuck, key),
                on_unstuck=functools.partial(self._unstuck, key),
            )
            inp.start()
            self.keys[key] = inp
        if s["dome_pin"] is not None:
            self.dome = DomeLockSensor(
                int(s["dome_pin"]),
                pin_factory=self.pin_factory,
                pull_up=pull_up,
                active_means_locked=bool(s["dome_active_means_locked"]),
                debounce=max(s["debounce_ms"], 50) / 1000,
                on_change=self._dome,
            )
            self.dome.start()
        self.set_health(HealthState.ONLINE)

    async def stop(self) -> None:
        for inp in self.keys.values():
            inp.close()
        self.keys.clear()
        if self.dome is not None:
            self.dome.close()
            self.dome = None
        self.set_health(HealthState.OFFLINE, "STOPPED", "driver stopped")

    # ------------------------------------------------------------------ inputs (on the loop)
    def _emit(self, event: KeypadEvent, ts: float) -> None:
        self.frames.rx(f"{event.kind} {getattr(event, 'key', '')} t={ts:.4f}".encode())
        self.last = event
        self.emit(event)

    def _press(self, key: str, ts: float) -> None:
        # during a sign-in, which digit was pressed is counted nowhere (it may be a PIN's)
        self.counters["press.sign_in_entry" if self.entry is not None else f"press.{key}"] += 1
        d = self.name
        if (
            self.entry is not None
            and ts - self.entry[2] > self.settings["confirm_timeout_ms"] / 1000
        ):
            self._give_up(key, ts, "sign-in not finished in time; start again with sign_in")
        if key == "sign_in":
            self.pending = None
            self.entry = [[], None, ts]
            self._emit(KeypadSignInStarted(device=d, monotonic=ts), ts)
            return
        if self.entry is not None and key in (*DIGIT_KEYS, "confirm", "void"):
            self._entry_key(key, ts)
            return
        if key in DIGIT_KEYS and key not in NUMBER_KEYS:
            self._emit(KeypadRejected(device=d, monotonic=ts, key=key,
                                      reason=f"key {key} is only for a sign-in"), ts)  # fmt: skip
            return
        if key in NUMBER_KEYS:
            others = [k for k in NUMBER_KEYS if k != key and k in self.keys and self.keys[k].active]
            if others:
                self.pending = None
                self._emit(
                    KeypadRejected(
                        device=d, monotonic=ts, key=key,
                        reason=f"number keys {key} and {', '.join(others)} down together",
                    ),
                    ts,
                )  # fmt: skip
                return
            self.pending = (int(key), ts)
            self._emit(KeypadNumber(device=d, monotonic=ts, key=key, value=int(key)), ts)
        elif key == "confirm":
            value = None
            if self.pending is not None:
                number, when = self.pending
                if ts - when <= self.settings["confirm_timeout_ms"] / 1000:
                    value = number
            self.pending = None
            self._emit(KeypadConfirm(device=d, monotonic=ts, value=value), ts)
            if value is not None:
                self._emit(KeypadResult(device=d, monotonic=ts, value=value), ts)
        elif key == "void":
            self.pending = None
            self._emit(KeypadVoidRequest(device=d, monotonic=ts), ts)
        elif key == "bell":
            self._emit(Bell(device=d, monotonic=ts), ts)

    def _entry_key(self, key: str, ts: float) -> None:
        """A key of an open sign-in entry (never logged with its digit)."""
        assert self.entry is not None
        digits, pin, _ = self.entry
        self.entry[2] = ts
        if key == "void":
            self._give_up(key, ts, "sign-in cancelled")
        elif key == "confirm":
            if pin is None:
                if not digits:
                    self._give_up(key, ts, "no dealer number entered")
                else:
                    self.entry[1] = []
            elif not pin:
                self._give_up(key, ts, "no PIN entered")
            else:
                self.entry = None
                self.counters["sign_in.entered"] += 1
                self._emit(KeypadSignIn(device=self.name, monotonic=ts,
                                        dealer_number="".join(digits), pin="".join(pin)), ts)  # fmt: skip
        else:
            into, most = (digits, MAX_DEALER_DIGITS) if pin is None else (pin, MAX_PIN_DIGITS)
            if len(into) >= most:
                what = "dealer number" if pin is None else "PIN"
                self._give_up(key, ts, f"{what} longer than {most} digits")
            else:
                into.append(key)

    def _give_up(self, key: str, ts: float, reason: str) -> None:
        self.entry = None
        self.counters["sign_in.given_up"] += 1
        safe = "digit" if key in DIGIT_KEYS else key  # never which digit
        self._emit(
            KeypadSignInRejected(device=self.name, monotonic=ts, key=safe, reason=reason), ts
        )

    def _stuck(self, key: str, ts: float) -> None:
        if self.entry is not None:
            self._give_up(key, ts, f"key {key} stuck during the sign-in")
        self.stuck.add(key)
        if key in NUMBER_KEYS and self.pending is not None and self.pending[0] == int(key):
            self.pending = None
        self._emit(ButtonStuck(device=self.name, monotonic=ts, key=key), ts)
        self._health()

    def _unstuck(self, key: str, ts: float, held: float) -> None:
        self.stuck.discard(key)
        self._emit(ButtonStuck(device=self.name, monotonic=ts, key=key, stuck=False, held=held), ts)
        self._health()

    def _dome(self, ts: float, locked: bool, initial: bool) -> None:
        cls = DomeClosed if locked else DomeOpened
        self._emit(cls(device=self.name, monotonic=ts, initial=initial), ts)

    def _health(self) -> None:
        if self.stuck:
            keys = ", ".join(sorted(self.stuck))
            self.set_health(HealthState.FAULT, "KEY_STUCK", f"held down: {keys}")
        else:
            self.set_health(HealthState.ONLINE)

    def get_status(self) -> dict[str, Any]:
        out = super().get_status()
        out.update(
            pending=self.pending[0] if self.pending else None,
            signing_in=self.entry is not None,
            stuck=sorted(self.stuck),
            dome_locked=self.dome.locked if self.dome else None,
            bounces={k: inp.bounces for k, inp in self.keys.items()},
            last=self.last.to_json() if self.last else None,
        )
        return out
