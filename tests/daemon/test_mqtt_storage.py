"""A journal failure is not a broker failure (issue 15 item 4).

Measured before: on a full disk the outbox's "published" mark failed, the link treated
it as a connection error, reconnected with its backoff reset to zero and published the
same entry again about 22 times a second, with a traceback each time. Here the mark
fails (SQLITE_FULL injected under the journal's cursor, as a full disk answers the
WAL append) while a real mosquitto and a persistent floor consumer run, and the broker
is even restarted meanwhile: every round reaches the floor exactly once (the link
remembers what the broker took and does not send it again), the connection is kept,
one log line says the journal is full and one that it writes again, and the marks are
written once it does.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _mqtt_support import Collector, play_round

from firmware_host.journal import Journal
from firmware_host.journal.storage import GuardedCursor
from firmware_host.mqtt import FloorLink, MqttSettings

ROOT = "casino/tables/t1"


def full_disk_on_marks(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    state = {"on": True}
    real = GuardedCursor.execute

    def full(sql: str) -> None:
        # The mark (schema 5: a row of outbox_published; before, an UPDATE of outbox).
        if state["on"] and sql.startswith(
            ("INSERT OR IGNORE INTO outbox_published", "UPDATE outbox")
        ):
            exc = sqlite3.OperationalError("database or disk is full")
            exc.sqlite_errorcode = 13  # type: ignore[attr-defined]
            exc.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
            raise exc

    def execute(self: GuardedCursor, sql: str, params: Any = ()) -> Any:
        full(sql)
        return real(self, sql, params)

    monkeypatch.setattr(GuardedCursor, "execute", execute)
    return state


async def until(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@pytest.mark.mosquitto
async def test_a_full_disk_under_the_marks_causes_no_reconnect_and_no_duplicate(
    mosquitto_broker: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    journal = Journal(tmp_path / "j.sqlite3")
    journal.db.storage._free_bytes = lambda: 10**9  # the disk has room again once writes work
    ids = [play_round(journal) for _ in range(5)]
    col = await Collector(mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/rounds").start()
    disk = full_disk_on_marks(monkeypatch)
    link = FloorLink(
        MqttSettings(host=mosquitto_broker.host, port=mosquitto_broker.port,
                     reconnect_min_ms=50, reconnect_max_ms=500),
        "t1", journal.outbox,
    )  # fmt: skip
    link.start()
    try:
        await until(lambda: len(col.on("rounds")) >= 5, 10, "the rounds on the floor")
        await asyncio.sleep(2.0)  # time for a storm, if there were one
        assert link.stats.connects == 1, "a journal failure ended the connection"
        delivered = Counter(m.json()["round_id"] for m in col.on("rounds"))
        assert delivered == dict.fromkeys(ids, 1), delivered
        # taken by the broker, not marked: each round, and its two anchors (opened, finished)
        assert journal.outbox.pending_count() == 15
        assert journal.db.storage.fault is not None and journal.db.storage.fault.code == "DISK_FULL"

        # The broker restarts while the disk is still full: what it took before is not
        # sent again (at most one publication per entry per connection; here none).
        await asyncio.to_thread(mosquitto_broker.restart, hard=False)
        await until(lambda: link.stats.connects == 2, 15, "the reconnect")
        await asyncio.sleep(1.0)
        delivered = Counter(m.json()["round_id"] for m in col.on("rounds"))
        assert delivered == dict.fromkeys(ids, 1), delivered

        disk["on"] = False  # space returns
        await until(lambda: journal.outbox.pending_count() == 0, 40, "the marks written")
        await until(lambda: journal.db.storage.fault is None, 5, "the fault cleared")
        log = [r.getMessage() for r in caplog.records]
        assert sum("storage fault DISK_FULL:" in m for m in log) == 1, log
        assert sum("DISK_FULL cleared" in m for m in log) == 1, log
        assert sum("the journal fails" in m for m in log) == 1, log
        assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    finally:
        await link.stop()
        await col.stop()
        journal.close()
