"""Issue 18 item 2 and issue 28: the floor's records, on SQLite and on PostgreSQL
alike: each verified round once by round id and by (table, seq), duplicates dropped,
conflicts kept aside, what fails its check quarantined, the chain checked against the
table's stored neighbours, gaps found and closed (and asked no further than the table
announced), anchors checked in seq order, the registry, the release of a quarantined
round (``flooringest/store.py``)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from flooringest import anchor
from flooringest import messages as m
from flooringest.messages import Incoming, Quarantined, Round
from flooringest.store import Gap, Store, open_store

from .signing import Tables, head, round_doc, verified


@pytest.fixture
def tables() -> Tables:
    return Tables("T1", "T2")


def msg(tables: Tables, table: str, seq: int, **kw: Any) -> Incoming:
    return Incoming(table, tables.round(table, seq, **kw), 1000.0 + seq)


async def put(store: Store, tables: Tables, msgs: list[Incoming], worker: str = "w1") -> Any:
    return await store.ingest(verified(tables, msgs), worker)


async def test_each_round_is_stored_once_and_kept_byte_for_byte(
    db_url: str, tables: Tables
) -> None:
    store = await open_store(db_url)
    try:
        t = tables
        out = await put(store, t, [msg(t, "T1", 1), msg(t, "T1", 2), msg(t, "T2", 1)])
        assert len(out.stored) == 3 and out.duplicates == 0
        # Redelivered (alone, and twice within one batch): dropped, counted.
        out = await put(store, t, [msg(t, "T1", 2), msg(t, "T1", 2), msg(t, "T1", 3)], "w2")
        assert [r.seq for r in out.stored] == [3] and out.duplicates == 2
        rows = await store.rounds_of("T1")
        assert rows == [(s, t.round("T1", s).decode()) for s in (1, 2, 3)]
        lag = await store.lag()
        assert lag["rounds"] == 4 and lag["duplicates"] == 2 and lag["conflicts"] == 0
        assert lag["faults"] == [] and lag["quarantine_open"] == 0
    finally:
        await store.close()


async def test_two_different_signed_rounds_under_one_key_are_conflicts_kept_aside(
    db_url: str, tables: Tables
) -> None:
    store = await open_store(db_url)
    try:
        t = tables
        await put(store, t, [msg(t, "T1", 1)])
        # The table signed both (the table promises it never does): an incident.
        other_bytes = msg(t, "T1", 1, void_reason="rewritten")
        other_id = msg(t, "T1", 1, rid="T1-000001-ffffffff")
        out = await put(store, t, [other_bytes, other_id])
        assert out.stored == [] and out.conflicts == 2
        assert await store.rounds_of("T1") == [(1, t.round("T1", 1).decode())]
        lag = await store.lag()
        assert lag["conflicts"] == 2
        assert [(f["table_id"], f["code"], f["count"]) for f in lag["faults"]] == [
            ("T1", "CONFLICT", 2)
        ]
        # Within one batch too: the first stored, the other kept aside.
        out = await put(store, t, [msg(t, "T1", 7), msg(t, "T1", 7, void_reason="other")])
        assert len(out.stored) == 1 and out.conflicts == 1
        assert (await store.lag())["conflicts"] == 3
        # The same conflict again is not a new row.
        await put(store, t, [other_bytes])
        assert (await store.lag())["conflicts"] == 3
    finally:
        await store.close()


async def test_what_fails_its_check_is_quarantined_with_its_code(
    db_url: str, tables: Tables
) -> None:
    store = await open_store(db_url)
    try:
        t = tables
        real = t.round("T1", 2)
        forged = real.replace(b'"payout":2000', b'"payout":200000')
        bad = {
            m.NOT_JSON: Incoming("T1", b"\xff\xfe", 1.0),
            m.NOT_A_ROUND: Incoming("T1", t.sealed("T1", "rounds", {"seq": 1}), 1.0),
            m.UNSIGNED: Incoming("T1", json.dumps(round_doc("T1", 3)).encode(), 1.0),
            m.BAD_SIGNATURE: Incoming("T1", forged, 1.0),
            m.NOT_CANONICAL: Incoming("T1", json.dumps(json.loads(real)).encode(), 1.0),
            m.UNKNOWN_TABLE: Incoming("FAKE-99", t.round("T1", 4), 1.0),
        }
        items = verified(t, [*bad.values(), msg(t, "T1", 1)])
        assert [x.code for x in items[:-1]] == list(bad), items
        out = await store.ingest(items, "w1")
        assert len(out.stored) == 1 and out.rejects == 2
        assert {q.code for q in out.quarantined} == set(bad)
        # The same message again: one row, seen twice.
        await store.ingest(verified(t, [bad[m.BAD_SIGNATURE]]), "w2")
        rows = {r["code"]: r for r in await store.quarantine.messages()}
        assert set(rows) == set(bad)
        assert rows[m.BAD_SIGNATURE]["seen"] == 2 and rows[m.BAD_SIGNATURE]["seq"] == 2
        assert rows[m.BAD_SIGNATURE]["payload"].encode() == forged
        assert rows[m.BAD_SIGNATURE]["complete"] and not rows[m.NOT_JSON]["complete"]
        lag = await store.lag()
        assert lag["rejects"] == 2 and lag["quarantine_open"] == 6
        assert lag["quarantined"][m.BAD_SIGNATURE] == 2
        faults = {(f["table_id"], f["code"]): f["count"] for f in lag["faults"]}
        assert faults[("FAKE-99", m.UNKNOWN_TABLE)] == 1 and faults[("T1", m.BAD_SIGNATURE)] == 1
        assert lag["rounds"] == 1 and "FAKE-99" not in lag["tables"]
    finally:
        await store.close()


async def test_a_message_with_a_nul_byte_is_kept_without_it(db_url: str, tables: Tables) -> None:
    """PostgreSQL's text refuses U+0000: a message holding one must not stop the batch."""
    store = await open_store(db_url)
    try:
        items = verified(tables, [Incoming("T1", b'{"a":"\x00"}', 1.0), msg(tables, "T1", 1)])
        out = await store.ingest(items, "w1")
        assert len(out.stored) == 1 and len(out.quarantined) == 1
        (row,) = await store.quarantine.messages()
        assert "\x00" not in row["payload"] and not row["complete"]
    finally:
        await store.close()


