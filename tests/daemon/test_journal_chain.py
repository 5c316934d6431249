"""The event log: append-only (triggers) and hash-chained; tampering is detected and
the first broken row is named (issue 7 item 4: GLI-style audit log). Keyed with the
table's audit key, the chain covers every row that moves money (issue 15 item 1)."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from pathlib import Path

import pytest
from _mqtt_support import play_round
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.journal import (
    GENESIS_HASH,
    AuditKey,
    AuditKeyError,
    JackpotHit,
    Journal,
    event_hash,
)


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    j = Journal(tmp_path / "journal.sqlite3")
    for i, kind in enumerate(
        ["power_up", "config_change", "device_fault", "device_recovered", "power_down"]
    ):
        j.chain.append_event(kind, {"n": i, "text": "écart 澳門"})
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
    ev = journal.chain.events(10)
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
    rep = journal.chain.verify()
    assert rep.ok and rep.checked == 5 and rep.first_bad_id is None
    assert rep.head_hash == journal.chain.events(1)[0].hash
    assert "intact" in str(rep)


def test_update_and_delete_are_refused_by_triggers(journal: Journal) -> None:
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        journal.db.sql.execute("UPDATE events SET kind = 'x' WHERE id = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        journal.db.sql.execute("DELETE FROM events WHERE id = 5")
    assert journal.chain.verify().ok


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
    rep = journal.chain.verify()
    assert not rep.ok and rep.first_bad_id == 3
    assert "row edited" in rep.reason
    assert "row 3" in str(rep)


def test_edited_timestamp_or_kind_is_detected(journal: Journal) -> None:
    raw(journal, "UPDATE events SET at = '2020-01-01T00:00:00.000Z' WHERE id = 4")
    assert journal.chain.verify().first_bad_id == 4


def test_rehashed_row_breaks_the_link_to_the_next(journal: Journal) -> None:
    """An attacker who also recomputes the edited row's hash is caught at the next row."""
    e = journal.chain.events(10)[1]  # row 2
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
    rep = journal.chain.verify()
    assert rep.first_bad_id == 3 and "row 2" in rep.reason


def test_deleted_row_is_named(journal: Journal) -> None:
    raw(journal, "DELETE FROM events WHERE id = 2")
    rep = journal.chain.verify()
    assert rep.first_bad_id == 3 and "row 2 missing" in rep.reason


def test_non_canonical_data_is_detected(journal: Journal) -> None:
    raw(journal, "UPDATE events SET data = ? WHERE id = 1", '{"text": "écart 澳門", "n": 0}')
    rep = journal.chain.verify()
    assert rep.first_bad_id == 1 and "canonical" in rep.reason


def test_appending_continues_the_chain_after_reopen(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p) as j:
        j.chain.append_event("power_up", None)
    with Journal(p) as j:
        e = j.chain.append_event("power_down", {"clean": True})
        assert e.id == 2 and e.prev_hash == j.chain.events(2)[0].hash
        assert j.chain.verify().ok


def test_events_tail_and_paging(journal: Journal) -> None:
    assert [e.id for e in journal.chain.events(2)] == [4, 5]
    assert [e.id for e in journal.chain.events(2, after_id=1)] == [2, 3]
    assert [e.kind for e in journal.chain.events(10, kind="power_up")] == ["power_up"]


