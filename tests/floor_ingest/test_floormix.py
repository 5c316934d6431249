"""The realistic floor of issue 36 (``tablesim.floormix``): the games' shares and paces,
rounds of 7 to 60 bets whose totals add up as the table's do, and emulated tables that
sign them as a table does (the ingest's own verifier takes them)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from flooringest.messages import Incoming, Round
from flooringest.registry import load_file
from flooringest.verify import Announcements, Verifier
from tablesim.emulator import Emulator, recorded_rounds
from tablesim.floormix import (
    BETS,
    MACAU_MIX,
    plan_floor,
    rounds_per_second,
    scaled_round,
    totals_of,
)


def test_the_recorded_totals_are_the_sums_of_the_bets() -> None:
    """The table computed each recorded round's totals (tests/golden, from the demo);
    the emulator's rule, summing the bets, gives the same for every game it plays."""
    played = {g.game for g in MACAU_MIX}
    checked = 0
    for doc in recorded_rounds():
        if doc["game"] in played:
            assert totals_of(doc) == doc["totals"], doc["game"]
            checked += 1
    assert checked >= 9


@pytest.mark.parametrize("game", ["baccarat", "blackjack", "roulette"])
def test_a_round_twice_as_large_holds_twice_the_money(game: str) -> None:
    doc = next(r for r in recorded_rounds() if r["game"] == game)
    n = len(doc["bets"])
    big = scaled_round(doc, 2 * n)
    assert len(big["bets"]) == 2 * n
    ids = [b["bet_id"] for b in big["bets"]]
    assert len(set(ids)) == len(ids), "every bet has its own id"
    for k in ("stakes", "payout", "net", "commission", "house_net"):
        assert big["totals"][k] == 2 * doc["totals"][k], k
    assert doc["bets"] == big["bets"][:n], "the recorded bets kept as they were"
    # the rest of the round is the recorded one
    assert {k: v for k, v in big.items() if k not in ("bets", "totals")} == {
        k: v for k, v in doc.items() if k not in ("bets", "totals")
    }


def test_the_floor_has_each_game_in_its_share_at_its_pace() -> None:
    plans = plan_floor(1000)
    kinds = Counter(p.kind for p in plans)
    assert kinds == {"mini-baccarat": 400, "baccarat": 350, "squeeze-baccarat": 100,
                     "blackjack": 100, "roulette": 50}  # fmt: skip
    paces = {"mini-baccarat": (140, 200), "baccarat": (72, 72), "squeeze-baccarat": (50, 50),
             "blackjack": (50, 70), "roulette": (38, 38)}  # fmt: skip
    for p in plans:
        lo, hi = paces[p.kind]
        assert lo <= p.per_hour <= hi, p
    assert len({p.table_id for p in plans}) == 1000
    assert plan_floor(1000) == plans, "the same floor each time"
    # The city's 6,000 tables: the 100-330 rounds a second. Expected here:
    # 0.4*170 + 0.35*72 + 0.1*50 + 0.1*60 + 0.05*38 = 106.1 an hour per table.
    city = rounds_per_second(plan_floor(6000))
    assert 100 <= city <= 330
    assert city == pytest.approx(6000 * 106.1 / 3600, rel=0.02)
    assert Counter(p.kind for p in plan_floor(7)).total() == 7
    assert all(p.per_hour == 200 for p in plan_floor(10, per_hour=200))


def test_emulated_rounds_of_a_floor_are_signed_sized_and_verified(tmp_path: Path) -> None:
    plans = plan_floor(20)
    emu = Emulator("127.0.0.1", 1, plans, seed=5)
    registry = load_file(emu.write_registry(tmp_path / "tables.toml"))
    said = Announcements()
    verifier = Verifier(registry, said)
    sizes = []
    for tid, t in emu.tables.items():
        assert t.period == pytest.approx(3600 / emu.plans[tid].per_hour)
        for _ in range(10):
            seq, rid, raw = t.queue_round()
            assert t.anchor_raw is not None
            said.offer(tid, "anchor", t.anchor_raw, time.time())
            got = verifier.round(Incoming(tid, raw, time.time()))
            assert isinstance(got, Round), got
            doc = json.loads(raw)
            assert doc["game"] == emu.plans[tid].game
            assert doc["seq"] == seq and doc["round_id"] == rid
            assert len(doc["bets"]) == t.last_bets
            assert totals_of(doc) == doc["totals"]
            sizes.append(t.last_bets)
    assert min(sizes) >= BETS[0] and max(sizes) <= BETS[1]
    assert len(set(sizes)) > 40, "sizes drawn across the range"
    assert emu.bets_made == sum(sizes)
    games = {line.split('"')[1] for line in (tmp_path / "tables.toml").read_text().splitlines()
             if line.startswith("game = ")}  # fmt: skip
    assert games <= {"baccarat", "blackjack", "roulette"}


async def test_emulated_tables_publish_on_descriptors_above_1023(mosquitto_broker: object) -> None:
    """An emulator of thousands of tables holds more than 1,024 connections in one
    process; ``select()`` takes no descriptor above 1023 (the link's burst reader used
    it: every connection failed). Here the tables' sockets get descriptors above it."""
    import asyncio
    import os
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        pytest.skip(f"RLIMIT_NOFILE {soft}: cannot open descriptors above 1023")
    fillers = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert max(fillers) > 1023
        host, port = mosquitto_broker.host, mosquitto_broker.port  # type: ignore[attr-defined]
        emu = Emulator(host, port, plan_floor(3, per_hour=36000), client_prefix="fd")
        play = asyncio.create_task(emu.run(rounds_per_table=5))
        try:
            assert await emu.finished(60), f"unacknowledged {emu.unacknowledged()}"
        finally:
            emu.stop()
            await play
        assert emu.stats.published == 15 and emu.stats.connects == 3
    finally:
        for fd in fillers:
            os.close(fd)
