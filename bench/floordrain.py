"""The floor after an outage (issue 36): N emulated tables keep playing while the floor
broker (or the ingest) is down for a while; how long after it returns until every
round is committed, with nothing lost and nothing stored twice, and what the live
rounds' latency does meanwhile.

The tables are the emulator's (``tablesim.emulator``): each holds what it could not
publish in its own queue (its journal's outbox: a round leaves it only once the broker
acknowledged it) and publishes as the table's link does: a window of 16 in flight
(``[mqtt] max_inflight``), reconnecting after the link's backoff (0.25 s doubling to
3 s, jitter 50-100%: ``[mqtt] reconnect_min_ms``, ``reconnect_max_ms``; 30 s before
the change below), and after a reconnection the rounds made since first, the backlog
beside them at ``[mqtt] backlog_per_minute`` (60: the link's own
:class:`~firmware_host.mqtt.pace.BacklogPace`; ``pace=0``: the backlog at full speed,
in order, as before). They play
the mix's games (``tablesim.floormix``) at ``per_hour`` rounds an hour each (200 by
default: 1,000 tables hold about 33,000 rounds after ten minutes, the issue's figure),
rounds of 7 to 60 bets, signed; the ingest verifies every one.

The run: every table connected; ``baseline`` seconds of play (the latency before, the
baseline of the ratios); the outage (``broker``: mosquitto stopped, its sessions saved;
``ingest``: every ingest worker stopped, the broker keeping their sessions' messages);
the return; then until every round made before the return is committed (the **drain
time**, from the return), and ``tail`` seconds more. The ingest *returns* when its
workers say so: each is started with a notification socket of systemd's kind
(``NOTIFY_SOCKET``) and sends ``READY=1`` once its live lane is subscribed (0.3 s after
its process starts on this machine, its imports mostly); the drain time still counts
from the process's start, and the rounds played while it started (they reached only the
session's queue: no subscriber of the worker's existed yet) drain with the backlog and
are reported apart. **Live rounds** are those made
after the return: their latency from the moment the table made them (journaled) to the
commit, which includes the wait behind their table's own backlog, and from the moment
they were handed to the MQTT client (the floor's side). Afterwards every round made is
looked for in the database: none missing, none stored twice (the workers' latency logs
and the database's own count).

What it found first (2026-11-28, before the pace): with the tables' backoff capped at
30 s the last table came back 30 s after the broker and its live rounds waited in its
own queue (live made -> committed p99 21.2 s); with the tables back within 2 s the
whole floor's backlog (33,000 rounds) reached the broker at once and the live rounds
waited behind it in the broker's queue to the ingest (MQTT has no priority: p99
14.2 s). Hence the 3 s cap and the pace (``docs/performance.md``, "Outage drain").
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tablesim.emulator import TABLE_BACKLOG_PER_MINUTE, TABLE_RECONNECT, TABLE_WINDOW, Emulator
from tablesim.floormix import BETS, plan_floor, rounds_per_second

from .common import Figure, latency_summary, percentile
from .floorrig import CpuMeter, Database, FloorRig, connect_all

SECTION = "floor scale"
DRAIN_GOAL_S = 60.0
LIVE_P99_GOAL_MS = 1000.0
KINDS = ("broker", "ingest")
#: When each is back after its start.
_BACK = {"broker": "taking connections", "ingest": "READY=1"}
JSON = Any


def listen_overflows() -> int | None:
    """The kernel's count of connections dropped because a listening socket's accept
    queue was full (``TcpExt: ListenOverflows``; Linux only, else None). mosquitto
    listens with a backlog of 100: a floor's tables coming back at once can overflow it,
    and a dropped handshake costs its table a TCP retransmission (about 1 s)."""
    try:
        head, values = Path("/proc/net/netstat").read_text().splitlines()[:2]
    except (OSError, ValueError):
        return None
    names, nums = head.split(), values.split()
    if "ListenOverflows" not in names or len(names) != len(nums):
        return None
    return int(nums[names.index("ListenOverflows")])


def _p99_ms(seconds: list[float]) -> float | None:
    return 1000 * percentile(seconds, 99) if seconds else None


def _summary(seconds: list[float]) -> dict[str, JSON]:
    return latency_summary(seconds) if seconds else {"n": 0, "p50": None, "p99": None}


async def drain(
    db: Database,
    d: Path,
    n: int,
    outage_s: float,
    kind: str,
    log: Callable[[str], None],
    *,
    per_hour: float = 200.0,
    baseline_s: float = 30.0,
    tail_s: float = 15.0,
    reconnect: tuple[float, float] = TABLE_RECONNECT,
    window: int = TABLE_WINDOW,
    pace: int = TABLE_BACKLOG_PER_MINUTE,
    workers: int = 1,
    batch_max: int | None = None,
    subscription: str = "shared",
    timeout_s: float = 300.0,
) -> dict[str, JSON]:
    if kind not in KINDS:
        raise ValueError(f"outage of {kind!r}: one of {', '.join(KINDS)}")
    plans = plan_floor(n, per_hour=per_hour)
    # Every table has played a round before the outage: a table's first round is where
    # the floor starts tracking it (a round lost before it is never a gap).
    baseline_s = max(baseline_s, 3600.0 / per_hour + 2.0)
    name = f"drain{n}{kind}"
    rig = FloorRig(d, name, await db.new(name), workers=workers, batch_max=batch_max,
                   subscription=subscription)  # fmt: skip
    emu = Emulator(
        rig.broker.host, rig.broker.port, plans, client_prefix=name, window=window,
        reconnect=reconnect, backlog_per_minute=pace,
    )  # fmt: skip
    rig.registry = emu.write_registry(d / f"registry-{name}" / "tables.toml")
    rig.start()
    task = asyncio.create_task(emu.run(paused=True))
    try:
        await asyncio.sleep(2.0)
        await connect_all(emu, n, log)
        await asyncio.sleep(1.0)
        emu.play()
        t_play = time.time()
        await asyncio.sleep(baseline_s)
        t_down = time.time()
        if kind == "broker":
            await asyncio.to_thread(rig.broker.stop)
        else:
            for i in range(workers):
                await asyncio.to_thread(rig.stop_worker, i)
        log(f"    {kind} down at {t_down - t_play:.0f} s of play; {outage_s:.0f} s of outage")
        end = t_down + outage_s
        while (left := end - time.time()) > 0:
            await asyncio.sleep(min(left, 60.0))
            if end - time.time() > 1:
                log(f"    ... {time.time() - t_down:.0f} s down: rounds made "
                    f"{emu.total_rounds}, held by the tables {emu.unacknowledged()}")  # fmt: skip
        held_by_tables = emu.unacknowledged()
        committed = rig.read_commits()
        t_listening = 0.0
        backlog = {rid for rid in emu.made if rid not in committed}
        t_up = time.time()
        overflows_before = listen_overflows()
        assert kind != "broker" or rig.broker.proc is None
        if kind == "broker":
            await asyncio.to_thread(rig.broker.start)  # returns once it takes connections
            t_listening = time.time()
        else:
            for i in range(workers):
                rig.start_worker(i)
        assert rig.broker.proc is not None
        meter = CpuMeter({"mosquitto": rig.broker.proc.pid, **rig.worker_pids()}, db.pid)
        meter.start()
        # The ingest is back once every worker said READY=1 (it takes the rounds played
        # from then on: its live lane subscribed); what was played while it started
        # reached only its queue, and drains with the backlog (counted apart).
        # (The broker is back once it takes connections again.)
        t_back = t_listening if kind == "broker" else (await rig.ready_all()) or time.time()
        starting = {rid for rid, t in emu.made.items() if t_up <= t < t_back}
        backlog |= starting
        log(f"    {kind} back: {len(backlog)} rounds not committed ({held_by_tables} held by "
            f"the tables, the rest by the broker)"
            + (f"; the ingest ready {t_back - t_up:.2f} s after its start ({len(starting)} "
               "rounds played meanwhile)" if kind == "ingest" else ""))  # fmt: skip
        remaining = set(backlog)
        drained_at: float | None = None
        all_online: float | None = None
        progress = looked = t_up
        while True:
            await asyncio.sleep(0.25)
            committed = rig.read_commits()
            now = time.time()
            if remaining and now - looked >= 5 and len(remaining) < 5000:
                looked = now  # what the duties stored (not in the latency logs)
                await rig.from_db([r for r in remaining if r not in committed])
            if all_online is None and all(t.online for t in emu.tables.values()):
                all_online = now - t_up
            if remaining:
                remaining = {rid for rid in remaining if rid not in committed}
                if not remaining:
                    drained_at = max(committed[rid] for rid in backlog) if backlog else now
            if now - progress >= 10:
                progress = now
                log(f"    ... {now - t_up:.0f} s after the return: {len(backlog) - len(remaining)}"
                    f"/{len(backlog)} of the backlog committed; tables online "
                    f"{sum(t.online for t in emu.tables.values())}/{n}")  # fmt: skip
            if drained_at is not None and now >= drained_at + tail_s:
                break
            if now > t_up + timeout_s:
                break
        cpu = meter.stop()
        overflows_after = listen_overflows()
        overflows = (None if overflows_before is None or overflows_after is None
                     else overflows_after - overflows_before)  # fmt: skip
        emu.pause()
        t_end = time.time()
        deadline = time.monotonic() + 120
        while True:  # the end: everything made reaches the database
            committed = rig.read_commits()
            await rig.from_db([rid for rid in emu.made if rid not in committed])
            if all(rid in committed for rid in emu.made) and not emu.unacknowledged():
                break
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        twice = await rig.stored_twice()
        lost = [rid for rid in emu.made if rid not in committed]
        missing = len(lost)
        if lost:  # where each was (the first ten): for the log
            held = {e[0] for t in emu.tables.values() for e in (*t.backlog, *t.pending)}
            for rid in lost[:10]:
                log(f"    missing {rid}: made at {emu.made[rid] - t_play:.2f} s of play, "
                    f"handed to MQTT {'yes' if rid in emu.published else 'no'}, "
                    f"still held by its table {'yes' if rid in held else 'no'}")  # fmt: skip
        return _result(
            emu, committed, n=n, kind=kind, outage_s=outage_s, per_hour=per_hour,
            t_play=t_play, t_down=t_down, t_up=t_up, t_back=t_back, t_end=t_end,
            drained_at=drained_at, backlog=backlog, starting=starting,
            held_by_tables=held_by_tables, all_online=all_online, cpu=cpu,
            missing=missing, twice=twice, log_twice=rig.twice, reconnect=reconnect,
            window=window, pace=pace, workers=workers, batch_max=batch_max,
            overflows=overflows, subscription=subscription,
        )  # fmt: skip
    finally:
        emu.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 60)
        rig.close()


def _result(
    emu: Emulator, committed: dict[str, float], *, n: int, kind: str, outage_s: float,
    per_hour: float, t_play: float, t_down: float, t_up: float, t_back: float,
    t_end: float, drained_at: float | None, backlog: set[str], starting: set[str],
    held_by_tables: int, all_online: float | None, cpu: dict[str, JSON], missing: int,
    twice: dict[str, int],
    log_twice: int, reconnect: tuple[float, float], window: int, pace: int, workers: int,
    batch_max: int | None, overflows: int | None, subscription: str,
) -> dict[str, JSON]:  # fmt: skip
    made, pub = emu.made, emu.published

    def lat(since: dict[str, float], lo: float, hi: float) -> list[float]:
        return [committed[r] - since[r] for r, t in made.items()
                if lo <= t < hi and r in committed and r in since]  # fmt: skip

    drain_end = drained_at if drained_at is not None else t_end
    # The live rounds, in buckets of 5 s from the return: how their latency moves.
    series = []
    step = 5.0
    at = t_back
    while at < t_end:
        made_lat = lat(made, at, at + step)
        # Where it went: waiting in its table (made -> handed to MQTT), then the floor.
        in_table = [pub[r] - t for r, t in made.items() if at <= t < at + step and r in pub]
        floor_lat = lat(pub, at, at + step)
        series.append({
            "from_s": at - t_back,
            "live_rounds": len(made_lat),
            "made_to_committed_p99_ms": _p99_ms(made_lat),
            "made_to_published_p99_ms": _p99_ms(in_table),
            "published_to_committed_p99_ms": _p99_ms(floor_lat),
            "backlog_committed": sum(1 for r in backlog if at <= committed.get(r, -1) < at + step),
        })  # fmt: skip
        at += step
    drain_s = None if drained_at is None else drained_at - t_up
    # A broker's return: each table's first connection from it (an ingest's outage
    # leaves the tables connected).
    back = [min((c for c in t.connected_at if c >= t_up), default=t_end) - t_back
            for t in emu.tables.values()] if kind == "broker" else []  # fmt: skip
    return {
        "tables": n,
        "outage": kind,
        "outage_s": outage_s,
        "per_hour": per_hour,
        "bets_per_round": list(BETS),
        "rounds_per_s": rounds_per_second(plan_floor(n, per_hour=per_hour)),
        "table_window": window,
        "table_reconnect_s": list(reconnect),
        "table_backlog_per_minute": pace,
        "ingest_workers": workers,
        "ingest_batch_max": batch_max,
        "ingest_subscription": subscription,
        "backlog": len(backlog),
        "held_by_tables": held_by_tables,
        "drain_s": drain_s,
        "drain_rate_per_s": len(backlog) / drain_s if drain_s else None,
        "all_tables_back_s": all_online,
        "tables_connected_after_return_s": {
            "p50": percentile(back, 50),
            "p99": percentile(back, 99),
            "max": max(back),
        }
        if back
        else None,
        "listen_overflows": overflows,
        "baseline_publish_to_committed_ms": _summary(lat(pub, t_play, t_down)),
        "baseline_made_to_committed_ms": _summary(lat(made, t_play, t_down)),
        "live_made_to_committed_ms": _summary(lat(made, t_back, drain_end)),
        "live_publish_to_committed_ms": _summary(lat(pub, t_back, drain_end)),
        "ready_s": t_back - t_up,
        "starting_rounds": len(starting),
        "starting_made_to_committed_ms": _summary(lat(made, t_up, t_back)),
        "after_drain_made_to_committed_ms": _summary(lat(made, drain_end, t_end)),
        "series": series,
        "rounds_made": len(made),
        "bets_made": emu.bets_made,
        "missing": missing,
        "stored_twice": max(twice["stored_twice"], log_twice),
        "database": twice,
        "tables_resent": emu.stats.resent,
        "replays": emu.stats.replays,
        "rounds_replayed": emu.stats.replayed,
        "cpu": cpu,
    }


def figures(r: dict[str, JSON]) -> list[Figure]:
    what = f"{r['tables']} tables, {r['outage_s'] / 60:g} min {r['outage']} outage"
    live, base = r["live_made_to_committed_ms"], r["baseline_made_to_committed_ms"]
    livep, basep = r["live_publish_to_committed_ms"], r["baseline_publish_to_committed_ms"]
    ratio = (
        f" ({live['p99'] / base['p99']:.0f}x the {base['p99']:.0f} ms before the outage)"
        if live["p99"] and base["p99"] else ""
    )  # fmt: skip
    load = r["cpu"]["loadavg"]
    common = (
        f"{r['backlog']} rounds behind at the return ({r['held_by_tables']} in the tables' "
        f"queues), {r['per_hour']:g} rounds an hour per table, {BETS[0]}-{BETS[1]} bets; "
        f"tables: window {r['table_window']}, reconnect backoff "
        f"{r['table_reconnect_s'][0]:g}-{r['table_reconnect_s'][1]:g} s, backlog "
        f"{r.get('table_backlog_per_minute', 0) or 'unpaced'}"
        f"{' a minute' if r.get('table_backlog_per_minute') else ''} (all back "
        f"{_s(r['all_tables_back_s'])} after the return); load average "
        f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, other processes "
        f"{r['cpu']['other_processes_cores']:.2f} CPUs; the ingest's subscription "
        f"{r.get('ingest_subscription', 'shared')}"
    )
    if r.get("ready_s") is not None:
        st = r["starting_made_to_committed_ms"]
        common += (
            f"; the {r['outage']} back ({_BACK[r['outage']]}) {r['ready_s']:.2f} s after "
            f"its start: the {r['starting_rounds']} rounds played meanwhile drained with "
            f"the backlog (made -> committed p99 {_ms(st['p99'])}; not live)"
        )
    ok_loss = r["missing"] == 0 and r["stored_twice"] == 0
    # "Throughout": the worst 5 s of the live rounds, not only the whole run's p99.
    worst = max((b["made_to_committed_p99_ms"] for b in r["series"]
                 if b["made_to_committed_p99_ms"] is not None), default=None)  # fmt: skip
    return [
        Figure(
            SECTION, f"outage drain, {what}: every round committed after the return",
            r["drain_s"], "s", r, goal=f"< {DRAIN_GOAL_S:.0f} s, 0 lost, 0 double",
            ok=r["drain_s"] is not None and r["drain_s"] < DRAIN_GOAL_S and ok_loss,
            note=(f"{_n(r['drain_rate_per_s'])} rounds/s; lost {r['missing']}, stored twice "
                  f"{r['stored_twice']} (duplicates dropped {r['database']['duplicates_dropped']}); "
                  f"replays asked {r['replays']} ({r['rounds_replayed']} rounds); " + common),
        ),
        Figure(
            SECTION, f"live rounds during the drain, {what}: made -> committed",
            live["p99"], "ms (p99)", {"made": live, "published": livep, "before": base},
            goal=f"p99 < {LIVE_P99_GOAL_MS:.0f} ms, every 5 s", ok=live["p99"] is not None
            and live["p99"] < LIVE_P99_GOAL_MS and worst is not None
            and worst < LIVE_P99_GOAL_MS,
            note=(f"the worst 5 s after the return: p99 {_ms(worst)}; "
                  f"{live['n']} rounds made after the return until the drain ended, p50 "
                  f"{_ms(live['p50'])}{ratio}; the same handed to MQTT -> committed: p99 "
                  f"{_ms(livep['p99'])} (before the outage {_ms(basep['p99'])}); a live round "
                  "goes ahead of its table's backlog, which is paced (unpaced: it waits "
                  "behind it, the outbox published in order)"),
        ),
    ]  # fmt: skip


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} s"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f} ms"


def _n(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def describe(r: dict[str, JSON]) -> list[str]:
    """The run in a few lines (the log), with the live rounds' latency every 5 s."""
    lines = [
        f"    drained in {_s(r['drain_s'])} ({_n(r['drain_rate_per_s'])} rounds/s); backlog "
        f"{r['backlog']}, lost {r['missing']}, stored twice {r['stored_twice']} (the "
        f"database: {r['database']['rows']} rows, {r['database']['distinct_round_ids']} round "
        f"ids, {r['database']['distinct_table_seq']} (table, seq)), replays "
        f"{r['replays']} ({r['rounds_replayed']} rounds); all tables "
        f"back after {_s(r['all_tables_back_s'])}; live made -> committed p99 "
        f"{_ms(r['live_made_to_committed_ms']['p99'])}, handed to MQTT -> committed p99 "
        f"{_ms(r['live_publish_to_committed_ms']['p99'])} (before: "
        f"{_ms(r['baseline_made_to_committed_ms']['p99'])}, "
        f"{_ms(r['baseline_publish_to_committed_ms']['p99'])})",
        "    every 5 s after the return: live rounds made (p99 made -> committed; of it "
        "made -> handed to MQTT / handed -> committed), backlog committed:",
    ]
    cb = r.get("tables_connected_after_return_s")
    if cb:
        lines.insert(1, f"    the tables connected after the return: p50 {cb['p50']:.2f} s, "
                        f"p99 {cb['p99']:.2f} s, last {cb['max']:.2f} s; the kernel's listen "
                        f"overflows meanwhile: {r.get('listen_overflows', '-')}")  # fmt: skip
    if r.get("ready_s") is not None:
        lines.insert(1, f"    the {r['outage']} back ({_BACK[r['outage']]}) "
                        f"{r['ready_s']:.2f} s after its start; "
                        f"{r['starting_rounds']} rounds played meanwhile: made -> committed "
                        f"p99 {_ms(r['starting_made_to_committed_ms']['p99'])}")  # fmt: skip
    row = []
    for b in r["series"]:
        row.append(f"{b['from_s']:.0f}s {b['live_rounds']} ({_ms(b['made_to_committed_p99_ms'])}"
                   f"; {_ms(b.get('made_to_published_p99_ms'))}/"
                   f"{_ms(b.get('published_to_committed_p99_ms'))}) "
                   f"+{b['backlog_committed']}")  # fmt: skip
    for i in range(0, len(row), 6):
        lines.append("      " + "; ".join(row[i : i + 6]))
    return lines


def run(
    db: Database, d: Path, n: int, outage_s: float, kind: str, log: Callable[[str], None],
    **opts: Any,
) -> tuple[list[Figure], dict[str, JSON]]:  # fmt: skip
    log(f"  outage drain: {n} tables, the {kind} down {outage_s:.0f} s...")
    r = asyncio.run(drain(db, d, n, outage_s, kind, log, **opts))
    for line in describe(r):
        log(line)
    return figures(r), r
