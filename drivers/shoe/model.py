"""The simulated shoe's behaviour, sans-I/O (the async wrapper is :mod:`drivers.shoe.sim`).

Deals from a seeded shuffle of N decks; every fault of the protocol can be
injected. ``sent_cards`` records what it dealt so tests compare it with what the
host accepted.

Its deck check counts the set it is responsible for (``contents``: the cards in the
shoe and those dealt from it, which come back to it for the next shuffle): a card
taken (``missing_card``) or added (``extra_card``) changes it at once, and the next
shuffle deals from it. ``deck_check=False`` is a shoe that cannot count its set: it
refuses CHECK_DECK as unsupported (REFUSED 5).
"""

from __future__ import annotations

import random
from collections import Counter

from tablecommon.cards import Card, shoe_composition

from ..reflink.device import DeviceModel, Refuse
from ..reflink.messages import Message, RefusedReason
from .codec import FAULT_IDS, PROFILE, UNKNOWN_CARD, card_to_byte, counts_from

#: Faults :meth:`ShoeModel.inject` knows.
INJECTABLE = (
    "jam",
    "unjam",
    "misread",
    "duplicate",
    "door_open",
    "door_close",
    "missing_card",
    "extra_card",
    "skip",
)


#: The most decks a shoe holds (:func:`tablecommon.cards.shoe_composition`);
#: SHUFFLE with more is refused as a bad argument.
MAX_DECKS = 12


class SimError(RuntimeError):
    """The simulated shoe cannot do that now (door open, jammed, empty)."""


class ShoeModel(DeviceModel):
    profile = PROFILE
    model = "shoe simulator"

    def __init__(self, decks: int = 8, seed: int | None = None, *, deck_check: bool = True) -> None:
        super().__init__()
        #: The shoe counts its set on request (CHECK_DECK); False: REFUSED 5.
        self.deck_check = deck_check
        self.rng = random.Random(seed)
        self.decks = decks
        self.contents: Counter[Card] = shoe_composition(decks)
        self.order: list[Card] = []
        self.pos = 0
        self.seq = 0
        self.shuffle_no = 0
        self.door_open = False
        self.jammed = False
        self.sent_cards: list[tuple[int, str]] = []

    # -- programmatic API ------------------------------------------------------------
    def shuffle(self, decks: int | None = None) -> None:
        if self.door_open or self.jammed:
            raise SimError("cannot shuffle with the door open or a jam")
        if decks and decks != self.decks:
            self.decks = decks
            self.contents = shoe_composition(decks)
        self.shuffle_no = (self.shuffle_no + 1) & 0xFFFF
        self.emit("SHUFFLE_STARTED", shuffle=self.shuffle_no, decks=self.decks)
        self.order = list(self.contents.elements())
        self.rng.shuffle(self.order)
        self.pos = 0
        self.seq = 0
        self.emit(
            "SHUFFLE_FINISHED", shuffle=self.shuffle_no, decks=self.decks, cards=len(self.order)
        )

    @property
    def remaining(self) -> int:
        return len(self.order) - self.pos

    def deal(self, position: int = 0, card: Card | str | None = None) -> str:
        """Deal the next card of the shuffle (or ``card``, forced: a foreign card)."""
        if self.door_open or self.jammed:
            raise SimError("cannot deal with the door open or a jam")
        if card is None:
            if self.pos >= len(self.order):
                raise SimError("the shoe is empty")
            c = self.order[self.pos]
            self.pos += 1
        else:
            c = Card.parse(card) if isinstance(card, str) else card
        self.seq += 1
        self.emit("CARD", seq=self.seq, card=card_to_byte(c), position=position)
        self.sent_cards.append((self.seq, str(c)))
        return str(c)

    def check_deck(self) -> None:
        self.emit(
            "DECK_CHECK",
            shuffle=self.shuffle_no,
            decks=self.decks,
            counts=counts_from(self.contents.elements()),
        )

    def inject(self, fault: str, card: str | None = None) -> None:
        if fault == "jam":
            self.jammed = True
            self._fault("JAM", 0, None, "card jammed in the shoe")
        elif fault == "unjam":
            self.jammed = False
            self.emit("FAULT_CLEARED", fault=FAULT_IDS["JAM"])
        elif fault == "misread":
            if self.pos < len(self.order):
                self.pos += 1  # the card left the shoe but was not identified
            self.seq += 1
            self._fault("MISREAD", self.seq, None, "card could not be read")
        elif fault == "duplicate":
            dup = (
                Card.parse(card)
                if card
                else (Card.parse(self.sent_cards[-1][1]) if self.sent_cards else Card(1, "S"))
            )
            self.seq += 1
            self._fault(
                "DUPLICATE_CARD", self.seq, dup, f"{dup} seen more often than the shoe holds it"
            )
        elif fault == "door_open":
            self.door_open = True
            self._fault("DOOR_OPEN", 0, None, "shoe door open")
        elif fault == "door_close":
            self.door_open = False
            self.emit("FAULT_CLEARED", fault=FAULT_IDS["DOOR_OPEN"])
        elif fault == "missing_card":
            victim = Card.parse(card) if card else self.rng.choice(sorted(self.contents))
            if self.contents[victim]:
                self.contents[victim] -= 1
        elif fault == "extra_card":
            self.contents[Card.parse(card) if card else Card(1, "S")] += 1
        elif fault == "skip":
            self.seq += 1  # a card leaves unreported: the host sees a gap
            if self.pos < len(self.order):
                self.pos += 1
        else:
            raise ValueError(f"unknown shoe fault {fault!r}; known: {', '.join(INJECTABLE)}")

    def _fault(self, code: str, seq: int, card: Card | None, text: str) -> None:
        self.emit(
            "FAULT",
            fault=FAULT_IDS[code],
            seq=seq,
            card=card_to_byte(card) if card else UNKNOWN_CARD,
            text=text,
        )

    # -- the host's requests -----------------------------------------------------------
    def on_request(self, msg: Message) -> bytes:
        try:
            if msg.name == "SHUFFLE":
                if msg["decks"] > MAX_DECKS:  # a wire value, unchecked by the codec (u8)
                    raise Refuse(
                        RefusedReason.BAD_ARGUMENT,
                        f"a shoe holds 1 to {MAX_DECKS} decks, got {msg['decks']}",
                    )
                self.shuffle(msg["decks"] or None)
            elif msg.name == "CHECK_DECK":
                if not self.deck_check:
                    raise Refuse(RefusedReason.UNSUPPORTED, "this shoe cannot count its cards")
                if self.door_open or self.jammed:
                    raise SimError("cannot count the cards with the door open or a jam")
                self.check_deck()
            elif msg.name == "DEAL":
                self.deal(msg["position"])
            elif msg.name == "CLEAR_FAULT":
                pass  # latched faults (misread, duplicate) need nothing more in the simulator
            else:
                return super().on_request(msg)
        except SimError as exc:
            raise Refuse(RefusedReason.BUSY, str(exc)) from None
        return b""

    def conditions(self) -> int:
        return (self.door_open << 0) | (self.jammed << 1) | ((self.remaining == 0) << 3)
