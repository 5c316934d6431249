"""The emulated tables decide as a daemon's link does whether the rounds waiting after
an outage are a backlog to pace (issue 36; ``firmware_host/mqtt/pace.py``): the link
counts outbox *entries* (``OutboxPump.find_backlog``), and a daemon's round makes
several; the emulator publishes only the round and one anchor, so it counts what a
daemon's round would have made. It used to count two a round, and sent up to eight
rounds at once where a daemon paces three: a two-minute outage of 1,000 emulated tables
put 6,700 rounds in front of the live ones at the return."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, cast

import pytest

from firmware_host.config import load_config
from firmware_host.journal import Journal
from firmware_host.mqtt.pace import BacklogPace
from firmware_host.table.engine import RoundEngine
from tablesim.emulator import TABLE_BACKLOG_PER_MINUTE, TABLE_WINDOW, Emulator
from tablesim.emulink import DAEMON_ENTRIES_PER_ROUND, Sending

ROOT = Path(__file__).resolve().parents[2]


def daemon_entries(tmp: Path, game: str, outcome: Any, stake: dict[str, Any], rounds: int) -> int:
    """The outbox entries ``rounds`` rounds of a daemon's round engine make."""
    journal = Journal(tmp / f"{game}-{rounds}.sqlite3")
    try:
        engine = RoundEngine(load_config(ROOT / "config" / f"{game}.toml"), journal)
        before = {e.id for e in journal.outbox.pending(100_000)}
        for k in range(rounds):
            engine.open_betting()
            assert engine.desk.place({"bet_id": f"b{k}", "seat": 1, **stake}).accepted
            engine.close_betting()
            engine.submit_result(outcome)
        return len([e for e in journal.outbox.pending(100_000) if e.id not in before])
    finally:
        journal.close()


GAMES = [
    ("roulette", {"number": 17}, {"bet_type": "red", "selection": None, "stake": 5000}),
    ("sicbo", {"dice": [1, 2, 3]}, {"bet_type": "small", "selection": None, "stake": 5000}),
]


@pytest.mark.parametrize(("game", "outcome", "stake"), GAMES, ids=[g[0] for g in GAMES])
def test_a_daemon_round_makes_the_entries_the_emulator_counts(
    tmp_path: Path, game: str, outcome: Any, stake: dict[str, Any]
) -> None:
    assert daemon_entries(tmp_path, game, outcome, stake, 3) == 3 * DAEMON_ENTRIES_PER_ROUND


@pytest.mark.parametrize("rounds", [1, 2, 3, 4, 8])
def test_the_emulator_paces_a_backlog_exactly_when_a_daemon_would(
    tmp_path: Path, rounds: int
) -> None:
    game, outcome, stake = GAMES[0]
    entries = daemon_entries(tmp_path, game, outcome, stake, rounds)
    daemon = BacklogPace(TABLE_BACKLOG_PER_MINUTE, TABLE_WINDOW).begin(entries, 0.0)
    emu = Emulator("127.0.0.1", 1, 1, reconnect=(0.1, 0.5))
    (t,) = emu.tables.values()
    for _ in range(rounds):
        _, rid, _ = t.queue_round()
        emu.made[rid] = time.time() - 60  # made before the outage
    Sending(emu, t, cast(Any, None), asyncio.Event())
    assert (t.paced is not None) == daemon, (rounds, entries, t.paced)
    assert len(t.backlog) == (rounds if daemon else 0)
