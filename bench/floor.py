"""Floor scale: N tables, each its own daemon process, publishing to one mosquitto.

Each table is a fantan table (results entered by command, as the dealer's keypad or
the floor does), one round per second: ``open_betting``, three bets, ``close_betting``,
``result``; the figure is the time from sending the ``result`` command to the settled
round arriving at the floor's subscriber (one :class:`FloorClient` per table, in the
bench process). Tables start at random phases within the second. A level of N is
sustained when p99 stays under 50 ms and at least 95% of the scheduled rounds were
played on time. Daemons are added level by level (the ladder keeps the ones running).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tablesim.floor_client import FloorClient, FloorMessage
from tablesim.principals import make_principals
from tablesim.tables import table_document

from .common import Figure, latency_summary, workdir
from .procs import DaemonProcess, floor_nodelay, mqtt_section, stop_all

SECTION = "floor scale"
P99_GOAL_MS = 50.0
JSON = Any


class CommandTable:
    def __init__(self, host: str, port: int, directory: Path, index: int) -> None:
        self.table_id = f"bench-ft-{index:03d}"
        # signed requests, as on a casino floor (issue 14): keys made for the bench
        self.principals = make_principals(directory / f"keys-{self.table_id}")
        doc = table_document("fantan", {}, auth=self.principals.auth_section())
        doc["table"]["id"] = self.table_id
        doc["mqtt"] = mqtt_section(host, port, f"tablectl-{self.table_id}")
        self.daemon = DaemonProcess(doc, directory, self.table_id)
        self.host, self.port = host, port
        self.floor: FloorClient | None = None
        self.rounds: dict[str, float] = {}
        self.events: dict[str, asyncio.Event] = {}
        self.rng = random.Random(index)
        self.n = 0
        self.errors: list[str] = []

    def _on_message(self, msg: FloorMessage) -> None:
        if msg.topic == "rounds":
            rid = msg.json()["round_id"]
            self.rounds.setdefault(rid, msg.at)
            ev = self.events.get(rid)
            if ev is not None:
                ev.set()

    async def start(self) -> float:
        ready = await self.daemon.start(timeout=120)
        self.floor = FloorClient(
            self.host, self.port, self.table_id, client_id=f"bench-floor-{self.table_id}",
            on_message=self._on_message, signers=self.principals,
        )  # fmt: skip
        await self.floor.start()
        floor_nodelay(self.floor)
        return ready

    async def play(self) -> float | None:
        """One round; seconds from the result command's send to the round at the floor."""
        fc = self.floor
        assert fc is not None
        self.n += 1
        r = await fc.command("open_betting")
        if r.get("status") != "ok":
            self.errors.append(f"open: {r.get('code')}")
            return None
        rid = r["data"]["round_id"]
        self.events[rid] = asyncio.Event()
        bets = [
            {"bet_id": f"{rid}-{k}", "seat": k + 1, "bet_type": "fan", "selection": self.rng.randint(1, 4),
             "stake": 2500 * self.rng.randint(1, 8)}
            for k in range(3)
        ]  # fmt: skip
        await asyncio.gather(*(fc.place(b) for b in bets))
        await fc.command("close_betting")
        t0 = time.perf_counter()
        result = asyncio.ensure_future(
            fc.command("result", outcome={"buttons": self.rng.randint(20, 120)})
        )
        try:
            await asyncio.wait_for(self.events[rid].wait(), 10)
        except TimeoutError:
            self.errors.append(f"round {rid} not received")
            return None
        finally:
            with contextlib.suppress(Exception):
                await result
            self.events.pop(rid, None)
        return self.rounds[rid] - t0

    async def stop(self) -> None:
        if self.floor is not None:
            with contextlib.suppress(Exception):
                await self.floor.stop()
        await self.daemon.stop()


async def _run_level(tables: list[CommandTable], seconds: float) -> tuple[list[float], int, int]:
    """Every table plays one round per second for ``seconds``; (latencies, played, scheduled)."""
    latencies: list[float] = []
    played = 0
    scheduled = 0
    start = time.perf_counter() + 0.2
    end = start + seconds

    async def one(t: CommandTable, offset: float) -> None:
        nonlocal played, scheduled
        k = 0
        while True:
            slot = start + offset + k
            if slot >= end:
                return
            scheduled += 1
            now = time.perf_counter()
            if slot > now:
                await asyncio.sleep(slot - now)
            elif now - slot > 0.5:  # more than half a round late: this slot is missed
                k += 1
                continue
            lat = await t.play()
            if lat is not None:
                latencies.append(lat)
                played += 1
            k += 1

    rng = random.Random(len(tables))
    await asyncio.gather(*(one(t, rng.random()) for t in tables))
    return latencies, played, scheduled


async def _ladder(host: str, port: int, levels: list[int], seconds: float,
                  log: Callable[[str], None]) -> list[Figure]:  # fmt: skip
    figs: list[Figure] = []
    tables: list[CommandTable] = []
    best = 0
    results: list[dict[str, JSON]] = []
    with workdir("floor") as d:
        try:
            for n in levels:
                new = [CommandTable(host, port, d, i) for i in range(len(tables), n)]
                t0 = time.perf_counter()
                # Start in small groups: a cold start of many interpreters at once on two
                # cores only measures the scheduler.
                for i in range(0, len(new), 4):
                    await asyncio.gather(*(t.start() for t in new[i : i + 4]))
                tables += new
                log(f"  {n} tables up in {time.perf_counter() - t0:.1f} s; playing {seconds:.0f} s")
                await asyncio.sleep(0.5)
                lats, played, scheduled = await _run_level(tables, seconds)
                errors = sum(len(t.errors) for t in tables)
                for t in tables:
                    t.errors.clear()
                st: dict[str, Any] = (
                    latency_summary(lats) if lats else {"n": 0, "p50": None, "p99": None}
                )
                ok = bool(lats) and float(st["p99"]) < P99_GOAL_MS and played >= 0.95 * scheduled
                results.append({"tables": n, **st, "played": played, "scheduled": scheduled,
                                "errors": errors, "sustained": ok})  # fmt: skip
                figs.append(
                    Figure(
                        SECTION,
                        f"{n} tables: result -> floor",
                        st["p99"],
                        "ms (p99)",
                        {**st, "played": played, "scheduled": scheduled, "errors": errors},
                        goal=f"p99 < {P99_GOAL_MS:.0f} ms",
                        ok=ok,
                        note=f"{played}/{scheduled} rounds played on time over {seconds:.0f} s",
                    )
                )
                if ok:
                    best = n
                else:
                    break
        finally:
            await stop_all([t.daemon for t in tables])
            for t in tables:
                if t.floor is not None:
                    with contextlib.suppress(Exception):
                        await t.floor.stop()
    last_tried = results[-1]["tables"] if results else 0
    figs.append(
        Figure(
            SECTION,
            "largest N sustained",
            best,
            "tables",
            {"levels": results},
            note=(
                f"ladder {levels}, stopped at the first level that failed"
                if best != last_tried
                else f"every level of the ladder {levels} held: the limit is above {best}"
            ),
        )
    )
    return figs


def run(
    host: str, port: int, quick: bool, log: Callable[[str], None], label: str = ""
) -> list[Figure]:
    if quick:
        figs = asyncio.run(_ladder(host, port, [1, 4, 8, 16], 6.0, log))
    else:
        figs = asyncio.run(_ladder(host, port, [1, 4, 8, 16, 24, 32, 48, 64, 96], 30.0, log))
    if label:
        for f in figs:
            f.name += f" [{label}]"
    return figs
