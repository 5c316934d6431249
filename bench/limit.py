"""How close the table comes to what the hardware allows (issue 20).

    python -m bench.limit [--bets 10,100,1000] [--rounds 100] [--quick] [--json FILE]
    python -m bench --only limit

**Result -> floor against its limit.** The table is the end-to-end table of
``bench/table.py`` (the SS2 simulator on a pty, ``python -m firmware_host run`` in a
child process, mosquitto on loopback as the deployment configures it, the floor's subscriber in
this process); its latency runs from the line that completes the wheel's result to the
settled round's arrival at the floor. After every round (20 ms after its arrival, once
the table's work after the publication is done), in the same run and on the same round,
the bench measures the work no implementation can avoid:

- ``commit``: a bare SQLite transaction on the journal's disk (WAL, ``synchronous =
  FULL``, as the journal) inserting the round's payload as the floor received it,
  committed with its fsync;
- ``settle``: ``game.settle`` of the same bets and outcome through the rules core;
- ``sign``: one Ed25519 signature of the round as the floor received it (its canonical
  text; issue 28: every round is signed by the table's identity key, and the floor
  verifies it), with ``cryptography`` alone;
- ``publish``: bare aiomqtt publishing the same payload at QoS 1 to the same broker,
  until it arrives at a subscriber like the floor's (one QoS 1 hop through the broker,
  as the round's last leg).

The limit is the sum of the four medians; the table's p50 and p99 are reported as
ratios to it (goals with 100 bets: p50 at most 2x, p99 at most 3x). The p99 of each
component is given too (their sum is the limit's own bad case).

**The MQTT layer against bare aiomqtt**, on the table's own round payloads (from the
run above), alternating, one broker:

- latency: one round at a time, from the end of the journal's outbox commit (its first
  listener; the link's, after it, hands the round to the client in that same step) to
  the arrival at the subscriber (``FloorLink``, the table's link with its defaults), against
  bare aiomqtt from ``publish()`` to the arrival; the ratio of the medians (goal at most
  1.2x);
- throughput: a backlog of rounds drained (until the last PUBACK; the link reads the
  outbox and writes its "published" marks) against bare aiomqtt publishing them with as
  many in flight as the link's ``max_inflight``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import socket
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .common import Figure, latency_summary, spread, workdir

JSON = Any
SECTION = "limit"
#: Seconds between a round's arrival and the limit's measurement beside it.
QUIET_S = 0.02
#: Backlog drains each way per MQTT-layer pass. A drain takes 20-50 ms and one of the
#: machine's stalls can double it: with 3 a pass (9 pairs in all), the median ratio of
#: the same code moved from 1.04 to 1.42 between runs; with 10 (30 pairs) four runs
#: gave 1.09-1.11.
DRAINS_PER_PASS = 10


# ---------------------------------------------------------------------------
# the components of the limit


class BareCommit:
    """A SQLite file beside the journal, as the journal opens it (WAL, FULL)."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS r (id INTEGER PRIMARY KEY, payload BLOB)")

    def commit(self, payload: bytes) -> float:
        t0 = time.perf_counter()
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO r (payload) VALUES (?)", (payload,))
        self.db.execute("COMMIT")
        return time.perf_counter() - t0

    def close(self) -> None:
        self.db.close()


class BareSettle:
    """The rules core alone on the same bets and outcome."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    def settle(self, raw_bets: list[dict[str, JSON]], outcome: JSON) -> float:
        cfg = self.cfg
        game, rules = cfg.game, cfg.rules
        bets = [game.parse_bet(rules, b, cfg.limits) for b in raw_bets]
        parsed = game.parse_outcome(rules, outcome)
        t0 = time.perf_counter()
        game.settle(rules, parsed, bets, cfg.money)
        return time.perf_counter() - t0


class BareSign:
    """One Ed25519 signature (``cryptography``, a key of its own) of a round's bytes."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self.key = Ed25519PrivateKey.generate()

    def sign(self, payload: bytes) -> float:
        t0 = time.perf_counter()
        self.key.sign(b"tablectl-table-v1\nrounds\n" + payload)
        return time.perf_counter() - t0