async def test_a_chain_that_does_not_advance_is_quarantined_at_ingest(
    db_url: str, tables: Tables
) -> None:
    store = await open_store(db_url)
    try:
        t = tables
        await put(store, t, [msg(t, "T1", s) for s in (1, 2, 3)])  # chain 10, 20, 30
        back = msg(t, "T1", 4, chain={"seq": 25, "head": head(4)})  # behind round 3's
        out = await put(store, t, [back])
        assert out.stored == [] and [q.code for q in out.quarantined] == [m.CHAIN_NOT_ADVANCING]
        assert "not beyond 30" in out.quarantined[0].message
        # Before a stored round: its chain must be below that round's.
        await put(store, t, [msg(t, "T1", 9)])  # chain 90
        out = await put(store, t, [msg(t, "T1", 8, chain={"seq": 95, "head": head(8)})])
        assert [q.code for q in out.quarantined] == [m.CHAIN_NOT_ADVANCING]
        # Within one batch: checked against the rounds of the batch before it.
        out = await put(
            store,
            t,
            [msg(t, "T2", 1), msg(t, "T2", 2, chain={"seq": 5, "head": head(2)})],
        )
        assert [r.seq for r in out.stored] == [1] and out.fate and len(out.quarantined) == 1
        # A redelivery of a stored round is a duplicate, whatever its neighbours now.
        out = await put(store, t, [msg(t, "T1", 3)])
        assert out.duplicates == 1 and out.quarantined == []
        # A round that advances is stored.
        out = await put(store, t, [msg(t, "T1", 5)])
        assert [r.seq for r in out.stored] == [5]
        lag = await store.lag()
        assert {(f["table_id"], f["code"], f["count"]) for f in lag["faults"]} == {
            ("T1", m.CHAIN_NOT_ADVANCING, 2),
            ("T2", m.CHAIN_NOT_ADVANCING, 1),
        }
    finally:
        await store.close()


