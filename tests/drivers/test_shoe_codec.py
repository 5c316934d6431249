"""Reference shoe protocol: card bytes, deck checks, the host's own checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.reflink.messages import MessageError, Sender
from drivers.shoe.codec import PROFILE, ShoeTracker, card_from_byte, card_to_byte, check_counts
from drivers.shoe.model import ShoeModel
from firmware_host.games.cards import Card, deck
from tablecommon.events.shoe import (
    CardDealt,
    CardMisread,
    DeckChecked,
    DoorClosed,
    DoorOpened,
    DuplicateCard,
    SequenceGap,
    ShoeJam,
)

# The card byte as docs/protocols/shoe.md defines it: rank in the high nibble
# (A=1 .. K=13), suit in the low nibble (S=0, H=1, C=2, D=3).
DOC_CARDS = {"AS": 0x10, "TD": 0xA3, "KD": 0xD3, "2H": 0x21, "QC": 0xC2, "9S": 0x90}


@pytest.mark.parametrize(("card", "byte"), DOC_CARDS.items())
def test_card_byte_as_documented(card: str, byte: int) -> None:
    assert card_to_byte(card) == byte
    assert str(card_from_byte(byte)) == card


def test_all_52_cards_have_distinct_bytes() -> None:
    assert len({card_to_byte(c) for c in deck()}) == 52


@given(st.integers(0, 255))
def test_card_byte_decoding_raises_only_message_error(b: int) -> None:
    try:
        c = card_from_byte(b)
    except MessageError:
        assert b >> 4 not in range(1, 14) or b & 0x0F > 3
        return
    assert card_to_byte(c) == b


def test_deck_check_names_missing_and_extra_cards() -> None:
    counts = bytearray([2] * 52)  # two decks
    counts[0] = 1  # one AS missing (AS is first in the documented order)
    counts[51] = 3  # one KD extra (KD is last)
    counts[13] = 0  # both AH missing
    missing, extra = check_counts(2, bytes(counts))
    assert missing == ("AS", "AH", "AH")
    assert extra == ("KD",)
    assert check_counts(2, bytes([2] * 52)) == ((), ())
    with pytest.raises(MessageError):
        check_counts(2, bytes(51))


def feed(tracker: ShoeTracker, model: ShoeModel) -> list[object]:
    out: list[object] = []
    for p in model.take_outbox():
        out += tracker.apply(PROFILE.decode(p, Sender.DEVICE))
    return out


def test_tracker_turns_every_message_into_its_event() -> None:
    m = ShoeModel(decks=1, seed=7)
    t = ShoeTracker("shoe", decks=1)
    m.shuffle()
    dealt = [m.deal() for _ in range(3)]
    evs = feed(t, m)
    cards = [e for e in evs if isinstance(e, CardDealt)]
    assert [(c.seq, c.card) for c in cards] == list(enumerate(dealt, 1))
    for fault, cls in [
        ("jam", ShoeJam),
        ("misread", CardMisread),
        ("duplicate", DuplicateCard),
        ("door_open", DoorOpened),
        ("door_close", DoorClosed),
    ]:
        m.inject(fault)
        (ev,) = feed(t, m)
        assert isinstance(ev, cls), fault


def test_tracker_reports_a_sequence_gap_and_duplicates_beyond_the_shoe() -> None:
    m = ShoeModel(decks=1, seed=1)
    t = ShoeTracker("shoe", decks=1)
    m.shuffle()
    m.deal(card="AS")
    m.inject("skip")
    m.deal(card="KH")
    m.deal(card="AS")  # a second ace of spades from a one-deck shoe
    evs = feed(t, m)
    gaps = [e for e in evs if isinstance(e, SequenceGap)]
    assert [(g.expected, g.seq) for g in gaps] == [(2, 3)]
    dups = [e for e in evs if isinstance(e, DuplicateCard)]
    assert [(d.card, d.seq) for d in dups] == [("AS", 4)]
    assert [e.card for e in evs if isinstance(e, CardDealt)] == [
        "AS",
        "KH",
    ]  # the duplicate is not dealt


def test_deck_check_from_the_simulator_names_injected_cards() -> None:
    m = ShoeModel(decks=2, seed=3)
    m.inject("missing_card", "7H")
    m.inject("extra_card", "QS")
    m.check_deck()
    (ev,) = feed(ShoeTracker(decks=2), m)
    assert isinstance(ev, DeckChecked)
    assert (ev.missing, ev.extra, ev.counted, ev.ok) == (("7H",), ("QS",), 104, False)


def test_seeded_shuffle_is_reproducible_and_a_full_shoe() -> None:
    a, b = ShoeModel(decks=6, seed=42), ShoeModel(decks=6, seed=42)
    a.shuffle()
    b.shuffle()
    assert a.order == b.order
    assert sorted(a.order) == sorted(list(deck()) * 6)
    c = ShoeModel(decks=6, seed=43)
    c.shuffle()
    assert c.order != a.order
    assert Card(1, "S") in a.order