class Publisher:
    """A child process (``python -m bench.limit --publisher HOST PORT DIR``) that
    publishes what it is sent, as bare aiomqtt or through a ``FloorLink`` (journal
    outbox), while the subscriber like the floor's stays in this process: the
    publisher's own work then weighs on it as on a table, never on the subscriber.
    Times are ``time.perf_counter()`` (CLOCK_MONOTONIC, the same in both processes)."""

    def __init__(self, host: str, port: int, directory: Path) -> None:
        self.host, self.port, self.dir = host, port, directory
        self.proc: asyncio.subprocess.Process | None = None
        #: Arrival times at the subscriber, per table id, in order.
        self.arrived: dict[str, list[float]] = {"bench-limit-bare": [], "bench-limit-link": []}
        self._got = asyncio.Event()
        self.floors: list[Any] = []

    async def start(self) -> None:
        from tablesim.floor_client import FloorClient, FloorMessage

        from .procs import floor_nodelay

        for table in self.arrived:

            def seen(msg: FloorMessage, table: str = table) -> None:
                if msg.topic == "rounds":
                    self.arrived[table].append(msg.at)
                    self._got.set()

            floor = FloorClient(
                self.host, self.port, table, client_id=f"{table}-floor", on_message=seen
            )
            await floor.start()
            floor_nodelay(floor)
            self.floors.append(floor)
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.limit", "--publisher", self.host, str(self.port),
            str(self.dir), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        await self._ask(b"ready\n")

    async def _ask(self, head: bytes, *bodies: bytes) -> float:
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(head + b"".join(b"%d\n" % len(b) + b for b in bodies))
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), 120)
        if not line:
            raise RuntimeError("the publisher process ended")
        return float(line)

    async def _arrival(self, table: str, index: int) -> float:
        seen = self.arrived[table]
        while len(seen) <= index:
            self._got.clear()
            await asyncio.wait_for(self._got.wait(), 10)
        return seen[index]

    async def one(self, how: str, payload: bytes) -> float:
        """Publish one round (``how``: ``bare`` or ``link``); seconds from the
        publication (bare: ``publish()`` called; link: the outbox commit's end) to its
        arrival at the subscriber."""
        table = f"bench-limit-{how}"
        index = len(self.arrived[table])
        t0 = await self._ask(how.encode() + b"\n", payload)
        return await self._arrival(table, index) - t0

    async def drain(self, how: str, payloads: list[bytes]) -> float:
        """Queue every payload at once; seconds until the last PUBACK (in the child)."""
        table = f"bench-limit-{how}"
        index = len(self.arrived[table]) + len(payloads) - 1
        elapsed = await self._ask(b"drain-%s %d\n" % (how.encode(), len(payloads)), *payloads)
        await self._arrival(table, index)
        return elapsed

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(Exception):
                await self._ask(b"quit\n")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.proc.wait(), 20)
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        for f in self.floors:
            with contextlib.suppress(Exception):
                await f.stop()


def noting_last(link: Any, count: int) -> asyncio.Future[float]:
    """When the link's count of outbox publications the broker accepted reaches
    ``count``: the time it did, noted as that PUBACK is processed (no polling loop
    sharing the CPU with the link; bare aiomqtt's drain has none either)."""
    done: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    accepted = link.pump.accepted

    def noted(item: Any) -> None:
        accepted(item)
        if link.stats.outbox_published >= count and not done.done():
            done.set_result(time.perf_counter())
            del link.pump.accepted  # the class's own again

    link.pump.accepted = noted
    return done


