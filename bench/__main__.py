"""``python -m bench [--quick] [--json FILE] [--only SECTIONS]``: measure, print, write JSON.

Sections (in order): ``machine`` (fsync and a CPU micro-benchmark), ``settle`` and
``math`` (rules core), ``peers`` (treys, pokerkit, mahjong, bare aiomqtt), ``e2e``
(wheel result to the floor), ``limit`` (result -> floor and the MQTT layer as ratios to
what the hardware allows, measured in the same run), ``footprint`` (memory, idle CPU, start to READY), ``pi``
(the same under a Raspberry Pi 4's CPU budget and an SD card's fsync), ``floor``
(emulated tables -> one mosquitto -> the floor ingest -> PostgreSQL), ``flood`` (a flood
of malformed requests against one table). ``--quick`` uses smaller sizes and fewer repeats
and says so in the output; every figure is still measured.
"""

from __future__ import annotations

import argparse
import atexit
import datetime as dt
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import __version__
from .common import (
    Figure,
    disk_workdir_base,
    fsync_latency,
    latency_summary,
    machine_info,
    nbody,
    render_table,
    spread,
    workdir,
)
from .procs import kill_leftovers

SECTIONS = (
    "machine", "settle", "math", "peers", "e2e", "limit", "footprint", "pi", "floor", "flood"
)  # fmt: skip
BROKER_SECTIONS = {"peers", "e2e", "limit", "footprint", "pi", "flood"}
JSON = Any


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Broker:
    """mosquitto as the floor runs it (config/broker/mosquitto-floor.conf: persistence
    saved once a second, TCP_NODELAY), or amqtt in a process when mosquitto is missing."""

    def __init__(self, persistence: bool = True) -> None:
        from tablesim.broker import AmqttProcess, MosquittoProcess, find_mosquitto

        self.proc: Any
        if find_mosquitto():
            self.proc = MosquittoProcess(
                persistence=persistence, save_every_change=False,
                extra_config="set_tcp_nodelay true",
            )  # fmt: skip
            self.kind = "mosquitto"
            self.description = (
                "mosquitto on loopback, set_tcp_nodelay true, "
                + ("persistence saved once a second (as config/broker/mosquitto-floor.conf)"
                   if persistence else "no persistence")
            )  # fmt: skip
        else:
            self.proc = AmqttProcess()
            self.kind = "amqtt"
            self.description = "amqtt in a child process (FALLBACK: mosquitto is not installed)"
        self.proc.start()

    @property
    def endpoint(self) -> tuple[str, int, str]:
        return self.proc.host, self.proc.port, self.kind

    def close(self) -> None:
        self.proc.close()


