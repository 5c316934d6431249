"""The board facing the players and the pit page, in Debian's Chromium (issue 33).

For each of the ten games a demo table (a real daemon, its simulated device, signed
MQTT) plays rounds with a dealer signed in; its board (``/board/<id>``) must show the
last settled round's result, the history, and the limits per bet type with the
currency; at 1920x1080 and at 1080x1920 (portrait) all of it on the screen (a screen
facing the players cannot be scrolled: the oldest history gives way), at 390 px wide
without scrolling sideways; the last result is labelled with its own round, not the
one that opened after it; the language
switch changes the bet names to the regulations' (``tableview/static/i18n.json``). The
pit page with 12 tables shows each table's handle, win and rounds per hour (checked
against the rounds each table published, added up here), the pit's totals, an open
alert, a witness holding a disputed result; a stud poker table's board shows the jackpot
meter beside a pending hit.

Skipped, saying so, where Chromium is not installed (``.ci/run`` installs it)."""

from __future__ import annotations

import asyncio
import json
import math
import os
from datetime import datetime
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

#: Rounds played per game (a shoe game a few more, to have roads; roulette and sic bo
#: enough for their history to fill a landscape screen).
ROUNDS = {"baccarat": 4, "roulette": 13, "sicbo": 10}

#: What the board shows, read by the test.
PROBE = """(() => {
  const q = (s) => document.querySelector(s);
  const r = q('[data-result]');
  return {
    result: r ? r.dataset.result : null,
    round: q('#board').dataset.round,
    resultSeq: (q('.result-panel h2 .seq') || {}).textContent || null,
    tiles: [...document.querySelectorAll('.result-panel [data-tile]')].map(e => e.dataset.tile),
    resultText: (q('.result-panel') || {}).textContent || '',
    history: (q('[data-history]') || {}).dataset ? q('[data-history]').dataset.history : null,
    coups: q('[data-coups]') ? q('[data-coups]').dataset.coups : null,
    bets: [...document.querySelectorAll('tr[data-bet]')].map(e => [e.dataset.bet,
      e.querySelector('.bet-name').firstChild.textContent, e.querySelector('[data-min]').textContent,
      e.querySelector('[data-max]').textContent]),
    currency: q('table.limits') ? q('table.limits').dataset.currency : null,
    limitsText: (q('.limits-panel') || {}).textContent || '',
    dealer: q('[data-dealer]') ? q('[data-dealer]').dataset.dealer : null,
    scrollWidth: document.documentElement.scrollWidth,
    scrollHeight: document.documentElement.scrollHeight,
    innerHeight: innerHeight,
    footer: document.querySelector('footer.bottom').getBoundingClientRect().bottom,
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


#: The table page's last rounds, read by the test.
ROUNDS_PROBE = """[...document.querySelectorAll('table.rounds tr[data-round]')].map(tr => {
  const col = (c) => tr.querySelector(`[data-col=${c}]`).textContent;
  const res = tr.querySelector('td.result');
  return {id: tr.dataset.round, staked: col('staked'), returned: col('returned'), won: col('won'),
          house: col('house'), result: res.textContent, drawn: res.querySelectorAll('*').length};
})"""


def minor(text: str, digits: int) -> int | None:
    """A money figure as the page prints it ("1,688.00", "-35.00") in minor units; None
    for the "–" of a round with no stakes."""
    if text == "–":
        return None
    neg, text = text.startswith("-"), text.lstrip("-").replace(",", "")
    whole, _, frac = text.partition(".")
    value = int(whole) * 10**digits + (int(frac.ljust(digits, "0")) if frac else 0)
    return -value if neg else value


def round_money(r: dict[str, Any]) -> dict[str, int]:
    """A round's four money columns, added up here from what it moved as published, bet
    by bet and, at a player-banked table, the bank's layers (``bank.layers``: the
    banker's capital is staked against the places, ``docs/rules/super-pan-9.md``): staked
    (the stakes and capital), returned (what of them went back: a stake less what it
    lost), won (what they won, net of commission) and house (the table's ``house_net``)."""
    moved = [(b["stake"], b["net"]) for b in r["bets"]]
    moved += [(x["capital"], x["net"]) for x in (r.get("bank") or {}).get("layers", [])]
    return {
        "staked": sum(stake for stake, _ in moved),
        "returned": sum(stake + min(net, 0) for stake, net in moved),
        "won": sum(max(net, 0) for _, net in moved),
        "house": r["totals"]["house_net"],
    }


def rounds_per_hour(rounds: list[dict[str, Any]]) -> str:
    """The pit's rounds per hour of a table as the page must print it: its rounds (settled
    or void) over the time from the first one's opening to the last one's end, to the
    nearest whole number ("–" under a minute)."""
    when = [
        datetime.fromisoformat(r["timestamps"][key].replace("Z", "+00:00"))
        for r in rounds
        for key in ("opened", r["status"])
    ]
    secs = (max(when) - min(when)).total_seconds()
    return "–" if secs < 60 else str(math.floor(len(rounds) * 3600 / secs + 0.5))


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
        for width, height in ((1920, 1080), (1080, 1920), (390, 844)):
            async with Browser(CHROMIUM, width=width, height=height) as b:
                await b.open(url + "?lang=en")
                await b.wait_for("document.querySelector('[data-result]') !== null", 20)
                await b.wait_for(
                    f"document.getElementById('board').dataset.resultRound === {json.dumps(last['round_id'])}",
                    10,
                )
                shown = await b.eval(PROBE)
                assert shown["game"] == game
                assert shown["result"] == expected_result(last["outcome"]), shown
                assert shown["dealer"] == "ana"
                if game == "mahjong":  # the winning hand as tiles, how it was won in words
                    o = last["outcome"]
                    melds = [x for m in o.get("melds", []) for x in m["tiles"]]
                    assert shown["tiles"] == [*o["concealed"], *melds, o["win"]["tile"]], shown
                    assert WORDS["mahjong_wins"][o["win"]["by"]]["en"] in shown["resultText"]
                # "Round N" over the last result is the settled round's, not the next one's
                assert shown["resultSeq"] == f"{WORDS['ui']['round']['en']} {last['seq']}", shown
                assert shown["scrollWidth"] <= width, f"{game}: scrolls sideways at {width} px"
                if width >= 900:  # a screen facing the players: all of it on the screen
                    assert shown["scrollHeight"] <= shown["innerHeight"], (game, width, shown)
                    assert shown["footer"] <= shown["innerHeight"]
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
        # the table's page: the last rounds' money adds up, their results are drawn
        async with Browser(CHROMIUM, width=1920, height=1080) as b:
            await b.open(f"{t.view.url}table/{t.table_id}")
            await b.wait_for(
                f"document.querySelector('tr[data-round={json.dumps(last['round_id'])}]') !== null",
                20,
            )
            shown_rounds = {r["id"]: r for r in await b.eval(ROUNDS_PROBE)}
        async with Browser(CHROMIUM, width=390, height=844) as b:  # a phone: nothing sideways
            await b.open(f"{t.view.url}table/{t.table_id}")
            await b.wait_for("document.querySelector('tr[data-round]') !== null", 20)
            assert await b.eval("document.documentElement.scrollWidth") <= 390, game
        published = {r["round_id"]: r for r in t.rounds}
        assert shown_rounds and set(shown_rounds) <= set(published)
        for rid, row in shown_rounds.items():
            r, d = published[rid], published[rid]["minor_digits"]
            want = round_money(r)
            got = {k: minor(row[k], d) for k in ("staked", "returned", "won", "house")}
            if got["returned"] is None:  # mah-jong: payments between players, no stakes
                assert want["staked"] == 0 and game == "mahjong", (rid, row)
                got["returned"] = want["returned"]
            assert got == want, (game, rid, got, want)
            assert got["staked"] == got["returned"] + got["won"] + got["house"], (game, rid, got)
            assert "{" not in row["result"] and (row["drawn"] or row["result"].strip()), row
    finally:
        await t.stop()


async def test_the_pit_of_twelve_tables_and_a_pending_jackpot_hit() -> None:
    """12 tables on the pit page: each one's handle and win added up from the rounds it
    published, the pit's total, an open alert not acknowledged, a witness's dispute; sortable; no sideways
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
            # handle: the stakes of the settled rounds' bets (a player-banked table's
            # banker's capital is not wagered with the house); win: the house's net
            want = {tid: (sum(b["stake"] for r in p.rounds if r["status"] == "settled" for b in r["bets"]),
                          sum(r["totals"]["house_net"] for r in p.rounds if r["status"] == "settled"))
                    for tid, p, _ in pit.tables}  # fmt: skip
            pace = {tid: rounds_per_hour(rs) for tid, rs in pit.published.items()}
            assert all(v != "–" for v in pace.values())
            for width, height in ((1920, 1080), (1080, 1920), (390, 844)):
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
                      tr.dataset.table, tr.querySelector('[data-col=pace]').textContent,
                      +tr.querySelector('[data-handle]').dataset.handle,
                      +tr.querySelector('[data-win]').dataset.win,
                      tr.querySelector('[data-col=alerts]').dataset.unacknowledged || '0',
                      tr.querySelector('[data-col=witness]').textContent])""")
                    assert {r[0]: (r[2], r[3]) for r in rows} == want
                    assert {r[0]: r[1] for r in rows} == pace
                    assert {r[0] for r in rows if r[4] == "1"} == {pit.tables[0][0]}
                    # the witness of table 2 holds a disputed result: 1 of its 409 + 1
                    # comparisons disagreed; the other tables have none
                    witnessed = pit.tables[1][0]
                    assert {r[0]: r[5] for r in rows if r[0] != witnessed} == {
                        tid: "none" for tid, _, _ in pit.tables if tid != witnessed
                    }
                    row = next(r for r in rows if r[0] == witnessed)
                    assert row[5] == "fault RESULT_DISPUTED · 1 / 410 disagreed (0.2 %)", row
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
