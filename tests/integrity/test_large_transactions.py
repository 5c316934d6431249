"""Large transactions (issue 19, item 7) raised when the bet is placed: a bet whose
stake, or the most it can be paid, is at or above ``[integrity] large_transaction``
raises the ``large_transaction`` event on ``events`` and the alert at placement, in the
transaction that journals the bet and the request's answer: exactly once, however the
request is retried. Payouts are still raised at settlement.

Roulette's odds, from the text (60/2004 art. 7): a straight (art. 6 1)) pays 35:1, red
pays 1:1; the payout is the prize on top of the returned stake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from firmware_host.config import validate_document
from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.monitor import IntegrityMonitor, max_payout_of
from firmware_host.integrity.settings import IntegritySettings
from firmware_host.schemas import validate
from tests.table.floor_support import make_table

LIMIT = 10_000_000  # MOP 100,000 in avos

DOC = {
    "table": {"id": "T1", "game": "roulette", "result_source": "manual"},
    "limits": {"min_stake": 100, "max_stake": 100_000_000},
}


def table(tmp_path: Path) -> tuple[Any, Alerts]:
    t = make_table(tmp_path, doc=DOC)
    cfg = validate_document(DOC)
    alerts = Alerts(t.journal.alerts, t.journal.db)
    IntegrityMonitor(
        t.engine.extensions, alerts=alerts, chain=t.journal.chain, table_id="T1",
        result_device="wheel", settings=IntegritySettings(large_transaction=LIMIT),
        currency=cfg.money.currency, max_payout=max_payout_of(cfg.game, cfg.rules, cfg.money),
    )  # fmt: skip
    return t, alerts


def large(t: Any) -> list[dict[str, Any]]:
    return [e.data for e in t.journal.chain.events(200) if e.kind == "large_transaction"]


def test_max_payout_is_the_rules_cores_largest_prize(tmp_path: Path) -> None:
    from firmware_host.games.base import Bet

    cfg = validate_document(DOC)
    most = max_payout_of(cfg.game, cfg.rules, cfg.money)
    assert most is not None
    assert most(Bet("s", 1, "straight", [17], 300_000)) == 35 * 300_000  # art. 7: 35:1
    assert most(Bet("r", 1, "red", None, 300_000)) == 300_000  # 1:1
    baccarat = validate_document(
        {"table": {"id": "B", "game": "baccarat", "result_source": "manual"}}
    )
    assert max_payout_of(baccarat.game, baccarat.rules, baccarat.money) is None  # dealt: stake only


def test_raised_at_placement_once_under_retries_and_payouts_at_settlement(tmp_path: Path) -> None:
    t, alerts = table(tmp_path)
    t.cmd("dealer", "open_betting")
    rid = t.engine.current.round_id
    # at the threshold by its stake; below it by stake but not by what it can pay (35 x
    # 300,000 = 10,500,000); below it both ways (300,000 x 1 on red); a straight just
    # under (35 x 285,700 = 9,999,500)
    bets = [
        {"bet_id": "big", "seat": 1, "bet_type": "red", "stake": LIMIT},
        {"bet_id": "long", "seat": 2, "bet_type": "straight", "selection": [17], "stake": 300_000},
        {"bet_id": "small", "seat": 3, "bet_type": "red", "stake": 300_000},
        {"bet_id": "under", "seat": 4, "bet_type": "straight", "selection": [5], "stake": 285_700},
    ]
    answers = [t.bet("pos", b, rid=f"req-{b['bet_id']}") for b in bets]
    assert all(a["status"] == "accepted" for a in answers), answers
    placed = large(t)
    assert [(d["bet_id"], d["kind"], d["over"], d["amount"], d["max_payout"]) for d in placed] == [
        ("big", "bet", ["stake", "max_payout"], LIMIT, LIMIT),  # red pays 1:1
        ("long", "bet", ["max_payout"], 300_000, 10_500_000),
    ]
    assert all(d["round_id"] == rid and d["threshold"] == LIMIT for d in placed)
    # on the events topic, in the outbox with the bet (before the round settles)
    msgs = [json.loads(m.payload) for m in t.journal.outbox.pending() if m.topic == "events"]
    msgs = [m for m in msgs if m["event"] == "large_transaction"]
    assert [m["data"]["bet_id"] for m in msgs] == ["big", "long"]
    for m in msgs:
        validate("event", m)
    # retried: the same request id (signed again, or byte for byte), and a new request
    # id for the same bet: the same answers, nothing raised again
    assert t.retry("req-big") == answers[0]
    assert t.replay("req-long") == answers[1]
    again = t.bet("pos", bets[0], rid="req-big-2")
    assert again["status"] == "accepted"
    assert len(large(t)) == 2
    assert [a.subject for a in alerts.active()] == [f"{rid}:big:stake", f"{rid}:long:stake"]
    # settlement: 17 wins the straight (payout 10,500,000); red loses on 17 (black)
    t.cmd("dealer", "close_betting")
    out = t.cmd("dealer", "result", args={"outcome": {"number": 17}})
    assert out["status"] == "ok", out
    after = large(t)[2:]
    assert [(d["bet_id"], d["kind"], d["amount"]) for d in after] == [
        ("long", "payout", 10_500_000)
    ]
    assert [a.subject for a in alerts.active()] == [
        f"{rid}:big:stake", f"{rid}:long:stake", f"{rid}:long:payout",
    ]  # fmt: skip
    assert t.journal.chain.verify().ok


def test_a_refused_bet_raises_nothing(tmp_path: Path) -> None:
    t, _ = table(tmp_path)
    t.cmd("dealer", "open_betting")
    # over the table's maximum stake: refused, so not a transaction at all
    r = t.bet("pos", {"bet_id": "x", "seat": 1, "bet_type": "red", "stake": 200_000_000})
    assert r["status"] == "rejected"
    t.cmd("dealer", "close_betting")
    r = t.bet("pos", {"bet_id": "y", "seat": 1, "bet_type": "red", "stake": LIMIT})
    assert r["status"] == "rejected" and r["code"] == "BETTING_CLOSED"
    assert large(t) == []


def test_max_payout_cache_answers_as_settling_every_outcome(tmp_path: Path) -> None:
    """The cache by (bet type, selection, stake) gives what settling the bet against
    every outcome gives, for bets met again at other stakes and selections."""
    from firmware_host.games.base import Bet
    from firmware_host.games.money import settle_amounts

    cfg = validate_document({**DOC, "table": {**DOC["table"], "game": "sicbo"}})
    most = max_payout_of(cfg.game, cfg.rules, cfg.money)
    assert most is not None
    outcomes = [o for o, _ in cfg.game.outcome_space(cfg.rules)]
    bets = [Bet(f"b{i}", 1 + i % 3, t, sel, stake)
            for i, (t, sel, stake) in enumerate([
                ("specific_triple", 4, 1000), ("specific_triple", 5, 1000),
                ("specific_triple", 4, 2500), ("big", None, 1000), ("total", 10, 1000),
                ("total", 4, 1000), ("specific_triple", 4, 1000)])]  # fmt: skip
    for bet in bets:
        direct = max(settle_amounts(bet.stake, cfg.game.verdict(cfg.rules, o, bet), cfg.money).payout
                     for o in outcomes)  # fmt: skip
        assert most(bet) == direct, bet