async def test_gaps_are_found_after_the_grace_and_closed_when_filled(
    db_url: str, tables: Tables
) -> None:
    store = await open_store(db_url)
    try:
        t = tables
        await put(store, t, [msg(t, "T1", s) for s in (5, 6, 9, 12)])
        gaps, filled = await store.duties.scan(grace_s=3600)
        assert gaps == [] and filled == 0  # within the grace: maybe in another worker's batch
        lag = await store.lag()
        tl = lag["tables"]["T1"]
        assert (tl["first_seq"], tl["contiguous_seq"], tl["last_seq"]) == (5, 6, 12)
        assert [(g["from_seq"], g["to_seq"]) for g in tl["gaps"]] == [(7, 8), (10, 11)]
        gaps, _ = await store.duties.scan(grace_s=0)
        assert [(g.from_seq, g.to_seq) for g in gaps] == [(7, 8), (10, 11)]
        due = await store.duties.claim_replays(gaps, retry_s=3600, announced={"T1": 12})
        assert due == gaps
        assert await store.duties.claim_replays(gaps, retry_s=3600, announced={"T1": 12}) == []
        await put(store, t, [msg(t, "T1", s) for s in (7, 8, 10)], "w2")
        gaps, filled = await store.duties.scan(grace_s=0)
        assert [(g.from_seq, g.to_seq) for g in gaps] == [(11, 11)] and filled >= 1
        await put(store, t, [msg(t, "T1", 11)], "w2")
        gaps, _ = await store.duties.scan(grace_s=0)
        lag = await store.lag()
        assert gaps == [] and lag["gaps_open"] == 0
        assert lag["tables"]["T1"]["contiguous_seq"] == 12
    finally:
        await store.close()


async def test_a_replay_is_never_asked_beyond_what_the_table_announced(
    db_url: str, tables: Tables
) -> None:
    store = await open_store(db_url)
    try:
        gaps = [Gap("T1", 620, 999999998, time.time() - 10), Gap("T2", 5, 9, time.time() - 10)]
        for g in gaps:
            await store.db.execute(
                "INSERT INTO floor_gaps (table_id, from_seq, to_seq, found_at) VALUES (?, ?, ?, ?)",
                g.table_id, g.from_seq, g.to_seq, g.found_at,
            )  # fmt: skip
        # Nothing announced: nothing asked. T2 announced 7: asked up to 7 only.
        due = await store.duties.claim_replays(gaps, 0, announced={"T2": 7})
        assert [(g.table_id, g.from_seq, g.to_seq) for g in due] == [("T2", 5, 7)]
        # T1 announced 700 (its anchor): asked up to 700, not to 999999998.
        due = await store.duties.claim_replays(gaps, 0, announced={"T1": 700, "T2": 7})
        assert ("T1", 620, 700) in [(g.table_id, g.from_seq, g.to_seq) for g in due]
        # The table answers its newest round is 1: that gap is not asked again.
        await store.tables.save_answer("T1", 1)
        due = await store.duties.claim_replays(gaps, 0, announced={"T1": 700, "T2": 7})
        assert [g.table_id for g in due] == ["T2"]
        said = await store.tables.announced_all()
        assert said["T1"][0] == 1  # what the table said (the worker keeps its own 700)
        assert said["T1"][2] == 1
    finally:
        await store.close()


