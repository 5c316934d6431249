"""The broker killed (SIGKILL) and restarted at random moments while a real
``TableDaemon`` plays 300 rounds (issue 8: "every round delivered, in order,
duplicates only under the same id").

The table is fantan run by the manual procedure: the dealer opens betting, players
bet, the dealer closes and enters the counted buttons, all as MQTT requests
(``commands/request``, ``bets/request``). While the broker is down the dealer keeps
playing on the table's own input (the same request handler the MQTT link feeds, as
the dealer's keypad or console would), so rounds keep settling and pile up in the
journal's outbox. The floor's consumer has a persistent session (QoS 1).

mosquitto only (it persists to disk; amqtt keeps everything in memory and a kill
loses what it acknowledged): skipped without it, FAILED under
``TABLECTL_REQUIRE_MOSQUITTO=1``. The journal/outbox-level variant (no daemon) is
``tests/daemon/test_mqtt_faults.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from _fault_support import (
    SEED,
    Deliveries,
    Requests,
    RoundRecorder,
    kv,
    report,
    signed,
    signed_setup,
)
from _mqtt_support import Collector

from firmware_host.config import load_config
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.table.engine import Phase
from tablesim.floor_client import FloorClient
from tablesim.principals import Principals

ROUNDS = int(os.environ.get("TABLECTL_FAULT_ROUNDS", "300"))

FANTAN = """\
version = 1
[table]
id = "fault-ft"
game = "fantan"
payable_unit = 100
result_source = "manual"
[limits]
min_stake = 1000
max_stake = 1000000
"""


class Dealer:
    """Plays fantan rounds from the table's phase, over MQTT when the broker is up and
    on the table's own input when it is down. Never resends blindly: each step is
    chosen from the phase the table is in now (a request that gave up may have been
    applied, or may be applied later)."""

    def __init__(
        self, daemon: TableDaemon, req: Requests, rng: random.Random, principals: Principals
    ) -> None:
        self.d = daemon
        self.principals = principals
        self.req = req
        self.rng = rng
        self.broker_up = True
        self.bets_in: dict[str, int] = {}  # round_id -> bets the dealer placed
        self.mqtt_requests = 0
        self.local_requests = 0
        self.n = 0

    def _local(self, kind: str, body: dict[str, Any]) -> Any:
        assert self.d.parts.floor is not None
        self.local_requests += 1
        self.n += 1
        payload = signed(
            self.principals, self.d.cfg.table_id, kind, {"request_id": f"local-{self.n}", **body}
        )
        if kind == "bets":
            return self.d.parts.floor.handle_bet_request(payload)
        return self.d.parts.floor.handle_command_request(payload)

    async def act(self, kind: str, body: dict[str, Any]) -> Any:
        e = self.d.parts.engine
        assert e is not None
        # every request names its round, as the dealer sees it now (issue 14)
        if body.get("command") == "open_betting":
            body = {**body, "after_round_id": e.last_round_id()}
        else:
            body = {**body, "round_id": e.current.round_id if e.current else None}
        if self.broker_up:
            self.mqtt_requests += 1
            resp = await self.req.request(kind, body)
            if resp is None:
                await asyncio.sleep(0.01)
            return resp
        await asyncio.sleep(0.01)  # a dealer's keypad pace while the network is down
        return self._local(kind, body)

    async def step(self) -> None:
        e = self.d.parts.engine
        assert e is not None
        phase = e.phase
        if phase is Phase.IDLE:
            await self.act("commands", {"command": "open_betting"})
        elif phase is Phase.OPEN:
            assert e.current is not None
            rid = e.current.round_id
            placed = self.bets_in.get(rid, 0)
            if placed < 2:
                self.bets_in[rid] = placed + 1
                bet = {
                    "bet_id": f"{rid[-8:]}-{placed}",
                    "seat": self.rng.randint(1, 8),
                    "bet_type": "fan",
                    "selection": self.rng.randint(1, 4),
                    "stake": 1000 * self.rng.randint(1, 20),
                }
                await self.act("bets", {"action": "place", "bet": bet})
            else:
                await self.act("commands", {"command": "close_betting"})
        elif phase is Phase.CLOSED:
            outcome = {"buttons": self.rng.randint(20, 120)}
            await self.act("commands", {"command": "result", "args": {"outcome": outcome}})
        await asyncio.sleep(self.rng.uniform(0.001, 0.004))  # the dealer's own pace


@pytest.mark.fault
@pytest.mark.slow
@pytest.mark.mosquitto
async def test_broker_killed_at_random_every_round_reaches_the_floor_in_order(
    fast_mosquitto: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = fast_mosquitto
    rng = random.Random(SEED)
    path = tmp_path / "fantan.toml"
    auth, principals = signed_setup(tmp_path / "keys")
    path.write_text(FANTAN + auth)
    cfg = load_config(path)
    settings = MqttSettings(
        host=broker.host,
        port=broker.port,
        reconnect_min_ms=20,
        reconnect_max_ms=300,
        publish_timeout_ms=3000,
        # Issue 8's contract, every round in order: an unpaced backlog (issue 36's pace,
        # live rounds ahead of it: tests/daemon/test_mqtt_pace.py, test_drain_order.py).
        backlog_per_minute=0,
    )
    d = TableDaemon(cfg, config_path=path, state_dir=tmp_path, runtime_dir=tmp_path, mqtt=settings)
    finished: list[dict[str, Any]] = []
    col = await Collector(
        broker.host, broker.port, f"casino/tables/{cfg.table_id}/rounds", "fault-floor-rounds"
    ).start()
    await d.start()
    assert d.parts.engine is not None and d.parts.link is not None and d.journal is not None
    journal = d.journal
    d.extensions.add(RoundRecorder(finished))
    floor = FloorClient(
        broker.host, broker.port, cfg.table_id, client_id="fault-dealer", signers=principals
    )
    await floor.start()
    req = Requests(floor, timeout=5.0)
    dealer = Dealer(d, req, random.Random(rng.random()), principals)
    kills = 0
    down_total = 0.0
    backlog_max = 0
    done = asyncio.Event()

    async def killer() -> None:
        nonlocal kills, down_total, backlog_max
        next_kill = rng.randint(5, 20)
        while not done.is_set():
            if len(finished) < next_kill:
                await asyncio.sleep(0.005)
                continue
            await asyncio.sleep(rng.uniform(0, 0.03))  # anywhere in the round in progress
            dealer.broker_up = False
            req.abort.set()
            await asyncio.to_thread(broker.kill)
            kills += 1
            down = rng.uniform(0.05, 0.5)
            await asyncio.sleep(down)  # the table keeps playing on its own input
            backlog_max = max(backlog_max, journal.outbox.pending_count())
            t0 = time.monotonic()
            await asyncio.to_thread(broker.start)
            down_total += down + (time.monotonic() - t0)
            req.abort.clear()
            dealer.broker_up = True
            next_kill = len(finished) + rng.randint(5, 20)

    kill_task = asyncio.create_task(killer())
    t_start = time.monotonic()
    try:
        while len(finished) < ROUNDS:
            await dealer.step()
        done.set()
        await kill_task
        elapsed = time.monotonic() - t_start
        await d.parts.link.wait_idle(60)
        journal_ids = [p["round_id"] for p in finished]
        await col.wait_for(
            lambda: set(journal_ids) <= {json.loads(m.payload)["round_id"] for m in col.messages},
            60,
            "every finished round on the floor",
        )
        got = Deliveries(m.payload for m in col.messages)
        lost = [r for r in journal_ids if r not in got.first]

        # Every round the table finished, committed before publication, reached the
        # floor exactly as journaled; first deliveries in seq order; duplicates only
        # under the same round_id with the same bytes.
        assert not lost, f"{len(lost)} rounds lost: {lost[:5]}"
        assert not got.conflicts, f"two different payloads under one round_id: {got.conflicts}"
        assert got.order == journal_ids, "rounds delivered out of order"
        seqs = got.seqs()
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "a gap in seq"
        for p in finished:
            held = got.payload(p["round_id"])
            assert held == journal.rounds.settlement(p["round_id"])  # as signed and journaled
            assert {k: v for k, v in held.items() if k != "signature"} == p
        assert d.journal.outbox.pending_count() == 0
        assert d.journal.rounds.in_flight() == []
        assert kills >= 5, f"only {kills} kills"
        statuses = [p["status"] for p in finished]
        report(
            capsys,
            "broker SIGKILL during play (fantan TableDaemon, mosquitto, persistent floor session)",
            [
                kv(
                    rounds=len(finished),
                    settled=statuses.count("settled"),
                    void=statuses.count("void"),
                    kills=kills,
                    broker_down_s=f"{down_total:.1f}",
                    elapsed_s=f"{elapsed:.1f}",
                ),
                kv(
                    deliveries=got.total,
                    duplicates=f"{got.duplicates} (same id, same bytes)",
                    lost=len(lost),
                    out_of_order=0,
                    largest_outbox_backlog=backlog_max,
                ),
                "journal commit (fsync) of a settlement: "
                + ", ".join(
                    f"{k} {v}" for k, v in journal.db.commit_latency().get("settle_round", {}).items()
                ),
                kv(
                    requests_over_mqtt=dealer.mqtt_requests,
                    gave_up_at_a_kill=req.gave_up,
                    entered_locally_while_down=dealer.local_requests,
                    link_connects=d.parts.link.stats.connects,
                    collector_connects=col.connects,
                ),
            ],
        )
    finally:
        done.set()
        kill_task.cancel()
        await floor.stop()
        await d.stop()
        await col.stop()
