"""`tablectl audit verify` (issue 15 items 1 and 2): every row that moves money is
checked against the keyed chain, and the chain against the floor's anchors.

Each test tampers with a journal written by the real round engine the way someone with
write access to the file would (drop the append-only triggers, edit with SQL) and
checks that the audit fails and names the row; an untouched journal passes. The money
figures are the engine's own payloads (roulette, 60/2004 art. 8: a straight pays 35 to
1), read back from the journal, never computed here."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from firmware_host.cli import main
from firmware_host.config import load_config
from firmware_host.journal import AuditKey, Journal
from firmware_host.jsonio import canonical_json
from firmware_host.table.engine import RoundEngine

ROOT = Path(__file__).resolve().parents[2]
#: MOP 100,000 in avos (the issue's raised payout).
MOP_100K = 100_000 * 100


@dataclass
class Table:
    journal: Path
    key: Path
    floor: Path  # what the floor received: rounds and retained anchors, one JSON per line
    rounds: list[dict[str, Any]]  # the settled/voided payloads, in order

    def args(self, *more: str) -> list[str]:
        return ["audit", "verify", "--journal", str(self.journal), "--key", str(self.key), *more]


def bet(bet_id: str, bet_type: str, selection: object, stake: int, seat: int = 1) -> dict:
    return {"bet_id": bet_id, "seat": seat, "bet_type": bet_type, "selection": selection,
            "stake": stake}  # fmt: skip


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """Ten roulette rounds by the round engine on a keyed journal: winning straights, a
    cancelled bet, two voids with their reasons; the floor's copy written beside it."""
    key = AuditKey.create(tmp_path / "audit.key")
    path = tmp_path / "journal.sqlite3"
    j = Journal(path, audit_key=key)
    e = RoundEngine(load_config(ROOT / "config" / "roulette.toml"), j)
    rounds = []
    for i in range(10):
        e.open_betting()
        assert e.desk.place(bet(f"s{i}", "straight", [17], 10000, seat=3)).accepted
        assert e.desk.place(bet(f"r{i}", "red", None, 50000, seat=5)).accepted
        assert e.desk.place(bet(f"x{i}", "black", None, 2500, seat=6)).accepted
        assert e.desk.cancel(f"x{i}").accepted
        if i in (4, 9):
            rounds.append(dict(e.void_round(f"chip in the wheel, spin {i} (60/2004 art. 2)")))
            continue
        e.close_betting()
        rounds.append(dict(e.submit_result({"number": 17 if i % 2 else 4})))
    floor = tmp_path / "floor.jsonl"
    lines = [
        bytes(m.payload).decode()
        for m in j.outbox.pending(10_000)
        if m.topic in ("rounds", "anchor")
    ]
    floor.write_text("\n".join(lines) + "\n")
    j.close()
    return Table(path, tmp_path / "audit.key", floor, rounds)


