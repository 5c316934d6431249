"""Seeded demo runs of every game, reduced to what must not change in a refactor.

``python -m tests.golden.demo_rounds`` (inside .venv) records ``tests/golden/<game>.json``;
``tests/e2e/test_demo_golden.py`` plays the same seeded runs and compares. A round is
kept whole except what differs between two runs by design: its id (random suffix), its
timestamps, the software version, its audit chain position (``chain``: an HMAC under
the demo's audit key, a new random key per run) and its signature (the table's identity
key, new per run too).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEED = 11
ROUNDS = 3
BETS = 5
SPEED = 8.0
#: Keys that differ between two runs of the same seed by design (``chain``: keyed with a
#: per-run random audit key; ``signature``: a per-run identity key).
VOLATILE = {"round_id", "timestamps", "at", "software_version", "version", "chain", "signature"}


def normalize(payload: Any) -> Any:
    if isinstance(payload, dict):
        return {k: normalize(v) for k, v in payload.items() if k not in VOLATILE}
    if isinstance(payload, list):
        return [normalize(v) for v in payload]
    return payload


async def play(game: str) -> list[Any]:
    from tablesim.demo import DemoTable  # moved by the redesign: keep this import current

    async with DemoTable(game, speed=SPEED, seed=SEED, bets=BETS) as t:
        rounds = await t.play(ROUNDS)
        return [normalize(r) for r in rounds[:ROUNDS]]


def path_of(game: str) -> Path:
    return HERE / f"{game}.json"


def main(argv: list[str]) -> int:
    from firmware_host.games import GAME_IDS

    games = argv or list(GAME_IDS)
    for game in games:
        rounds = asyncio.run(play(game))
        path_of(game).write_text(json.dumps(rounds, indent=1, sort_keys=True) + "\n")
        print(f"{game}: {len(rounds)} rounds -> {path_of(game)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
