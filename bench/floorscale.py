"""Floor scale with emulated tables (issue 18): how many tables, at one round a second
each (60 times a real table's pace), one mosquitto and the floor ingest sustain.

What runs, all on this machine: one mosquitto (persistence saved once a second, not
after every change: at a thousand messages a second a save per message is the
broker's whole cost; ``set_tcp_nodelay true``); the ingest (``python -m flooringest
run``, ``WORKERS`` worker processes, one shared subscription) into PostgreSQL (a
throw-away cluster, Debian's server; SQLite when PostgreSQL is not installed); the
emulated tables (``tablesim.emulator``: one MQTT connection per table with its last
will, real recorded round payloads with their chain anchors) in the bench process.
The CPU each process used is measured (``cpu_ms_per_round``), the emulator's (the
bench process) apart: it is load generation, not part of a floor.

Signed (issue 28): every emulated table has its own identity key and signs each round
and the retained anchor it publishes before it; the ingest runs with the registry of
those tables (``--registry``) and verifies every one, and with its own key
(``--key``) publishes the floor's signed record of each table. The share of the
ingest's CPU spent on the signature checks (the rounds', the anchors') and on signing
the records is measured by the worker itself (``--stats-file``: its CPU time around
each check, against its process CPU time, over the window) and printed.

Per level of N tables: every table connected, then ``window`` seconds of play at one
round per second each; the figure is the time from the emulator handing a round to
its MQTT client to the ingest's COMMIT of the row holding it (the worker's latency
log, written after COMMIT returned; one clock, this machine's). A level is sustained
when p99 < 50 ms, no round is missing from the database after the drain, and the
tables kept their pace (>= 95% of the rounds scheduled were made). The CPU of each
process per round shows how the cost grows per table.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from firmware_host.auth.keys import generate
from tablesim.broker import MosquittoProcess
from tablesim.emulator import Emulator

from .common import REPO, Figure, cpu_seconds, latency_summary, workdir
from .floorrig import children_cpu, machine_busy_s, verification_share, worker_stats

SECTION = "floor scale"
P99_GOAL_MS = 50.0
#: Ingest worker processes (``BENCH_FLOOR_WORKERS`` to try another number). One: on
#: this two-CPU machine, which also runs the broker, PostgreSQL and the emulated
#: tables, a second worker cost more CPU per round than it added (smaller batches:
#: more commits and PUBACK writes; a second process's MQTT handling), and sustained
#: fewer tables (1,250 against 1,500; docs/performance.md). Each worker is one
#: single-threaded process: a floor machine with more cores runs more of them.
WORKERS = int(os.environ.get("BENCH_FLOOR_WORKERS", "1"))
JSON = Any


async def _level(
    n: int, window: float, d: Path, db: str, pg_pid: int | None, log: Callable[[str], None]
) -> dict[str, JSON]:
    # persistence saved every second (``autosave_interval 1``), not after every change
    broker = MosquittoProcess(
        d / f"mosquitto-{n}", extra_config="set_tcp_nodelay true", save_every_change=False
    )
    broker.start()
    emu = Emulator(broker.host, broker.port, n, rate=1.0, chain=True, client_prefix=f"b{n}")
    registry = emu.write_registry(d / f"registry-{n}" / "tables.toml")
    key, _pub = generate("floor-ingest", d / "ingest-key", overwrite=True)
    lat_logs = [d / f"latency-{n}-w{i}.log" for i in range(WORKERS)]
    stats_files = [d / f"stats-{n}-w{i}.json" for i in range(WORKERS)]
    workers = []
    for i, path in enumerate(lat_logs):
        logf = open(d / f"ingest-{n}-w{i}.log", "ab")  # noqa: SIM115 - the child owns it
        workers.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "flooringest",
                    "run",
                    "--broker",
                    f"mqtt://{broker.host}:{broker.port}",
                    "--db",
                    db,
                    "--worker",
                    f"w{i}",
                    "--group",
                    f"bench{n}",
                    "--latency-log",
                    str(path),
                    "--registry",
                    str(registry),
                    "--key",
                    str(key),
                    "--principal",
                    "floor-ingest",
                    "--stats-file",
                    str(stats_files[i]),
                ],
                cwd=REPO,
                stdout=logf,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        )
        logf.close()
    task = asyncio.create_task(emu.run(paused=True))
    try:
        await asyncio.sleep(2.0)  # the workers subscribed
        deadline = time.monotonic() + 60
        while sum(t.online for t in emu.tables.values()) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{n} tables did not all connect within 60 s")
            await asyncio.sleep(0.2)
        procs = {"mosquitto": broker.proc.pid if broker.proc else 0}
        procs.update({f"ingest w{i}": w.pid for i, w in enumerate(workers)})
        cpu0 = {k: cpu_seconds(p) for k, p in procs.items()}
        busy0 = machine_busy_s()
        me0 = time.process_time()
        pg0 = children_cpu(pg_pid) if pg_pid else 0.0
        made0 = emu.total_rounds
        t0 = time.monotonic()
        emu.play()
        await asyncio.sleep(min(2.0, window / 4))
        stats0 = worker_stats(stats_files)  # the workers' own snapshot (every second), in play
        await asyncio.sleep(window - min(2.0, window / 4))
        stats1 = worker_stats(stats_files)
        emu.pause()
        elapsed = time.monotonic() - t0
        made = emu.total_rounds - made0
        cpu = {k: cpu_seconds(p) - cpu0[k] for k, p in procs.items()}
        cpu["emulator (bench process)"] = time.process_time() - me0
        if pg_pid:
            cpu["postgresql"] = children_cpu(pg_pid) - pg0
        others = max(0.0, machine_busy_s() - busy0 - sum(cpu.values()))
        # Drain: everything made reaches the database.
        drain_deadline = time.monotonic() + 60
        committed: dict[str, float] = {}
        while True:
            committed = {}
            for path in lat_logs:
                with contextlib.suppress(FileNotFoundError):
                    for line in path.read_text().splitlines():
                        rid, _, at = line.partition("\t")
                        committed.setdefault(rid, float(at))
            if len(committed) >= len(emu.published) and not emu.unacknowledged():
                break
            if time.monotonic() > drain_deadline:
                break
            await asyncio.sleep(0.5)
        missing = [rid for rid in emu.published if rid not in committed]
        lat = [committed[r] - t for r, t in emu.published.items() if r in committed]
        st = latency_summary(lat)
        last = worker_stats(stats_files)
        return {
            "signed": True,
            "verification_share": verification_share(stats0, stats1),
            "quarantined": int(last.get("quarantined", 0)),
            "records_published": int(last.get("records_published", 0)),
            "tables": n,
            "window_s": elapsed,
            "rounds_made": made,
            "rounds_scheduled": int(n * elapsed),
            "kept_pace": made / max(1, n * elapsed),
            "missing": len(missing),
            "latency_ms": st,
            "cpu_s": cpu,
            "cpu_ms_per_round": {k: 1000 * v / max(1, made) for k, v in cpu.items()},
            "cpu_cores_used": {k: v / elapsed for k, v in cpu.items()},
            #: What the machine's other users (other sessions' tests) took meanwhile.
            "other_processes_cores": others / elapsed,
            "loadavg": os.getloadavg()[0],
        }
    finally:
        emu.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)
        for w in workers:
            w.terminate()
        for w in workers:
            try:
                w.wait(15)
            except subprocess.TimeoutExpired:
                w.kill()
        broker.close()


def _database(d: Path) -> tuple[Callable[[int], str], int | None, Callable[[], None], str]:
    """A database URL per level, the PostgreSQL postmaster's pid, a closer, a label."""
    try:
        import asyncpg

        from tablesim.postgres import PostgresProcess, find_postgres_bin

        if find_postgres_bin() is None:
            raise ImportError("no PostgreSQL")
    except ImportError:
        return (lambda n: f"sqlite:///{d / f'floor-{n}.sqlite3'}"), None, (lambda: None), "SQLite"
    pg = PostgresProcess()
    pg.start()

    def new_db(n: int) -> str:
        async def create() -> None:
            conn = await asyncpg.connect(pg.dsn)
            try:
                await conn.execute(f"CREATE DATABASE bench_{n}")
            finally:
                await conn.close()

        asyncio.run(create())
        return f"postgresql://postgres@{pg.host}:{pg.port}/bench_{n}"

    pid = pg.proc.pid if pg.proc else None
    return new_db, pid, pg.close, "PostgreSQL 15 (fsync on, synchronous_commit on)"


