"""Reference shoe protocol (profile 1 over reflink), sans-I/O.

``docs/protocols/shoe.md`` is the specification. This module holds the message
table, the card byte, and :class:`ShoeTracker`, the host-side interpretation of the
device's messages into :mod:`tablecommon.events.shoe` (sequence and duplicate checks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tablecommon.cards import RANKS, SUITS, Card, deck, shoe_composition
from tablecommon.events.shoe import (
    CardDealt,
    CardMisread,
    DeckChecked,
    DoorClosed,
    DoorOpened,
    DuplicateCard,
    SequenceGap,
    ShoeEvent,
    ShoeFault,
    ShoeFaultCleared,
    ShoeJam,
    ShuffleFinished,
    ShuffleStarted,
)

from ..reflink.messages import Message, MessageDef, MessageError, Profile, Sender, f

PROFILE_ID = 1
UNKNOWN_CARD = 0xFF

#: FAULT codes on the wire -> (event class, stable code).
FAULTS: dict[int, tuple[type[ShoeFault], str]] = {
    1: (ShoeJam, "JAM"),
    2: (CardMisread, "MISREAD"),
    3: (DuplicateCard, "DUPLICATE_CARD"),
    4: (DoorOpened, "DOOR_OPEN"),
}
FAULT_IDS = {code: i for i, (_, code) in FAULTS.items()}

PROFILE = Profile(
    "shoe",
    PROFILE_ID,
    1,
    0,
    (
        MessageDef(
            0x10,
            "CARD",
            Sender.DEVICE,
            (
                f(
                    "seq",
                    "u16",
                    "cards dealt since the shuffle finished, this one included (1, 2, ...)",
                ),
                f("card", "u8", "rank << 4 | suit (S 0, H 1, C 2, D 3); AS = 0x10, TD = 0xA3"),
                f("position", "u8", "where the card was dealt (0 = not known)"),
            ),
            "A card left the shoe.",
        ),
        MessageDef(
            0x11,
            "SHUFFLE_STARTED",
            Sender.DEVICE,
            (
                f("shuffle", "u16", "shuffle number, +1 on each shuffle (wraps)"),
                f("decks", "u8"),
            ),
        ),
        MessageDef(
            0x12,
            "SHUFFLE_FINISHED",
            Sender.DEVICE,
            (
                f("shuffle", "u16"),
                f("decks", "u8"),
                f("cards", "u16", "cards now in the shoe"),
            ),
            "The shoe is ready; card seq restarts at 1.",
        ),
        MessageDef(
            0x13,
            "DECK_CHECK",
            Sender.DEVICE,
            (
                f("shuffle", "u16"),
                f("decks", "u8", "decks the shoe should hold"),
                f(
                    "counts",
                    "bytes",
                    "52 counts, cards in the order AS 2S .. KS AH .. KH AC .. KC AD .. KD",
                ),
            ),
            "Result of a deck check: how many of each card were counted.",
        ),
        MessageDef(
            0x14,
            "FAULT",
            Sender.DEVICE,
            (
                f("fault", "u8", "1 jam, 2 misread, 3 duplicate card, 4 door open"),
                f("seq", "u16", "seq of the card concerned (0 = none)"),
                f("card", "u8", "card concerned, 0xFF = none or unknown"),
                f("text", "text"),
            ),
        ),
        MessageDef(0x15, "FAULT_CLEARED", Sender.DEVICE, (f("fault", "u8"),)),
        MessageDef(
            0x40,
            "SHUFFLE",
            Sender.HOST,
            (f("decks", "u8", "decks to shuffle, 0 = as configured"),),
            "Start a shuffle (shuffler-dealers); answered by an empty ACK or REFUSED.",
        ),
        MessageDef(
            0x41, "CHECK_DECK", Sender.HOST, (), "Count the cards; the result comes as DECK_CHECK."
        ),
        MessageDef(
            0x42,
            "DEAL",
            Sender.HOST,
            (f("position", "u8"),),
            "Deal one card to a position (dealing machines); the card comes as CARD.",
        ),
        MessageDef(
            0x43,
            "CLEAR_FAULT",
            Sender.HOST,
            (f("fault", "u8"),),
            "The dealer has handled a latched fault (misread, duplicate).",
        ),
    ),
    conditions={0: "DOOR_OPEN", 1: "JAM", 2: "SHUFFLING", 3: "EMPTY"},
)


def card_to_byte(card: Card | str) -> int:
    c = Card.parse(card) if isinstance(card, str) else card
    return c.rank << 4 | SUITS.index(c.suit)


def card_from_byte(b: int) -> Card:
    """Decode a card byte; raise :class:`MessageError` for anything else (0xFF included)."""
    rank, suit = b >> 4, b & 0x0F
    if not 1 <= rank <= 13 or suit > 3:
        raise MessageError(f"0x{b:02X} is not a card byte")
    return Card(rank, SUITS[suit])


def card_name(b: int) -> str | None:
    """The card's notation, or None for 0xFF (no card / unknown)."""
    return None if b == UNKNOWN_CARD else str(card_from_byte(b))


