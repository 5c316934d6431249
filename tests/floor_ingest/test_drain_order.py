"""Issue 36: after a floor outage the tables publish their live rounds first and their
backlog beside them at the link's pace (``firmware_host/mqtt/pace.py``; the emulated
tables use the same object), so the ingest receives round ``N+k`` before round ``N``.
Over a real mosquitto, on SQLite and PostgreSQL: every round stored once, byte for
byte, none quarantined (the chain check between stored neighbours, the announced
newest), no anchor fault, no replay asked for rounds that are merely paced; and the
attacks: a pace slower than the ingest's gap grace (replays asked while the backlog is
still coming: duplicates only), and a broker that restarts every few seconds during
the drain.

The tables reach the broker through a relay the test cuts (the floor's side of a
bridge down): the ingest stays connected, so what it misses is only what the tables
held."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from flooringest.worker import IngestSettings
from tablesim.broker import free_port
from tablesim.emulator import Emulator

from .support import WorkerTask, registry_of, until_stored


class Relay:
    """A TCP relay to the broker; :meth:`cut` closes every connection and refuses new
    ones until :meth:`open`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.host, self.port = "127.0.0.1", free_port()
        self.server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def open(self) -> None:
        self.server = await asyncio.start_server(self._relay, self.host, self.port)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers += [writer, up_w]
        await asyncio.gather(self._pump(reader, up_w), self._pump(up_r, writer))

    @staticmethod
    async def _pump(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            w.close()

    async def cut(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)
            self.server = None
        for w in self._writers:
            w.close()
        self._writers.clear()


def settings(broker: Any, db: str, reg: str, grace: float) -> IngestSettings:
    return IngestSettings(
        host=broker.host,
        port=broker.port,
        db=db,
        worker="w1",
        duty_interval_s=0.2,
        gap_grace_s=grace,
        replay_retry_s=2.0,
        lag_interval_s=0.5,
        registry_refresh_s=0.5,
        registry_file=reg,
    )


async def outage(
    broker: Any,
    db: str,
    tmp: Path,
    *,
    per_minute: int,
    grace: float,
    during: Any = None,
) -> tuple[Emulator, dict[str, Any], dict[str, float]]:
    """Four tables at 4 rounds a second, cut off for 5 s (20 rounds each: a paced
    backlog), back, 4 s more of play; ``during(relay)`` runs after the return. Returns
    the emulator, the holdings once every round is stored, and per table when its last
    live round and its last backlog round were handed over."""
    relay = Relay((broker.host, broker.port))
    await relay.open()
    emu = Emulator(
        relay.host, relay.port, 4, rate=4, reconnect=(0.05, 0.3), backlog_per_minute=per_minute
    )
    worker = WorkerTask(settings(broker, db, registry_of(emu, tmp), grace))
    await worker.subscribed()
    play = asyncio.create_task(emu.run())
    try:
        await asyncio.sleep(2)
        await relay.cut()
        cut_seq = {t: e.seq for t, e in emu.tables.items()}
        await asyncio.sleep(5)
        back_seq = {t: e.seq for t, e in emu.tables.items()}
        await relay.open()
        if during is not None:
            await during(relay)
        await asyncio.sleep(4)
        emu.pause()
        deadline = time.monotonic() + 90
        while emu.unacknowledged() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        h = await until_stored(db, emu, 60)
    finally:
        emu.stop()
        await play
        await worker.stop()
        await relay.cut()
    order: dict[str, float] = {}
    for tid, t in emu.tables.items():
        rid = {s: f"{tid}-{s:06d}" for s in t.sent}
        at = {s: next(v for k, v in emu.published.items() if k.startswith(rid[s])) for s in t.sent}
        backlog = [s for s in t.sent if cut_seq[tid] < s <= back_seq[tid]]
        live = [s for s in t.sent if s > back_seq[tid]]
        assert len(backlog) >= 10, (tid, cut_seq, back_seq)
        order[tid] = min(at[s] for s in live) - max(at[s] for s in backlog)
    return emu, h, order


def clean(h: dict[str, Any]) -> None:
    assert h["missing"] == 0 and h["differ"] == 0 and h["extra"] == 0, h
    assert h["gaps_open"] == 0 and h["conflicts"] == 0, h
    assert h["anchor_faults"] == 0 and h["quarantine_open"] == 0 and h["faults_open"] == 0, h


async def test_live_rounds_ahead_of_the_backlog_are_stored_once_none_quarantined_no_replay(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    emu, h, order = await outage(mosquitto_broker, db_url, tmp_path, per_minute=240, grace=2.0)
    clean(h)  # (holdings checks that no seq is stored twice)
    # The first live round went before the backlog's last: the ingest saw them out of
    # order (the backlog of ~20 rounds at 4 a second takes ~5 s).
    assert all(d < 0 for d in order.values()), order
    assert emu.replay_requests == [], emu.replay_requests  # paced, not missing
    assert h["duplicates"] == 0, h


async def test_a_pace_slower_than_the_gap_grace_costs_replays_never_a_round(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    """The attack on the ingest's repair: the backlog comes at one round every 1.5 s
    and the ingest asks for a gap after 0.3 s without progress: it asks for rounds the
    table is still pacing, the table replays them (as live entries), and the backlog
    sends them again: duplicates, counted and dropped; nothing stored twice or lost."""
    emu, h, _ = await outage(mosquitto_broker, db_url, tmp_path, per_minute=40, grace=0.3)
    clean(h)
    assert emu.replay_requests, "the test must make the ingest ask while the backlog comes"


async def test_a_broker_restarting_every_few_seconds_during_the_drain_loses_nothing(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    async def flaky(relay: Relay) -> None:
        for _ in range(3):
            await asyncio.sleep(1.5)
            await relay.cut()  # every table's connection dropped mid-backlog
            await asyncio.sleep(0.3)
            await relay.open()

    emu, h, _ = await outage(
        mosquitto_broker, db_url, tmp_path, per_minute=240, grace=2.0, during=flaky
    )
    clean(h)
    assert emu.stats.connects >= 4 * 5, emu.stats
