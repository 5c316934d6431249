"""The table's identity key (issue 28): handled like the audit key (mode checked,
refused missing beside a journal or exposed, created for a new table), recorded in the
chain, and what it signs verifiable by the floor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from firmware_host.auth import TableIdentity, load_public_key, open_sealed
from firmware_host.auth.identity import IdentityKeyError, public_path
from firmware_host.journal import AuditKey, Journal, JournalSettings, OutboxMessage


def _code(fn: object, *args: object) -> str:
    with pytest.raises(IdentityKeyError) as exc:
        fn(*args)  # type: ignore[operator]
    return exc.value.code


def test_create_load_and_refusals(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "identity.key"
    made = TableIdentity.create(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert public_path(path) == tmp_path / "keys" / "identity.pub"
    assert load_public_key(public_path(path)).public_bytes_raw() == (
        TableIdentity.load(path)._key.public_key().public_bytes_raw()
    )
    assert TableIdentity.load(path).key_id == made.key_id
    assert "BEGIN" not in repr(made)
    assert _code(TableIdentity.create, path) == "TABLE_IDENTITY_EXISTS"
    os.chmod(path, 0o644)
    assert _code(TableIdentity.load, path) == "TABLE_IDENTITY_EXPOSED"
    os.chmod(path, 0o600)
    path.write_text("not a key\n")
    assert _code(TableIdentity.load, path) == "TABLE_IDENTITY_INVALID"
    assert _code(TableIdentity.load, tmp_path / "none.key") == "TABLE_IDENTITY_MISSING"


def test_a_new_table_gets_one_an_existing_journal_without_one_is_refused(tmp_path: Path) -> None:
    s = JournalSettings(path=str(tmp_path / "journal.sqlite3"))
    with s.open() as j:  # a new table: key created beside the journal, with its .pub
        assert j.outbox.identity is not None
        assert (tmp_path / "identity.key").exists() and (tmp_path / "identity.pub").exists()
        first = j.outbox.identity.key_id
    with s.open() as j:
        assert j.outbox.identity is not None and j.outbox.identity.key_id == first
    (tmp_path / "identity.key").unlink()
    with pytest.raises(IdentityKeyError) as exc:
        s.open()
    assert exc.value.code == "TABLE_IDENTITY_MISSING" and "identity.key" in exc.value.message


def test_the_chain_records_the_key_and_each_change_of_it(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    key = AuditKey.create(tmp_path / "audit.key")
    one, two = TableIdentity.create(tmp_path / "a.key"), TableIdentity.create(tmp_path / "b.key")
    for identity in (one, one, two):
        with Journal(path, audit_key=key, identity=identity):
            pass
    with Journal(path, audit_key=key) as j:
        entries = [e.data for e in j.chain.events() if e.kind == "identity_key"]
        assert [(e["key_id"], e["previous"]) for e in entries] == [
            (one.key_id, None),
            (two.key_id, one.key_id),
        ]
        assert j.audit().ok


def test_what_the_journal_queues_is_signed_by_the_table(tmp_path: Path) -> None:
    identity = TableIdentity.create(tmp_path / "identity.key")
    public = load_public_key(public_path(tmp_path / "identity.key"))
    with Journal(tmp_path / "j.sqlite3", identity=identity) as j:
        r = j.rounds.open_round("T1", "roulette", {})
        j.outbox.enqueue(OutboxMessage("events", {"table_id": "T1", "event": "betting_open"}))
        j.rounds.void_round(r.round_id, "test", {"table_id": "T1", "round_id": r.round_id, "seq": 1})
        entries = j.outbox.pending(10)
        assert [e.topic for e in entries] == ["anchor", "events", "anchor", "rounds"]
        for e in entries:
            payload, _ = open_sealed(e.payload, e.topic, [public])
            assert payload["table_id"] == "T1"
        rnd = json.loads(entries[-1].payload)
        assert j.rounds.settlement(r.round_id) == rnd  # journaled as published, signature and all
        assert j.audit().ok


def test_tablectl_run_refuses_an_exposed_identity_key_in_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    JournalSettings(path=str(state / "journal.sqlite3")).open().close()
    os.chmod(state / "identity.key", 0o640 | 0o004)
    cfg = tmp_path / "t.toml"
    cfg.write_text(
        'version = 1\n[table]\nid = "t-exposed"\ngame = "roulette"\npayable_unit = 100\n'
        '[devices.wheel]\ndriver = "cammegh-ss2"\nport = "socket://127.0.0.1:9"\n'
        '[auth]\nsignatures = false\n[mqtt]\nhost = "127.0.0.1"\nport = 9\n'
    )
    r = subprocess.run(
        [sys.executable, "-m", "firmware_host", "run", "--config", str(cfg),
         "--state-dir", str(state)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # Refused with the configuration's problems (issue 29: the daemon's verdict on its
    # key files is the plan's, which check-config prints too), before the journal opens.
    assert r.returncode == 2, r.stderr
    assert "TABLE_IDENTITY_EXPOSED" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
