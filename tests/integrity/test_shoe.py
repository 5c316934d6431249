"""The shoe's composition (issue 19, item 3): cards dealt by the shoe simulator's own
shuffle of N decks; a card seen more often than the decks hold, cards never seen at the
end of a shoe, a shoe's length in coups, the shoe's deck check; and the same through
the table's extension from the shoe driver's events."""

from __future__ import annotations

import asyncio
from pathlib import Path

from drivers.shoe.model import ShoeModel
from firmware_host.auth import TableIdentity
from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.monitor import IntegrityMonitor
from firmware_host.integrity.settings import IntegritySettings
from firmware_host.integrity.shoe import ShoeComposition
from firmware_host.journal import Journal
from firmware_host.table.extension import TableExtensions
from tablecommon.events.shoe import CardDealt, DeckChecked, ShuffleStarted


def test_a_full_shoe_is_quiet_and_a_foreign_card_is_found() -> None:
    model = ShoeModel(decks=8, seed=4)
    model.shuffle()
    comp = ShoeComposition("shoe", decks=8, unseen_max=16)
    assert comp.new_shoe(8, model.shuffle_no) == []
    # deal to the cut: 14 cards stay behind
    found = [f for _ in range(8 * 52 - 14) for f in comp.card(model.deal())]
    assert found == [] and comp.cards == 402
    # the card the shoe just dealt comes out a ninth time... after eight already
    last = model.sent_cards[-1][1]
    extra = [f for _ in range(8 - comp.seen[last] + 1) for f in comp.card(last)]
    assert [f.code for f in extra] == ["SHOE_CARD_EXCESS"]
    assert extra[0].evidence["seen"] == 9 and extra[0].evidence["decks"] == 8


def test_end_of_shoe_missing_cards_and_length() -> None:
    model = ShoeModel(decks=6, seed=9)
    model.shuffle()
    comp = ShoeComposition("shoe", decks=6, unseen_max=20, coups_min=50, coups_max=90)
    comp.new_shoe(6, 1)
    for _ in range(6 * 52 - 60):  # 60 cards never dealt: a short shoe (or cards taken)
        comp.card(model.deal())
    for _ in range(40):
        comp.coup()
    found = comp.end()
    assert [f.code for f in found] == ["SHOE_CARDS_MISSING", "SHOE_LENGTH"]
    missing = found[0].evidence
    assert missing["unseen"] == 60 and sum(missing["never_seen"].values()) == 60
    # the cards never seen are exactly those the shoe still holds
    left = {}
    for c in model.order[model.pos :]:
        left[str(c)] = left.get(str(c), 0) + 1
    assert missing["never_seen"] == left
    assert found[1].evidence["coups"] == 40


def test_the_shoe_events_through_the_extension(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate())
    mon = IntegrityMonitor(
        TableExtensions(), alerts=Alerts(j.alerts, j.db), chain=j.chain, table_id="T1", result_device="shoe",
        settings=IntegritySettings(shoe_coups_min=2), decks=8,
    )  # fmt: skip

    def ev(e: object) -> None:
        asyncio.run(mon.on_device_event("shoe", e))  # type: ignore[arg-type]

    # the procedure's new_shoe hook first, then the shoe's own event: one shoe
    mon.new_shoe({"source": "shoe", "after_seq": 0, "shuffle": 1})
    ev(ShuffleStarted(device="shoe", shuffle=1, decks=8))
    for _ in range(9):
        ev(CardDealt(device="shoe", card="QH", seq=1))
    assert [a.code for a in j.alerts.active()] == ["SHOE_CARD_EXCESS"]
    mon.round_settled({"round_id": "r1", "outcome": {}, "bets": []})
    ev(DeckChecked(device="shoe", shuffle=1, decks=8, counted=415, missing=("AS",), extra=()))
    # the next shuffle ends the shoe: one coup, fewer than 2
    ev(ShuffleStarted(device="shoe", shuffle=2, decks=8))
    assert [a.code for a in j.alerts.active()] == [
        "SHOE_CARD_EXCESS", "SHOE_CARDS_MISSING", "SHOE_LENGTH",
    ]  # fmt: skip
    (done,) = [e for e in j.chain.events(50) if e.kind == "shoe_finished"]
    assert done.data == {"shoe": "shoe", "shuffle": 1, "decks": 8, "cards_dealt": 9, "coups": 1}
    (check,) = [e for e in j.chain.events(50) if e.kind == "deck_check"]  # the shoe's own, unasked
    assert check.data["purpose"] == "device" and check.data["missing"] == ["AS"]
    from firmware_host.schemas import validate

    published = [m for m in j.outbox.pending() if m.topic == "events"]
    for m in published:
        validate("event", m.payload)
    assert [b'"deck_check"' in m.payload for m in published] == [True, False]
    assert b'"shoe_finished"' in published[1].payload
