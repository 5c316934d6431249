"""Helpers of the floor ingest's tests: the ingest's workers in this process or as
killable child processes, and the check that the database holds what was published."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from flooringest.store import open_store
from flooringest.worker import IngestSettings, IngestWorker
from tablesim.emulator import Emulator

REPO = Path(__file__).resolve().parents[2]


class WorkerTask:
    """An :class:`IngestWorker` on this event loop."""

    def __init__(self, settings: IngestSettings) -> None:
        self.worker = IngestWorker(settings)
        self.task: asyncio.Task[None] = asyncio.create_task(self.worker.run())

    async def subscribed(self, timeout: float = 30) -> None:
        await asyncio.wait_for(self.worker.subscribed.wait(), timeout)

    async def stop(self) -> None:
        self.worker.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(self.task, 10)


class WorkerProcess:
    """``python -m flooringest run`` in a child process: SIGKILL-able, restartable
    under the same worker name (its MQTT session, and so its unacknowledged messages)."""

    def __init__(self, workdir: Path, broker: str, db: str, worker: str, **opts: Any) -> None:
        self.workdir = workdir
        self.argv = [
            sys.executable, "-m", "flooringest", "run", "--broker", broker, "--db", db,
            "--worker", worker, "--gap-grace", str(opts.get("gap_grace", 2.0)),
        ]  # fmt: skip
        if opts.get("key"):
            self.argv += ["--key", str(opts["key"]), "--principal", opts.get("principal", "ingest")]
        if opts.get("registry"):
            self.argv += ["--registry", str(opts["registry"])]
        if opts.get("subscription"):
            self.argv += ["--subscription", opts["subscription"]]
        self.name = worker
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def start(self) -> None:
        log = open(self.workdir / f"ingest-{self.name}.log", "ab")  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                self.argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
        finally:
            log.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
            self.kills += 1
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def log_tail(self, n: int = 20) -> str:
        p = self.workdir / f"ingest-{self.name}.log"
        with contextlib.suppress(OSError):
            return "\n".join(p.read_text(errors="replace").splitlines()[-n:])
        return ""


def registry_of(emu: Emulator, directory: Path) -> str:
    """The floor's registry of the emulator's tables (their identity keys), as a file."""
    return str(emu.write_registry(directory / "registry" / "tables.toml"))


async def more_rounds(emu: Emulator, upto: int) -> None:
    """Make each table's rounds up to ``upto`` (through the running emulator's links)
    and wait until the broker acknowledged them."""
    for t in emu.tables.values():
        while t.seq < upto:
            t.queue_round()
            emu._wake[t.table_id].set()
    while emu.unacknowledged():
        await asyncio.sleep(0.05)


async def holdings(db: str, emu: Emulator) -> dict[str, Any]:
    """What the database holds against what the emulator published: per table, the
    stored seqs and payloads compared with the emulator's, byte for byte."""
    store = await open_store(db)
    try:
        missing = extra = differ = 0
        rows = 0
        for tid, t in emu.tables.items():
            stored = await store.rounds_of(tid)
            rows += len(stored)
            seqs = [s for s, _ in stored]
            assert seqs == sorted(set(seqs)), f"{tid}: a seq stored twice"
            have = dict(stored)
            for s, raw in t.sent.items():
                if s not in have:
                    missing += 1
                elif have[s].encode() != raw:
                    differ += 1
            extra += len(set(have) - set(t.sent))
        lag = await store.lag()
        # Tables whose tracking (the duty holder's scan, every 0.5 s) is not yet at the
        # last round the emulator made.
        behind = sum(
            1
            for tid, t in emu.tables.items()
            if t.sent and lag["tables"].get(tid, {}).get("contiguous_seq", 0) < max(t.sent)
        )
        return {
            "behind": behind,
            "rows": rows,
            "missing": missing,
            "extra": extra,
            "differ": differ,
            "gaps_open": lag["gaps_open"],
            "duplicates": lag["duplicates"],
            "conflicts": lag["conflicts"],
            "anchor_faults": lag["anchor_faults"],
            "quarantine_open": lag["quarantine_open"],
            "faults_open": lag["faults_open"],
            "lag": lag,
        }
    finally:
        await store.close()


async def until_stored(db: str, emu: Emulator, timeout: float) -> dict[str, Any]:
    """Poll until every round the emulator made is in the database (or time runs out)."""
    deadline = time.monotonic() + timeout
    while True:
        h = await holdings(db, emu)
        done = h["missing"] == 0 and h["gaps_open"] == 0 and h["behind"] == 0
        if done or time.monotonic() > deadline:
            return h
        await asyncio.sleep(0.5)


def lag_summary(h: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in h.items() if k != "lag"})
