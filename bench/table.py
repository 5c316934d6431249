"""A roulette table as in production, on one machine: end-to-end latency and footprint.

- The Cammegh SS2 wheel simulator runs in the bench process on a pseudo-terminal
  and records, for each game, the moment the write of its first state-5 status line
  (the line that carries the winning number and makes the driver's result) returned:
  its last byte is then in the kernel's pty buffer, read by the daemon.
- The daemon is ``python -m firmware_host run`` in a child process (its own
  interpreter and event loop), roulette with the wheel procedure, the journal on
  disk (``synchronous=FULL``: the settled round's commit waits for fsync).
- mosquitto on loopback; the floor's subscriber is :class:`FloorClient` in the bench
  process: the latency ends when the settled round's message arrives there.

Bets are placed over MQTT (``bets/request``), 50 in flight at a time, while betting
is open; then the croupier's key starts the game (``sim.spin()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import statistics
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from drivers.cammegh.codec import GameState, encode_status
from drivers.cammegh.sim import CammeghSim, SimTiming
from drivers.cammegh.tracker import RESULT_LINES
from firmware_host.config import validate_document
from tablesim.floor_client import FloorClient, FloorMessage
from tablesim.players import SimulatedPlayers
from tablesim.principals import make_principals
from tablesim.tables import table_document

from .common import (
    Figure,
    cpu_seconds,
    latency_summary,
    linear_slope,
    rss_kb,
    spread,
    workdir,
)
from .procs import DaemonProcess, floor_nodelay, mqtt_section

JSON = Any
log = logging.getLogger(__name__)

#: Fast games: every state still lasts several status lines, as the driver expects.
FAST = SimTiming(
    status_interval=0.02,
    before_game=0.06,
    braking=0.04,
    launch=0.02,
    ball_in_rim=0.06,
    no_more_bets=0.06,
    result=0.06,
    power_down=0.06,
    self_test=0.1,
    no_ball_stop=10.0,
)


class TimedWheel(CammeghSim):
    """The SS2 simulator, noting when each game's result became readable: the line that
    completes the driver's confirmation (the bare number line and state-5 lines, three
    agreeing lines in all: ``drivers/cammegh/tracker.py`` ``RESULT_LINES``). Before it
    no driver may trust the number (SS2 has no checksum), so the table's latency runs
    from there."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.state5_at: dict[int, float] = {}
        self.state5_wall: dict[int, float] = {}
        self._state5_lines: dict[int, int] = {}

    async def send_status(self) -> None:
        st = self.status()
        # Noted before the line is handed over: a slow reader (the Pi budget) can keep
        # the write waiting while the table already settles and publishes the round.
        if st.state == GameState.WINNING_NUMBER and st.spin not in self.state5_at:
            seen = self._state5_lines.get(st.spin, 0) + 1  # + the bare line before them
            self._state5_lines[st.spin] = seen
            if seen + 1 >= RESULT_LINES:
                self.state5_at[st.spin] = time.perf_counter()
                self.state5_wall[st.spin] = time.time()
        await self.send(encode_status(st))


