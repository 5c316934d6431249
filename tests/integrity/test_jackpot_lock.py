"""The jackpot lock (issue 19, item 8): on a hit every linked display (the sign, the
retained `jackpot` topic, hence the live view) shows the pending prize until its
payment is confirmed; simultaneous hits are paid one at a time in the order the
regulation pays them (61/2004 art. 10 4), 7): left to right from the croupier's left,
the royal flushes of one game together), a payment out of that order refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from firmware_host.auth import TableIdentity
from firmware_host.games.errors import CodedError
from firmware_host.journal import Journal
from firmware_host.schemas import PAYLOAD_SCHEMA_VERSION, validate
from firmware_host.table.engine import RoundEngine
from firmware_host.table.extension import TableExtensions
from firmware_host.table.jackpot import JackpotController, JackpotDisplay
from tests.daemon.test_jackpot_controller import CFG, NOTHING, PARAMS, ROYAL, play
from tests.signing import as_published

STRAIGHT_FLUSH = ["9H", "8H", "7H", "6H", "5H"]


class Sign:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []

    async def show_amount(self, amount: int, currency: str | None = None) -> bool:
        self.calls.append(("amount", amount, None))
        return True

    async def show_hit(self, amount: int, message: str = "JACKPOT", seconds: int = 30) -> bool:
        self.calls.append(("hit", amount, seconds))
        return True


async def test_simultaneous_hits_lock_every_display_in_the_regulations_order(
    tmp_path: Path,
) -> None:
    j = Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate())
    ext = TableExtensions()
    ctl = JackpotController(j.jackpot, j.db, PARAMS)
    sign = Sign()
    published: list[dict] = []
    JackpotDisplay(ctl, ext, publish=lambda p: published.append(dict(p, schema_version=PAYLOAD_SCHEMA_VERSION,
                   table_id="T1", currency=ctl.currency, updated_at="2026-05-09T07:00:00.000Z")),
                   sign=sign, display_ms=100)  # fmt: skip
    e = RoundEngine(CFG, j, jackpot=ctl, extensions=ext)
    # seat 5 a straight flush, seat 2 a royal flush, seat 7 nothing: one game, two hits
    payload = play(e, {5: STRAIGHT_FLUSH, 2: ROYAL, 7: NOTHING}, {2, 5, 7}, "g")
    hits = payload["jackpot"]["hits"]
    await asyncio.sleep(0.05)
    # the regulation's order of payment (the rules core's), recorded in that order
    order = [h["hit_id"] for h in hits]
    assert [h.hit_id for h in j.jackpot.unpaid_hits()] == order and len(order) == 2
    first, second = hits
    lock = published[-1]["locked"]
    assert lock["hit_id"] == first["hit_id"] and lock["amount"] == first["prize"]
    assert lock["waiting"] == 2
    validate("jackpot", as_published("jackpot", published[-1]))
    assert sign.calls[-1] == ("hit", first["prize"], 0)  # held: no time limit
    # the second hit cannot be paid first
    with pytest.raises(CodedError) as refused:
        ctl.confirm_payment(second["hit_id"], who="attendant")
    assert refused.value.code == "JACKPOT_HIT_OUT_OF_ORDER"
    # more play while the lock holds: the displays keep the pending prize
    play(e, {1: NOTHING}, {1}, "h")
    await asyncio.sleep(0.2)
    ext.tick()
    assert published[-1]["locked"]["hit_id"] == first["hit_id"]
    assert sign.calls[-1][0] == "hit"
    # paid in order: the lock moves to the next hit, then back to the pool
    ctl.confirm_payment(first["hit_id"], who="attendant")
    await asyncio.sleep(0.05)
    assert published[-1]["locked"]["hit_id"] == second["hit_id"]
    assert published[-1]["locked"]["waiting"] == 1
    assert sign.calls[-1] == ("hit", second["prize"], 0)
    ctl.confirm_payment(second["hit_id"], who="attendant")
    await asyncio.sleep(0.05)
    assert published[-1]["locked"] is None
    assert sign.calls[-1] == ("amount", ctl.meter.pool, None)
    validate("jackpot", as_published("jackpot", published[-1]))
