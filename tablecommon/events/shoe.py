"""Typed events of a card shoe / shuffler-dealer, whatever its wire protocol.

Every shoe driver (the reference protocol's ``shoe-ref`` and ``shoe-ref-usb``, a
vendor's plug-in) emits these same events, so the shoe procedure and the integrity
monitor never know which shoe is on the table. Cards are in the shared notation
(:mod:`tablecommon.cards`: ``AS``, ``TD``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import DeviceEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeEvent(DeviceEvent):
    """Base of every event of a card shoe, whatever its wire protocol."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CardDealt(ShoeEvent):
    """A card left the shoe. ``seq`` counts the cards dealt since the shuffle (1, 2, ...)."""

    card: str
    seq: int
    position: int = 0
    shuffle: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ShuffleStarted(ShoeEvent):
    shuffle: int
    decks: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ShuffleFinished(ShoeEvent):
    shuffle: int
    decks: int
    cards: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeckChecked(ShoeEvent):
    """Result of a deck check: the cards counted against ``decks`` full decks."""

    shuffle: int
    decks: int
    counted: int
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeFault(ShoeEvent):
    """A fault; ``fault`` is its stable code. ``seq``/``card`` name the card concerned, if any."""

    fault: str = "SHOE_FAULT"
    seq: int = 0
    card: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeJam(ShoeFault):
    fault: str = "JAM"


@dataclass(frozen=True, slots=True, kw_only=True)
class CardMisread(ShoeFault):
    """A card left the shoe but could not be identified: the dealer must handle it."""

    fault: str = "MISREAD"


@dataclass(frozen=True, slots=True, kw_only=True)
class DuplicateCard(ShoeFault):
    """A card read more times than the shoe holds it (a card was added, or a misread)."""

    fault: str = "DUPLICATE_CARD"


@dataclass(frozen=True, slots=True, kw_only=True)
class DoorOpened(ShoeFault):
    fault: str = "DOOR_OPEN"


@dataclass(frozen=True, slots=True, kw_only=True)
class SequenceGap(ShoeFault):
    """The shoe's card count jumped: a card left without being reported (wrong draw order)."""

    fault: str = "SEQUENCE_GAP"
    expected: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeFaultCleared(ShoeEvent):
    fault: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DoorClosed(ShoeFaultCleared):
    fault: str = "DOOR_OPEN"