async def _publisher_main(host: str, port: int, directory: str) -> None:
    """The child's side of :class:`Publisher`: commands on stdin, times on stdout."""
    import aiomqtt

    from firmware_host.journal import Journal, OutboxMessage
    from firmware_host.mqtt import AfterPublication, FloorLink, MqttSettings

    from .procs import broker_protocol

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def reply(value: float) -> None:
        out.write(b"%.9f\n" % value)
        out.flush()

    async def body() -> bytes:
        n = int(await reader.readline())
        return await reader.readexactly(n)

    after = AfterPublication()  # as the daemon: made first, the journal defers to it
    journal = Journal(Path(directory) / "journal.sqlite3", defer=after.queue)
    # The commit's end: this listener runs before the link's, which hands the entries
    # to the client in that same after-commit step.
    committed: list[float] = []
    journal.outbox.add_listener(lambda: committed.append(time.perf_counter()))
    settings = MqttSettings(
        host=host, port=port, protocol=broker_protocol(host, port), client_id="bench-limit-link"
    )
    link = FloorLink(settings, "bench-limit-link", journal.outbox, after=after)
    journal.retention.checkpoint_in_background()
    link.start()
    seq = 0
    async with aiomqtt.Client(
        host, port, identifier="bench-limit-bare",
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        protocol=aiomqtt.ProtocolVersion.V5 if settings.protocol == "5" else None,  # as the link
    ) as client:  # fmt: skip
        client.pending_calls_threshold = 10_000
        await link.wait_connected(10)
        await link.wait_idle(10)
        topic = "casino/tables/bench-limit-bare/rounds"
        window = asyncio.Semaphore(settings.max_inflight)

        async def windowed(b: bytes) -> None:
            async with window:
                await client.publish(topic, b, qos=1)

        while True:
            cmd = (await reader.readline()).decode().split()
            if not cmd or cmd[0] == "quit":
                break
            if cmd[0] == "ready":
                reply(0.0)
            elif cmd[0] == "bare":
                b = await body()
                t0 = time.perf_counter()
                await client.publish(topic, b, qos=1)
                reply(t0)
            elif cmd[0] == "link":
                b = await body()
                seq += 1
                committed.clear()
                journal.outbox.enqueue(OutboxMessage("rounds", b, round_id=f"r{seq}"))
                reply(committed[0])
            elif cmd[0] == "drain-bare":
                bs = [await body() for _ in range(int(cmd[1]))]
                t0 = time.perf_counter()
                await asyncio.gather(*(windowed(b) for b in bs))
                reply(time.perf_counter() - t0)
            elif cmd[0] == "drain-link":
                bs = [await body() for _ in range(int(cmd[1]))]
                last_acked = noting_last(link, link.stats.outbox_published + len(bs))
                committed.clear()
                journal.outbox.enqueue(*(OutboxMessage("rounds", b) for b in bs))
                # From the commit's end (as one round's latency): the link's listener
                # fills its window right after that instant.
                reply(await last_acked - committed[0])
                await link.wait_idle(30)
    await link.stop()
    journal.close()


# ---------------------------------------------------------------------------
# result -> floor against the limit


def _ratio_figures(n_bets: int, table: list[float], parts: dict[str, list[float]]) -> list[Figure]:
    t = latency_summary(table)
    comp = {k: latency_summary(v) for k, v in parts.items()}
    limit = sum(c["p50"] for c in comp.values())
    limit_p99 = sum(c["p99"] for c in comp.values())
    stats: dict[str, Any] = {
        "table_ms": t,
        "components_ms": comp,
        "limit_ms": limit,
        "limit_p99_ms": limit_p99,
        "ratio_p50": t["p50"] / limit,
        "ratio_p99": t["p99"] / limit,
    }
    parts_note = ", ".join(f"{k} {c['p50']:.2f} (p99 {c['p99']:.2f})" for k, c in comp.items())
    note = (
        f"{t['n']} rounds of {n_bets} bets: table p50 {t['p50']:.2f} / p99 {t['p99']:.2f} / max "
        f"{t['max']:.2f} ms; limit {limit:.2f} ms = {parts_note} ms"
    )
    goals = n_bets == 100
    return [
        Figure(
            SECTION,
            f"result -> floor p50 / limit, {n_bets} bets",
            stats["ratio_p50"],
            "x limit",
            stats,
            goal="<= 2x" if goals else None,
            ok=stats["ratio_p50"] <= 2.0 if goals else None,
            note=note,
        ),
        Figure(
            SECTION,
            f"result -> floor p99 / limit, {n_bets} bets",
            stats["ratio_p99"],
            "x limit",
            {"ratio_p99": stats["ratio_p99"], "limit_ms": limit, "table_p99_ms": t["p99"]},
            goal="<= 3x" if goals else None,
            ok=stats["ratio_p99"] <= 3.0 if goals else None,
        ),
    ]


