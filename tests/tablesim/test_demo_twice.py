"""Issue 30: ``./dev demo --broker mqtt://...`` run twice in a row against one mosquitto:
both show and publish all their rounds (the second run used to find the first run's
retained anchor under the same table id and refuse its new journal), and a floor ingest
given the demo's registry stores every round before the demo exits."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flooringest.store import open_store
from flooringest.worker import IngestSettings, IngestWorker

pytestmark = pytest.mark.mosquitto


async def _demo(broker: Any, registry: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "firmware_host", "demo", "--broker",
        f"mqtt://{broker.host}:{broker.port}", "--rounds", "2", "--speed", "8",
        "--registry", str(registry), "--quiet",
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 180)
    return int(proc.returncode or 0), out.decode()


async def test_the_demo_twice_against_one_broker_and_an_ingest(
    tmp_path: Path, mosquitto_broker: Any
) -> None:
    registry = tmp_path / "floor" / "tables.toml"
    registry.parent.mkdir()
    registry.write_text("")  # the floor knows no table yet: each demo adds its own
    worker = IngestWorker(
        IngestSettings(
            host=mosquitto_broker.host, port=mosquitto_broker.port,
            db=str(tmp_path / "floor.sqlite3"), worker="w1", session_expiry_s=600,
            registry_file=str(registry), registry_refresh_s=0.2, duty_interval_s=0.2,
        )
    )  # fmt: skip
    task = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(worker.subscribed.wait(), 30)
        tables = []
        for run in (1, 2):
            rc, out = await _demo(mosquitto_broker, registry)
            assert rc == 0, f"run {run}:\n{out}"
            assert "JOURNAL_BEHIND_FLOOR" not in out and "Traceback" not in out, out
            found = re.search(r"table (demo-roulette-[0-9a-f]{4}) registered", out)
            assert found, out
            tables.append(found.group(1))
        assert tables[0] != tables[1]  # a table of its own each run

        async def stored() -> dict[str, int]:
            store = await open_store(str(tmp_path / "floor.sqlite3"))
            try:
                return {t: len(await store.rounds_of(t)) for t in tables}
            finally:
                await store.close()

        for _ in range(100):
            if await stored() == {t: 2 for t in tables}:
                break
            await asyncio.sleep(0.2)
        assert await stored() == {t: 2 for t in tables}
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)
