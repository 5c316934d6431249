"""Issue 14 item 2: the answer to a request is journaled in the transaction of the
change it answers. A process killed between acting and journaling the answer (in
the middle of the transaction) leaves neither; one killed after the commit and
before the answer is published leaves both. Either way a retry acts once: shown
with real process deaths (``os._exit`` in a forked child, no cleanup, no commit)."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.journal import Journal

from .floor_support import ROLES, Table, make_table, red

KILLED = 9


def _table(path: Path, seeds: dict[str, bytes]) -> Table:
    keys = {n: Ed25519PrivateKey.from_private_bytes(s) for n, s in seeds.items()}
    return make_table(path.parent, journal=Journal(path), keys=keys)


def _child(path: str, seeds: dict[str, bytes], request: dict[str, Any], when: str) -> None:
    t = _table(Path(path), seeds)
    topic = "bets/request" if "action" in request else "commands/request"
    if when == "in_transaction":
        # the change is made, the answer is about to be journaled: the power fails
        def die(*a: object, **k: object) -> None:
            os._exit(KILLED)

        t.journal.requests.record_answer = die  # type: ignore[method-assign]
    t.send(topic, request)
    os._exit(KILLED)  # committed; the answer never reaches the floor


def _crash(path: Path, seeds: dict[str, bytes], request: dict[str, Any], when: str) -> None:
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=_child, args=(str(path), seeds, request, when))
    p.start()
    p.join(60)
    assert p.exitcode == KILLED


@pytest.fixture
def seeds() -> dict[str, bytes]:
    return {n: os.urandom(32) for n in ROLES}


@pytest.mark.parametrize("when", ["in_transaction", "after_commit"])
def test_a_result_killed_around_its_commit_settles_once(
    tmp_path: Path, seeds: dict[str, bytes], when: str
) -> None:
    path = tmp_path / "journal.sqlite3"
    t = _table(path, seeds)
    rnd = t.cmd("dealer", "open_betting")["data"]["round_id"]
    assert t.bet("pos", red("b1"))["status"] == "accepted"
    assert t.cmd("dealer", "close_betting")["status"] == "ok"
    request = t.build(
        "commands/request",
        "dealer",
        {"command": "result", "round_id": rnd, "args": {"outcome": {"number": 1}}},
        rid="res-1",
    )
    t.journal.close()
    _crash(path, seeds, request, when)

    t = _table(path, seeds)  # the table comes back
    stored = t.journal.requests.answered("dealer", "res-1")
    if when == "in_transaction":
        assert stored is None and t.journal.rounds.round(rnd).status is None  # neither
    else:
        assert stored is not None and t.journal.rounds.round(rnd).status == "settled"  # both
    answer = t.send("commands/request", dict(request))  # the floor re-sends
    assert answer["status"] == "ok" and answer["data"]["round_id"] == rnd
    if stored is not None:
        assert answer == stored.answer
    assert t.send("commands/request", dict(request)) == answer
    assert t.journal.rounds.round(rnd).status == "settled"
    events = [json.loads(e.payload) for e in t.journal.outbox.pending(1000)]
    assert sum(1 for e in events if e.get("event") == "result") == 1
    assert sum(1 for e in events if e.get("round_id") == rnd and "bets" in e) == 1


@pytest.mark.parametrize("when", ["in_transaction", "after_commit"])
def test_a_bet_killed_around_its_commit_is_placed_once(
    tmp_path: Path, seeds: dict[str, bytes], when: str
) -> None:
    path = tmp_path / "journal.sqlite3"
    t = _table(path, seeds)
    rnd = t.cmd("dealer", "open_betting")["data"]["round_id"]
    request = t.build(
        "bets/request", "pos", {"action": "place", "round_id": rnd, "bet": red("b1")}, rid="bet-1"
    )
    t.journal.close()
    _crash(path, seeds, request, when)

    t = _table(path, seeds)
    placed = t.journal.bets.bet(rnd, "b1")
    assert (placed is None) == (when == "in_transaction")
    answer = t.send("bets/request", dict(request))
    assert answer["status"] == "accepted"
    assert t.send("bets/request", dict(request)) == answer
    assert [b.bet_id for b in t.journal.bets.bets(rnd)] == ["b1"]