def run(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    ladder = [100, 300] if quick else [250, 500, 1000, 1250, 1500, 1750, 2000, 2500]
    if os.environ.get("BENCH_FLOOR_LADDER"):  # e.g. "250,375,500": a finer ladder; "0": none
        ladder = [int(x) for x in os.environ["BENCH_FLOOR_LADDER"].split(",") if int(x)]
    window = 10.0 if quick else 30.0
    if os.environ.get("BENCH_FLOOR_WINDOW"):  # e.g. "4": a smoke run
        window = float(os.environ["BENCH_FLOOR_WINDOW"])
    figs: list[Figure] = []
    levels: list[dict[str, JSON]] = []
    with workdir("floorscale") as d:
        new_db, pg_pid, close, label = _database(d)
        try:
            for n in ladder:
                log(f"  {n} emulated tables at 1 round/s ({window:.0f} s)...")
                r = asyncio.run(_level(n, window, d, new_db(n), pg_pid, log))
                levels.append(r)
                st = r["latency_ms"]
                ok = st["p99"] < P99_GOAL_MS and r["missing"] == 0 and r["kept_pace"] >= 0.95
                r["sustained"] = ok
                vs = r["verification_share"]
                log(
                    f"    p50 {st['p50']:.1f} ms, p99 {st['p99']:.1f} ms, missing "
                    f"{r['missing']}, pace {100 * r['kept_pace']:.0f}%: "
                    f"{'sustained' if ok else 'NOT sustained'} (other processes: "
                    f"{r['other_processes_cores']:.2f} CPUs)"
                )
                log(
                    f"    signed tables: verification took {100 * vs['verification']:.1f}% of "
                    f"the ingest's CPU ({vs['ingest_cpu_s']:.1f} s over the window: rounds "
                    f"{100 * vs['rounds']:.1f}%, anchors and states "
                    f"{100 * vs['anchors_and_states']:.1f}%); signing the floor's records "
                    f"{100 * vs['signing_records']:.1f}%; quarantined {r['quarantined']}, "
                    f"records published {r['records_published']}"
                )
                per_round = ", ".join(f"{k} {v:.2f}" for k, v in r["cpu_ms_per_round"].items())
                figs.append(
                    Figure(
                        SECTION,
                        f"{n} emulated tables, publish -> row committed",
                        st["p99"],
                        "ms (p99)",
                        r,
                        goal=f"p99 < {P99_GOAL_MS:.0f} ms, no loss",
                        ok=ok,
                        note=(
                            f"{r['rounds_made']} rounds in {r['window_s']:.0f} s "
                            f"({100 * r['kept_pace']:.0f}% of the pace), p50 {st['p50']:.1f} ms, "
                            f"missing {r['missing']}; CPU ms per round: {per_round}; "
                            f"signed tables, every round and anchor verified: "
                            f"{100 * vs['verification']:.1f}% of the ingest's CPU "
                            f"(records signed: {100 * vs['signing_records']:.1f}%); "
                            f"one mosquitto (saved every 1 s), {WORKERS} ingest worker"
                            f"{'s' if WORKERS != 1 else ''}, {label}; "
                            f"load average {r['loadavg']:.1f}, other processes used "
                            f"{r['other_processes_cores']:.2f} of the 2 CPUs (a shared machine)"
                        ),
                    )
                )
                if not ok:
                    break
        finally:
            close()
    if ladder:  # (none: BENCH_FLOOR_LADDER=0)
        best = max((r["tables"] for r in levels if r.get("sustained")), default=0)
        figs.append(
            Figure(
                SECTION,
                "largest number of tables sustained at 1 round/s",
                best,
                "tables",
                {"levels": [r["tables"] for r in levels]},
                goal=">= 1000",
                ok=best >= 1000,
                note="the ladder stops at the first level not sustained; one machine (2 CPUs) runs "
                "the broker, the ingest, PostgreSQL and the emulated tables together",
            )
        )
    # Issue 36: the Macau mix at the games' own paces, and the drain after an outage.
    from .floormix import run_city

    figs += run_city(quick, log)
    return figs
