"""The simulated dice shaker's behaviour, sans-I/O (async wrapper: :mod:`drivers.shaker.sim`).

Dice come from a seeded ``random.Random`` unless the test names them; each fault
of the protocol has a knob. ``sent_dice`` records every DICE result sent.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from tablecommon.events.shaker import FLAT, STACKED, TILTED

from ..reflink.device import DeviceModel, Refuse
from ..reflink.messages import Message, RefusedReason
from .codec import NO_SHAKE_REASONS, PROFILE, UNREADABLE_REASONS, die_to_byte

INJECTABLE = ("tilted", "stacked", "no_shake", "motor", "unreadable", "camera", "dice_missing")


@dataclass
class ShakerKnobs:
    """Faults applied to the next shake(s): each is a count of shakes still to affect."""

    tilted: int = 0
    stacked: int = 0
    no_shake: int = 0
    unreadable: int = 0


class ShakerModel(DeviceModel):
    profile = PROFILE
    model = "shaker simulator"

    def __init__(
        self, dice: int = 3, seed: int | None = None, bias: Sequence[float] | None = None
    ) -> None:
        super().__init__()
        #: Loaded dice (integrity tests): the weights of faces 1-6 of every die.
        self.bias = tuple(bias) if bias else None
        if self.bias is not None and len(self.bias) != 6:
            raise ValueError("a die's bias is six weights, faces 1 to 6")
        if dice not in (3, 4):
            raise ValueError("a shaker holds 3 or 4 dice")
        self.rng = random.Random(seed)
        self.dice = dice
        self.shake_no = 0
        self.dome_open = False
        self.knobs = ShakerKnobs()
        self.sent_dice: list[tuple[int, tuple[int, ...], tuple[str, ...]]] = []
        self._last: tuple[tuple[int, ...], tuple[str, ...]] | None = None

    def inject(self, fault: str, count: int = 1) -> None:
        if fault in ("tilted", "stacked"):
            setattr(self.knobs, fault, getattr(self.knobs, fault) + count)
        elif fault in ("no_shake", "motor"):
            self.knobs.no_shake += count
        elif fault in ("unreadable", "camera", "dice_missing"):
            self.knobs.unreadable += count
        else:
            raise ValueError(f"unknown shaker fault {fault!r}; known: {', '.join(INJECTABLE)}")

    def roll(self) -> tuple[int, ...]:
        """The faces of one throw: fair, or weighted by :attr:`bias`."""
        if self.bias is None:
            return tuple(self.rng.randint(1, 6) for _ in range(self.dice))
        return tuple(self.rng.choices(range(1, 7), self.bias)[0] for _ in range(self.dice))

    def shake(
        self,
        dice: Sequence[int] | None = None,
        flags: Sequence[str] | None = None,
        source: str = "host",
    ) -> tuple[int, ...] | None:
        """One complete shake: requested, started, finished, then the dice (or a fault)."""
        if self.dome_open:
            raise Refuse(RefusedReason.BUSY, "dome open")
        self.shake_no = (self.shake_no + 1) & 0xFFFF
        n = self.shake_no
        self.emit("SHAKE_REQUESTED", shake=n, source=0 if source == "host" else 1)
        if self.knobs.no_shake:
            self.knobs.no_shake -= 1
            self.emit("NO_SHAKE", shake=n, reason=1)
            return None
        self.emit("SHAKE_STARTED", shake=n)
        self.emit("SHAKE_FINISHED", shake=n)
        if self.knobs.unreadable:
            self.knobs.unreadable -= 1
            self.emit("UNREADABLE", shake=n, reason=2, text="image unclear")
            return None
        faces = tuple(dice) if dice is not None else self.roll()
        if len(faces) != self.dice:
            raise ValueError(f"{len(faces)} dice for a {self.dice}-dice shaker")
        lies = list(flags) if flags is not None else [FLAT] * self.dice
        if self.knobs.stacked:
            self.knobs.stacked -= 1
            lies[0] = lies[1] = STACKED
        elif self.knobs.tilted:
            self.knobs.tilted -= 1
            lies[self.rng.randrange(self.dice)] = TILTED
        self.read(faces, tuple(lies))
        return faces

    def read(self, faces: tuple[int, ...], lies: tuple[str, ...]) -> None:
        self.emit(
            "DICE",
            shake=self.shake_no,
            dice=bytes(die_to_byte(x, fl) for x, fl in zip(faces, lies, strict=True)),
        )
        self.sent_dice.append((self.shake_no, faces, lies))
        self._last = (faces, lies)

    def on_request(self, msg: Message) -> bytes:
        if msg.name == "SHAKE":
            self.shake()
        elif msg.name == "READ":
            if self._last is None:
                raise Refuse(RefusedReason.BUSY, "no dice read yet")
            self.read(*self._last)
        else:
            return super().on_request(msg)
        return b""

    def conditions(self) -> int:
        return int(self.dome_open)


__all__ = ["INJECTABLE", "NO_SHAKE_REASONS", "UNREADABLE_REASONS", "ShakerKnobs", "ShakerModel"]
