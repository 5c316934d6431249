"""Crash atomicity: a child process settles rounds in a loop and is killed with SIGKILL
at random moments. After each kill every round must be either fully settled (round
row, settlement payload, outbox entry, jackpot meter) or not settled at all, and the
jackpot meter must equal exactly the number of settled rounds."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from firmware_host.journal import Journal

CHILD = r"""
import sys
from firmware_host.journal import Journal, JackpotHit
path = sys.argv[1]
j = Journal(path)
# A restart first voids what the previous life left in flight (as the daemon does).
for rnd in j.rounds.in_flight():
    j.rounds.void_round(rnd.round_id, "restart", {"round_id": rnd.round_id, "status": "void", "bets": []})
while True:
    meter = (j.jackpot.state() or {"meter": 0})["meter"]
    r = j.rounds.open_round("t1", "stud-poker", {"regulation": "61/2004"})
    for i in range(5):
        j.bets.place_bet(r.round_id, {"bet_id": f"b{i}", "seat": i, "bet_type": "ante", "stake": 100})
    j.frames.add(r.round_id, "shoe", "rx", b"card")
    j.rounds.set_phase(r.round_id, "result", outcome={"n": r.seq})
    payload = {"round_id": r.round_id, "status": "settled", "seq": r.seq, "bets": [{"bet_id": "b0"}] * 5}
    hits = [JackpotHit(f"hit-{r.seq}", 7, round_id=r.round_id)] if r.seq % 7 == 0 else []
    j.rounds.settle_round(r.round_id, {"n": r.seq}, payload, {"meter": meter + 1}, jackpot_hits=hits)
    print(r.seq, flush=True)
"""


def check_consistent(path: Path) -> tuple[int, int]:
    """Every round all-or-nothing; returns (settled, voided)."""
    with Journal(path) as j:
        db = j.db.sql
        settled = voided = 0
        outbox = {
            row[0]: bytes(row[1])
            for row in db.execute("SELECT round_id, payload FROM outbox WHERE topic = 'rounds'")
        }
        counts = dict(
            db.execute(
                "SELECT round_id, COUNT(*) FROM outbox WHERE topic = 'rounds' GROUP BY round_id"
            ).fetchall()
        )
        for rnd in j.rounds.summary(100_000):
            settlement = j.rounds.settlement(rnd.round_id)
            if rnd.status is None:
                assert settlement is None, f"{rnd.round_id}: in flight but has a settlement"
                assert rnd.round_id not in outbox, f"{rnd.round_id}: in flight but queued"
                continue
            assert settlement is not None, f"{rnd.round_id}: {rnd.status} without payload"
            assert counts[rnd.round_id] == 1, (
                f"{rnd.round_id}: {counts[rnd.round_id]} outbox entries"
            )
            assert json.loads(outbox[rnd.round_id]) == settlement
            if rnd.status == "settled":
                settled += 1
                assert rnd.outcome == {"n": rnd.seq}
                if rnd.seq % 7 == 0:
                    assert [
                        h.round_id for h in j.jackpot.hits(1000) if h.hit_id == f"hit-{rnd.seq}"
                    ] == [rnd.round_id]
            else:
                voided += 1
        hits = {h.round_id for h in j.jackpot.hits(100_000)}
        settled_ids = {r.round_id for r in j.rounds.summary(100_000) if r.status == "settled"}
        assert hits <= settled_ids, "a jackpot hit of a round that is not settled"
        meter = (j.jackpot.state() or {"meter": 0})["meter"]
        assert meter == settled, f"jackpot meter {meter} but {settled} rounds settled"
        chain = j.chain.verify()
        assert chain.ok, str(chain)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return settled, voided


@pytest.mark.fault
@pytest.mark.slow
def test_sigkill_during_settle_loop_leaves_every_round_all_or_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal.sqlite3"
    Journal(path).close()
    rng = random.Random(int(os.environ.get("TABLECTL_FAULT_SEED", "20260509")))
    trials = int(os.environ.get("TABLECTL_CRASH_TRIALS", "12"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    kills = 0
    for _ in range(trials):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env, text=True
        )
        assert child.stdout is not None
        for _ in range(rng.randint(1, 15)):  # let it settle a few rounds...
            if not child.stdout.readline():
                break
        time.sleep(rng.uniform(0, 0.01))  # ...then kill it anywhere in the loop
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        kills += 1
        check_consistent(path)
    settled, voided = check_consistent(path)
    with capsys.disabled():
        print(
            f"\n  journal crash test: {kills} SIGKILLs, {settled} rounds settled, {voided} voided on restart"
        )
    assert settled >= trials
