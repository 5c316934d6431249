"""The daemon killed with SIGKILL at random moments, restarted each time (issue 8: "no
round lost, none settled twice, the jackpot pool exactly equal to seed +
contributions - payments").

A stud poker table with the progressive jackpot (61/2004 art. 10-11) runs as a child
process, ``python -m firmware_host run --config ... --state-dir ...``, exactly as the
systemd unit starts it, with a persistent journal. A simulated floor plays it over
MQTT with the manual procedure: betting open, ante + raise (twice the ante, art. 6
6)) + jackpot bets while betting is open, close, then a ``result`` command with the
whole deal (five cards to each place and to the croupier, all different, from a
seeded shuffle of one deck, art. 1 1)); royal and straight flushes are dealt on
purpose now and then so the jackpot pays (art. 10 2)).

Each trial kills the daemon at a chosen point, in turn: right after betting opens,
in the middle of the bets, right after betting closes, a few milliseconds after the
result command was sent (before it is read, between the outcome's commit and the
settlement's, between the settlement's commit and its publication...), or at a
random time while rounds run. What the journal held at the kill is classified and
printed. The daemon is started again and must resume: settle a round whose outcome
was journaled, void (and refund, carrying jackpot bets to the next game, art. 11 1),
4)) one whose result was never read.

Checked at the end, independently of the daemon's own bookkeeping:

- journal: every round settled or voided exactly once (one ``rounds`` outbox entry
  each), nothing in flight, the event chain intact;
- floor (persistent-session subscriber): never two different payloads under one
  round_id; every round of the journal delivered, byte-identical to the journal's
  payload, first deliveries in seq order with no gap;
- jackpot, from the delivered payloads only: each round's ``pool_before`` equals the
  previous round's ``pool_after``; each round credits exactly rate x the jackpot
  stakes in play; each royal / straight flush prize is what art. 10 2) says; and the
  final pool equals seed + credited - paid from the pool + seeded, which is also the
  journal's meter (``Meter.balanced()``); every jackpot bet placed was played in
  exactly one settled game or is still carried.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from _fault_support import (
    SEED,
    DaemonProcess,
    Deliveries,
    NotifySocket,
    Requests,
    kv,
    report,
    signed,
    signed_setup,
    wait_until,
)
from _mqtt_support import Collector

from firmware_host.journal import AuditKey, Journal
from firmware_host.table.jackpot import Meter
from tablesim.floor_client import FloorClient

TRIALS = int(os.environ.get("TABLECTL_DAEMON_KILLS", "60"))
TABLE = "fault-stud"

SEED_POOL = 20_000_000
STAKE = 2000
RATE = Fraction(7, 10)
ROYAL_FIXED = 20_000_000
SF_FIXED = 1_000_000
FIXED = {"four_of_a_kind": 200_000, "full_house": 150_000, "flush": 100_000}

CONFIG = """\
version = 1
[table]
id = "{table}"
game = "stud-poker"
currency = "MOP"
minor_digits = 2
payable_unit = 100
result_source = "manual"

[limits]
min_stake = 10000
max_stake = 4000000

[limits.bet_types.ante]
max = 2000000

[limits.bet_types.raise]
min = 20000
max = 4000000

[limits.bet_types.jackpot]
min = {stake}
max = {stake}

[pay_table.stud-poker]
royal_flush = 100
max_payout = 100000000
jackpot_offered = true
jackpot_stake = {stake}
jackpot_contribution_rate = "7/10"
jackpot_seed = {seed}
jackpot_royal_flush_fixed = {royal}
jackpot_straight_flush_fixed = {sf}
jackpot_four_of_a_kind_fixed = 200000
jackpot_full_house_fixed = 150000
jackpot_flush_fixed = 100000

[mqtt]
host = "{host}"
port = {port}
protocol = "{protocol}"
reconnect_min_ms = 20
reconnect_max_ms = 300
backlog_per_minute = 0  # first deliveries in seq order: an unpaced backlog (issue 36)

