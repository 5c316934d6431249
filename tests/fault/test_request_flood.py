"""A flood of malformed bet and command requests while the table plays (issue 8: "every
one answered with an error code, the table's latency unaffected beyond the figure
recorded").

A fantan table (58/2004, manual procedure) runs as its own process (``python -m
firmware_host run``) and is played over MQTT by the floor's dealer: open betting, two
bets, close, two valid bets too late, the counted buttons. Its latency, from the
``result`` command sent to the settled round received on ``rounds``, is measured
first without and then during a flood from another process (``_flooder.py``):
thousands of requests that are each wrong in one way (``_flood_requests.py``: invalid
JSON, not UTF-8, not an object, unknown fields, missing or overlong request ids,
negative / zero / fractional / string / NaN / huge stakes, unknown bet types, wrong
types, unknown commands and arguments, impossible results, cancels of unknown bets,
payloads over the 64 KiB limit), pipelined with up to ``WINDOW`` awaiting an answer.

Asserted: every flood request gets exactly one response, rejected with the code
``docs/mqtt.md`` documents for its kind (a bet arriving outside betting may be
refused for that first); the late bets are refused with ``BETTING_CLOSED``; every
round is settled and reaches the floor once per id, as journaled; and a generous
latency bound. The figures (both latencies, the flood's rate) are printed for
``docs/reliability.md``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _fault_support import (
    REPO,
    SEED,
    DaemonProcess,
    Deliveries,
    NotifySocket,
    Requests,
    kv,
    ms_summary,
    pct,
    report,
    wait_until,
)
from _flood_requests import MAX_PAYLOAD, valid_bet

from firmware_host import floor as floor_module
from firmware_host.floor_client import FloorClient

ROUNDS = int(os.environ.get("TABLECTL_FLOOD_ROUNDS", "20"))  # measured with, and without
FLOOD = int(os.environ.get("TABLECTL_FLOOD_REQUESTS", "5000"))  # at least
WINDOW = 100  # flood requests awaiting their answer at once
LATE = 2  # valid bets sent after close, each round
TABLE = "fault-flood"

CONFIG = """\
version = 1
[table]
id = "{table}"
game = "fantan"
payable_unit = 100
[limits]
min_stake = 1000
max_stake = 1000000
[mqtt]
host = "{host}"
port = {port}
"""


class Dealer:
    def __init__(self, req: Requests, floor: FloorClient, rng: random.Random) -> None:
        self.req = req
        self.floor = floor
        self.rng = rng
        self.late: list[Any] = []  # answers to bets sent after close
        self.n = 0

    async def round(self, late_bets: int) -> tuple[float, float, str]:
        """One round; returns (result command -> response, result command -> round
        on the floor, round_id)."""
        self.n += 1
        r = await self.req.command("open_betting")
        assert r is not None and r["status"] == "ok", r
        rid = r["data"]["round_id"]
        for i in range(2):
            b = await self.req.place(valid_bet(self.rng, f"d{self.n}-{i}"))
            assert b is not None and b["status"] == "accepted", b
        r = await self.req.command("close_betting")
        assert r is not None and r["status"] == "ok", r
        for i in range(late_bets):  # valid bets, too late: refused with BETTING_CLOSED
            self.late.append(await self.req.place(valid_bet(self.rng, f"late{self.n}-{i}")))
        seen = len(self.floor.messages)
        t0 = time.perf_counter()
        r = await self.req.command("result", outcome={"buttons": self.rng.randint(20, 120)})
        t_resp = time.perf_counter() - t0
        assert r is not None and r["status"] == "ok", r

        def arrived() -> float | None:
            for m in self.floor.messages[seen:]:
                if m.topic == "rounds" and json.loads(m.payload)["round_id"] == rid:
                    return m.at
            return None

        await wait_until(lambda: arrived() is not None, 60, f"round {rid} on the floor")
        at = arrived()
        assert at is not None
        return t_resp, at - t0, rid


@pytest.fixture
async def short_dir() -> AsyncIterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="ff-", dir="/tmp"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.fault
@pytest.mark.slow
async def test_flood_of_malformed_requests_every_one_answered_table_keeps_playing(
    fault_broker: Any, short_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert MAX_PAYLOAD == floor_module.MAX_PAYLOAD
    broker = fault_broker
    rng = random.Random(SEED + 4)
    cfg_path = short_dir / "fantan.toml"
    cfg_path.write_text(CONFIG.format(table=TABLE, host=broker.host, port=broker.port))
    notify = NotifySocket(short_dir / "notify.sock")
    floor = FloorClient(broker.host, broker.port, TABLE, client_id="fault-flood-dealer")
    daemon = DaemonProcess(cfg_path, short_dir, notify, short_dir / "daemon.log", floor)
    flooder: asyncio.subprocess.Process | None = None
    try:
        await floor.start()
        await daemon.start()
        req = Requests(floor, timeout=60.0)
        dealer = Dealer(req, floor, random.Random(rng.random()))
        for _ in range(3):  # warm-up
            await dealer.round(0)
        quiet = [await dealer.round(late_bets=LATE) for _ in range(2 * ROUNDS)]

        out = short_dir / "flood.json"
        flooder = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__).with_name("_flooder.py")),
            "--host", broker.host, "--port", str(broker.port),
            "--root", f"casino/tables/{TABLE}", "--seed", str(SEED),
            "--count", str(FLOOD), "--window", str(WINDOW), "--out", str(out),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )  # fmt: skip
        assert flooder.stdin is not None and flooder.stdout is not None
        reached = asyncio.create_task(flooder.stdout.readline())
        t_flood = time.perf_counter()
        await asyncio.sleep(0.3)  # the flood under way
        loud = []
        # The flood goes on until the dealer has played ROUNDS rounds in it and at
        # least FLOOD requests were sent.
        while len(loud) < ROUNDS or not reached.done():
            assert flooder.returncode is None, "the flooder stopped early"
            loud.append(await dealer.round(late_bets=LATE))
        assert await reached == b"reached\n"
        flooder.stdin.close()
        flood_wall = time.perf_counter() - t_flood
        assert await asyncio.wait_for(flooder.wait(), 180) == 0
        result = json.loads(out.read_text())

        # Every malformed request answered exactly once, rejected with its error code.
        wrong: list[str] = []
        by_category: Counter[str] = Counter()
        codes: Counter[str] = Counter()
        for r in result["requests"]:
            by_category[r["category"]] += 1
            if len(r["answers"]) != 1:
                wrong.append(f"{r['category']}: {len(r['answers'])} answers")
                continue
            a = r["answers"][0]
            codes[a.get("code")] += 1
            if (
                a.get("status") not in ("rejected", "error")
                or a.get("code") not in r["codes"]
                or a.get("request_id") != r["request_id"]
            ):
                wrong.append(
                    f"{r['category']}: {a.get('status')} {a.get('code')} {a.get('message')}"
                )
        assert result["count"] >= FLOOD
        assert not wrong, f"{len(wrong)} wrong: {wrong[:10]}"
        assert not result["unmatched"], result["unmatched"][:5]
        late_codes = Counter(a["code"] for a in dealer.late if a is not None)
        assert late_codes == {"BETTING_CLOSED": len(dealer.late)}, late_codes

        # The table kept playing: every round settled, delivered once per id, as journaled.
        ids = [x[2] for x in quiet + loud]
        await wait_until(
            lambda: (
                set(ids)
                <= {
                    json.loads(m.payload)["round_id"] for m in floor.messages if m.topic == "rounds"
                }
            ),
            30,
            "every round on the floor",
        )
        rc = await daemon.terminate()
        assert rc == 0, daemon.log_tail()
        got = Deliveries(m.payload for m in floor.messages if m.topic == "rounds")
        con = sqlite3.connect(f"file:{short_dir / 'journal.sqlite3'}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT round_id, status FROM rounds ORDER BY seq").fetchall()
        finally:
            con.close()
        assert [r[1] for r in rows] == ["settled"] * len(rows)
        assert got.order == [r[0] for r in rows] and not got.conflicts

        q_round = [x[1] for x in quiet]
        l_round = [x[1] for x in loud]
        rate = result["count"] / result["seconds"]
        assert pct(l_round, 0.5) < 5.0, "the table's latency under the flood is out of bounds"
        report(
            capsys,
            "flood of malformed requests (fantan, `python -m firmware_host run`, MQTT)",
            [
                kv(
                    malformed_requests=result["count"],
                    kinds=len(by_category),
                    every_one_answered_once_with_its_error_code=not wrong,
                    unreadable_ones_answered_with_null_id=sum(
                        1 for r in result["requests"] if r["request_id"] is None
                    ),
                    bets_after_close=len(dealer.late),
                ),
                kv(
                    flood=f"{rate:.0f} requests/s answered ({WINDOW} awaiting an answer at once, "
                    f"{result['seconds']:.1f} s)",
                    rounds_during_the_flood=len(loud),
                    flood_wall_s=f"{flood_wall:.1f}",
                ),
                "codes: " + ", ".join(f"{k} {v}" for k, v in codes.most_common()),
                kv(rounds=len(rows), settled=len(rows), lost=0, duplicates=got.duplicates),
                "result -> settled round on the floor, no flood:   " + ms_summary(q_round),
                "result -> settled round on the floor, with flood: " + ms_summary(l_round),
                "result -> command response, no flood:   " + ms_summary([x[0] for x in quiet]),
                "result -> command response, with flood: " + ms_summary([x[0] for x in loud]),
            ],
        )
    finally:
        if flooder is not None and flooder.returncode is None:
            flooder.kill()
            await flooder.wait()
        if daemon.proc is not None and daemon.proc.returncode is None:
            daemon.proc.kill()
            await daemon.proc.wait()
        await floor.stop()
        notify.close()