async def _run(
    host: str,
    port: int,
    plan: list[tuple[int, int]],
    repeats: int,
    log: Callable[[str], None],
) -> tuple[list[Figure], dict[str, Any] | None]:
    from .procs import kill_leftovers
    from .table import WheelTable

    figs: list[Figure] = []
    payloads: list[bytes] = []
    layer: dict[str, Any] | None = None
    with workdir("limit") as d:
        t = WheelTable(host, port, d, "bench-limit", max_bets=max(n for n, _ in plan))
        commit = BareCommit(d / "bare.sqlite3")
        (d / "pub").mkdir()
        pub = Publisher(host, port, d / "pub")
        try:
            await t.start()
            await pub.start()
            assert t.cfg is not None
            settle = BareSettle(t.cfg)
            sign = BareSign()
            await t.play(1)  # warm-up (first connection, first round)
            await pub.one("bare", b'{"warm-up":1}')
            for n_bets, rounds in plan:
                log(f"  {rounds} rounds of {n_bets} bets, each with the limit measured beside it")
                table: list[float] = []
                parts: dict[str, list[float]] = {
                    "commit": [], "settle": [], "sign": [], "publish": []
                }  # fmt: skip
                try:
                    for _ in range(rounds):
                        lat, payload = await t.play(n_bets)
                        table.append(lat)
                        raw = t.rounds[payload["round_id"]].payload
                        # The table's work after the publication (pruning, hooks) ends
                        # first: the limit is measured on a quiet machine, as the round
                        # began on one (overlapping them would inflate the limit).
                        await asyncio.sleep(QUIET_S)
                        # As the table's game: the harness's collector held (its pauses
                        # on this process's large heap are no part of the limit).
                        gc.disable()
                        try:
                            parts["commit"].append(commit.commit(raw))
                            parts["settle"].append(settle.settle(t.last_bets, payload["outcome"]))
                            parts["sign"].append(sign.sign(raw))
                            parts["publish"].append(await pub.one("bare", raw))
                        finally:
                            gc.enable()
                        if n_bets == 100 and len(payloads) < 200:
                            payloads.append(raw)
                except Exception as exc:  # one level failing keeps the others' figures
                    log(f"  {n_bets} bets: {exc!r}")
                    figs.append(
                        Figure(SECTION, f"result -> floor / limit, {n_bets} bets", None, "",
                               skipped=f"failed after {len(table)} rounds: {exc!r}")
                    )  # fmt: skip
                    break
                figs += _ratio_figures(n_bets, table, parts)
            if payloads:
                log(f"  MQTT layer against bare aiomqtt, {len(payloads)} round payloads")
                layer = await _mqtt_layer(pub, payloads, repeats)
        finally:
            with contextlib.suppress(Exception):
                await pub.stop()
            commit.close()
            await t.stop()
            kill_leftovers()
    return figs, layer


# ---------------------------------------------------------------------------
# the MQTT layer against bare aiomqtt


async def _mqtt_layer(pub: Publisher, payloads: list[bytes], repeats: int) -> dict[str, Any]:
    from firmware_host.mqtt import MqttSettings

    out: dict[str, Any] = {"link_s": [], "bare_s": [], "drain_link_s": [], "drain_bare_s": []}
    await pub.one("link", payloads[0])  # warm-up
    for r in range(repeats):
        for i, body in enumerate(payloads):
            for how in ("link", "bare") if (r + i) % 2 == 0 else ("bare", "link"):
                gc.disable()
                try:
                    out[f"{how}_s"].append(await pub.one(how, body))
                finally:
                    gc.enable()
    # A drain is short (20-50 ms) and the machine's noise is not: ten times as many.
    for r in range(DRAINS_PER_PASS * repeats):
        for how in ("link", "bare") if r % 2 == 0 else ("bare", "link"):
            out[f"drain_{how}_s"].append(await pub.drain(how, payloads))
    out["max_inflight"] = MqttSettings().max_inflight
    out["payload_bytes"] = statistics.median(len(b) for b in payloads)
    out["k"] = len(payloads)
    return out


def _mqtt_figures(res: dict[str, Any]) -> list[Figure]:
    link, bare = latency_summary(res["link_s"]), latency_summary(res["bare_s"])
    lat_ratio = link["p50"] / bare["p50"]
    drains = [a / b for a, b in zip(res["drain_link_s"], res["drain_bare_s"], strict=True)]
    dr = spread(drains)
    k = res["k"]
    return [
        Figure(
            SECTION,
            "MQTT layer: FloorLink / bare aiomqtt, one round's latency",
            lat_ratio,
            "x bare",
            {
                "link_ms": link,
                "bare_ms": bare,
                "ratio_p50": lat_ratio,
                "ratio_p99": link["p99"] / bare["p99"],
            },
            goal="<= 1.2x",
            ok=lat_ratio <= 1.2,
            note=(
                f"{link['n']} rounds (~{res['payload_bytes']:.0f} B, the table's own) each way, "
                f"alternating: outbox commit's end -> floor p50 {link['p50']:.3f} / p99 "
                f"{link['p99']:.3f} ms; publish() -> floor p50 {bare['p50']:.3f} / p99 "
                f"{bare['p99']:.3f} ms"
            ),
        ),
        Figure(
            SECTION,
            "MQTT layer: FloorLink / bare aiomqtt, draining a backlog",
            dr["median"],
            "x bare",
            {**dr, "link_s": res["drain_link_s"], "bare_s": res["drain_bare_s"]},
            goal="<= 1.2x",
            ok=dr["median"] <= 1.2,
            note=(
                f"{k} rounds queued at once (the link: from its outbox commit's end), until "
                f"the last PUBACK, {res['max_inflight']} in flight on both sides (the link's "
                f"max_inflight), {len(drains)} drains each; the link reads its outbox and "
                "writes the published marks"
            ),
        ),
    ]