def machine_figures(quick: bool) -> tuple[list[Figure], dict[str, JSON]]:
    _base, why = disk_workdir_base()
    with workdir("machine") as d:
        info = machine_info(d)
        fs = fsync_latency(d, 200 if quick else 1000)
    info["journal_dir_choice"] = why
    steps = 100_000 if quick else 500_000
    runs = [nbody(steps) for _ in range(3 if quick else 5)]
    # seconds per million steps (the Pi 4 reference: 5 million steps, docs/performance.md)
    cst = spread([1e6 * r / steps for r in runs])
    figs = [
        Figure("machine", "fsync of a 4 KiB append", fs["p99"], "ms (p99)", fs,
               note=f"journal directory: {info['journal_fs']['fstype']} on "
                    f"{info['journal_fs']['device']} ({why})"),
        Figure("machine", "CPU: n-body, s per 1M steps", cst["median"], "s", cst,
               note=f"bench.common.nbody ({steps} steps per run, Benchmarks Game algorithm, "
                    "pure Python, one core): the single-core speed reference"),
    ]  # fmt: skip
    return figs, info


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (< 3 min)")
    p.add_argument("--json", metavar="FILE", help="write every figure and the machine to FILE")
    p.add_argument(
        "--only", metavar="SECTIONS", help=f"comma-separated subset of: {', '.join(SECTIONS)}"
    )
    p.add_argument(
        "--workdir",
        metavar="DIR",
        help="where the journals and the fsync probe go (default: the temp dir if it is on "
        "a disk, else .bench-work/); on a Pi, a directory on the journal's own card or disk",
    )
    args = p.parse_args(argv)
    if args.workdir:
        os.environ["BENCH_WORKDIR"] = args.workdir
    only = SECTIONS if not args.only else tuple(s.strip() for s in args.only.split(","))
    unknown = set(only) - set(SECTIONS)
    if unknown:
        p.error(f"unknown section(s) {sorted(unknown)}; sections: {', '.join(SECTIONS)}")

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mqtt").setLevel(logging.ERROR)  # aiomqtt's pending-call warnings
    atexit.register(kill_leftovers)
    mode = "quick" if args.quick else "full"
    started = time.perf_counter()
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    command = (
        "python -m bench"
        + (" --quick" if args.quick else "")
        + (f" --only {args.only}" if args.only else "")
    )
    if args.quick:
        _log("QUICK MODE: smaller sizes and fewer repeats than the full run (see each note)")
    figures: list[Figure] = []
    machine: dict[str, JSON] = {}
    timings: dict[str, float] = {}
    loads: dict[str, tuple[float, float]] = {}
    broker: Broker | None = None
    extra: Broker | None = None

    def section(name: str, fn: Callable[[], list[Figure]]) -> None:
        if name not in only:
            return
        _log(f"[{name}]")
        t0 = time.perf_counter()
        load0 = os.getloadavg()[0]
        try:
            figures.extend(fn())
        except Exception as exc:
            logging.exception("section %s failed", name)
            figures.append(Figure(name, f"{name} (section failed)", None, "", skipped=repr(exc)))
        timings[name] = time.perf_counter() - t0
        # The 1-minute load average around each section: this machine may be shared.
        loads[name] = (round(load0, 2), round(os.getloadavg()[0], 2))

    try:
        figs, machine = machine_figures(args.quick)
        if "machine" in only:
            figures.extend(figs)
        fs_note = f"{machine['journal_fs']['fstype']} ({machine['journal_fs']['device']})"
        if BROKER_SECTIONS & set(only):
            broker = Broker()
            _log(f"broker: {broker.description}")
            machine["broker"] = broker.description

        from . import flood, floorscale, limit, peers, pi, rules, table

        section("settle", lambda: rules.run_settle(args.quick, _log))
        section("math", lambda: rules.run_math(args.quick, _log))
        assert broker is not None or not (BROKER_SECTIONS & set(only))

        def e2e() -> list[Figure]:
            nonlocal extra
            assert broker is not None
            host, port, kind = broker.endpoint
            figs = table.run_e2e(host, port, args.quick, fs_note, broker.description)
            if kind == "mosquitto":
                extra = Broker(persistence=False)
                h2, p2, _ = extra.endpoint
                figs += table.run_e2e_compare(h2, p2, args.quick, extra.description)
                extra.close()
                extra = None
            return figs

        def ep() -> tuple[str, int, str]:
            assert broker is not None
            return broker.endpoint

        section("peers", lambda: peers.run(args.quick, ep(), _log))
        section("e2e", e2e)
        # Issue 20: result -> floor and the MQTT layer as ratios to the limit, same run.
        section("limit", lambda: limit.run(ep()[0], ep()[1], args.quick, _log))
        section("footprint", lambda: table.run_footprint(ep()[0], ep()[1], args.quick))
        # The table daemon on a Raspberry Pi 4's budget (issue 18): a calibrated cgroup
        # CPU quota and an SD card's fsync (bench/pi.py).
        section("pi", lambda: pi.run(ep()[0], ep()[1], args.quick, _log))

        # Floor scale (issue 18): emulated tables -> one mosquitto -> the floor ingest
        # -> PostgreSQL; its own broker and database. (The old ladder of N daemons on
        # one machine measured this machine hosting daemons, not the floor: bench.floor
        # keeps it, outside the run.)
        section("floor", lambda: floorscale.run(args.quick, _log))
        section("flood", lambda: flood.run(ep()[0], ep()[1], args.quick, _log))
    finally:
        for b in (extra, broker):
            if b is not None:
                b.close()
        kill_leftovers()

    duration = time.perf_counter() - started
    header = [
        f"python -m bench {__version__}: {mode} run, {duration:.0f} s, {started_at}",
        f"machine: {machine.get('nproc')} CPUs ({machine.get('cpu_model')}), "
        f"Python {machine.get('python')}, SQLite {machine.get('sqlite')}, "
        f"journal on {machine.get('journal_fs', {}).get('fstype')}, "
        f"load average at start {tuple(round(x, 2) for x in machine.get('loadavg_at_start', ()))}, "
        f"at end {tuple(round(x, 2) for x in os.getloadavg())} (a shared machine: see the JSON "
        "for each section's)",
    ]
    if "broker" in machine:
        header.append(f"broker: {machine['broker']}")
    if args.quick:
        header.append(
            "QUICK MODE: smaller sizes and fewer repeats (p99 of a few dozen samples is close "
            "to the max); run without --quick for the published figures"
        )
    print("\n".join(header))
    print()
    print(render_table(figures))
    missed = [f.name for f in figures if f.ok is False]
    if missed:
        print(f"\ngoals missed: {', '.join(missed)}")
    if args.json:
        doc = {
            "bench_version": __version__,
            "command": command + (f" --json {args.json}" if args.json else ""),
            "mode": mode,
            "started_at": started_at,
            "duration_s": duration,
            "section_seconds": timings,
            "section_loadavg_1min_start_end": loads,
            "loadavg_at_end": os.getloadavg(),
            "machine": machine,
            "figures": [f.to_json() for f in figures],
        }
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
        print(f"\nJSON written to {args.json}")
    return 0


# ``latency_summary`` is re-exported for the smoke test's convenience.
__all__ = ["latency_summary", "main"]

if __name__ == "__main__":
    sys.exit(main())
