"""The floor on this machine, for the floor benchmarks (``bench/floorscale.py``,
``bench/floormix.py``, ``bench/floordrain.py``): one mosquitto (persistence saved
once a second, ``set_tcp_nodelay true``), the ingest (``python -m flooringest run``
worker processes on one shared subscription, each writing a latency log and its
counters) into PostgreSQL (a throw-away cluster; SQLite when PostgreSQL is missing),
and what each process's CPU was.

:class:`FloorRig` starts and stops the broker and the workers (each can be stopped
and started again: the outages of ``floordrain``), reads the workers' latency logs as
they grow (``round_id <tab> time after COMMIT returned``), and checks the database
for rounds stored twice. :class:`CpuMeter` takes the CPU of every process of the
floor, of the bench process (the emulated tables: load generation, not part of a
floor) and of the machine's other users (it is shared) between two snapshots.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from firmware_host.auth.keys import generate
from tablesim.broker import MosquittoProcess

from .common import REPO, cpu_seconds

JSON = Any


def children_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its direct children (PostgreSQL's backends)."""
    total = 0.0
    with contextlib.suppress(OSError):
        total += cpu_seconds(pid)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                data = f.read()
            ppid = int(data[data.rindex(")") + 2 :].split()[1])
            if ppid == pid:
                total += cpu_seconds(int(entry))
        except (OSError, ValueError):
            continue
    return total


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (every process, every CPU), from
    ``/proc/stat``: with the CPU of the floor's own processes taken away, what the
    machine's other users took meanwhile (this machine is shared)."""
    with open("/proc/stat", encoding="utf-8") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def worker_stats(paths: list[Path]) -> dict[str, float]:
    """The workers' own counters (``--stats-file``), summed."""
    total: dict[str, float] = {}
    for p in paths:
        with contextlib.suppress(OSError, ValueError):
            doc = json.loads(p.read_text())
            for k, v in doc.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    total[k] = total.get(k, 0.0) + float(v)
    return total


def verification_share(s0: dict[str, float], s1: dict[str, float]) -> dict[str, float]:
    """The share of the ingest's CPU (between two of its snapshots) spent verifying
    (the rounds, the anchors and states) and signing the floor's records."""
    cpu = s1.get("process_cpu_s", 0.0) - s0.get("process_cpu_s", 0.0)

    def part(key: str) -> float:
        return (s1.get(key, 0.0) - s0.get(key, 0.0)) / cpu if cpu > 0 else 0.0

    rounds, said = part("verify_rounds_cpu_s"), part("verify_announcements_cpu_s")
    return {
        "ingest_cpu_s": cpu,
        "verification": rounds + said,
        "rounds": rounds,
        "anchors_and_states": said,
        "signing_records": part("sign_records_cpu_s"),
    }


class Database:
    """A new database per run: on a throw-away PostgreSQL cluster (Debian's server,
    fsync and synchronous_commit on), or SQLite files when PostgreSQL is missing."""

    def __init__(self, d: Path) -> None:
        self.d = d
        self.pg: Any = None
        self.label = "SQLite"
        try:
            import asyncpg  # noqa: F401

            from tablesim.postgres import PostgresProcess, find_postgres_bin

            if find_postgres_bin() is None:
                return
        except ImportError:
            return
        self.pg = PostgresProcess()
        self.pg.start()
        self.label = "PostgreSQL 15 (fsync on, synchronous_commit on)"

    @property
    def pid(self) -> int | None:
        return self.pg.proc.pid if self.pg is not None and self.pg.proc else None

    async def new(self, name: str) -> str:
        """A new, empty database named after ``name``: its URL."""
        if self.pg is None:
            return f"sqlite:///{self.d / f'floor-{name}.sqlite3'}"
        import asyncpg

        pg = self.pg
        conn = await asyncpg.connect(pg.dsn)
        try:
            await conn.execute(f"CREATE DATABASE bench_{name}")
        finally:
            await conn.close()
        return f"postgresql://postgres@{pg.host}:{pg.port}/bench_{name}"

    def close(self) -> None:
        if self.pg is not None:
            self.pg.close()


def port_outside_ephemeral(host: str = "127.0.0.1") -> int:
    """A free TCP port below the kernel's ephemeral range. The broker's port must not be
    one the kernel may give a client: while the broker is down, a thousand tables
    reconnecting to it from ephemeral ports soon draw its own number, and a TCP
    connection from a port to itself on loopback succeeds (simultaneous open), holding
    the port: the broker cannot listen on it again ("Address already in use")."""
    import random

    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="utf-8") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, max(10001, low))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port below {low}")


