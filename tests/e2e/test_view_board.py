"""The board facing the players and the pit page, in Debian's Chromium (issue 33).

For each of the ten games a demo table (a real daemon, its simulated device, signed
MQTT) plays rounds with a dealer signed in; its board (``/board/<id>``) must show the
last settled round's result, the history, and the limits per bet type with the
currency, at 1920x1080 and at 390 px wide without scrolling sideways; the language
switch changes the bet names to the regulations' (``tableview/static/i18n.json``). The
pit page with 12 tables shows each table's handle and win (checked against the rounds
each table published, added up here), the pit's totals and an open alert; a stud poker
table's board shows the jackpot meter beside a pending hit.

Skipped, saying so, where Chromium is not installed (``.ci/run`` installs it)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from firmware_host.mqtt import MqttSettings
from tablesim.broker import EmbeddedBroker
from tableview.server import ViewServer
from tests.e2e._cdp import Browser, find_chromium
from tests.e2e.viewshots import Pit, play_game, record

ROOT = Path(__file__).resolve().parents[2]
WORDS = json.loads((ROOT / "tableview" / "static" / "i18n.json").read_text(encoding="utf-8"))
CHROMIUM = find_chromium()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None and not os.environ.get("TABLECTL_REQUIRE_CHROMIUM"),
        reason="Chromium is not installed (apt-get install chromium); the browser tests of "
        "the board need it",
    ),
]

#: Rounds played per game (a shoe game a few more, to have roads).
ROUNDS = {"baccarat": 4, "roulette": 3}

#: What the board shows, read by the test.
PROBE = """(() => {
  const q = (s) => document.querySelector(s);
  const r = q('[data-result]');
  return {
    result: r ? r.dataset.result : null,
    round: q('#board').dataset.round,
    history: (q('[data-history]') || {}).dataset ? q('[data-history]').dataset.history : null,
    coups: q('[data-coups]') ? q('[data-coups]').dataset.coups : null,
    bets: [...document.querySelectorAll('tr[data-bet]')].map(e => [e.dataset.bet,
      e.querySelector('.bet-name').firstChild.textContent, e.querySelector('[data-min]').textContent,
      e.querySelector('[data-max]').textContent]),
    currency: q('table.limits') ? q('table.limits').dataset.currency : null,
    limitsText: (q('.limits-panel') || {}).textContent || '',
    dealer: q('[data-dealer]') ? q('[data-dealer]').dataset.dealer : null,
    scrollWidth: document.documentElement.scrollWidth,
    game: q('#board').dataset.game,
  };
})()"""


def expected_result(o: dict[str, Any]) -> str:
    """The ``data-result`` a round's outcome must give, read from the outcome as the
    table published it."""
    if "number" in o:
        return str(o["number"])
    if "dice" in o and "total" in o:
        return "".join(map(str, o["dice"]))
    if "player" in o and "winner" in o:
        return str(o["winner"])
    if isinstance(o.get("dealer"), dict):
        return str(o["dealer"]["total"])
    if "dealer_hand" in o:
        return str(o["dealer_hand"])
    if "hands" in o:
        return f"banker-{o['banker']}"
    return f"winner-{o['winner']}"


def money_text(amount: int, digits: int) -> str:
    whole, rest = divmod(amount, 10**digits)
    return f"{whole:,}" + (f".{rest:0{digits}d}" if rest else "")


@pytest.mark.parametrize(
    "game",
    ["roulette", "sicbo", "fish-prawn-crab", "fantan", "baccarat", "blackjack", "stud-poker",
     "super-pan-9", "paikao", "mahjong"],
)  # fmt: skip
async def test_the_board_shows_the_result_history_and_limits(game: str) -> None:
    assert CHROMIUM is not None, "TABLECTL_REQUIRE_CHROMIUM is set and Chromium is missing"
    t = await play_game(game, ROUNDS.get(game, 2), dealer="ana")
    try:
        assert t.view is not None and t.floor is not None
        last = t.rounds[-1]
        limits = next(m.json() for m in reversed(t.floor.messages) if m.topic == "limits")
        url = f"{t.view.url}board/{t.table_id}"
        for width, height in ((1920, 1080), (390, 844)):
            async with Browser(CHROMIUM, width=width, height=height) as b:
                await b.open(url + "?lang=en")
                await b.wait_for("document.querySelector('[data-result]') !== null", 20)
                await b.wait_for(
                    f"document.getElementById('board').dataset.round === {json.dumps(last['round_id'])}",
                    10,
                )
                shown = await b.eval(PROBE)
                assert shown["game"] == game
                assert shown["result"] == expected_result(last["outcome"]), shown
                assert shown["dealer"] == "ana"
                assert shown["scrollWidth"] <= width, f"{game}: scrolls sideways at {width} px"
                # the history in the game's form: every round played is in it
                if game == "baccarat":
                    assert int(shown["coups"]) == len(t.rounds)
                elif "number" in last["outcome"]:
                    numbers = [str(r["outcome"]["number"]) for r in reversed(t.rounds)]
                    assert shown["history"].split(",")[: len(numbers)] == numbers
                else:
                    assert int(shown["history"]) == min(len(t.rounds), 10)
                # the limits, per bet type, with the currency, as the table published them
                rows = limits["bet_types"]
                if not rows:
                    assert WORDS["ui"]["no_bets"]["en"] in shown["limitsText"]
                else:
                    assert shown["currency"] == limits["currency"] == "MOP"
                    assert [r[0] for r in shown["bets"]] == [r["bet_type"] for r in rows]
                    for (bet, name, lo, hi), row in zip(shown["bets"], rows, strict=True):
                        assert name == WORDS["games"][game]["bets"][bet]["en"]
                        assert lo == money_text(row["min"], limits["minor_digits"])
                        assert hi == money_text(row["max"], limits["minor_digits"])
                if width == 390 and rows:
                    # the language switch: the regulations' Chinese names, then Portuguese
                    for lang in ("zh", "pt"):
                        await b.eval(f"document.querySelector('button[data-lang={lang}]').click()")
                        names = await b.eval(PROBE)
                        want = [WORDS["games"][game]["bets"][r["bet_type"]][lang] for r in rows]
                        assert [r[1] for r in names["bets"]] == want
                        assert names["scrollWidth"] <= width
    finally:
        await t.stop()


async def test_the_pit_of_twelve_tables_and_a_pending_jackpot_hit() -> None:
    """12 tables on the pit page: each one's handle and win added up from the rounds it
    published, the pit's total, an open alert not acknowledged; sortable; no sideways
    scrolling at 390 px. A stud table's jackpot hit pending payment: its board shows the
    meter and the hit beside it."""
    assert CHROMIUM is not None, "TABLECTL_REQUIRE_CHROMIUM is set and Chromium is missing"
    played = []
    for game, n in (("roulette", 3), ("stud-poker", 2), ("baccarat", 3)):
        t = await play_game(game, n)
        try:
            played.append(record(t, game))
        finally:
            await t.stop()
    stud = next(p for p in played if p.game == "stud-poker")
    jackpot = dict(stud.retained["jackpot"])
    jackpot["locked"] = {"hit_id": "h-1", "amount": 80_000_000, "round_id": stud.rounds[-1]["round_id"],
                         "seat": 4, "hand": "royal_flush", "waiting": 1}  # fmt: skip
    stud.retained["jackpot"] = jackpot
    broker = EmbeddedBroker()
    ep = await broker.start()
    try:
        pit = Pit(ep.host, ep.port, played, n=12)
        async with ViewServer(MqttSettings(host=ep.host, port=ep.port), tables=["MO-"], port=0,
                              keys=pit.keys) as view:  # fmt: skip
            await view.wait_subscribed()
            await pit.publish(alert_on=0)
            await asyncio.sleep(1.0)
            want = {tid: (sum(r["totals"]["stakes"] for r in p.rounds if r["status"] == "settled"),
                          sum(r["totals"]["house_net"] for r in p.rounds if r["status"] == "settled"))
                    for tid, p, _ in pit.tables}  # fmt: skip
            for width, height in ((1920, 1080), (390, 844)):
                async with Browser(CHROMIUM, width=width, height=height) as b:
                    await b.open(view.url)
                    await b.wait_for(
                        "document.querySelectorAll('tbody tr[data-table]').length === 12", 20
                    )
                    await b.wait_for(
                        "[...document.querySelectorAll('tbody td[data-handle]')].every(e => e.dataset.handle !== '0')",
                        20,
                    )
                    rows = await b.eval("""[...document.querySelectorAll('tbody tr[data-table]')].map(tr => [
                      tr.dataset.table, +tr.querySelector('[data-handle]').dataset.handle,
                      +tr.querySelector('[data-win]').dataset.win,
                      tr.querySelector('[data-col=alerts]').dataset.unacknowledged || '0',
                      tr.querySelector('[data-col=witness]').textContent])""")
                    assert {r[0]: (r[1], r[2]) for r in rows} == want
                    assert {r[0] for r in rows if r[3] == "1"} == {pit.tables[0][0]}
                    assert all(r[4] == "not built yet" for r in rows)
                    total = await b.eval(
                        "+document.querySelector('tfoot tr.total [data-handle]').dataset.handle"
                    )
                    assert total == sum(h for h, _ in want.values())
                    assert "from the settled rounds" in await b.eval(
                        "document.getElementById('basis').textContent"
                    )
                    assert await b.eval("document.documentElement.scrollWidth") <= width
                    if width == 1920:  # sortable: by handle, largest first after two clicks
                        await b.eval("document.querySelector('th[data-sort=handle]').click()")
                        await b.eval("document.querySelector('th[data-sort=handle]').click()")
                        order = await b.eval(
                            "[...document.querySelectorAll('tbody [data-handle]')].map(e => +e.dataset.handle)"
                        )
                        assert order == sorted(order, reverse=True)
            stud_id = next(tid for tid, p, _ in pit.tables if p.game == "stud-poker")
            async with Browser(CHROMIUM, width=1920, height=1080) as b:
                await b.open(f"{view.url}board/{stud_id}")
                await b.wait_for("document.querySelector('[data-jackpot-locked]') !== null", 20)
                meter = await b.eval("+document.querySelector('[data-jackpot]').dataset.jackpot")
                locked = await b.eval(
                    "+document.querySelector('[data-jackpot-locked]').dataset.jackpotLocked"
                )
                assert meter == jackpot["amount"] and locked == 80_000_000
                visible = await b.eval("""(() => { const r = document.querySelector('.meter').getBoundingClientRect();
                  return r.width > 0 && r.bottom <= innerHeight; })()""")
                assert visible
    finally:
        await broker.stop()