async def force(store: Store, tables: Tables, msgs: list[Incoming]) -> None:
    """Rounds stored past the check at ingest, as two workers storing neighbours at
    the same instant would (neither sees the other's)."""
    for r in verified(tables, msgs):
        assert isinstance(r, Round)
        # a round stored is its key (floor_round_keys) and its payload (floor_rounds)
        await store.db.execute(
            "INSERT INTO floor_round_keys (round_id, table_id, seq, sha256, chain_seq, "
            "chain_head, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            r.round_id, r.table_id, r.seq, r.sha256, r.chain.seq if r.chain else None,
            r.chain.head if r.chain else None, r.received_at,
        )  # fmt: skip
        await store.db.execute(
            "INSERT INTO floor_rounds (round_id, table_id, seq, status, payload, sha256, "
            "chain_seq, chain_head, received_at, committed_at, worker) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            r.round_id, r.table_id, r.seq, r.status, r.text, r.sha256,
            r.chain.seq if r.chain else None, r.chain.head if r.chain else None,
            r.received_at, r.received_at, "w9",
        )  # fmt: skip


async def test_anchors_are_checked_in_seq_order(db_url: str, tables: Tables) -> None:
    """The duties' anchor check, the second line behind the check at ingest (two
    workers storing neighbours at once see neither)."""
    store = await open_store(db_url)
    try:
        t = tables
        ok = [msg(t, "T1", s) for s in (1, 2, 3)]
        back = msg(t, "T1", 4, chain={"seq": 15, "head": head(4)})  # before round 3's 30
        bad = msg(t, "T1", 5, chain={"seq": 50, "head": "XYZ"})
        dropped = msg(t, "T1", 6, chain=None)
        old = [msg(t, "T2", s, chain=None) for s in (1, 2)]  # a table before issue 15
        # Arrival out of order: round 3 last; nothing is checked beyond a gap.
        await put(store, t, [*ok[:2], bad, dropped, *old])
        await force(store, t, [back])
        await store.duties.scan(grace_s=0)
        assert await store.duties.verify_anchors() == 4  # T1 1-2, T2 1-2
        await force(store, t, [ok[2]])
        await store.duties.scan(grace_s=0)
        assert await store.duties.verify_anchors() == 4  # T1 3-6
        faults = await store.duties.anchor_faults()
        assert [(f["seq"], f["code"]) for f in faults] == [
            (4, anchor.NOT_ADVANCING),
            (5, anchor.MALFORMED),
            (6, anchor.DROPPED),
        ]
        lag = await store.lag()
        # The chain as the table now has it: one fault where it went back, not one per
        # round after it.
        assert lag["tables"]["T1"]["anchor"] == f"15:{head(4)}"
        assert lag["tables"]["T2"]["anchor"] is None and lag["tables"]["T2"]["without_chain"] == 2
        assert lag["anchor_faults"] == 3 and lag["faults_open"] == 3
    finally:
        await store.close()


async def test_the_lease_goes_to_one_worker_until_it_runs_out(db_url: str) -> None:
    a = await open_store(db_url)
    b = await open_store(db_url)  # a second worker's connection (schema init raced)
    try:
        assert await a.duties.take_lease("w1", 30)
        assert not await b.duties.take_lease("w2", 30)
        assert await a.duties.take_lease("w1", -1)  # renewed, and expired at once
        assert await b.duties.take_lease("w2", 30)
    finally:
        await a.close()
        await b.close()


def test_anchor_check_by_itself() -> None:
    p1 = anchor.ChainPoint(7, head(1))
    assert anchor.check(None, {"chain": {"seq": 7, "head": head(1)}}) == anchor.Verdict(
        anchor.OK, p1
    )
    assert anchor.check(p1, {"chain": {"seq": 7, "head": head(2)}}).code == anchor.NOT_ADVANCING
    assert anchor.check(p1, {"chain": {"seq": 8, "head": head(2)}}).code == anchor.OK
    assert anchor.check(None, {}).code == anchor.ABSENT
    assert anchor.check(p1, {}).code == anchor.DROPPED
    for chain in (
        {"seq": True, "head": head(1)},
        {"seq": 1},
        {"seq": 1, "head": head(1).upper()},
        [1],
    ):
        assert anchor.check(None, {"chain": chain}).code == anchor.MALFORMED, chain
    assert p1.text() == f"7:{head(1)}"