[journal]
# The checks read every round's `rounds` outbox entry: keep them all (by default the
# oldest published entries go once 1,000 are kept; a run near that count lost its
# first rounds' entries to retention, not to a kill).
published_outbox_keep = 1000000
"""

RANKS = "A23456789TJQK"
SUITS = "SHCD"
DECK = [r + s for r in RANKS for s in SUITS]
#: Straights by their lowest rank (A-2-3-4-5 .. 9-T-J-Q-K); T-J-Q-K-A is the royal.
STRAIGHTS = [[RANKS[(lo + i) % 13] for i in range(5)] for lo in range(9)]

#: Kill points, in a shuffled cycle; the result-to-publication window is a few ms wide,
#: so it gets two turns per cycle.
MODES = ("after_open", "mid_bets", "after_close", "after_result", "after_result", "random")


@dataclass
class Tally:
    rounds_started: int = 0
    clean_rounds: int = 0
    forced: Counter[str] = field(default_factory=Counter)
    refused_jackpot: int = 0
    unexpected: list[str] = field(default_factory=list)
    cleanup_voids: int = 0


OPEN_EMPTY = "betting open, no bet yet"
OPEN_BETS = "betting open, bets placed"
CLOSED = "betting closed, result not journaled"
RESULT = "outcome journaled, not settled"
UNPUBLISHED = "settled, publication not acknowledged"
IDLE = "between rounds, all published"


def classify(journal: Path) -> tuple[str, str | None]:
    """Where a kill landed, from what the journal held (read-only, daemon dead):
    (bucket, the round in flight if any)."""
    con = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        row = con.execute(
            "SELECT round_id, phase FROM rounds WHERE status IS NULL ORDER BY id DESC"
        ).fetchone()
        if row is not None:
            rid, phase = row
            if phase == "open":
                n = con.execute("SELECT COUNT(*) FROM bets WHERE round_id = ?", (rid,)).fetchone()
                return (OPEN_EMPTY if n[0] == 0 else OPEN_BETS), rid
            if phase == "closed":
                return CLOSED, rid
            assert phase == "result", phase
            return RESULT, rid
        unpublished = con.execute(
            "SELECT COUNT(*) FROM outbox WHERE topic = 'rounds' AND published_at IS NULL"
        ).fetchone()[0]
        return (UNPUBLISHED if unpublished else IDLE), None
    finally:
        con.close()


def hand_cards(rng: random.Random, kind: str) -> list[str]:
    suit = rng.choice(SUITS)
    if kind == "royal_flush":
        return [r + suit for r in "TJQKA"]
    return [r + suit for r in rng.choice(STRAIGHTS)]


class StudDealer:
    """The floor side: places bets, enters the deal, kills where it is told to."""

    def __init__(self, req: Requests, rng: random.Random, tally: Tally) -> None:
        self.req = req
        self.rng = rng
        self.tally = tally
        self.n = 0
        self.result_times: list[float] = []  # result command -> its response, clean rounds

    def result_window(self) -> float:
        """About how long a result takes to be read, settled and published here (the
        kills after a result are spread over 0..that, whatever the machine's speed)."""
        if not self.result_times:
            return 0.006
        return sorted(self.result_times)[len(self.result_times) // 2]

    def plan(self) -> list[dict[str, Any]]:
        self.n += 1
        bets: list[dict[str, Any]] = []
        for seat in sorted(self.rng.sample(range(1, 8), self.rng.randint(1, 4))):
            ante = 10000 * self.rng.randint(1, 4)
            tag = f"g{self.n}s{seat}"
            bets.append({"bet_id": f"{tag}a", "seat": seat, "bet_type": "ante", "stake": ante})
            bets.append({"bet_id": f"{tag}r", "seat": seat, "bet_type": "raise", "stake": 2 * ante})
            if self.rng.random() < 0.85:
                bets.append(
                    {"bet_id": f"{tag}j", "seat": seat, "bet_type": "jackpot", "stake": STAKE}
                )
        return bets

    def deal(self, accepted: list[dict[str, Any]]) -> dict[str, Any]:
        """Five cards to each place with an ante and to the croupier, from one deck."""
        seats = sorted({b["seat"] for b in accepted if b["bet_type"] == "ante"})
        raised = {b["seat"] for b in accepted if b["bet_type"] == "raise"}
        jackpot = sorted(s for s in seats if s in raised and any(
            b["seat"] == s and b["bet_type"] == "jackpot" for b in accepted))  # fmt: skip
        deck = list(DECK)
        forced: dict[int, list[str]] = {}
        roll = self.rng.random()
        if jackpot and roll < 0.3:
            kind = "royal_flush" if roll < 0.15 else "straight_flush"
            seat = self.rng.choice(jackpot)
            forced[seat] = hand_cards(self.rng, kind)
            self.tally.forced[kind] += 1
            deck = [c for c in deck if c not in forced[seat]]
        self.rng.shuffle(deck)
        hands: dict[str, Any] = {}
        for s in seats:
            cards = forced.get(s) or [deck.pop() for _ in range(5)]
            hands[str(s)] = {"cards": cards, "action": "raise" if s in raised else "fold"}
        return {"dealer": [deck.pop() for _ in range(5)], "seats": hands}

    async def play(self, kill_at: str | None = None) -> bool:
        """One round; returns True when it reached ``kill_at`` (the caller kills now)."""
        self.tally.rounds_started += 1
        r = await self.req.command("open_betting")
        if r is None:
            return False
        if r["status"] != "ok":
            self.tally.unexpected.append(f"open_betting: {r.get('code')} {r.get('message')}")
            return False
        if kill_at == "after_open":
            return True
        bets = self.plan()
        stop_at = self.rng.randrange(len(bets)) if kill_at == "mid_bets" else -1
        accepted = []
        for i, bet in enumerate(bets):
            if i == stop_at:
                rid = self.req.floor.round_in_progress
                self.req.send_nowait("bets", {"action": "place", "round_id": rid, "bet": bet})
                return True
            resp = await self.req.place(bet)
            if resp is None:
                return False
            if resp["status"] == "accepted":
                accepted.append(bet)
            elif resp.get("code") == "JACKPOT_ALREADY_CARRIED":
                self.tally.refused_jackpot += 1  # art. 11 1): the carried bet plays instead
            else:
                self.tally.unexpected.append(f"bet {bet}: {resp.get('code')} {resp.get('message')}")
        r = await self.req.command("close_betting")
        if r is None:
            return False
        if kill_at == "after_close":
            return True
        outcome = self.deal(accepted)
        if kill_at == "after_result":
            body = self.req.floor.command_body("result", outcome=outcome)
            self.req.send_nowait("commands", body)
            return True
        t0 = time.perf_counter()
        r = await self.req.command("result", outcome=outcome)
        if r is None:
            return False
        self.result_times.append(time.perf_counter() - t0)
        if r["status"] != "ok":
            self.tally.unexpected.append(f"result: {r.get('code')} {r.get('message')}")
            await self.req.command("void_round", reason="test dealer: result refused")
            return False
        self.tally.clean_rounds += 1
        return False

    async def tidy(self) -> None:
        """After a restart: a request queued for the daemon's session while it was down
        may have opened a round; void it so the next trial starts between rounds."""
        r = await self.req.command("status")
        assert r is not None and r["status"] == "ok", r
        if r["data"]["phase"] != "idle":
            self.tally.cleanup_voids += 1
            v = await self.req.command(
                "void_round",
                round_id=r["data"]["round_id"],
                reason="test dealer: stale request after restart",
            )
            assert v is not None and v["status"] == "ok", v


@pytest.fixture
async def short_dir() -> AsyncIterator[Path]:
    """A short directory: Unix socket paths must stay under 108 bytes."""
    d = Path(tempfile.mkdtemp(prefix="fk-", dir="/tmp"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def journal_ids(path: Path) -> list[str]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT round_id FROM rounds WHERE status IS NOT NULL ORDER BY seq")
        return [r[0] for r in rows]
    finally:
        con.close()


@pytest.mark.fault
@pytest.mark.slow
async def test_daemon_sigkill_loses_nothing_settles_nothing_twice_and_the_jackpot_balances(
    fault_broker: Any, short_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = fault_broker
    rng = random.Random(SEED + 2)
    cfg_path = short_dir / "stud.toml"
    auth, principals = signed_setup(short_dir / "keys")
    cfg_path.write_text(
        CONFIG.format(
            table=TABLE, stake=STAKE, seed=SEED_POOL, royal=ROYAL_FIXED, sf=SF_FIXED,
            host=broker.host, port=broker.port, protocol=broker.protocol,
        ) + auth
    )  # fmt: skip
    journal_path = short_dir / "journal.sqlite3"
    notify = NotifySocket(short_dir / "notify.sock")
    col = await Collector(
        broker.host, broker.port, f"casino/tables/{TABLE}/rounds", "fault-stud-floor"
    ).start()
    floor = FloorClient(
        broker.host, broker.port, TABLE, client_id="fault-stud-dealer", signers=principals
    )
    daemon = DaemonProcess(cfg_path, short_dir, notify, short_dir / "daemon.log", floor)
    tally = Tally()
    landed: Counter[str] = Counter()
    killed_in: dict[str, str] = {}  # round in flight at a kill -> where the kill landed
    by_mode: dict[str, Counter[str]] = {m: Counter() for m in MODES}
    try:
        await floor.start()
        req = Requests(floor, timeout=15.0)
        dealer = StudDealer(req, random.Random(rng.random()), tally)
        await daemon.start()
        await dealer.tidy()
        t_start = time.monotonic()
        order: list[str] = []
        for trial in range(TRIALS):
            if trial % len(MODES) == 0:
                order = list(MODES)
                rng.shuffle(order)
            mode = order[trial % len(MODES)]
            for _ in range(rng.randint(0, 2)):  # some clean rounds between kills
                await dealer.play()
            if mode == "random":

                async def rounds_forever() -> None:
                    while True:
                        await dealer.play()

                task = asyncio.create_task(rounds_forever())
                await asyncio.sleep(rng.uniform(0.0, 0.4))
            else:
                task = None
                reached = await dealer.play(kill_at=mode)
                assert reached, f"trial {trial}: did not reach {mode}: {tally.unexpected[-3:]}"
                await asyncio.sleep(
                    rng.uniform(0, dealer.result_window())
                    if mode == "after_result"
                    else rng.uniform(0, 0.004)
                )
            await daemon.kill()
            req.abort.set()
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            where, in_flight = classify(journal_path)
            if in_flight is not None:
                killed_in[in_flight] = where
            landed[where] += 1
            by_mode[mode][where] += 1
            req.abort.clear()
            await daemon.start()
            await dealer.tidy()
        for _ in range(3):  # a few clean rounds after the last restart
            await dealer.play()
        elapsed = time.monotonic() - t_start

        # Everything the journal finished reaches the floor (the outbox is drained).
        await wait_until(
            lambda: (
                set(journal_ids(journal_path))
                <= {json.loads(m.payload)["round_id"] for m in col.messages}
            ),
            60,
            "every finished round on the floor",
        )
        rc = await daemon.terminate()
        assert rc == 0, daemon.log_tail()
        await asyncio.sleep(0.2)  # a last duplicate in flight, if any
        got = Deliveries(m.payload for m in col.messages)
        key = AuditKey.load(Path(journal_path).parent / "audit.key")  # made at the first start
        with Journal(journal_path, audit_key=key) as j:
            check_journal_and_floor(j, got)
            resumed = check_resume(j, killed_in)
            jackpot = check_jackpot(j, got)
        assert not tally.unexpected, tally.unexpected[:10]
        assert daemon.kills >= 50
        for where in (OPEN_EMPTY, OPEN_BETS, CLOSED):
            assert landed[where] >= 3, f"too few kills landed in {where!r}: {dict(landed)}"
        late = landed[RESULT] + landed[UNPUBLISHED]
        assert late >= 2, f"no kill landed between the result and its publication: {dict(landed)}"
        statuses = Counter(got.payload(r)["status"] for r in got.order)
        report(
            capsys,
            "daemon SIGKILL + restart (stud poker + progressive jackpot, `python -m firmware_host run`)",
            [
                kv(
                    kills=daemon.kills,
                    restarts=daemon.starts - 1,
                    rounds=len(got.order),
                    settled=statuses["settled"],
                    void=statuses["void"],
                    elapsed_s=f"{elapsed:.1f}",
                    start_to_ready_ms=f"median {1000 * sorted(daemon.ready_times)[len(daemon.ready_times) // 2]:.0f}"
                    f" max {1000 * max(daemon.ready_times):.0f}",
                ),
                "kills landed: " + "; ".join(f"{k} {v}" for k, v in sorted(landed.items())),
                *(
                    f"  mode {m}: " + "; ".join(f"{k} {v}" for k, v in sorted(c.items()))
                    for m, c in by_mode.items()
                ),
                kv(
                    deliveries=got.total,
                    duplicates=f"{got.duplicates} (same id, same bytes)",
                    lost=0,
                    settled_twice=0,
                    different_payloads_under_one_id=0,
                ),
                kv(
                    forced_royal_flushes=tally.forced["royal_flush"],
                    forced_straight_flushes=tally.forced["straight_flush"],
                    jackpot_bets_refused_as_already_carried=tally.refused_jackpot,
                    stale_rounds_voided_after_restart=tally.cleanup_voids,
                ),
                resumed,
                *jackpot,
            ],
        )
    finally:
        with contextlib.suppress(Exception):
            if daemon.proc is not None and daemon.proc.returncode is None:
                daemon.proc.kill()
                await daemon.proc.wait()
        await floor.stop()
        await col.stop()
        notify.close()


def check_journal_and_floor(j: Journal, got: Deliveries) -> None:
    db = j.db.sql
    rows = db.execute("SELECT round_id, seq, status FROM rounds ORDER BY seq").fetchall()
    assert rows, "no round in the journal"
    assert all(status in ("settled", "void") for _, _, status in rows), "a round left in flight"
    ids = [r[0] for r in rows]
    # Settled or voided exactly once: one `rounds` outbox entry and one payload per round.
    per_round = dict(
        db.execute(
            "SELECT round_id, COUNT(*) FROM outbox WHERE topic = 'rounds' GROUP BY round_id"
        ).fetchall()
    )
    assert all(per_round.get(r) == 1 for r in ids), {
        r: per_round.get(r) for r in ids if per_round.get(r) != 1
    }
    assert j.outbox.pending_count() == 0
    assert not got.conflicts, f"two different payloads under one round_id: {got.conflicts}"
    lost = [r for r in ids if r not in got.first]
    assert not lost, f"{len(lost)} finished rounds never reached the floor: {lost[:5]}"
    assert set(got.order) == set(ids), "the floor got a round the journal does not have"
    assert got.order == ids, "first deliveries not in seq order"
    assert [r[1] for r in rows] == list(range(1, len(rows) + 1)), "a gap in seq"
    for rid, _, status in rows:
        payload = got.payload(rid)
        assert payload == j.rounds.settlement(rid), f"{rid}: the floor's payload is not the journal's"
        assert payload["status"] == status
    chain = j.chain.verify()
    assert chain.ok, str(chain)
    audit = j.audit()  # every money row against the keyed chain, after every kill
    assert audit.ok, str(audit)


def check_resume(j: Journal, killed_in: dict[str, str]) -> str:
    """A restart voids (refunds) every round in flight, saying why. (The RESULT bucket,
    an outcome journaled without its settlement, must stay empty: the controller
    journals a result only in the transaction that settles it.)"""
    settled = voided = 0
    for rid, where in killed_in.items():
        rnd = j.rounds.round(rid)
        if where == RESULT:
            assert rnd.status == "settled", f"{rid}: outcome journaled but {rnd.status}"
            settled += 1
        else:
            assert rnd.status == "void", f"{rid}: killed in {where!r} but {rnd.status}"
            assert rnd.void_reason and "restarted" in rnd.void_reason, rnd.void_reason
            assert all(b["result"] == "refund" for b in j.rounds.settlement(rid)["bets"])
            voided += 1
    return kv(
        rounds_in_flight_at_a_kill=len(killed_in),
        settled_on_restart_from_the_journaled_outcome=settled,
        voided_and_refunded_on_restart=voided,
    )


def check_jackpot(j: Journal, got: Deliveries) -> list[str]:
    """The pool rebuilt from the delivered payloads alone (61/2004 art. 10)."""
    pool = SEED_POOL
    credited = paid = seeded = 0
    hits: Counter[str] = Counter()
    played: Counter[str] = Counter()
    for rid in got.order:  # seq order (checked above)
        p = got.payload(rid)
        jp = p["jackpot"]
        in_play = [b for b in p["bets"] if b["bet_type"] == "jackpot"]
        if p["status"] == "void":
            # art. 11 1), 4): a void game's jackpot bets are carried, not refunded or credited
            assert not in_play and not jp["hits"] and not jp.get("credited")
            continue
        assert jp["pool_before"] == pool, f"{rid}: pool_before {jp['pool_before']} != {pool}"
        for b in in_play:
            played[b["bet_id"]] += 1
        # every jackpot stake in play credits rate x stake (7/10 x 2000 = 1400: no residue)
        assert Fraction(jp["credited"]) == RATE * STAKE * len(in_play), rid
        pool += jp["credited"]
        credited += jp["credited"]
        royal_total = None  # art. 10 5): royals of one game share one prize
        for k, h in enumerate(jp["hits"]):
            hand = h["hand"]
            assert h["pool_before"] == pool, f"{rid}: hit pool_before {h['pool_before']} != {pool}"
            if hand == "royal_flush":  # art. 10 2) (1): the whole pool or the fixed sum
                royal_total = royal_total or max(pool, ROYAL_FIXED)
                expected = royal_total // h["shared_by"]
                assert h["prize"] in (expected, expected + royal_total % h["shared_by"])
            elif hand == "straight_flush":  # art. 10 2) (2): 10% of the pool or the fixed sum
                assert h["prize"] == max(pool // 10, SF_FIXED)
            else:
                assert h["prize"] == FIXED[hand]
            assert h["from_pool"] == min(h["prize"], pool)
            pool -= h["from_pool"]
            paid += h["from_pool"]
            # art. 10 8): once the game's prizes are paid, an exhausted pool restarts
            # from the seed (recorded on the last payment)
            last = k == len(jp["hits"]) - 1
            assert h["seeded"] == (SEED_POOL if last and pool == 0 else 0)
            pool += h["seeded"]
            seeded += h["seeded"]
            hits[hand] += 1
        assert jp["pool_after"] == pool, f"{rid}: pool_after {jp['pool_after']} != {pool}"
    meter = Meter.from_json(j.jackpot.state("progressive"))
    assert meter.balanced(), meter
    assert meter.pool == pool == SEED_POOL + credited - paid + seeded
    assert meter.credited == credited and meter.paid_from_pool == paid and meter.seeded == seeded
    assert hits["royal_flush"] >= 1 and hits["straight_flush"] >= 1, dict(hits)
    # Every jackpot bet placed was played in exactly one settled game, or is still carried.
    placed = {
        r[0]
        for r in j.db.sql.execute(
            "SELECT bet_id FROM bets WHERE bet_type = 'jackpot' AND status = 'placed'"
        )
    }
    carried = {b.bet_id for b in meter.state.carried}
    assert all(n == 1 for n in played.values()), [b for b, n in played.items() if n > 1]
    assert set(played) | carried == placed and not set(played) & carried
    return [
        kv(
            jackpot_pool=pool,
            equals=f"seed {SEED_POOL} + credited {credited} - paid from pool {paid} + seeded {seeded}",
            meter_balanced=meter.balanced(),
        ),
        kv(
            jackpot_hits=sum(hits.values()),
            by_hand=dict(sorted(hits.items())),
            jackpot_bets_played=len(played),
            still_carried=len(carried),
        ),
    ]


@pytest.mark.fault
async def test_a_place_holding_a_carried_jackpot_bet_cannot_add_one_and_its_next_game_settles(
    tmp_path: Path,
) -> None:
    """Regression for what the kill test found: after a void game (a restart in phase
    closed), a place whose jackpot bet is carried (61/2004 art. 11 1), 4)) placed a new
    one; the next result was then journaled but could not be settled (two jackpot bets
    for one place), leaving the round stuck in phase ``result``. The second bet is now
    refused when placed, and the carried bet plays in the next game."""
    from firmware_host.config import load_config
    from firmware_host.daemon import TableDaemon
    from firmware_host.mqtt import MqttSettings

    cfg_path = tmp_path / "stud.toml"
    auth, principals = signed_setup(tmp_path / "keys")
    cfg_path.write_text(
        CONFIG.format(
            table=TABLE, stake=STAKE, seed=SEED_POOL, royal=ROYAL_FIXED, sf=SF_FIXED,
            host="127.0.0.1", port=1, protocol="5",
        ) + auth
    )  # fmt: skip
    d = TableDaemon(
        load_config(cfg_path), state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(port=1, reconnect_min_ms=5000, reconnect_max_ms=5000),
    )  # fmt: skip
    await d.start()
    # No broker here: the technician lets the table play without the floor check.
    d.parts.console_backend.clear_fault("JOURNAL_UNCHECKED", "bench without a broker", "tech")
    try:
        assert d.parts.floor is not None and d.parts.engine is not None
        floor = d.parts.floor

        engine = d.parts.engine
        n = iter(range(1, 1000))

        def cmd(command: str, **args: Any) -> Any:
            named = (
                {"after_round_id": engine.last_round_id()}
                if command == "open_betting"
                else {"round_id": engine.current.round_id if engine.current else None}
            )
            body = {"request_id": f"c{next(n)}", "command": command, **named, "args": args}
            return floor.handle_command_request(signed(principals, TABLE, "commands", body))

        def bet(bet_id: str, bet_type: str, stake: int) -> Any:
            rid = engine.current.round_id if engine.current else None
            body = {"request_id": bet_id, "action": "place", "round_id": rid,
                    "bet": {"bet_id": bet_id, "seat": 3, "bet_type": bet_type, "stake": stake}}  # fmt: skip
            return floor.handle_bet_request(signed(principals, TABLE, "bets", body))

        assert cmd("open_betting")["status"] == "ok"
        assert bet("a1", "ante", 10000)["status"] == "accepted"
        assert bet("j1", "jackpot", STAKE)["status"] == "accepted"
        assert cmd("close_betting")["status"] == "ok"
        assert cmd("void_round", reason="test: dealer voids the deal")["status"] == "ok"

        assert cmd("open_betting")["status"] == "ok"
        assert bet("a2", "ante", 10000)["status"] == "accepted"
        assert bet("r2", "raise", 20000)["status"] == "accepted"
        refused = bet("j2", "jackpot", STAKE)
        assert (refused["status"], refused["code"]) == ("rejected", "JACKPOT_ALREADY_CARRIED")
        assert cmd("close_betting")["status"] == "ok"
        deal = {
            "dealer": ["2S", "5H", "7D", "9C", "JS"],
            "seats": {"3": {"cards": ["AH", "KH", "QH", "JH", "TH"], "action": "raise"}},
        }
        done = cmd("result", outcome=deal)
        assert done["status"] == "ok" and done["data"]["status"] == "settled", done
        payload = d.journal.rounds.settlement(done["data"]["round_id"])  # type: ignore[union-attr]
        jackpot_bets = [b for b in payload["bets"] if b["bet_type"] == "jackpot"]
        assert [b["bet_id"] for b in jackpot_bets] == ["j1"]  # the carried bet played
        hit = payload["jackpot"]["hits"][0]
        # art. 10 2) (1): the royal flush takes the pool (seed + 7/10 of the stake) or
        # the fixed sum, whichever is larger
        assert hit["prize"] == max(SEED_POOL + 1400, ROYAL_FIXED)
        assert d.parts.jackpot.meter.balanced() and not d.parts.jackpot.meter.state.carried
    finally:
        await d.stop()