# ---------------------------------------------------------------------------


def run(host: str, port: int, quick: bool, log: Callable[[str], None]) -> list[Figure]:
    # 400 rounds at the goals' 100 bets: the p99 of 200 is decided by their two or three
    # slowest, of 400 by four or five (a steadier estimate of the same percentile).
    plan = [(10, 20), (100, 30), (1000, 5)] if quick else [(10, 150), (100, 400), (1000, 40)]
    return measure(host, port, plan, 2 if quick else 3, log)


def measure(
    host: str, port: int, plan: list[tuple[int, int]], repeats: int, log: Callable[[str], None]
) -> list[Figure]:
    figs, layer = asyncio.run(_run(host, port, plan, repeats, log))
    if layer is not None:
        figs += _mqtt_figures(layer)
    return figs


def growth_table(figs: list[Figure]) -> str:
    """Each component's p50 per bet count, and per bet beyond the smallest count."""
    rows = [f for f in figs if f.name.startswith("result -> floor p50 / limit")]
    if not rows:
        return ""
    head = f"{'bets':>6} {'table p50':>10} {'table p99':>10} {'commit':>8} {'settle':>8} " \
           f"{'sign':>8} {'publish':>8} {'limit':>8} {'p50/lim':>8} {'p99/lim':>8}"  # fmt: skip
    out = [head]
    for f in rows:
        s = f.stats
        c = s["components_ms"]
        n = int(f.name.rsplit(",", 1)[1].split()[0])
        out.append(
            f"{n:>6} {s['table_ms']['p50']:>10.2f} {s['table_ms']['p99']:>10.2f} "
            f"{c['commit']['p50']:>8.2f} {c['settle']['p50']:>8.2f} "
            f"{c.get('sign', {}).get('p50', 0.0):>8.2f} {c['publish']['p50']:>8.2f} "
            f"{s['limit_ms']:>8.2f} {s['ratio_p50']:>8.2f} {s['ratio_p99']:>8.2f}"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--publisher"]:
        asyncio.run(_publisher_main(argv[1], int(argv[2]), argv[3]))
        return 0
    from tablesim.broker import MosquittoProcess, find_mosquitto

    from .common import render_table

    ap = argparse.ArgumentParser(prog="python -m bench.limit", description=__doc__.split("\n")[0])
    ap.add_argument("--bets", default="10,100,1000", help="comma-separated bet counts")
    ap.add_argument("--rounds", type=int, default=100, help="rounds per bet count")
    ap.add_argument("--repeats", type=int, default=3, help="MQTT-layer passes")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if not find_mosquitto():
        raise SystemExit("bench.limit needs mosquitto (apt-get install mosquitto)")
    counts = [int(x) for x in args.bets.split(",")]
    plan = [(n, args.rounds if n < 1000 else max(4, args.rounds * 100 // n)) for n in counts]
    t_start = time.perf_counter()
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    broker = MosquittoProcess(save_every_change=False, extra_config="set_tcp_nodelay true")
    broker.start()
    try:
        figs = measure(
            broker.host, broker.port, plan, args.repeats, lambda s: print(s, file=sys.stderr)
        )
    finally:
        broker.stop()
    print(render_table(figs))
    print()
    print(growth_table(figs))
    if args.json:  # the layout of python -m bench's JSON: python -m bench.report reads it
        doc = {
            "command": "python -m bench.limit " + " ".join(argv),
            "mode": "bench.limit",
            "started_at": started_at,
            "duration_s": time.perf_counter() - t_start,
            "loadavg_at_end": os.getloadavg(),
            "growth": growth_table(figs),
            "figures": [f.to_json() for f in figs],
        }
        args.json.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


__all__ = ["measure", "run"]

if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
