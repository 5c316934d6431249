"""Issue 36: a restarted mosquitto (Debian's 2.0.11) keeps an offline session's plain
subscriptions and queues what comes for them, but drops what comes for a shared
subscription until a member of the group is back; the floor's replay then repairs each
dropped round, seconds later (docs/floor.md). A floor with one ingest worker may take
the rounds through a plain subscription (``IngestSettings.shared = False``,
``floor-ingest run --subscription plain``).

Over a real mosquitto with persistence: the worker away, the broker restarted, the
tables playing on, the worker back: with the plain subscription every round is stored
from the session's queue and no replay is asked (the gap grace is longer than the
test); with the shared one the rounds played while the worker was away are missing (the
broker's behaviour this option exists for: if a mosquitto keeps them, this half fails
and docs/floor.md is to be corrected); and a session switched from one form to the
other gets each round once, not through both."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from flooringest.worker import IngestSettings
from tablesim.emulator import Emulator

from .support import WorkerProcess, WorkerTask, registry_of, until_stored

pytestmark = [pytest.mark.mosquitto]


def settings(broker: Any, tmp: Path, emu: Emulator, *, shared: bool) -> IngestSettings:
    return IngestSettings(
        host=broker.host, port=broker.port, db=str(tmp / "floor.sqlite3"), worker="w1",
        shared=shared, live_lane=False, duty_interval_s=0.2, gap_grace_s=120.0,
        lag_interval_s=0.5, registry_refresh_s=0.5, registry_file=registry_of(emu, tmp),
    )  # fmt: skip


async def away_over_a_restart(
    broker: Any, tmp: Path, *, shared: bool, then_shared: bool | None = None,
    restart: bool = True,
) -> tuple[Emulator, dict[str, Any], set[str], WorkerTask]:
    """Four tables at 10 rounds a second; the worker stopped (its session kept), the
    broker restarted (``restart``), 2 s of play, the worker back (``then_shared``: with
    the other form). Returns the emulator, the holdings after at most 15 s, the rounds made while
    the worker was away, and the worker."""
    emu = Emulator(broker.host, broker.port, 4, rate=10, reconnect=(0.01, 0.05))
    s = settings(broker, tmp, emu, shared=shared)
    worker = WorkerTask(s)
    await worker.subscribed()
    play = asyncio.create_task(emu.run())
    try:
        await asyncio.sleep(1.5)
        await worker.stop()
        gone = time.time()
        if restart:
            await asyncio.to_thread(broker.restart, down_for=0.3)
        await asyncio.sleep(2.0)
        back = time.time()
        away = {rid for rid, at in emu.made.items() if gone < at < back}
        again = s if then_shared is None else settings(broker, tmp, emu, shared=then_shared)
        worker = WorkerTask(again)
        await worker.subscribed()
        await asyncio.sleep(1.0)
        emu.pause()
        h = await until_stored(s.db, emu, 15)
    finally:
        emu.stop()
        await play
        await worker.stop()
    return emu, h, away, worker



async def test_a_plain_subscription_keeps_what_the_tables_publish_while_the_worker_is_away(
    mosquitto_broker: Any, tmp_path: Path
) -> None:
    emu, h, away, worker = await away_over_a_restart(mosquitto_broker, tmp_path, shared=False)
    assert len(away) >= 40, len(away)  # four tables, 2 s at 10 a second
    assert h["missing"] == 0 and h["differ"] == 0 and h["extra"] == 0, h
    assert emu.replay_requests == []  # from the session's queue, not repaired
    assert worker.worker.stats.stored > 0


async def test_a_shared_subscription_of_a_restarted_mosquitto_drops_them(
    mosquitto_broker: Any, tmp_path: Path
) -> None:
    emu, h, away, _ = await away_over_a_restart(mosquitto_broker, tmp_path, shared=True)
    assert emu.replay_requests == []  # nothing repaired within the test
    assert h["missing"] > 0, "mosquitto kept them: docs/floor.md's account is out of date"
    assert h["missing"] <= len(away) + 4 * 2, (h["missing"], len(away))


@pytest.mark.parametrize("first", [True, False], ids=["shared-then-plain", "plain-then-shared"])
async def test_a_session_switched_between_the_forms_gets_each_round_once(
    mosquitto_broker: Any, tmp_path: Path, first: bool
) -> None:
    """No restart: the broker keeps the session's old form (a restart forgets a shared
    one); without its unsubscription every round came twice (about 45 duplicates in 1 s of play)."""
    emu, h, away, worker = await away_over_a_restart(
        mosquitto_broker, tmp_path, shared=first, then_shared=not first, restart=False
    )
    assert h["missing"] == 0 and h["differ"] == 0 and h["extra"] == 0, h
    assert len(away) >= 40, len(away)
    # A round in flight when the first worker stopped may come again: a few, not all.
    assert worker.worker.stats.duplicates <= 8, worker.worker.stats


@pytest.mark.parametrize("form", ["plain", "shared"])
async def test_the_command_line_chooses_the_form(
    mosquitto_broker: Any, tmp_path: Path, form: str
) -> None:
    """``floor-ingest run --subscription plain|shared``: the worker's log names the
    filter it subscribed to."""
    broker = f"mqtt://{mosquitto_broker.host}:{mosquitto_broker.port}"
    w = WorkerProcess(tmp_path, broker, str(tmp_path / "f.sqlite3"), "w1", subscription=form)
    expected = {"plain": "subscribed to casino/tables/+/rounds",
                "shared": "subscribed to $share/floor-ingest/casino/tables/+/rounds"}[form]  # fmt: skip
    w.start()
    try:
        deadline = time.monotonic() + 30
        while expected not in w.log_tail(200) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert expected in w.log_tail(200), w.log_tail()
    finally:
        w.stop()
