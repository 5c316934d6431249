"""The shoe checked by its own count (issue 37): the integrity monitor asks the shoe for
its deck check at every new shoe and at the end of each shoe, journals the answer and
raises what it misses or holds too many; a shoe that offers no deck check is left to
the composition statistics; a check refused as busy is asked again, and one never
answered is an alert. The reference driver back to back with the shoe simulator, the
monitor fed the driver's events as the daemon feeds them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from drivers.reflink.bench import FAST, SIM_TIMERS, Bench, driver_kwargs, wait_for, wait_online
from drivers.shoe.driver import ShoeDriver
from drivers.shoe.sim import ShoeSimulator
from firmware_host.auth import TableIdentity
from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.monitor import IntegrityMonitor
from firmware_host.integrity.settings import IntegritySettings
from firmware_host.journal import Journal
from firmware_host.schemas import validate
from firmware_host.table.extension import TableExtensions


@dataclass
class Rig:
    sim: ShoeSimulator
    drv: ShoeDriver
    mon: IntegrityMonitor
    j: Journal

    def codes(self) -> list[tuple[str, str]]:
        return [(a.code, a.subject) for a in self.j.alerts.active()]

    def checks(self) -> list[dict[str, Any]]:
        return [e.data for e in self.j.chain.events(500) if e.kind == "deck_check"]

    def asked(self) -> int:
        return sum(1 for m in self.sim.model.requests if m.name == "CHECK_DECK")


@contextlib.asynccontextmanager
async def rig(
    tmp_path: Path, *, decks: int = 8, seed: int = 3, deck_check: bool = True, **settings: Any
) -> AsyncIterator[Rig]:
    sim = ShoeSimulator(decks=decks, seed=seed, timers=SIM_TIMERS, deck_check=deck_check)
    bench = Bench(sim)
    drv = ShoeDriver("shoe", {"port": "unused", "decks": decks, **FAST}, **driver_kwargs(bench))
    j = Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate())
    ext = TableExtensions()
    mon = IntegrityMonitor(
        ext, alerts=Alerts(j.alerts, j.db), chain=j.chain, table_id="T1", result_device="shoe",
        settings=IntegritySettings(**settings), shoe_name="shoe", decks=decks,
        deck_check=drv.request_deck_check,
    )  # fmt: skip
    sub = drv.events()

    async def pump() -> None:  # the daemon's _on_device_event
        async for ev in sub:
            await mon.on_device_event("shoe", ev)

    tasks = [asyncio.create_task(pump()), asyncio.create_task(ext.run_ticks(0.01))]
    await drv.start()
    try:
        await wait_online(drv)
        yield Rig(sim, drv, mon, j)
    finally:
        for t in tasks:
            t.cancel()
        await drv.stop()
        await bench.close()


async def test_a_missing_and_an_extra_card_found_at_the_new_shoe(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        await r.sim.shuffle()  # a full shoe: checked, quiet
        await wait_for(lambda: len(r.checks()) == 1)
        (ok,) = r.checks()
        assert (ok["purpose"], ok["shuffle"], ok["ok"], ok["counted"]) == ("new_shoe", 1, True, 416)
        assert r.codes() == []
        await r.sim.inject("missing_card", "7H")  # between two shoes, the set loses a card
        await r.sim.inject("extra_card", "AS")  # and gains one
        await r.sim.shuffle()
        await wait_for(lambda: len(r.checks()) == 2)
        last = r.checks()[-1]
        assert (last["purpose"], last["shuffle"], last["missing"], last["extra"]) == (
            "new_shoe", 2, ["7H"], ["AS"],
        )  # fmt: skip
        # (shoe 1 dealt nothing: it has no end to check)
        assert sorted(r.codes()) == [("SHOE_CARDS_MISSING", "shoe:2:check"),
                                     ("SHOE_CARD_EXCESS", "shoe:2:check")]  # fmt: skip
        missing = next(a for a in r.j.alerts.active() if a.code == "SHOE_CARDS_MISSING")
        assert missing.evidence["missing"] == ["7H"] and missing.evidence["purpose"] == "new_shoe"
        assert "7H" in missing.message
        for m in r.j.outbox.pending():  # the answers are published on `events`, signed
            if m.topic == "events":
                validate("event", m.payload)


async def test_a_card_taken_during_the_shoe_found_at_its_end(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        await r.sim.shuffle()
        await wait_for(lambda: len(r.checks()) == 1)
        dealt = [await r.sim.deal() for _ in range(30)]
        await r.sim.inject("missing_card", dealt[4])  # palmed after it was dealt
        await wait_for(lambda: r.mon.shoe is not None and r.mon.shoe.cards == 30)
        await r.sim.shuffle()  # the next shoe: the end of this one, then the new one
        await wait_for(lambda: len(r.checks()) == 3)
        end, new = r.checks()[1:]
        assert (end["purpose"], end["shuffle"], end["missing"]) == ("end_of_shoe", 1, [dealt[4]])
        assert (new["purpose"], new["shuffle"], new["missing"]) == ("new_shoe", 2, [dealt[4]])
        assert sorted(r.codes()) == [("SHOE_CARDS_MISSING", "shoe:1:check"),
                                     ("SHOE_CARDS_MISSING", "shoe:2:check")]  # fmt: skip


async def test_the_new_shoe_command_ends_the_shoe_and_asks(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        await r.sim.shuffle()
        await wait_for(lambda: len(r.checks()) == 1)
        for _ in range(10):
            await r.sim.deal()
        await wait_for(lambda: r.mon.shoe is not None and r.mon.shoe.cards == 10)
        r.mon.new_shoe({"source": "console:tech1", "after_seq": 3})  # the dealer's new shoe
        await wait_for(lambda: len(r.checks()) == 2)
        assert r.checks()[-1]["purpose"] == "end_of_shoe" and r.checks()[-1]["ok"] is True
        assert r.codes() == []


async def test_a_duplicate_the_driver_stops_is_an_excess(tmp_path: Path) -> None:
    async with rig(tmp_path, decks=2, deck_check=True) as r:
        await r.sim.shuffle()
        for _ in range(3):  # a third queen of hearts in 2 decks: the driver's DuplicateCard
            await r.sim.deal(card="QH")
        await wait_for(lambda: bool(r.codes()))
        assert r.codes() == [("SHOE_CARD_EXCESS", "shoe:1:QH")]


async def test_a_shoe_without_a_deck_check_is_left_to_the_composition(tmp_path: Path) -> None:
    async with rig(tmp_path, deck_check=False, shoe_unseen_max=24) as r:
        await r.sim.shuffle()
        await wait_for(lambda: r.mon.deck is not None and r.mon.deck.offered is False)
        (ev,) = [e for e in r.j.chain.events(50) if e.kind == "deck_check_unavailable"]
        assert "cannot count" in ev.data["refused"]
        for _ in range(8 * 52 - 30):  # 30 cards behind the cut: more than 24 never seen
            await r.sim.deal()
        await wait_for(lambda: r.mon.shoe is not None and r.mon.shoe.cards == 8 * 52 - 30, 20)
        await r.sim.shuffle()
        await wait_for(lambda: bool(r.codes()))
        assert r.codes() == [("SHOE_CARDS_MISSING", "shoe:1")]  # the composition's finding
        assert r.asked() == 1 and r.checks() == []  # asked once, never again


async def test_a_busy_shoe_is_asked_again_and_a_check_never_answered_is_an_alert(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        assert r.mon.deck is not None
        r.mon.deck.retry_s = 0.05
        await r.sim.shuffle()
        await wait_for(lambda: len(r.checks()) == 1)
        await r.sim.inject("door_open")
        await r.sim.inject("missing_card", "KD")
        r.mon.new_shoe({"source": "console:tech1"})  # nothing dealt: no end to check
        assert r.mon.deck.pending == []
        r.mon.deck.ask("end_of_shoe", 1)  # as a shoe that dealt would ask
        await wait_for(lambda: r.asked() >= 4)  # refused busy, asked again
        assert r.checks()[1:] == [] and r.codes() == []
        await r.sim.inject("door_close")
        await wait_for(lambda: len(r.checks()) == 2)
        assert r.checks()[-1]["missing"] == ["KD"]
        assert r.codes() == [("SHOE_CARDS_MISSING", "shoe:1:check")]
        # the door stays open beyond the time allowed: the check is given up, raised
        r.mon.deck.timeout_s = 0.3
        await r.sim.inject("door_open")
        r.mon.deck.ask("new_shoe", 5)
        await wait_for(lambda: ("SHOE_DECK_UNCHECKED", "shoe:5:check") in r.codes())
        a = next(a for a in r.j.alerts.active() if a.code == "SHOE_DECK_UNCHECKED")
        assert a.evidence["tries"] >= 2 and "door" in a.evidence["error"]
        assert r.mon.deck.pending == []


@pytest.mark.parametrize("enabled", [True, False])
async def test_the_setting_turns_the_asking_off(tmp_path: Path, enabled: bool) -> None:
    async with rig(tmp_path, shoe_deck_check=enabled) as r:
        await r.sim.shuffle()
        await asyncio.sleep(0.2)
        assert r.asked() == (1 if enabled else 0)
