"""Retention runs after every round: its work must not grow with what the journal keeps.

Issue 20: the pruning of floor requests older than the 24-hour window read every request
kept (SQLite scanned the table in id order), after every round: 2 ms after 120 rounds of
100 bets on the bench machine, and 24 hours of traffic is over 100,000 requests. Counted
here in SQLite virtual-machine steps (a progress handler), not in time: the steps of one
pruning pass with 200 and with 20,000 recent requests must be about the same.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from firmware_host.journal import Journal
from firmware_host.timefmt import iso_utc


def steps_of_one_pass(path: Path, recent: int, old: int) -> tuple[int, int]:
    """(VM steps of one retention pass, requests left) over ``recent`` requests inside
    the window and ``old`` past it (half of these of a round still kept in full)."""
    j = Journal(path)
    try:
        r = j.rounds.open_round("t1", "roulette", {"x": 1})
        now = datetime.now(UTC)
        rows = [
            (f"p{i % 7}", f"new-{i}", "bets/request", "d", None, 1, "{}", iso_utc(now))
            for i in range(recent)
        ] + [
            (f"p{i % 7}", f"old-{i}", "bets/request", "d", r.round_id if i % 2 else None, 1,
             "{}", iso_utc(now - timedelta(hours=25)))
            for i in range(old)
        ]  # fmt: skip
        with j.db.transaction("test") as db:
            db.executemany(
                "INSERT INTO requests (principal, request_id, topic, digest, round_id, "
                "verified, answer, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        steps = 0

        def step() -> int:
            nonlocal steps
            steps += 1
            return 0

        j.db.sql.set_progress_handler(step, 100)
        j.retention.prune()
        j.db.sql.set_progress_handler(None, 0)
        left = j.db.sql.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
        return steps, int(left)
    finally:
        j.close()


def test_pruning_requests_reads_only_those_past_the_window(tmp_path: Path) -> None:
    small, left_small = steps_of_one_pass(tmp_path / "a.sqlite3", recent=200, old=10)
    large, left_large = steps_of_one_pass(tmp_path / "b.sqlite3", recent=20_000, old=10)
    # What was pruned: the old requests without a round kept in full (5 of 10).
    assert (left_small, left_large) == (205, 20_005)
    # 100x the requests kept: the same work (the old query: ~100x the steps).
    assert large < 2 * small + 50, (small, large)


def counting(j: Journal) -> list[int]:
    n = [0]

    def step() -> int:
        n[0] += 1
        return 0

    j.db.sql.set_progress_handler(step, 100)
    return n


def journal_with_rounds(path: Path, finished: int, detail: str = "summary") -> Journal:
    """``finished`` settled rounds of table t1 (written directly: only their rows are
    read here) whose ``detail`` is ``detail``."""
    j = Journal(path)
    at = iso_utc(datetime.now(UTC))
    with j.db.transaction("test") as db:
        db.executemany(
            "INSERT INTO rounds (round_id, table_id, seq, game, rules, phase, status, "
            "timestamps, opened_at, finished_at, detail) "
            "VALUES (?, 't1', ?, 'roulette', '{}', 'settled', 'settled', '{}', ?, ?, ?)",
            [(f"r{i}", i, at, at, detail) for i in range(1, finished + 1)],
        )
    return j


def test_a_tables_latest_round_and_rounds_in_flight_are_found_without_reading_them_all(
    tmp_path: Path,
) -> None:
    """Every phase change reads the table's latest round (its state snapshot) and every
    opening checks for a round in flight: rounds are kept forever, so both must cost
    the same after 100 rounds and after 20,000 (before: the latest by sorting all the
    table's rounds, the one in flight by reading them all)."""
    steps = []
    for n in (100, 20_000):
        j = journal_with_rounds(tmp_path / f"{n}.sqlite3", n)
        try:
            count = counting(j)
            r = j.rounds.open_round("t1", "roulette", {"x": 1})
            (latest,) = j.rounds.summary(1, table_id="t1")
            in_flight = j.rounds.in_flight("t1")
            j.db.sql.set_progress_handler(None, 0)
            assert latest.round_id == r.round_id and latest.seq == n + 1
            assert [x.round_id for x in in_flight] == [r.round_id]
            steps.append(count[0])
        finally:
            j.close()
    assert steps[1] < 2 * steps[0] + 50, steps


def test_the_full_window_edge_is_looked_for_every_hundredth_of_the_window(
    tmp_path: Path,
) -> None:
    """The n-th newest finished round is found by walking n index entries (10,000 by
    default, up to 10^9 allowed): after every round that was the largest part of
    retention (0.5 ms here with the default window). It is looked for every n/100
    rounds: the window keeps at most 1% more than it says, never fewer."""
    j = journal_with_rounds(tmp_path / "j.sqlite3", 20_000, "full")
    try:
        full = "SELECT COUNT(*) FROM rounds WHERE detail != 'summary' AND status IS NOT NULL"
        kept = []
        for _ in range(100):  # the first 99 passes leave the window as it is
            j.retention.prune()
            kept.append(j.db.sql.execute(full).fetchone()[0])
        assert kept[:99] == [20_000] * 99 and kept[99] == 10_000
        count = counting(j)
        j.db.sql.execute(
            "SELECT id FROM rounds WHERE status IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET ?",
            (j.retention.windows.full_rounds - 1,),
        ).fetchone()
        one_walk = count[0]
        count[0] = 0
        for _ in range(100):  # one more lookup in these 100 passes (and frames' 100)
            j.retention.prune()
        j.db.sql.set_progress_handler(None, 0)
        assert one_walk > 100, one_walk  # the walk is what is measured
        assert count[0] < 10 * one_walk, (count[0], one_walk)  # before: 100 walks and more
        assert j.db.sql.execute(full).fetchone()[0] == 10_000
    finally:
        j.close()
