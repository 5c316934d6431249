"""The jackpot sign checked against the board's list (issue 16 item 1): it follows the
meter, shows a hit's message and prize, is rebuilt after a restart, and a slow or
offline sign never holds up the round."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from firmware_host.journal import Journal
from firmware_host.table.engine import RoundEngine
from firmware_host.table.extension import TableExtensions
from firmware_host.table.jackpot import JackpotController, JackpotDisplay, JackpotSign
from tests.daemon.test_jackpot_controller import CFG, NOTHING, PARAMS, ROYAL, play


class SlowSign:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls: list[tuple[str, int]] = []

    async def show_amount(self, amount: int, currency: str | None = None) -> bool:
        await asyncio.sleep(self.delay)
        self.calls.append(("amount", amount))
        return False  # offline: kept by the driver, not shown

    async def show_hit(self, amount: int, message: str = "JACKPOT", seconds: int = 30) -> bool:
        await asyncio.sleep(self.delay)
        self.calls.append(("hit", amount))
        return False


async def test_a_hit_shows_on_the_sign_and_a_slow_sign_delays_nothing(tmp_path: Path) -> None:
    sign = SlowSign(delay=1.0)
    assert isinstance(sign, JackpotSign)
    j = Journal(tmp_path / "j.sqlite3")
    ext = TableExtensions()
    ctl = JackpotController(j.jackpot, j.db, PARAMS)
    published: list[dict] = []
    JackpotDisplay(ctl, ext, publish=lambda p: published.append(dict(p)), sign=sign, display_ms=100)
    e = RoundEngine(CFG, j, jackpot=ctl, extensions=ext)
    t0 = time.perf_counter()
    payload = play(e, {7: ROYAL, 3: NOTHING}, {7}, "a")
    assert time.perf_counter() - t0 < 0.5  # the sign's second per message is not waited for
    (hit,) = payload["jackpot"]["hits"]
    await asyncio.sleep(2.5)
    # 61/2004 art. 10: the royal flush takes the pool; the jackpot lock (issue 19): the
    # sign holds the hit's prize until its payment is confirmed, then the new amount
    assert sign.calls[-1] == ("hit", hit["prize"])
    assert ("amount", ctl.meter.pool) not in sign.calls
    assert published[-1]["amount"] == ctl.meter.pool
    assert published[-1]["locked"]["amount"] == hit["prize"]
    ctl.confirm_payment(hit["hit_id"], who="attendant")
    await asyncio.sleep(1.5)
    assert sign.calls[-1] == ("amount", ctl.meter.pool) and published[-1]["locked"] is None