def test_floats_nan_are_refused_in_events(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.sqlite3") as j:
        with pytest.raises(ValueError):
            j.chain.append_event("x", {"v": float("nan")})
        assert j.chain.events() == [] and j.chain.verify().ok


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
        j.chain.append_event("k", d)
    target = victim % len(data) + 1
    raw(j, "UPDATE events SET kind = 'tampered' WHERE id = ?", target)
    rep = j.chain.verify()
    assert (rep.ok, rep.first_bad_id) == (False, target)
    j.close()


# -- the keyed chain (issue 15 item 1) ----------------------------------------------------


def tamper(path: Path, sql: str, *args: object) -> None:
    """Write behind the journal's back, as an attacker (or a lost write) would."""
    db = sqlite3.connect(path, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    db.execute(sql, args)
    db.close()


@pytest.fixture
def key(tmp_path: Path) -> AuditKey:
    return AuditKey.create(tmp_path / "audit.key")


def test_keyed_rows_are_the_documented_hmac(tmp_path: Path, key: AuditKey) -> None:
    """HMAC-SHA256(key, prev_hash + canonical JSON of {id, at, kind, data}), by hand."""
    secret = bytes.fromhex((tmp_path / "audit.key").read_text().strip())
    with Journal(tmp_path / "j.sqlite3", audit_key=key) as j:
        j.chain.append_event("power_up", {"text": "écart 澳門"})
        evs = j.chain.events(10)
    assert [e.kind for e in evs] == ["chain_keyed", "power_up"]
    assert evs[0].data["key_id"] == key.key_id and secret.hex() not in json.dumps(evs[0].data)
    prev = GENESIS_HASH
    for e in evs:
        content = json.dumps(
            {"at": e.at, "data": e.data, "id": e.id, "kind": e.kind},
            sort_keys=True, separators=(",", ":"), ensure_ascii=False,
        )  # fmt: skip
        assert e.hash == hmac.new(secret, (prev + content).encode(), hashlib.sha256).hexdigest()
        prev = e.hash


def test_the_key_file_never_reaches_the_journal(tmp_path: Path, key: AuditKey) -> None:
    secret = (tmp_path / "audit.key").read_text().strip()
    with Journal(tmp_path / "j.sqlite3", audit_key=key) as j:
        play_round(j)
    for f in tmp_path.glob("j.sqlite3*"):
        data = f.read_bytes()
        assert secret.encode() not in data and bytes.fromhex(secret) not in data


def test_a_keyed_journal_refuses_another_key_and_writes_without_one(
    tmp_path: Path, key: AuditKey
) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p, audit_key=key) as j:
        play_round(j)
    other = AuditKey.create(tmp_path / "other.key")
    with pytest.raises(AuditKeyError) as exc:
        Journal(p, audit_key=other)
    assert exc.value.code == "AUDIT_KEY_MISMATCH"
    with Journal(p) as j:  # reading is fine...
        assert len(j.rounds.summary(10)) == 1
        with pytest.raises(AuditKeyError) as exc:  # ...extending the chain is not
            j.chain.append_event("x", {})
        assert exc.value.code == "AUDIT_KEY_REQUIRED"
    with Journal(p, audit_key=key) as j:
        assert j.audit().ok and j.chain.verify().keyed_from == 1


def test_an_unkeyed_journal_is_keyed_at_its_first_keyed_open(tmp_path: Path, key: AuditKey) -> None:
    """Older rows stay SHA-256 links; the chain_keyed entry's HMAC covers their head, so
    rewriting them and recomputing the plain hashes is caught at that entry."""
    p = tmp_path / "j.sqlite3"
    with Journal(p) as j:
        for i in range(3):
            j.chain.append_event("config_change", {"n": i})
    with Journal(p, audit_key=key) as j:
        j.chain.append_event("power_up", {})
        rep = j.chain.verify()
        assert rep.ok and rep.keyed_from == 4 and j.audit().ok
    tamper(
        p, "UPDATE events SET data = ? WHERE id = 2", json.dumps({"n": 99}, separators=(",", ":"))
    )
    db = sqlite3.connect(p, isolation_level=None)
    prev = db.execute("SELECT hash FROM events WHERE id = 1").fetchone()[0]
    for eid in (2, 3):  # the attacker recomputes the unkeyed part
        at, kind, data = db.execute(
            "SELECT at, kind, data FROM events WHERE id = ?", (eid,)
        ).fetchone()
        h = event_hash(prev, eid, at, kind, json.loads(data))
        db.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE id = ?", (prev, h, eid))
        prev = h
    db.close()
    with Journal(p, readonly=True) as j:
        rep = j.chain.verify(key)
        assert (rep.ok, rep.first_bad_id) == (False, 4), str(rep)


def test_a_jackpot_meter_or_hit_edited_behind_the_journals_back_is_named(
    tmp_path: Path, key: AuditKey
) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p, audit_key=key) as j:
        r = j.rounds.open_round("t1", "stud-poker", {"regulation": "61/2004"})
        j.rounds.settle_round(
            r.round_id, {}, {"round_id": r.round_id, "status": "settled", "bets": []},
            {"pool": 20_000_000, "overflow": 0}, jackpot_hits=[JackpotHit("H1", 500_000, r.round_id)],
        )  # fmt: skip
        j.jackpot.save_state({"pool": 19_500_000, "overflow": 0},
                             events=[("jackpot_adjusted", {"amount": -500_000, "by": "t1"})])  # fmt: skip
        assert j.audit().ok
    tamper(p, 'UPDATE jackpot SET state = \'{"pool":99000000,"overflow":0}\'')
    with Journal(p, readonly=True) as j:
        first = j.audit(key).first
        assert first is not None and "jackpot row 'progressive'" in first.row
        assert "99000000" in first.reason and "19500000" in first.reason
    tamper(p, "UPDATE jackpot_hits SET amount = 5000000")
    with Journal(p, readonly=True) as j:
        assert any("hit H1" in p.row and "amount" in p.reason for p in j.audit(key).problems)


