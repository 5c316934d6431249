"""A shoe and a dice shaker described by a line-protocol file: lines -> their kind's
events (sans-I/O, as :mod:`.wheel` for a wheel).

Their results (a card dealt, the dice read) are confirmed by :class:`Confirm`:
``[results] lines`` lines showing the same value for the same key (the card's
``seq``, the shake's ``shake``), none another. A line showing another value for the
key disputes it (a ``RESULT_DISPUTED`` fault: no event for it); a line of another key
before it was confirmed gives it up (``RESULT_MISSING``); a key already taken is not
taken again (a repeated line is no second card). Without a key field, lines showing
one value in a row are one result (a device that repeats its lines should number
them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tablecommon.events.base import DeviceEvent
from tablecommon.events.shaker import (
    FLAT,
    DiceRead,
    ShakeFinished,
    ShakerFault,
    ShakeStarted,
)
from tablecommon.events.shoe import CardDealt, ShoeFault, ShuffleFinished, ShuffleStarted

from .rules import Line
from .spec import Protocol

__all__ = ["Confirm", "LineShaker", "LineShoe"]


@dataclass
class _Gathering:
    key: Any
    value: Any
    lines: list[bytes]


@dataclass
class Confirm:
    """``lines`` agreeing lines per key make one result."""

    lines: int
    candidate: _Gathering | None = None
    taken: set[Any] = field(default_factory=set)

    def feed(self, key: Any, value: Any, raw: bytes) -> list[tuple[str, Any, Any, bytes]]:
        """(outcome, key, value, raw lines): ``taken``, ``disputed``, ``missing``."""
        if key is not None and key in self.taken:
            return []
        out: list[tuple[str, Any, Any, bytes]] = []
        cand = self.candidate
        if cand is not None and (cand.key != key or (key is None and cand.value != value)):
            out.append(("missing", cand.key, cand.value, b"\n".join(cand.lines)))
            cand = self.candidate = None
        if cand is None:
            cand = self.candidate = _Gathering(key, value, [])
        elif cand.value != value:  # one key, another value
            self.candidate = None
            self.taken.add(key)
            return [*out, ("disputed", key, value, b"\n".join([*cand.lines, raw]))]
        cand.lines.append(raw)
        if len(cand.lines) >= self.lines:
            self.candidate = None
            if key is not None:
                self.taken.add(key)
            out.append(("taken", key, value, b"\n".join(cand.lines)))
        return out

    def reset(self) -> None:
        """A new sequence (a shuffle: the cards' numbers start again)."""
        self.candidate = None
        self.taken.clear()


class LineShoe:
    """Cards, shuffles and faults of one shoe."""

    def __init__(self, protocol: Protocol, device: str = "", *, decks: int = 8) -> None:
        self.device = device
        self.decks = decks
        self.confirm = Confirm(protocol.results.lines)
        self.shuffle = 0
        self.cards = 0  # dealt since the shuffle
        self.fault: tuple[str, str] | None = None

    def feed(self, line: Line, now: float) -> list[DeviceEvent]:
        f, ev, dev = line.fields, line.event, self.device
        if ev == "card_dealt":
            out: list[DeviceEvent] = []
            for outcome, key, card, raw in self.confirm.feed(f.get("seq"), f["card"], line.raw):
                if outcome == "taken":
                    self.cards += 1
                    seq = key if isinstance(key, int) else self.cards
                    out.append(CardDealt(device=dev, raw=raw, card=card, seq=seq,
                        position=f.get("position", 0), shuffle=f.get("shuffle", self.shuffle),
                        monotonic=now))  # fmt: skip
                else:
                    out.append(self._problem(outcome, key, card, raw))
            return out
        if ev == "shuffle_started":
            self.shuffle = f.get("shuffle", self.shuffle + 1)
            return [ShuffleStarted(device=dev, raw=line.raw, shuffle=self.shuffle,
                decks=f.get("decks", self.decks), monotonic=now)]  # fmt: skip
        if ev == "shuffle_finished":
            self.shuffle = f.get("shuffle", self.shuffle if self.cards == 0 else self.shuffle + 1)
            self.cards = 0
            self.confirm.reset()
            decks = f.get("decks", self.decks)
            return [ShuffleFinished(device=dev, raw=line.raw, shuffle=self.shuffle, decks=decks,
                cards=f.get("cards", decks * 52), monotonic=now)]  # fmt: skip
        if ev == "fault":
            message = str(f.get("message") or f"the shoe reports fault {f['code']}")
            self.fault = (f"SHOE_FAULT_{f['code']}", message)
            return [ShoeFault(device=dev, raw=line.raw, fault=str(f["code"]), message=message,
                card=f.get("card"), seq=f.get("seq", 0), monotonic=now)]  # fmt: skip
        return []

    def _problem(self, outcome: str, key: Any, card: Any, raw: bytes) -> ShoeFault:
        seq = key if isinstance(key, int) else 0
        what = "lines of one card disagree" if outcome == "disputed" else "a card was not confirmed"
        return ShoeFault(device=self.device, raw=raw, fault=f"RESULT_{outcome.upper()}", seq=seq,
            card=None, message=f"{what} (card {seq or '?'}, {card}): check the shoe")  # fmt: skip

    def new_session(self) -> list[DeviceEvent]:
        return []

    def end(self) -> list[DeviceEvent]:
        return []

    def snapshot(self) -> dict[str, Any]:
        return {"shuffle": self.shuffle, "cards": self.cards, "fault": self.fault}


class LineShaker:
    """Shakes, dice and faults of one shaker."""

    def __init__(self, protocol: Protocol, device: str = "", *, dice: int = 3) -> None:
        self.device = device
        self.dice = dice
        self.confirm = Confirm(protocol.results.lines)
        self.shake = 0
        self.fault: tuple[str, str] | None = None

    def feed(self, line: Line, now: float) -> list[DeviceEvent]:
        f, ev, dev = line.fields, line.event, self.device
        if ev in ("shake_started", "shake_finished"):
            if ev == "shake_started" or "shake" in f:
                self.shake = f.get("shake", self.shake + 1)
            cls = ShakeStarted if ev == "shake_started" else ShakeFinished
            return [cls(device=dev, raw=line.raw, shake=self.shake, monotonic=now)]
        if ev == "dice":
            faces = f["dice"]
            lie = f.get("flags", (FLAT,) * len(faces))
            out: list[DeviceEvent] = []
            for outcome, key, value, raw in self.confirm.feed(
                f.get("shake"), (faces, lie), line.raw
            ):
                shake = key if isinstance(key, int) else self.shake
                if outcome != "taken":
                    out.append(ShakerFault(device=dev, raw=raw, fault=f"RESULT_{outcome.upper()}",
                        message=f"shake {shake}: the dice lines disagree or were not confirmed",
                        monotonic=now))  # fmt: skip
                elif len(value[0]) != self.dice or len(value[1]) != len(value[0]):
                    out.append(ShakerFault(device=dev, raw=raw, fault="WRONG_DICE_COUNT",
                        message=f"shake {shake}: {len(value[0])} dice read, the shaker holds "
                        f"{self.dice}", monotonic=now))  # fmt: skip
                else:
                    out.append(DiceRead(device=dev, raw=raw, shake=shake, dice=value[0],
                        flags=value[1], monotonic=now))  # fmt: skip
            return out
        if ev == "fault":
            message = str(f.get("message") or f"the shaker reports fault {f['code']}")
            self.fault = (f"SHAKER_FAULT_{f['code']}", message)
            return [ShakerFault(device=dev, raw=line.raw, fault=str(f["code"]), message=message,
                monotonic=now)]  # fmt: skip
        return []

    def new_session(self) -> list[DeviceEvent]:
        return []

    def end(self) -> list[DeviceEvent]:
        return []

    def snapshot(self) -> dict[str, Any]:
        return {"shake": self.shake, "fault": self.fault}
