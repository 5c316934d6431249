"""An alert's times read one way (issue 37): ISO-8601 UTC with ``Z`` in the journal, on
the ``alerts`` topic and in its evidence (``timefmt.iso_utc``, as every time the table
writes); on the console every one of them in the console's form, local time with its
offset (``docs/console.md``): not ``first_seen`` in UTC beside ``last_seen`` in local
time."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from firmware_host.console import Renderer
from firmware_host.console_backend import ALERT_TIMES, _alert_view
from firmware_host.games.money import MoneyRules
from firmware_host.integrity.alerts import Alerts
from firmware_host.journal import Journal

ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def macau(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The console's local time is the Pi's: UTC+8, so that a UTC time shows apart."""
    monkeypatch.setenv("TZ", "Asia/Macau")
    time.tzset()
    yield
    monkeypatch.delenv("TZ")
    time.tzset()


def _cleared_alert(tmp_path: Path) -> dict[str, object]:
    now = [datetime(2026, 5, 9, 7, 0, tzinfo=UTC)]
    j = Journal(tmp_path / "j.sqlite3", clock=lambda: now[0])
    alerts = Alerts(j.alerts, j.db)
    a = alerts.raise_("SOFTWARE_MISMATCH", "1 file(s) changed", evidence={"n": 1})
    now[0] += timedelta(minutes=5)
    alerts.raise_("SOFTWARE_MISMATCH", "1 file(s) changed", evidence={"n": 1})
    now[0] += timedelta(minutes=5)
    alerts.acknowledge(a.id, by="console:tech1", reason="reinstalling")
    now[0] += timedelta(minutes=5)
    done = alerts.end("SOFTWARE_MISMATCH")
    assert done is not None and done.cleared_at is not None
    return done.to_json()


@pytest.mark.skipif(not os.path.exists("/usr/share/zoneinfo/Asia/Macau"), reason="no tzdata")
def test_every_time_of_an_alert_reads_the_same_way(tmp_path: Path, macau: None) -> None:
    data = _cleared_alert(tmp_path)
    assert all(ISO_Z.match(str(data[k])) for k in ALERT_TIMES), data  # journal, MQTT
    lines = Renderer(MoneyRules()).lines(_alert_view(dict(data)))  # type: ignore[arg-type]
    shown = {ln.split(": ", 1)[0]: ln.split(": ", 1)[1] for ln in lines if ": " in ln}
    assert {k: shown[k] for k in ALERT_TIMES} == {
        "first_seen": "2026-05-09T15:00:00+08:00",
        "last_seen": "2026-05-09T15:05:00+08:00",
        "acknowledged_at": "2026-05-09T15:10:00+08:00",
        "cleared_at": "2026-05-09T15:15:00+08:00",
    }