class WheelTable:
    """Wheel simulator + daemon process + floor subscriber."""

    def __init__(
        self,
        host: str,
        port: int,
        directory: Path,
        table_id: str,
        seed: int = 1,
        max_bets: int = 1000,
    ) -> None:
        self.host, self.port = host, port
        self.max_bets = max_bets
        self.cfg: Any = None
        #: The bets placed in the last game, as sent (bench.limit settles them again).
        self.last_bets: list[dict[str, JSON]] = []
        self.dir = directory
        self.table_id = table_id
        self.seed = seed
        self.wheel = TimedWheel(seed=seed, timing=FAST)
        self.daemon: DaemonProcess | None = None
        self.floor: FloorClient | None = None
        self.rounds: dict[str, FloorMessage] = {}
        self.phase: tuple[str | None, str | None] = (None, None)
        self._changed = asyncio.Event()
        self._server: Any = None
        self.players: SimulatedPlayers | None = None
        self._tag = 0
        self.split = 0.0
        #: The floor's principals: requests are signed, as on a casino floor (issue 14).
        self.principals = make_principals(self.dir / f"keys-{self.table_id}")

    def _doc(self, port_path: str) -> dict[str, JSON]:
        doc = table_document(
            "roulette",
            {"wheel": {"driver": "cammegh-ss2", "port": port_path}},
            auth=self.principals.auth_section(),
        )
        doc["table"]["id"] = self.table_id
        # 1000 bets a round from 8 seats: above the table's default caps per seat ([bets])
        doc["bets"] = {
            "max_bets_per_seat": max(1000, self.max_bets),
            "max_bets_per_round": max(1000, self.max_bets),
            "max_seat_stakes": 10**12,
            "max_round_stakes": 10**15,
        }
        doc["mqtt"] = mqtt_section(self.host, self.port, f"tablectl-{self.table_id}")
        return doc

    async def start(self) -> float:
        self._server = await self.wheel.serve_pty()
        await self.wheel.power_on()
        doc = self._doc(str(self._server.path))
        cfg = self.cfg = validate_document(doc, "bench")
        self.players = SimulatedPlayers(cfg, self.seed)
        self.daemon = DaemonProcess(doc, self.dir, self.table_id)
        ready = await self.daemon.start()
        self.floor = FloorClient(
            self.host, self.port, self.table_id, client_id=f"bench-floor-{self.table_id}",
            on_message=self._on_message, signers=self.principals,
        )  # fmt: skip
        await self.floor.start()
        floor_nodelay(self.floor)
        gc.collect()
        gc.freeze()  # what the harness loaded stays: out of its collector's way
        return ready

    def _on_message(self, msg: FloorMessage) -> None:
        if msg.topic == "rounds":
            rid = msg.json()["round_id"]
            self.rounds.setdefault(rid, msg)
            self._changed.set()
        elif msg.topic == "state":
            st = msg.json()
            self.phase = (st.get("phase"), st.get("round_id"))
            self._changed.set()

    async def _until(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                tail = self.daemon.log_tail() if self.daemon else ""
                raise TimeoutError(f"{self.table_id}: {what} not seen within {timeout}s\n{tail}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(left, 0.5))

    async def wait_open(self, timeout: float = 30.0) -> str:
        await self._until(
            lambda: self.phase[0] == "open" and self.phase[1] not in self.rounds,
            timeout,
            "betting open",
        )
        rid = self.phase[1]
        assert rid is not None
        return rid

    async def place(self, n: int, chunk: int = 50) -> int:
        assert self.floor is not None and self.players is not None
        self._tag += 1
        bets = self.last_bets = self.players.many(n, f"g{self._tag}-")
        accepted = 0
        for i in range(0, n, chunk):
            answers = await asyncio.gather(*(self.floor.place(b) for b in bets[i : i + chunk]))
            accepted += sum(a.get("status") == "accepted" for a in answers)
        return accepted

    async def play(self, n_bets: int) -> tuple[float, JSON]:
        """One game: wait for betting, place ``n_bets``, spin; (latency s, round payload)."""
        rid = await self.wait_open()
        accepted = await self.place(n_bets) if n_bets else 0
        if accepted != n_bets:
            raise RuntimeError(f"only {accepted} of {n_bets} bets accepted in {rid}")
        self.wheel.state5_at.clear()
        self.wheel.state5_wall.clear()
        self.wheel._state5_lines.clear()
        # The harness's own collector is held through the measured game: a full
        # collection of this process (the simulator and the floor's subscriber) pauses
        # it for 16-40 ms, which would be charged to the table.
        gc.disable()
        try:
            await self.wheel.spin()
            await self._until(lambda: rid in self.rounds, 30.0, f"round {rid}")
        finally:
            gc.enable()
        msg = self.rounds[rid]
        payload = msg.json()
        if payload["status"] != "settled" or len(payload["bets"]) != n_bets:
            raise RuntimeError(f"round {rid}: {payload['status']} {payload.get('void_reason')}")
        spin_no = next(iter(self.wheel.state5_at))
        latency = msg.at - self.wheel.state5_at[spin_no]
        # The daemon's own "settled" timestamp (wall clock, ms resolution, taken before
        # the settlement's journal commit) splits the latency in two.
        settled = datetime.fromisoformat(payload["timestamps"]["settled"].replace("Z", "+00:00"))
        self.split = settled.timestamp() - self.wheel.state5_wall[spin_no]
        return latency, payload

    async def stop(self) -> None:
        if self.floor is not None:
            with contextlib.suppress(Exception):
                await self.floor.stop()
        if self.daemon is not None:
            await self.daemon.stop()
        with contextlib.suppress(Exception):
            await self.wheel.stop()


# ---------------------------------------------------------------------------
# end-to-end latency

SECTION_E2E = "end to end"


async def _e2e(host: str, port: int, plan: list[tuple[int, int]], fs_note: str) -> list[Figure]:
    figs: list[Figure] = []
    with workdir("e2e") as d:
        t = WheelTable(host, port, d, "bench-e2e")
        try:
            await t.start()
            await t.play(1)  # warm-up (first connection, first round)
            for n_bets, rounds in plan:
                samples = []
                splits = []
                size = 0
                for _ in range(rounds):
                    lat, payload = await t.play(n_bets)
                    samples.append(lat)
                    splits.append(t.split)
                    size = len(payload["bets"])
                st: dict[str, Any] = dict(latency_summary(samples))
                to_stamp = statistics.median(splits) * 1000
                st["median_line_to_settled_stamp_ms"] = to_stamp
                st["median_settled_stamp_to_floor_ms"] = st["p50"] - to_stamp
                goal = ok = None
                if n_bets == 100:
                    goal, ok = "p99 < 10 ms", st["p99"] < 10.0
                figs.append(
                    Figure(
                        SECTION_E2E,
                        f"result -> floor, {n_bets} bets",
                        st["p99"],
                        "ms (p99)",
                        st,
                        goal=goal,
                        ok=ok,
                        note=(
                            f"{rounds} rounds of {size} bets; median split (daemon's ms clock): "
                            f"line -> 'settled' stamp {to_stamp:.1f} ms, stamp -> floor "
                            f"{st['p50'] - to_stamp:.1f} ms (settle commit + fsync + publish)"
                            + (f"; journal on {fs_note}" if n_bets == plan[0][0] else "")
                        ),
                    )
                )
        finally:
            await t.stop()
    return figs


def run_e2e(host: str, port: int, quick: bool, fs_note: str, broker: str) -> list[Figure]:
    plan = [(10, 25), (100, 25), (1000, 6)] if quick else [(10, 200), (100, 200), (1000, 60)]
    figs = asyncio.run(_e2e(host, port, plan, fs_note))
    figs[0].note += f"; broker: {broker}"
    return figs


def run_e2e_compare(host: str, port: int, quick: bool, broker: str) -> list[Figure]:
    """The 100-bet figure again on a broker that saves nothing: the broker's share."""
    plan = [(100, 15 if quick else 100)]
    figs = asyncio.run(_e2e(host, port, plan, "the same disk"))
    for f in figs:
        f.name += ", broker without persistence"
        f.goal = f.ok = None
        f.note = f"{broker}; " + f.note
    return figs


# ---------------------------------------------------------------------------
# footprint

SECTION_FP = "footprint"


async def _footprint(host: str, port: int, rounds: int, starts: int, idle_s: float) -> list[Figure]:
    figs: list[Figure] = []
    ready_times: list[float] = []
    with workdir("footprint") as d:
        t = WheelTable(host, port, d, "bench-fp", seed=3)
        try:
            ready_times.append(await t.start())
            assert t.daemon is not None
            pid = t.daemon.pid
            rss0 = rss_kb(pid)
            xs: list[float] = [0]
            ys: list[float] = [rss0]
            step = max(1, rounds // 10)
            t0 = time.perf_counter()
            for i in range(1, rounds + 1):
                await t.play(10)
                if i % step == 0 or i == rounds:
                    xs.append(i)
                    ys.append(rss_kb(pid))
            play_s = time.perf_counter() - t0
            # Idle: the wheel back at its real pace (a status line every 500 ms), no play.
            t.wheel.timing = SimTiming()
            await asyncio.sleep(1.5)
            c0, w0 = cpu_seconds(pid), time.perf_counter()
            samples = []
            per = idle_s / 3
            for _ in range(3):
                a, wa = cpu_seconds(pid), time.perf_counter()
                await asyncio.sleep(per)
                samples.append(100 * (cpu_seconds(pid) - a) / (time.perf_counter() - wa))
            idle_pct = 100 * (cpu_seconds(pid) - c0) / (time.perf_counter() - w0)
            rss_end = rss_kb(pid)
        finally:
            await t.stop()
        for k in range(starts - 1):
            t = WheelTable(host, port, d / f"s{k}", f"bench-fp-{k}", seed=10 + k)
            try:
                ready_times.append(await t.start())
            finally:
                await t.stop()
    slope = linear_slope(xs, ys)  # kB per round
    # Slope over the second half only: start-up allocations settle in the first rounds.
    half = len(xs) // 2
    slope_late = linear_slope(xs[half:], ys[half:])
    at_1000 = ys[-1] + max(0.0, slope_late) * (1000 - rounds) if rounds < 1000 else ys[-1]
    projected = rounds < 1000
    figs.append(
        Figure(
            SECTION_FP,
            "RSS after 1,000 rounds" + (" (projected)" if projected else ""),
            at_1000 / 1024,
            "MB",
            {
                "rounds_played": rounds,
                "rss_start_mb": rss0 / 1024,
                "rss_end_mb": ys[-1] / 1024,
                "rss_after_idle_mb": rss_end / 1024,
                "slope_kb_per_round": slope,
                "slope_second_half_kb_per_round": slope_late,
                "curve": [[x, y / 1024] for x, y in zip(xs, ys, strict=True)],
                "play_seconds": play_s,
            },
            goal="< 60 MB",
            ok=at_1000 / 1024 < 60,
            note=(
                f"VmRSS of the daemon process; {rounds} rounds of 10 bets played, "
                f"{ys[0] / 1024:.1f} -> {ys[-1] / 1024:.1f} MB, slope {slope_late:.2f} kB/round "
                "over the second half" + ("; projected to 1,000 rounds" if projected else "")
            ),
        )
    )
    st = spread(samples)
    st["overall_pct"] = idle_pct
    figs.append(
        Figure(
            SECTION_FP,
            "CPU while idle",
            idle_pct,
            "% of a core",
            st,
            goal="< 1%",
            ok=idle_pct < 1.0,
            note=(
                f"utime+stime over {idle_s:.0f} s with the wheel idle in state 2 sending a status "
                "line every 500 ms (real SS2 pace), MQTT connected; spread over 3 slices"
            ),
        )
    )
    rst = spread(ready_times)
    figs.append(
        Figure(
            SECTION_FP,
            "start -> READY",
            rst["median"],
            "s",
            rst,
            goal="< 1.5 s",
            ok=rst["median"] < 1.5 and rst["max"] < 1.5,
            note="spawn of `python -m firmware_host run` to READY=1 on NOTIFY_SOCKET (interpreter "
            "start, imports, journal open + quick_check, wheel connected); goal checked on the max",
        )
    )
    return figs


def run_footprint(host: str, port: int, quick: bool) -> list[Figure]:
    if quick:
        return asyncio.run(_footprint(host, port, rounds=80, starts=3, idle_s=4.5))
    return asyncio.run(_footprint(host, port, rounds=1000, starts=5, idle_s=15.0))
