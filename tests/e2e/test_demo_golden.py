"""Behaviour unchanged (issue 13): seeded demo runs of every game publish the same
round payloads as recorded in ``tests/golden/`` (ids and timestamps aside).

A change that alters a payload on purpose (a rules fix) re-records the files with
``python -m tests.golden.demo_rounds GAME`` and says why in its commit."""

from __future__ import annotations

import json

import pytest

from firmware_host.games import GAME_IDS
from tests.golden.demo_rounds import path_of, play


@pytest.mark.parametrize("game", GAME_IDS)
async def test_seeded_demo_publishes_the_recorded_rounds(game: str) -> None:
    expected = json.loads(path_of(game).read_text())
    got = json.loads(json.dumps(await play(game), sort_keys=True))
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, f"{game} round {i + 1} differs from tests/golden/{game}.json"