def test_retention_is_told_from_deletion(tmp_path: Path, key: AuditKey) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p, audit_key=key, full_rounds=10, raw_frame_rounds=10) as j:
        rids = [play_round(j) for _ in range(14)]
        rep = j.audit()
        assert rep.ok and rep.pruned_rounds == 4, str(rep)
    tamper(p, "DELETE FROM settlements WHERE round_id = ?", rids[8])
    with Journal(p, readonly=True) as j:
        first = j.audit(key).first
        assert first is not None and f"settlement of round {rids[8]}" in first.row
        assert "missing from the journal (deleted?)" in first.reason


def test_the_recent_check_sees_only_its_window(tmp_path: Path, key: AuditKey) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p, audit_key=key) as j:
        rids = [play_round(j) for _ in range(30)]
        assert j.check_recent(40).ok and j.check_recent().ok
    for rid in (rids[2], rids[-2]):  # one long ago, one recent: rows lost with a checkpoint
        tamper(p, "DELETE FROM settlements WHERE round_id = ?", rid)
    with Journal(p, audit_key=key) as j:
        recent = j.check_recent(40)
        assert [p.row for p in recent.problems] == [f"settlement of round {rids[-2]} (seq 29)"]
        assert len(j.check_recent(10_000).problems) == 2  # a day's window sees both


def test_a_round_is_stored_and_published_as_its_digested_text_with_chain_last(
    journal: Journal,
) -> None:
    """Issue 20: the payload is serialised once. The bytes stored and published are the
    canonical JSON (sorted keys, compact) whose SHA-256 the closing chain entry records,
    with ``chain`` appended as the last key; recomputed here with json and hashlib."""
    rid = play_round(journal)
    entry = [e for e in journal.outbox.pending(100) if e.topic == "rounds"][-1]
    text = entry.payload.decode("utf-8")
    payload = json.loads(text)
    assert journal.rounds.settlement(rid) == payload
    assert list(payload)[-1] == "chain"
    without = {k: v for k, v in payload.items() if k != "chain"}
    canonical = json.dumps(without, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    chain = json.dumps(payload["chain"], separators=(",", ":"))
    assert text == canonical[:-1] + ',"chain":' + chain + "}"
    closing = [e for e in journal.chain.events(10) if e.kind == "round_settled"][-1]
    assert closing.data["payload_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert payload["chain"] == {"seq": closing.id, "head": closing.hash}
