"""The event log: append-only (triggers) and hash-chained; tampering is detected and
the first broken row is named (issue 7 item 4: GLI-style audit log)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.journal import GENESIS_HASH, Journal


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    j = Journal(tmp_path / "journal.sqlite3")
    for i, kind in enumerate(
        ["power_up", "config_change", "device_fault", "device_recovered", "power_down"]
    ):
        j.append_event(kind, {"n": i, "text": "écart 澳門"})
    yield j
    j.close()


def raw(j: Journal, sql: str, *args: object) -> None:
    """Write behind the journal's back, as an attacker with the file would."""
    db = sqlite3.connect(j.path, isolation_level=None)
    db.execute("DROP TRIGGER IF EXISTS events_no_update")
    db.execute("DROP TRIGGER IF EXISTS events_no_delete")
    db.execute(sql, args)
    db.close()


def test_hash_is_the_documented_formula(journal: Journal) -> None:
    """sha256(prev_hash + canonical JSON of {id, at, kind, data}), computed here by hand."""
    ev = journal.events(10)
    prev = "0" * 64
    for e in ev:
        content = json.dumps(
            {"at": e.at, "data": e.data, "id": e.id, "kind": e.kind},
            sort_keys=True, separators=(",", ":"), ensure_ascii=False,
        )  # fmt: skip
        assert e.prev_hash == prev
        assert e.hash == hashlib.sha256((prev + content).encode("utf-8")).hexdigest()
        prev = e.hash
    assert GENESIS_HASH == "0" * 64


def test_intact_chain_verifies(journal: Journal) -> None:
    rep = journal.verify_chain()
    assert rep.ok and rep.checked == 5 and rep.first_bad_id is None
    assert rep.head_hash == journal.events(1)[0].hash
    assert "intact" in str(rep)


def test_update_and_delete_are_refused_by_triggers(journal: Journal) -> None:
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        journal._db.execute("UPDATE events SET kind = 'x' WHERE id = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        journal._db.execute("DELETE FROM events WHERE id = 5")
    assert journal.verify_chain().ok


def test_edited_row_is_named(journal: Journal) -> None:
    raw(
        journal,
        "UPDATE events SET data = ? WHERE id = 3",
        json.dumps(
            {"n": 99, "text": "écart 澳門"},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        ),
    )
    rep = journal.verify_chain()
    assert not rep.ok and rep.first_bad_id == 3
    assert "row edited" in rep.reason
    assert "row 3" in str(rep)


def test_edited_timestamp_or_kind_is_detected(journal: Journal) -> None:
    raw(journal, "UPDATE events SET at = '2020-01-01T00:00:00.000Z' WHERE id = 4")
    assert journal.verify_chain().first_bad_id == 4


def test_rehashed_row_breaks_the_link_to_the_next(journal: Journal) -> None:
    """An attacker who also recomputes the edited row's hash is caught at the next row."""
    e = journal.events(10)[1]  # row 2
    data = {"n": 42}
    content = json.dumps(
        {"at": e.at, "data": data, "id": 2, "kind": e.kind}, sort_keys=True, separators=(",", ":")
    )
    new_hash = hashlib.sha256((e.prev_hash + content).encode()).hexdigest()
    raw(
        journal,
        "UPDATE events SET data = ?, hash = ? WHERE id = 2",
        json.dumps(data, separators=(",", ":")),
        new_hash,
    )
    rep = journal.verify_chain()
    assert rep.first_bad_id == 3 and "row 2" in rep.reason


def test_deleted_row_is_named(journal: Journal) -> None:
    raw(journal, "DELETE FROM events WHERE id = 2")
    rep = journal.verify_chain()
    assert rep.first_bad_id == 3 and "row 2 missing" in rep.reason


def test_non_canonical_data_is_detected(journal: Journal) -> None:
    raw(journal, "UPDATE events SET data = ? WHERE id = 1", '{"text": "écart 澳門", "n": 0}')
    rep = journal.verify_chain()
    assert rep.first_bad_id == 1 and "canonical" in rep.reason


def test_appending_continues_the_chain_after_reopen(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p) as j:
        j.append_event("power_up", None)
    with Journal(p) as j:
        e = j.append_event("power_down", {"clean": True})
        assert e.id == 2 and e.prev_hash == j.events(2)[0].hash
        assert j.verify_chain().ok


def test_events_tail_and_paging(journal: Journal) -> None:
    assert [e.id for e in journal.events(2)] == [4, 5]
    assert [e.id for e in journal.events(2, after_id=1)] == [2, 3]
    assert [e.kind for e in journal.events(10, kind="power_up")] == ["power_up"]


def test_floats_nan_are_refused_in_events(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.sqlite3") as j:
        with pytest.raises(ValueError):
            j.append_event("x", {"v": float("nan")})
        assert j.events() == [] and j.verify_chain().ok


@settings(max_examples=25, deadline=None)
@given(
    data=st.lists(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
            max_leaves=8,
        ),
        min_size=1,
        max_size=6,
    ),
    victim=st.integers(min_value=0, max_value=5),
)
def test_any_single_row_edit_is_detected_at_that_row(
    tmp_path_factory: pytest.TempPathFactory, data: list[object], victim: int
) -> None:
    j = Journal(tmp_path_factory.mktemp("chain") / "j.sqlite3")
    for d in data:
        j.append_event("k", d)
    target = victim % len(data) + 1
    raw(j, "UPDATE events SET kind = 'tampered' WHERE id = ?", target)
    rep = j.verify_chain()
    assert (rep.ok, rep.first_bad_id) == (False, target)
    j.close()
