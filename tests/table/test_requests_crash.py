"""Issue 14 item 2: the answer to a request is journaled in the transaction of the
change it answers. A process killed between acting and journaling the answer (in
the middle of the transaction) leaves neither; one killed after the commit and
before the answer is published leaves both. Either way a retry acts at most once: shown
with real process deaths (``os._exit`` in a forked child, no cleanup, no commit). The
table comes back as the daemon brings it back: the round the crash left in flight is
voided, every bet refunded (``RoundEngine.resume``), so a retry of what did not commit
finds its round ended (``STALE_ROUND``) and never acts on another."""

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


def _restarted(path: Path, seeds: dict[str, bytes]) -> Table:
    """The table back after the crash, as the daemon starts it: what was left in flight
    voided first."""
    t = _table(path, seeds)
    t.engine.resume()
    return t


def _child(path: str, seeds: dict[str, bytes], kind: str, when: str) -> None:
    """The table plays up to the request (``kind``: a result, or a bet), says the
    request it is about to answer (beside the journal), and dies answering it."""
    t = _table(Path(path), seeds)
    rnd = t.cmd("dealer", "open_betting")["data"]["round_id"]
    if kind == "result":
        assert t.bet("pos", red("b1"))["status"] == "accepted"
        assert t.cmd("dealer", "close_betting")["status"] == "ok"
        topic = "commands/request"
        body = {"command": "result", "round_id": rnd, "args": {"outcome": {"number": 1}}}
        request = t.build(topic, "dealer", body, rid="res-1")
    else:
        topic = "bets/request"
        body = {"action": "place", "round_id": rnd, "bet": red("b1")}
        request = t.build(topic, "pos", body, rid="bet-1")
    Path(path).with_suffix(".request.json").write_text(
        json.dumps({"round_id": rnd, "request": request})
    )
    if when == "in_transaction":
        # the change is made, the answer is about to be journaled: the power fails
        def die(*a: object, **k: object) -> None:
            os._exit(KILLED)

        t.journal.requests.record_answer = die  # type: ignore[method-assign]
    t.send(topic, request)
    os._exit(KILLED)  # committed; the answer never reaches the floor


def _crash(path: Path, seeds: dict[str, bytes], kind: str, when: str) -> tuple[str, Any]:
    """The round the child played and the request it died answering."""
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=_child, args=(str(path), seeds, kind, when))
    p.start()
    p.join(60)
    assert p.exitcode == KILLED
    said = json.loads(path.with_suffix(".request.json").read_text())
    return said["round_id"], said["request"]


@pytest.fixture
def seeds() -> dict[str, bytes]:
    return {n: os.urandom(32) for n in ROLES}


@pytest.mark.parametrize("when", ["in_transaction", "after_commit"])
def test_a_result_killed_around_its_commit_settles_once(
    tmp_path: Path, seeds: dict[str, bytes], when: str
) -> None:
    path = tmp_path / "journal.sqlite3"
    rnd, request = _crash(path, seeds, "result", when)

    t = _restarted(path, seeds)  # the table comes back
    stored = t.journal.requests.answered("dealer", "res-1")
    if when == "in_transaction":  # neither: the round was left in flight, and is voided
        assert stored is None and t.journal.rounds.round(rnd).status == "void"
    else:
        assert stored is not None and t.journal.rounds.round(rnd).status == "settled"  # both
    answer = t.send("commands/request", dict(request))  # the floor re-sends
    if stored is not None:
        assert answer == stored.answer
        assert answer["status"] == "ok" and answer["data"]["round_id"] == rnd
    else:
        assert (answer["status"], answer["code"]) == ("error", "STALE_ROUND")
    assert t.send("commands/request", dict(request)) == answer
    settled = t.journal.rounds.settlement(rnd)
    assert settled is not None
    assert settled["status"] == ("void" if when == "in_transaction" else "settled")
    events = [json.loads(e.payload) for e in t.journal.outbox.pending(1000)]
    assert sum(1 for e in events if e.get("event") == "result") == (when == "after_commit")
    assert sum(1 for e in events if e.get("round_id") == rnd and "bets" in e) == 1


@pytest.mark.parametrize("when", ["in_transaction", "after_commit"])
def test_a_bet_killed_around_its_commit_is_placed_once(
    tmp_path: Path, seeds: dict[str, bytes], when: str
) -> None:
    path = tmp_path / "journal.sqlite3"
    rnd, request = _crash(path, seeds, "bet", when)

    t = _restarted(path, seeds)
    placed = t.journal.bets.bet(rnd, "b1")
    assert (placed is None) == (when == "in_transaction")
    assert t.journal.rounds.round(rnd).status == "void"  # refunded, if it was placed
    answer = t.send("bets/request", dict(request))
    if placed is None:  # a bet for a round that ended is never placed in another
        assert (answer["status"], answer["code"]) == ("rejected", "STALE_ROUND")
        assert t.journal.bets.bets(rnd) == []
    else:  # placed once: the retry gets its answer again
        assert answer["status"] == "accepted"
        assert [b.bet_id for b in t.journal.bets.bets(rnd)] == ["b1"]
    assert t.send("bets/request", dict(request)) == answer