def counts_from(cards: Iterable[Card]) -> bytes:
    have = Counter(cards)
    return bytes(have.get(c, 0) for c in deck())


def check_counts(decks: int, counts: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Missing and extra cards (each repeated as often as it is missing or extra)."""
    if len(counts) != 52:
        raise MessageError(f"DECK_CHECK carries {len(counts)} counts, not 52")
    want = shoe_composition(decks) if 1 <= decks <= 12 else Counter()
    have = Counter({c: n for c, n in zip(deck(), counts, strict=True) if n})
    missing = tuple(str(c) for c in sorted((want - have).elements(), key=_order))
    extra = tuple(str(c) for c in sorted((have - want).elements(), key=_order))
    return missing, extra


def _order(c: Card) -> tuple[int, int]:
    return SUITS.index(c.suit), c.rank


class ShoeTracker:
    """Host-side meaning of the shoe's messages: events, plus the host's own checks.

    The host does not trust the shoe blindly: a card seq that is not the previous
    plus one is reported (:class:`SequenceGap`), and a card dealt more often than
    the shoe holds it becomes :class:`DuplicateCard` instead of :class:`CardDealt`.
    """

    def __init__(self, device: str = "", decks: int = 8) -> None:
        self.device = device
        self.decks = decks
        self.shuffle = 0
        self.last_seq = 0
        self.dealt: Counter[str] = Counter()
        self.last_card: str | None = None

    def reset(self, decks: int | None = None) -> None:
        if decks:
            self.decks = decks
        self.last_seq = 0
        self.dealt.clear()

    def apply(self, msg: Message, raw: bytes = b"") -> list[ShoeEvent]:
        """Events for one decoded message from the device (MessageError if its values are bad)."""
        d, n = self.device, msg.name
        if n == "CARD":
            card = str(card_from_byte(msg["card"]))
            seq = msg["seq"]
            out: list[ShoeEvent] = []
            if seq != self.last_seq + 1:
                out.append(
                    SequenceGap(
                        device=d,
                        raw=raw,
                        seq=seq,
                        expected=self.last_seq + 1,
                        card=card,
                        message=f"card seq {seq} after {self.last_seq}",
                    )
                )
            self.last_seq = seq
            self.dealt[card] += 1
            if self.dealt[card] > self.decks:
                out.append(
                    DuplicateCard(
                        device=d,
                        raw=raw,
                        seq=seq,
                        card=card,
                        message=f"{card} dealt {self.dealt[card]} times from {self.decks} decks",
                    )
                )
            else:
                self.last_card = card
                out.append(
                    CardDealt(
                        device=d,
                        raw=raw,
                        card=card,
                        seq=seq,
                        position=msg["position"],
                        shuffle=self.shuffle,
                    )
                )
            return out
        if n == "SHUFFLE_STARTED":
            self.shuffle = msg["shuffle"]
            return [ShuffleStarted(device=d, raw=raw, shuffle=msg["shuffle"], decks=msg["decks"])]
        if n == "SHUFFLE_FINISHED":
            self.shuffle = msg["shuffle"]
            self.reset(msg["decks"])
            return [
                ShuffleFinished(
                    device=d,
                    raw=raw,
                    shuffle=msg["shuffle"],
                    decks=msg["decks"],
                    cards=msg["cards"],
                )
            ]
        if n == "DECK_CHECK":
            missing, extra = check_counts(msg["decks"], msg["counts"])
            return [
                DeckChecked(
                    device=d,
                    raw=raw,
                    shuffle=msg["shuffle"],
                    decks=msg["decks"],
                    counted=sum(msg["counts"]),
                    missing=missing,
                    extra=extra,
                )
            ]
        if n == "FAULT":
            if msg["fault"] not in FAULTS:
                raise MessageError(f"unknown shoe fault {msg['fault']}")
            cls, _ = FAULTS[msg["fault"]]
            return [
                cls(
                    device=d,
                    raw=raw,
                    seq=msg["seq"],
                    card=card_name(msg["card"]),
                    message=msg["text"],
                )
            ]
        if n == "FAULT_CLEARED":
            if msg["fault"] not in FAULTS:
                raise MessageError(f"unknown shoe fault {msg['fault']}")
            _, code = FAULTS[msg["fault"]]
            if code == "DOOR_OPEN":
                return [DoorClosed(device=d, raw=raw)]
            return [ShoeFaultCleared(device=d, raw=raw, fault=code)]
        return []


__all__ = [
    "FAULTS",
    "PROFILE",
    "RANKS",
    "ShoeTracker",
    "card_from_byte",
    "card_to_byte",
    "check_counts",
]