def verify(t: Table, *more: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(t.args(*more))
    out = capsys.readouterr()
    return rc, out.out + out.err


def attacker(path: Path) -> sqlite3.Connection:
    """Someone with write access to the file: the append-only triggers dropped."""
    db = sqlite3.connect(path, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    return db


def first_line(out: str) -> str:
    return out.splitlines()[0]


# -- untouched ------------------------------------------------------------------------


def test_an_untouched_journal_passes_with_every_anchor(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = verify(table, capsys=capsys)
    assert rc == 0, out
    assert out.startswith("audit OK") and "10 rounds" in out and "30 bets" in out
    last = table.rounds[-1]["chain"]
    rc, out = verify(table, "--anchor", f"{last['seq']}:{last['head']}",
                     "--anchors", str(table.floor), capsys=capsys)  # fmt: skip
    assert rc == 0, out
    assert "10 floor round(s) match" in out and "31 floor anchor(s) hold" in out
    rc, out = verify(table, "--json", capsys=capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["ok"] and doc["problems"] == [] and doc["checked"]["bets"] == 30


def test_the_real_entry_point_passes_then_fails(table: Table) -> None:
    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "firmware_host", *table.args()], capture_output=True, text=True
        )

    ok = run()
    assert ok.returncode == 0, ok.stdout + ok.stderr
    db = attacker(table.journal)
    db.execute("UPDATE bets SET stake = 1 WHERE bet_id = 'r2'")
    bad = run()
    assert bad.returncode == 1 and "bet r2" in bad.stdout and "stake is 1" in bad.stdout


# -- the tampering kinds ------------------------------------------------------------


def test_payout_raised_by_mop_100000_is_named(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    won = next(r for r in table.rounds if r["status"] == "settled" and r["outcome"]["number"] == 17)
    rid = won["round_id"]
    db = attacker(table.journal)
    (text,) = db.execute("SELECT payload FROM settlements WHERE round_id = ?", (rid,)).fetchone()
    payload = json.loads(text)
    straight = next(b for b in payload["bets"] if b["bet_type"] == "straight")
    assert straight["payout"] == 35 * straight["stake"]  # the engine's own figure
    straight["payout"] += MOP_100K
    straight["net"] += MOP_100K
    payload["totals"]["payout"] += MOP_100K
    payload["totals"]["net"] += MOP_100K
    payload["totals"]["house_net"] -= MOP_100K
    forged = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    db.execute("UPDATE settlements SET payload = ? WHERE round_id = ?", (forged, rid))
    db.execute("UPDATE outbox_entries SET payload = ? WHERE round_id = ? AND topic = 'rounds'",
               (forged.encode(), rid))  # fmt: skip
    rc, out = verify(table, capsys=capsys)
    assert rc == 1
    line = first_line(out)
    assert f"settlement of round {rid}" in line and "SHA-256" in line, line
    assert f"totals.payout is {won['totals']['payout'] + MOP_100K}" in line, line


def test_stake_multiplied_by_100_is_named(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    rid = table.rounds[2]["round_id"]
    db = attacker(table.journal)
    db.execute("UPDATE bets SET stake = stake * 100 WHERE round_id = ? AND bet_id = 'r2'", (rid,))
    rc, out = verify(table, capsys=capsys)
    assert rc == 1
    line = first_line(out)
    assert f"round {rid}, bet r2" in line and "stake is 5000000 in the table" in line, line
    assert "the chain recorded 50000" in line and "bet_placed" in line, line


def test_outcome_changed_is_named(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    rnd = table.rounds[3]
    assert rnd["outcome"]["number"] == 17
    db = attacker(table.journal)
    db.execute("UPDATE rounds SET outcome = ? WHERE round_id = ?",
               (json.dumps({"number": 4, "colour": "black"}), rnd["round_id"]))  # fmt: skip
    rc, out = verify(table, capsys=capsys)
    assert rc == 1
    line = first_line(out)
    assert f"rounds row {rnd['round_id']}" in line and "outcome is" in line, line
    assert '"number":17' in line and "round_settled" in line, line


def _delete_round(db: sqlite3.Connection, rid: str) -> None:
    for tbl in ("bets", "settlements", "outbox_entries", "raw_frames", "rounds"):
        db.execute(f"DELETE FROM {tbl} WHERE round_id = ?", (rid,))


def test_last_round_deleted_is_named(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    last = table.rounds[-1]
    _delete_round(attacker(table.journal), last["round_id"])
    rc, out = verify(table, capsys=capsys)
    assert rc == 1
    line = first_line(out)
    assert f"round {last['round_id']} (seq {last['seq']})" in line, line
    assert "missing from the journal (deleted?)" in line, line


def _delete_tail(db: sqlite3.Connection, from_id: int) -> None:
    db.execute("DELETE FROM events WHERE id >= ?", (from_id,))
    db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", (from_id - 1,))


def test_last_round_deleted_with_its_chain_tail_is_caught_by_the_floors_copy(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    """Deleting the round and every chain entry from its opening on leaves a shorter
    chain that is consistent: only an anchor held off the Pi can tell."""
    last = table.rounds[-1]
    db = attacker(table.journal)
    (opened,) = db.execute(
        "SELECT id FROM events WHERE kind = 'round_opened' AND data LIKE ?",
        (f"%{last['round_id']}%",),
    ).fetchone()
    _delete_round(db, last["round_id"])
    _delete_tail(db, opened)
    rc, out = verify(table, capsys=capsys)
    assert rc == 0, out  # the chain alone cannot see its own tail cut off...
    rc, out = verify(table, "--anchors", str(table.floor), capsys=capsys)
    assert rc == 1
    line = first_line(out)  # ...the floor's copy can
    assert f"chain entries after {opened - 1}" in line and "the floor holds entry" in line, line
    assert f"round {last['round_id']} (seq {last['seq']}" in out  # named among the rest
    assert "the floor holds this round; the journal does not" in out
    rc, out = verify(table, "--anchor", f"{last['chain']['seq']}:{last['chain']['head']}",
                     capsys=capsys)  # fmt: skip
    assert rc == 1 and f"chain entries after {opened - 1}" in first_line(out)


def test_tail_of_ten_events_deleted_is_named(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    db = attacker(table.journal)
    (head,) = db.execute("SELECT MAX(id) FROM events").fetchone()
    _delete_tail(db, head - 9)
    # The rows those entries described are still there: the first one is named.
    rc, out = verify(table, capsys=capsys)
    assert rc == 1
    line = first_line(out)
    ninth = table.rounds[8]
    assert f"rounds row {ninth['round_id']} (seq 9)" in line, line
    assert "the chain records no settlement or void for it" in line, line
    # With the floor's anchor, the cut itself is named too.
    last = table.rounds[-1]["chain"]
    rc, out = verify(table, "--anchor", f"{last['seq']}:{last['head']}", capsys=capsys)
    assert rc == 1
    assert f"chain entries after {head - 10}: the journal's chain ends at entry {head - 10}" in out
    assert f"entries {head - 9}..{last['seq']} missing" in out, out


def _recompute_unkeyed(db: sqlite3.Connection, from_id: int) -> None:
    """The old, documented formula: sha256(prev_hash + canonical row), no key."""
    row = db.execute("SELECT hash FROM events WHERE id = ?", (from_id - 1,)).fetchone()
    prev = row[0] if row else "0" * 64
    for eid, at, kind, data in db.execute(
        "SELECT id, at, kind, data FROM events WHERE id >= ? ORDER BY id", (from_id,)
    ).fetchall():
        content = canonical_json({"id": eid, "at": at, "kind": kind, "data": json.loads(data)})
        h = hashlib.sha256((prev + content).encode()).hexdigest()
        db.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE id = ?", (prev, h, eid))
        prev = h


def test_every_void_reason_rewritten_with_the_chain_recomputed_is_named(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    voids = [r for r in table.rounds if r["status"] == "void"]
    assert len(voids) == 2
    db = attacker(table.journal)
    new = "dealer error (60/2004 art. 2)"
    first_void_entry = None
    for r in voids:
        rid = r["round_id"]
        db.execute("UPDATE rounds SET void_reason = ? WHERE round_id = ?", (new, rid))
        (text,) = db.execute(
            "SELECT payload FROM settlements WHERE round_id = ?", (rid,)
        ).fetchone()
        payload = json.loads(text)
        payload["void_reason"] = new
        forged = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        db.execute("UPDATE settlements SET payload = ? WHERE round_id = ?", (forged, rid))
        for eid, kind, data in db.execute(
            "SELECT id, kind, data FROM events WHERE data LIKE ?", (f"%{rid}%",)
        ).fetchall():
            doc = json.loads(data)
            if kind == "round_void":
                doc["reason"] = new
                doc["payload_sha256"] = hashlib.sha256(
                    canonical_json({k: v for k, v in payload.items() if k != "chain"}).encode()
                ).hexdigest()
                db.execute("UPDATE events SET data = ? WHERE id = ?", (canonical_json(doc), eid))
                first_void_entry = first_void_entry or eid
    assert first_void_entry is not None
    _recompute_unkeyed(db, first_void_entry)
    rc, out = verify(table, capsys=capsys)
    assert rc == 1
    line = first_line(out)
    assert f"event log row {first_void_entry} (round_void)" in line, line
    assert "does not match its HMAC" in line, line


# -- the other ways a journal is rewritten -----------------------------------------------------


def test_void_reason_rewritten_in_the_rounds_table_alone_is_named(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    void = next(r for r in table.rounds if r["status"] == "void")
    attacker(table.journal).execute(
        "UPDATE rounds SET void_reason = 'player request' WHERE round_id = ?", (void["round_id"],)
    )
    rc, out = verify(table, capsys=capsys)
    assert rc == 1
    line = first_line(out)
    assert f"rounds row {void['round_id']}" in line and "void_reason" in line, line
    assert void["void_reason"] in line, line


def test_a_whole_unkeyed_chain_is_refused(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    db = attacker(table.journal)
    db.execute("DELETE FROM meta WHERE key = 'audit_key_id'")
    _recompute_unkeyed(db, 1)
    rc, out = verify(table, capsys=capsys)
    assert rc == 1
    assert "event log row 1 (chain_keyed)" in first_line(out), out


def test_a_bet_slipped_in_is_named(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    rid = table.rounds[5]["round_id"]
    attacker(table.journal).execute(
        "INSERT INTO bets (round_id, bet_id, seat, bet_type, selection, stake, status, placed_at) "
        "VALUES (?, 'late', 2, 'straight', '[17]', 200000, 'placed', '2026-01-01T00:00:00.000Z')",
        (rid,),
    )
    rc, out = verify(table, capsys=capsys)
    assert rc == 1 and f"round {rid}, bet late" in first_line(out) and "not in the chain" in out


def test_a_cleared_fault_behind_the_journals_back_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = AuditKey.create(tmp_path / "audit.key")
    with Journal(tmp_path / "j.sqlite3", audit_key=key) as j:
        j.faults.set_fault("JACKPOT_METER_MISMATCH", "pool 100 + overflow 0 != expected 90")
    db = attacker(tmp_path / "j.sqlite3")
    db.execute("UPDATE faults SET cleared_at = '2026-01-01T00:00:00.000Z', cleared_by = 'x'")
    rc = main(["audit", "verify", "--journal", str(tmp_path / "j.sqlite3"),
               "--key", str(tmp_path / "audit.key")])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 1 and "faults row 1 (JACKPOT_METER_MISMATCH)" in out and "cleared_at" in out


def test_a_floor_copy_that_differs_is_named(
    table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other way round: the journal is intact, the floor's copy of a round is not
    what the table published (or the floor holds a round the journal never had)."""
    lines = table.floor.read_text().splitlines()
    docs = [json.loads(x) for x in lines]
    i = next(n for n, d in enumerate(docs) if d.get("status") == "settled")
    docs[i]["totals"]["payout"] += 1
    table.floor.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    rc, out = verify(table, "--anchors", str(table.floor), capsys=capsys)
    assert rc == 1
    assert f"round {docs[i]['round_id']}" in first_line(out) and "first difference: totals" in out


# -- the key ------------------------------------------------------------------------------


def test_verify_needs_the_tables_own_key(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    other = AuditKey.create(table.key.parent / "other.key")
    rc = main(["audit", "verify", "--journal", str(table.journal), "--key", str(other.path)])
    out = capsys.readouterr().out
    assert rc == 1 and "event log row 1 (chain_keyed)" in out and other.key_id in out
    rc = main(["audit", "verify", "--journal", str(table.journal), "--key", str(table.key) + "x"])
    err = capsys.readouterr().err
    assert rc == 2 and "no audit key at" in err and "--key" in err


def test_init_key_creates_a_private_key_and_never_replaces_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "etc" / "audit.key"
    assert main(["audit", "init-key", "--key", str(path)]) == 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert len(bytes.fromhex(path.read_text().strip())) == 32
    key = AuditKey.load(path)
    assert key.key_id in capsys.readouterr().out
    before = path.read_bytes()
    assert main(["audit", "init-key", "--key", str(path)]) == 2
    assert "never replaced" in capsys.readouterr().err and path.read_bytes() == before
    os.chmod(path, 0o644)
    with pytest.raises(Exception, match="open to other users"):
        AuditKey.load(path)


def test_a_new_table_gets_its_key_an_existing_journal_without_one_is_refused(
    tmp_path: Path,
) -> None:
    from firmware_host.journal import AuditKeyError, JournalSettings

    settings = JournalSettings(path=str(tmp_path / "j.sqlite3"))
    with settings.open() as j:  # a new table: its first start is its install
        assert j.chain.key_id == AuditKey.load(tmp_path / "audit.key").key_id
    assert stat.S_IMODE(os.stat(tmp_path / "audit.key").st_mode) == 0o600
    (tmp_path / "audit.key").rename(tmp_path / "elsewhere.key")
    with pytest.raises(AuditKeyError) as exc:
        settings.open()
    assert exc.value.code == "AUDIT_KEY_MISSING"
    assert not (tmp_path / "audit.key").exists()  # never silently replaced


def test_tablectl_run_refuses_a_journal_without_its_key_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    config.write_text(
        'version = 1\n[table]\nid = "k-1"\ngame = "roulette"\npayable_unit = 100\n'
        '[devices.wheel]\ndriver = "cammegh-ss2"\nport = "socket://127.0.0.1:9"\n'
        '[auth]\nsignatures = false\n[mqtt]\nhost = "127.0.0.1"\nport = 9\n'
    )
    Journal(tmp_path / "journal.sqlite3", audit_key=AuditKey.create(tmp_path / "k")).close()
    run = subprocess.run(
        [sys.executable, "-m", "firmware_host", "run", "--config", str(config),
         "--state-dir", str(tmp_path), "--runtime-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 3, run.stderr  # the daemon's exit status for its journal
    bad = [ln for ln in run.stderr.splitlines() if "AUDIT_KEY_MISSING" in ln]
    assert len(bad) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "cannot start: AUDIT_KEY_MISSING: no audit key at" in bad[0]
    assert not (tmp_path / "audit.key").exists()  # never silently created for a journal