async def test_a_round_lost_among_the_live_ones_is_asked_while_the_backlog_still_comes(
    db_url: str, tables: Tables
) -> None:
    """Issue 36: the table paces rounds 4-20 (its ``state``: ``backlog.to_seq`` 20) and
    publishes 21 on at once; 21-22 were lost on the way (a restarted mosquitto drops
    what reaches it for a shared subscription before the subscriber is back). The gap
    4-22 is cut at 20: 21-22 are asked for after the grace, while 5-20, whose lower
    end moves with each backlog round stored, is not. Without the cut the whole gap
    moves and 21-22 wait for the backlog."""
    store = await open_store(db_url)
    try:
        t = tables
        await put(store, t, [msg(t, "T1", s) for s in (1, 2, 3, 23, 24)])
        await put(store, t, [msg(t, "T2", s) for s in (1, 2, 3, 23, 24)])
        paced = {"T1": 20, "T2": 20}
        gaps, _ = await store.duties.scan(grace_s=0.5, paced=paced)
        assert gaps == []  # within the grace
        tl = (await store.lag())["tables"]["T1"]
        assert [(g["from_seq"], g["to_seq"]) for g in tl["gaps"]] == [(4, 20), (21, 22)]
        for s in range(4, 10):  # the backlog comes, a round at a time
            time.sleep(0.1)
            await put(store, t, [msg(t, "T1", s), msg(t, "T2", s)])
            await store.duties.scan(grace_s=0.5, paced={"T1": 20})  # T2: not said
        gaps, _ = await store.duties.scan(grace_s=0.5, paced={"T1": 20})
        assert [(g.table_id, g.from_seq, g.to_seq) for g in gaps] == [("T1", 21, 22)]
        due = await store.duties.claim_replays(gaps, retry_s=3600, announced={"T1": 24})
        assert [(g.from_seq, g.to_seq) for g in due] == [(21, 22)]
        # The lost rounds come back (the replay); the backlog goes on below.
        await put(store, t, [msg(t, "T1", 21), msg(t, "T1", 22), msg(t, "T1", 10)])
        gaps, filled = await store.duties.scan(grace_s=0, paced={"T1": 20})
        assert [(g.table_id, g.from_seq, g.to_seq) for g in gaps] == [
            ("T1", 11, 20), ("T2", 10, 22)
        ]  # fmt: skip
        assert filled >= 1
        # A backlog said to end above every gap, or below it, cuts nothing.
        gaps, _ = await store.duties.scan(grace_s=0, paced={"T1": 99, "T2": 3})
        assert [(g.from_seq, g.to_seq) for g in gaps] == [(11, 20), (10, 22)]
    finally:
        await store.close()


async def test_a_lost_tail_is_a_gap_once_the_table_announces_its_last_round(
    db_url: str, tables: Tables
) -> None:
    # No later round will ever show rounds 4-5 missing: what the table announced
    # finished (its anchor, its state) does.
    store = await open_store(db_url)
    try:
        await put(store, tables, [msg(tables, "T1", s) for s in (1, 2, 3)])
        gaps, _ = await store.duties.scan(grace_s=0, finished={"T1": 3})
        assert gaps == []
        gaps, _ = await store.duties.scan(grace_s=0, finished={"T1": 5})
        assert [(g.table_id, g.from_seq, g.to_seq) for g in gaps] == [("T1", 4, 5)]
        assert (await store.lag())["tables"]["T1"]["gaps"][0]["to_seq"] == 5
        await put(store, tables, [msg(tables, "T1", s) for s in (4, 5)])
        gaps, filled = await store.duties.scan(grace_s=0, finished={"T1": 5})
        assert gaps == [] and filled == 1 and (await store.lag())["gaps_open"] == 0
        # The table answered its newest round is 3: the tail it announced is closed.
        gaps, _ = await store.duties.scan(grace_s=0, finished={"T1": 7})
        assert [(g.from_seq, g.to_seq) for g in gaps] == [(6, 7)]
        gaps, _ = await store.duties.scan(grace_s=0, finished={"T1": 5})
        assert gaps == []
    finally:
        await store.close()


