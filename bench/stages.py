"""Where the end-to-end latency goes: the result -> floor path split into its stages.

    python -m bench.stages [--bets 100] [--rounds 100] [--json FILE]

The same table as the end-to-end figure (``bench/table.py``: the Cammegh SS2 simulator
on a pty, ``tablectl run`` in a child process, mosquitto on loopback as the deployment
configures it, the floor's subscriber in this process), with one difference: the daemon is
started through this module (``python -m bench.stages --daemon ARGS``), which wraps a
few of the daemon's functions to note the time (``time.perf_counter``, the system-wide
monotonic clock, so the two processes' stamps compare) at each stage of a result:

==============  =====================================================================
``line``        the simulator's write of the first state-5 status line returned
``event``       the wheel driver emits ``WinningNumber`` (serial read, parse, confirm)
``procedure``   the wheel procedure takes the result (event queue hop)
``settled``     the journal is asked to settle (rules core settled the bets, payload built)
``committed``   the settlement's transaction committed (JSON, SQL, fsync; the outbox's
                listeners start)
``publish``     the link hands the round to the MQTT client (from the listener)
``written``     the MQTT client has written everything queued (paho's ``loop_write``,
                called from the event loop's writer callback, left nothing to send):
                the round is on the wire
``floor``       the round arrives at the floor's subscriber
==============  =====================================================================

work the daemon does off the path, timed from ``line`` (after the publication, once the
publisher has written the round: ``retained``, the journal's pruning done; ``hooks``,
the table extensions' ``round_settled`` done),
the daemon's garbage-collector pauses that fell inside a round's window, and the
slowest rounds stage by stage (where the tail goes). The wraps
change nothing in what the functions do; their own cost (a few microseconds a stage)
is included in the figures. Nothing here is used by the daemon in production.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import functools
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .common import percentile

STAGES = ("line", "event", "procedure", "settled", "committed", "publish", "written", "floor")
#: Work off the path, timed from ``line``: retention done, the extensions' hooks done.
SIDE = ("retained", "hooks")
ENV = "BENCH_STAGES_FILE"
#: How many of the slowest rounds are reported stage by stage (where the tail goes).
SLOWEST = 6


# ---------------------------------------------------------------------------
# the daemon side


def _install(path: str) -> None:
    """Wrap the daemon's functions so that each stage writes ``<perf_counter> <stage>``."""
    from drivers.common import DriverBase
    from firmware_host.journal import Outbox, Retention, RoundStore
    from firmware_host.mqtt.pump import OutboxPump
    from firmware_host.table.procedures import Procedure

    out = open(path, "a", buffering=1)  # noqa: SIM115 - open for the process's life

    def mark(stage: str) -> None:
        out.write(f"{time.perf_counter():.7f} {stage}\n")

    def before(cls: Any, name: str, stage: str, when: Any = None) -> None:
        fn = getattr(cls, name)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            if when is None or when(*args, **kw):
                mark(stage)
            return fn(*args, **kw)

        setattr(cls, name, wrapper)

    before(DriverBase, "emit", "event", lambda _s, ev: type(ev).__name__ == "WinningNumber")
    before(Procedure, "try_result", "procedure")
    before(RoundStore, "settle_round", "settled")
    # The outbox's listeners run first after a COMMIT that queued entries (the round).
    before(Outbox, "_wake_listeners", "committed")
    from firmware_host.table.extension import TableExtensions

    def after(cls: Any, name: str, stage: str) -> None:
        fn = getattr(cls, name)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            try:
                return fn(*args, **kw)
            finally:
                mark(stage)

        setattr(cls, name, wrapper)

    after(Retention, "prune", "retained")
    after(TableExtensions, "round_settled", "hooks")
    send = OutboxPump.send

    @functools.wraps(send)
    def traced_send(self: OutboxPump, client: Any, item: Any, *rest: Any) -> Any:
        if item.kind == "outbox" and item.topic == "rounds":
            mark("publish")
        return send(self, client, item, *rest)

    OutboxPump.send = traced_send  # type: ignore[method-assign]
    import paho.mqtt.client as paho

    loop_write = paho.Client.loop_write

    @functools.wraps(loop_write)
    def traced_loop_write(self: paho.Client) -> Any:
        try:
            return loop_write(self)
        finally:
            if not self._out_packet:  # everything queued is on the wire
                mark("written")

    paho.Client.loop_write = traced_loop_write  # type: ignore[method-assign]

    started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started:
            out.write(f"{started[0]:.7f} gc{info['generation']} {time.perf_counter():.7f}\n")

    gc.callbacks.append(on_gc)


def _daemon(argv: list[str]) -> int:
    _install(os.environ[ENV])
    from firmware_host.cli import main

    return main(argv)


# ---------------------------------------------------------------------------
# the bench side


def _read(path: Path) -> tuple[list[tuple[float, str]], list[tuple[float, float, str]]]:
    marks: list[tuple[float, str]] = []
    pauses: list[tuple[float, float, str]] = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts[1].startswith("gc"):
            pauses.append((float(parts[0]), float(parts[2]), parts[1]))
        else:
            marks.append((float(parts[0]), parts[1]))
    return marks, pauses