class ReadyWatch:
    """A notification socket of systemd's kind (``NOTIFY_SOCKET``, abstract) for one
    worker process: :attr:`ready_at` is when its ``READY=1`` came (the worker takes
    the rounds played from then on: ``IngestWorker._taking``), read by a thread so the
    time is the arrival's, not the next poll's."""

    def __init__(self, name: str) -> None:
        self.address = f"@tablectl-bench-{os.getpid()}-{name}"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind("\0" + self.address[1:])
        self.ready_at: float | None = None
        self._thread = threading.Thread(target=self._read, daemon=True, name=f"ready-{name}")
        self._thread.start()

    def expect(self) -> None:
        """The process is (re)started: wait for its next READY=1."""
        self.ready_at = None

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(4096)
            except OSError:
                return
            if b"READY=1" in data.split(b"\n") and self.ready_at is None:
                self.ready_at = time.time()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()


class FloorRig:
    """One broker, ``workers`` ingest workers on database ``db``, in directory ``d``
    under the name ``name``; the workers take the tables of :attr:`registry` (set it
    before :meth:`start`: the emulated tables need the broker's port first)."""

    def __init__(
        self,
        d: Path,
        name: str,
        db: str,
        *,
        workers: int = 1,
        batch_max: int | None = None,
        broker_config: str = "set_tcp_nodelay true",
        subscription: str = "shared",
    ) -> None:
        self.d, self.name, self.db = d, name, db
        self.registry: Path | None = None
        self.broker = MosquittoProcess(
            d / f"mosquitto-{name}", port_outside_ephemeral(), extra_config=broker_config,
            save_every_change=False,
        )  # fmt: skip
        self.key, _pub = generate("floor-ingest", d / f"ingest-key-{name}", overwrite=True)
        self.n_workers = workers
        self.batch_max = batch_max
        #: The workers' ``--subscription`` (``shared`` or ``plain``).
        self.subscription = subscription
        self.lat_logs = [d / f"latency-{name}-w{i}.log" for i in range(workers)]
        self.stats_files = [d / f"stats-{name}-w{i}.json" for i in range(workers)]
        self.workers: list[subprocess.Popen[bytes] | None] = [None] * workers
        #: Each worker's READY=1 (systemd's notification, as under ``Type=notify``).
        self.ready = [ReadyWatch(f"{name}-w{i}") for i in range(workers)]
        #: round_id -> time the row holding it was committed (the latency logs).
        self.committed: dict[str, float] = {}
        #: round ids seen in the latency logs more than once (stored twice).
        self.twice = 0
        #: Round ids taken from the database (:meth:`from_db`) before their log line.
        self._from_db: set[str] = set()
        self._offsets = [0] * workers
        self._tails = [b""] * workers

    # -- processes ----------------------------------------------------------------------
    def start(self) -> None:
        self.broker.start()
        for i in range(self.n_workers):
            self.start_worker(i)

    def start_worker(self, i: int) -> None:
        if self.registry is None:
            raise RuntimeError("no registry of tables for the ingest")
        argv = [
            sys.executable, "-m", "flooringest", "run",
            "--broker", f"mqtt://{self.broker.host}:{self.broker.port}", "--db", self.db,
            "--worker", f"w{i}", "--group", f"bench-{self.name}",
            "--latency-log", str(self.lat_logs[i]), "--registry", str(self.registry),
            "--key", str(self.key), "--principal", "floor-ingest",
            "--stats-file", str(self.stats_files[i]), "--subscription", self.subscription,
        ]  # fmt: skip
        if self.batch_max is not None:
            argv += ["--batch-max", str(self.batch_max)]
        self.ready[i].expect()
        env = {**os.environ, "NOTIFY_SOCKET": self.ready[i].address}
        with open(self.d / f"ingest-{self.name}-w{i}.log", "ab") as logf:
            self.workers[i] = subprocess.Popen(
                argv, cwd=REPO, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env,
            )  # fmt: skip

    async def ready_all(self, timeout: float = 60.0) -> float | None:
        """When the last running worker said READY=1 (None: not within ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            times = [r.ready_at for r, w in zip(self.ready, self.workers, strict=True) if w]
            if all(t is not None for t in times):
                return max((t for t in times if t is not None), default=None)
            await asyncio.sleep(0.02)
        return None

    def stop_worker(self, i: int) -> None:
        w = self.workers[i]
        self.workers[i] = None
        if w is None:
            return
        w.terminate()
        try:
            w.wait(15)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait(10)

    def worker_pids(self) -> dict[str, int]:
        return {f"ingest w{i}": w.pid for i, w in enumerate(self.workers) if w is not None}

    def close(self) -> None:
        for i in range(self.n_workers):
            self.stop_worker(i)
        for r in self.ready:
            r.close()
        self.broker.close()

    def log_tail(self, n: int = 5) -> str:
        out = []
        for i in range(self.n_workers):
            p = self.d / f"ingest-{self.name}-w{i}.log"
            with contextlib.suppress(OSError):
                out.append("\n".join(p.read_text(errors="replace").splitlines()[-n:]))
        return "\n".join(out)

    # -- what was committed -------------------------------------------------------------
    def read_commits(self) -> dict[str, float]:
        """Read what the latency logs gained since the last call into
        :attr:`committed` (the first commit of each round; a round id logged again
        was stored twice: counted in :attr:`twice`)."""
        for i, path in enumerate(self.lat_logs):
            try:
                with open(path, "rb") as f:
                    f.seek(self._offsets[i])
                    data = f.read()
            except FileNotFoundError:
                continue
            self._offsets[i] += len(data)
            data = self._tails[i] + data
            lines = data.split(b"\n")
            self._tails[i] = lines.pop()  # an unfinished line waits for the rest
            for line in lines:
                rid, _, at = line.decode().partition("\t")
                if rid in self._from_db:  # found in the database before its log line
                    self._from_db.discard(rid)
                elif rid in self.committed:
                    self.twice += 1
                else:
                    self.committed[rid] = float(at)
        return self.committed

    async def from_db(self, rids: list[str]) -> dict[str, float]:
        """Rounds of ``rids`` the database holds though no latency log names them (the
        duties store a round released from quarantine, e.g. one that came before its
        table's anchor): their ``committed_at``, added to :attr:`committed`."""
        from flooringest.store import open_store

        if not rids:
            return {}
        found: dict[str, float] = {}
        store = await open_store(self.db)
        try:
            for i in range(0, len(rids), 500):
                chunk = rids[i : i + 500]
                marks = ", ".join("?" for _ in chunk)
                for rid, at in await store.db.fetch(
                    f"SELECT round_id, committed_at FROM floor_rounds WHERE round_id IN ({marks})",
                    *chunk,
                ):
                    found[str(rid)] = float(at)
        finally:
            await store.close()
        for rid, at in found.items():
            if rid not in self.committed:
                self.committed[rid] = at
                self._from_db.add(rid)
        return found

    async def stored_twice(self) -> dict[str, int]:
        """The database's own count: rows, distinct round ids, distinct (table, seq)."""
        from flooringest.store import open_store

        store = await open_store(self.db)
        try:
            rows = await store.db.fetch(
                "SELECT COUNT(*), COUNT(DISTINCT round_id), "
                "COUNT(DISTINCT table_id || '/' || CAST(seq AS TEXT)) FROM floor_rounds"
            )
            dup = await store.db.fetch(
                "SELECT COALESCE(SUM(value), 0) FROM floor_counters WHERE name LIKE 'duplicates:%'"
            )
        finally:
            await store.close()
        n, ids, keys = (int(x) for x in rows[0])
        return {"rows": n, "distinct_round_ids": ids, "distinct_table_seq": keys,
                "stored_twice": n - min(ids, keys), "duplicates_dropped": int(dup[0][0])}  # fmt: skip


class CpuMeter:
    """CPU seconds of the floor's processes (``procs``: name -> pid; PostgreSQL with
    its backends), of this process (the emulated tables) and of the machine's other
    users, between :meth:`start` and :meth:`stop`."""

    def __init__(self, procs: dict[str, int], pg_pid: int | None) -> None:
        self.procs, self.pg_pid = procs, pg_pid
        self._t0 = 0.0
        self._cpu0: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        out = {}
        for k, p in self.procs.items():
            with contextlib.suppress(OSError):
                out[k] = cpu_seconds(p)
        if self.pg_pid:
            out["postgresql"] = children_cpu(self.pg_pid)
        out["emulator (bench process)"] = time.process_time()
        out["machine busy"] = machine_busy_s()
        return out

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._cpu0 = self._now()

    def stop(self) -> dict[str, JSON]:
        elapsed = time.monotonic() - self._t0
        now = self._now()
        cpu = {k: now[k] - self._cpu0.get(k, now[k]) for k in now}
        busy = cpu.pop("machine busy")
        others = max(0.0, busy - sum(cpu.values()))
        ingest = sum(v for k, v in cpu.items() if k.startswith("ingest"))
        floor = sum(v for k, v in cpu.items() if not k.startswith("emulator"))
        return {
            "elapsed_s": elapsed,
            "cpu_s": cpu,
            "ingest_cpu_s": ingest,
            "floor_cpu_s": floor,
            "cores_used": {k: v / elapsed for k, v in cpu.items()} if elapsed else {},
            #: What the machine's other users (other sessions' work) took meanwhile.
            "other_processes_cores": others / elapsed if elapsed else 0.0,
            "loadavg": os.getloadavg(),
        }


async def connect_all(emu: Any, n: int, log: Callable[[str], None]) -> float:
    """Wait until all ``n`` emulated tables are connected; seconds it took."""
    t0 = time.monotonic()
    deadline = t0 + 60 + n / 50
    last = 0.0
    while (online := sum(t.online for t in emu.tables.values())) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{online} of {n} tables connected within {deadline - t0:.0f} s")
        if time.monotonic() - last > 15:
            last = time.monotonic()
            if online:
                log(f"    {online}/{n} tables connected")
        await asyncio.sleep(0.2)
    return time.monotonic() - t0


__all__ = [
    "CpuMeter",
    "Database",
    "FloorRig",
    "children_cpu",
    "connect_all",
    "machine_busy_s",
    "port_outside_ephemeral",
    "verification_share",
    "worker_stats",
]
