"""The outbox's "published" marks (schema 5, issue 20): a mark is a row of its own.

Before, marking an entry (``UPDATE outbox SET published_at``) made SQLite write the whole
record again, payload and overflow pages included: every published round put a third
copy of its payload in the WAL, and a drained backlog of 200 rounds (16 KB each) spent
6.5 ms writing marks against 0.6 ms now (measured on this machine). These tests hold the
new layout to the old one's behaviour (order, counts, retention, the ``outbox`` view that
tools read) and to the one thing it changes: the payload is written once.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.journal import DB_MIGRATIONS, Journal, OutboxMessage


def wal_bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_marking_writes_no_payload_again(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    j = Journal(path)
    try:
        big = b"x" * 100_000
        ids = j.outbox.enqueue(*(OutboxMessage("rounds", big) for _ in range(5)))
        j.db.sql.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert wal_bytes(path) == 0
        assert j.outbox.mark_published(ids) == 5
        # Five marks: a few pages. The old UPDATE rewrote 5 x 100 KB of records.
        assert 0 < wal_bytes(path) < 50_000, wal_bytes(path)
        assert j.outbox.pending(10) == []
        assert j.outbox.mark_published(ids) == 0  # marked once only
    finally:
        j.close()


def test_outbox_view_reads_as_before(tmp_path: Path) -> None:
    """Tools and tests that read ``outbox`` (topic, payload, published_at...) still can."""
    j = Journal(tmp_path / "j.sqlite3")
    try:
        a, b = j.outbox.enqueue(OutboxMessage("events", {"n": 1}), OutboxMessage("rounds", b"R"))
        j.outbox.mark_published([a])
        rows = j.db.sql.execute(
            "SELECT id, topic, payload, published_at IS NOT NULL FROM outbox ORDER BY id"
        ).fetchall()
        assert [(r[0], r[1], bytes(r[2]), r[3]) for r in rows] == [
            (a, "events", b'{"n":1}', 1),
            (b, "rounds", b"R", 0),
        ]
        unpublished = "SELECT COUNT(*) FROM outbox WHERE topic = 'rounds' AND published_at IS NULL"
        assert j.db.sql.execute(unpublished).fetchone()[0] == 1
        entry = j.outbox.entry(a)
        assert entry is not None and entry.published_at is not None
    finally:
        j.close()


def _v4_journal(path: Path) -> None:
    """A journal as schema 4 wrote it: marks in ``outbox.published_at``."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.executescript("".join(DB_MIGRATIONS[:4]) + "\nPRAGMA user_version = 4;")
    for i in range(1, 7):
        con.execute(
            "INSERT INTO outbox (topic, payload, qos, retain, round_id, created_at, published_at) "
            "VALUES ('rounds', ?, 1, 0, ?, '2026-11-24T00:00:00.000Z', ?)",
            (b"P%d" % i, f"r{i}", "2026-11-24T00:00:01.000Z" if i in (1, 2, 4) else None),
        )
    con.close()


def test_a_schema_4_journal_keeps_its_marks(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    _v4_journal(path)
    j = Journal(path)
    try:
        assert j.db.schema_version == len(DB_MIGRATIONS) == 5
        assert [e.id for e in j.outbox.pending(10)] == [3, 5, 6]
        assert j.outbox.pending_count() == 3
        assert [bytes(e.payload) for e in j.outbox.pending(10)] == [b"P3", b"P5", b"P6"]
        marked = j.db.sql.execute("SELECT id, published_at FROM outbox_published ORDER BY id")
        assert marked.fetchall() == [(i, "2026-11-24T00:00:01.000Z") for i in (1, 2, 4)]
        # The ids go on after the last (the AUTOINCREMENT sequence moved with the table).
        (new,) = j.outbox.enqueue(OutboxMessage("events", {}))
        assert new == 7
        assert j.outbox.mark_published([3, 5]) == 2
        assert [e.id for e in j.outbox.pending(10)] == [6, 7]
    finally:
        j.close()


def test_retention_drops_marks_with_their_entries(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite3", published_outbox_keep=3)
    try:
        ids = j.outbox.enqueue(*(OutboxMessage("events", {"n": n}) for n in range(10)))
        held = ids[1]  # refused by the broker: never marked
        j.outbox.mark_published([i for i in ids if i != held])
        j.retention.prune()
        left = [r[0] for r in j.db.sql.execute("SELECT id FROM outbox_entries ORDER BY id")]
        marks = [r[0] for r in j.db.sql.execute("SELECT id FROM outbox_published ORDER BY id")]
        edge = ids[-1] - 3
        assert left == [held, *[i for i in ids if i > edge]]
        assert marks == [i for i in ids if i > edge]
        assert [e.id for e in j.outbox.pending(10)] == [held]
    finally:
        j.close()


ops = st.lists(
    st.one_of(
        st.tuples(st.just("enqueue"), st.integers(1, 4)),
        st.tuples(st.just("mark"), st.lists(st.integers(0, 40), max_size=6)),
        st.tuples(st.just("retain"), st.just(0)),
        st.tuples(st.just("rollback"), st.integers(1, 3)),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_pending_as_a_model_has_it(steps: list[tuple[str, object]]) -> None:
    """Against a plain model: what is pending (in order, from any cursor), its count, and
    that an entry pruned or rolled back is never pending. Retention keeps 2 published."""
    with tempfile.TemporaryDirectory() as d:
        j = Journal(Path(d) / "j.sqlite3", published_outbox_keep=2)
        try:
            entries: list[int] = []
            marked: set[int] = set()
            gone: set[int] = set()
            for op, arg in steps:
                if op == "enqueue":
                    assert isinstance(arg, int)
                    entries += j.outbox.enqueue(*(OutboxMessage("events", {"k": k}) for k in range(arg)))
                elif op == "rollback":
                    try:
                        with j.db.transaction("test"):
                            j.outbox.enqueue(OutboxMessage("events", {"lost": arg}))
                            raise RuntimeError("rolled back")
                    except RuntimeError:
                        pass
                elif op == "mark":
                    assert isinstance(arg, list)
                    want = [entries[i] for i in arg if i < len(entries)]
                    fresh = {i for i in want if i not in marked and i not in gone}
                    assert j.outbox.mark_published(want) == len(fresh)
                    marked |= fresh
                else:
                    j.retention.prune()
                    if marked:
                        edge = max(marked) - 2
                        pruned = {i for i in marked if i <= edge}
                        gone |= pruned
                        marked -= pruned
                pending = [i for i in entries if i not in marked and i not in gone]
                assert [e.id for e in j.outbox.pending(100)] == pending
                assert j.outbox.pending_count() == len(pending)
                if pending:
                    cut = pending[len(pending) // 2]
                    after = [e.id for e in j.outbox.pending(100, after_id=cut)]
                    assert after == [i for i in pending if i > cut]
        finally:
            j.close()