def split(
    windows: list[tuple[float, float]], path: Path
) -> tuple[dict[str, list[float]], list[float], list[tuple[str, float]], list[dict[str, float]]]:
    """Per stage, the ms since the previous stage, over every round window (line, floor):
    each stage is its first mark after the previous stage's; the work off the path is
    its first mark after ``line`` and before the next round's ``line``. Also the total
    per round, the collector pauses (generation, ms) inside the windows, and each
    round's own split (``total`` and its stages)."""
    marks, pauses = _read(path)
    marks.sort()
    times = [t for t, _ in marks]

    def first(stage: str, start: float, end: float) -> float | None:
        for t, s in marks[bisect.bisect_left(times, start) :]:
            if t > end:
                return None
            if s == stage:
                return t
        return None

    steps: dict[str, list[float]] = {s: [] for s in (*STAGES[1:], *SIDE)}
    totals = []
    rows: list[dict[str, float]] = []
    for n, (line_at, floor_at) in enumerate(windows):
        row: dict[str, float] = {"total": (floor_at - line_at) * 1000}
        rows.append(row)
        prev = line_at
        for stage in STAGES[1:-1]:
            t = first(stage, prev, floor_at)
            if t is None:
                break
            row[stage] = (t - prev) * 1000
            steps[stage].append(row[stage])
            prev = t
        else:
            row["floor"] = (floor_at - prev) * 1000
            steps["floor"].append(row["floor"])
        until = windows[n + 1][0] if n + 1 < len(windows) else float("inf")
        for stage in SIDE:
            t = first(stage, line_at, until)
            if t is not None:
                steps[stage].append((t - line_at) * 1000)
        totals.append((floor_at - line_at) * 1000)
    inside = [
        (gen, (end - start) * 1000)
        for start, end, gen in pauses
        if any(a <= start <= b for a, b in windows)
    ]
    return steps, totals, inside, rows


async def _run(bets: int, rounds: int) -> dict[str, Any]:
    from tablesim.broker import MosquittoProcess, find_mosquitto

    from .common import workdir
    from .procs import DaemonProcess, kill_leftovers
    from .table import WheelTable

    if not find_mosquitto():
        raise SystemExit("bench.stages needs mosquitto (apt-get install mosquitto)")
    broker = MosquittoProcess(save_every_change=False, extra_config="set_tcp_nodelay true")
    broker.start()
    try:
        with workdir("stages") as d:
            trace = d / "stages.txt"
            trace.write_text("")
            os.environ[ENV] = str(trace)
            DaemonProcess.module = ["-m", "bench.stages", "--daemon"]
            t = WheelTable(broker.host, broker.port, d, "bench-stages")
            windows = []
            try:
                await t.start()
                await t.play(1)  # warm-up
                for _ in range(rounds):
                    _, payload = await t.play(bets)
                    spin = next(iter(t.wheel.state5_at))
                    windows.append((t.wheel.state5_at[spin], t.rounds[payload["round_id"]].at))
            finally:
                await t.stop()
                DaemonProcess.module = ["-m", "firmware_host"]
                kill_leftovers()
            steps, totals, pauses, per_round = split(windows, trace)
    finally:
        broker.stop()
    return {
        "bets": bets,
        "rounds": rounds,
        "total_ms": {
            "p50": percentile(totals, 50),
            "p99": percentile(totals, 99),
            "max": max(totals),
        },
        "stages_ms": {
            s: {
                "n": len(v),
                "p50": percentile(v, 50) if v else float("nan"),
                "p90": percentile(v, 90) if v else float("nan"),
                "p99": percentile(v, 99) if v else float("nan"),
                "max": max(v) if v else float("nan"),
            }
            for s, v in steps.items()
        },
        "gc_pauses_in_windows_ms": [[g, round(ms, 3)] for g, ms in pauses],
        "slowest_rounds_ms": sorted(per_round, key=lambda r: -r["total"])[:SLOWEST],
    }


def report(res: dict[str, Any]) -> str:
    rows = [
        f"result -> floor, {res['bets']} bets, {res['rounds']} rounds: "
        f"p50 {res['total_ms']['p50']:.2f} ms, p99 {res['total_ms']['p99']:.2f} ms, "
        f"max {res['total_ms']['max']:.2f} ms",
        "",
        f"{'stage (time since the previous one)':<40} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7}",
    ]
    prev = "line"
    for stage, st in res["stages_ms"].items():
        if stage in SIDE:
            continue
        rows.append(
            f"{prev + ' -> ' + stage:<40} {st['p50']:7.2f} {st['p90']:7.2f} "
            f"{st['p99']:7.2f} {st['max']:7.2f}"
        )
        prev = stage
    p50_sum = sum(st["p50"] for s, st in res["stages_ms"].items() if s not in SIDE)
    rows.append(f"{'(sum of the stage medians)':<40} {p50_sum:7.2f}")
    rows.append("")
    rows.append(
        f"{'work off the path (time since line)':<40} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7}"
    )
    for stage in SIDE:
        st = res["stages_ms"][stage]
        rows.append(
            f"{'line -> ' + stage:<40} {st['p50']:7.2f} {st['p90']:7.2f} "
            f"{st['p99']:7.2f} {st['max']:7.2f}"
        )
    rows.append("")
    rows.append("the slowest rounds, stage by stage (ms since the previous stage):")
    names = [s for s in STAGES[1:]]
    rows.append(f"{'total':>7} " + " ".join(f"{s[:9]:>9}" for s in names))
    for r in res["slowest_rounds_ms"]:
        cells = (f"{r[s]:9.2f}" if s in r else f"{'-':>9}" for s in names)
        rows.append(f"{r['total']:7.2f} " + " ".join(cells))
    pauses = res["gc_pauses_in_windows_ms"]
    rows.append("")
    rows.append(
        f"daemon collector pauses inside the windows: {len(pauses)}"
        + (
            f" (generations {sorted({g for g, _ in pauses})}, max {max(ms for _, ms in pauses):.2f} ms)"
            if pauses
            else ""
        )
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--daemon"]:
        return _daemon(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m bench.stages", description=__doc__.split("\n")[0])
    ap.add_argument("--bets", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    res = asyncio.run(_run(args.bets, args.rounds))
    print(report(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