async def test_the_registry_is_imported_and_read_back(db_url: str, tmp_path: Any) -> None:
    from flooringest.registry import load_file

    t = Tables("MO-R-07", "MO-B-01")
    store = await open_store(db_url)
    try:
        assert len(await store.tables.load_registry()) == 0
        reg = load_file(t.write(tmp_path / "a"))
        assert await store.tables.import_registry(reg) == {
            "tables": 2, "added": 2, "changed": 0, "removed": 0
        }  # fmt: skip
        # The same again: nothing changes (the digest).
        assert (await store.tables.import_registry(reg))["added"] == 0
        back = await store.tables.load_registry()
        assert back.digest == reg.digest and set(back.tables) == {"MO-R-07", "MO-B-01"}
        # A table removed (revoked), a key rotated (two keys).
        t2 = Tables("MO-R-07")
        t2.keys["MO-R-07"] = t.keys["MO-R-07"]
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        from flooringest.registry import Registry

        new = Ed25519PrivateKey.generate()
        rotated = Registry([t2.entry("MO-R-07", new)])
        assert await store.tables.import_registry(rotated) == {
            "tables": 1, "added": 0, "changed": 1, "removed": 1
        }  # fmt: skip
        back = await store.tables.load_registry()
        assert len(back.keys("MO-R-07") or ()) == 2 and back.keys("MO-B-01") is None
        rows = await store.tables.registry_rows()
        assert [r["table_id"] for r in rows] == ["MO-R-07"] and len(rows[0]["key_ids"]) == 2
    finally:
        await store.close()


async def test_a_person_releases_a_quarantined_round_into_a_free_slot(
    db_url: str, tables: Tables
) -> None:
    store = await open_store(db_url)
    try:
        t = tables
        await put(store, t, [msg(t, "T1", s) for s in (1, 2)])
        back = msg(t, "T1", 3, chain={"seq": 5, "head": head(3)})  # journal restored
        (q,) = (await put(store, t, [back])).quarantined
        assert q.code == m.CHAIN_NOT_ADVANCING
        (r,) = [x for x in verified(t, [back]) if isinstance(x, Round)]
        assert await store.quarantine.release_round(r, q.sha256, "tech-4", "reconciled") is None
        assert [s for s, _ in await store.rounds_of("T1")] == [1, 2, 3]
        (row,) = await store.quarantine.messages(open_only=False)
        assert row["released_by"] == "tech-4" and row["release_reason"] == "reconciled"
        assert (await store.lag())["faults"] == []
        # Once only; and never into a taken slot.
        assert "released already" in str(await store.quarantine.release_round(r, q.sha256, "x", "y"))
        other = msg(t, "T1", 2, rid="T1-000002-eeeeeeee", chain={"seq": 21, "head": head(2)})
        (q2,) = (await put(store, t, [other])).quarantined
        (r2,) = [x for x in verified(t, [other]) if isinstance(x, Round)]
        assert "not free" in str(await store.quarantine.release_round(r2, q2.sha256, "x", "y"))
    finally:
        await store.close()


async def test_records_follow_the_highest_stored_round(db_url: str, tables: Tables) -> None:
    store = await open_store(db_url)
    try:
        t = tables
        await put(store, t, [msg(t, "T1", s) for s in (1, 2, 4)] + [msg(t, "T2", 1, chain=None)])
        await store.duties.scan(grace_s=0)
        rows = await store.records({})
        assert sorted(rows) == [
            ("T1", 4, "T1-000004-abcd1234", 40, head(4)),
            ("T2", 1, "T2-000001-abcd1234", None, None),
        ]
        assert await store.records({"T1": 4, "T2": 1}) == []
    finally:
        await store.close()


def test_a_quarantined_message_names_its_sha256() -> None:
    q = Quarantined("rounds", "T1", b"x", m.NOT_JSON, "no", 1.0)
    import hashlib

    assert q.sha256 == hashlib.sha256(b"x").hexdigest()
