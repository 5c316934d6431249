"""The table's events by a lab's names (issue 32 item 3): how the previous run ended,
read at each start: a ``power_up`` whose previous run has no ``power_down`` is a power
loss; and a daemon that stops and starts again says so."""

from __future__ import annotations

from pathlib import Path

from firmware_host.config import validate_document
from firmware_host.console.settings import DEMO_PIN_HASH
from firmware_host.daemon import TableDaemon
from firmware_host.integrity.significant import previous_end
from firmware_host.journal import Journal


def test_previous_end_from_the_chain(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.sqlite3") as j:
        assert previous_end(j.chain) is None  # the journal's first start
        j.chain.append_event("power_up", {})
        assert previous_end(j.chain) == "lost"  # no power_down after it (yet)
        j.chain.append_event("power_down", {"reason": "SIGTERM"})
        assert previous_end(j.chain) == "power_down"
        j.chain.append_event("power_up", {})
        j.chain.append_event("switch_opened", {})  # other events do not count
        assert previous_end(j.chain) == "lost"


async def test_the_daemon_records_how_its_previous_run_ended(tmp_path: Path) -> None:
    cfg = validate_document(
        {
            "table": {"id": "pw-1", "game": "roulette", "result_source": "manual"},
            "console": {"operators": {"tech1": {"pin_hash": DEMO_PIN_HASH}}},
            "daemon": {"simulated": True},
            "mqtt": {"host": "127.0.0.1", "port": 9},  # nobody there: the table waits
        }
    )

    async def run_once() -> None:
        d = TableDaemon(cfg, state_dir=tmp_path, runtime_dir=tmp_path)
        await d.start()
        await d.stop()

    await run_once()
    await run_once()
    with Journal(tmp_path / "journal.sqlite3", readonly=True) as ro:
        ups = [e.data["previous_end"] for e in ro.chain.events(100, kind="power_up")]
    assert ups == [None, "power_down"]
