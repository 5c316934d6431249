"""Issue 18 item 2: the floor's records, on SQLite and on PostgreSQL alike: each round
once by round id and by (table, seq), duplicates dropped, conflicts kept aside,
gaps found and closed, anchors checked in seq order (``flooringest/store.py``)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flooringest import anchor
from flooringest.store import Incoming, open_store


def head(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def payload(
    table: str, seq: int, *, chain: Any = True, rid: str | None = None, **extra: Any
) -> bytes:
    doc: dict[str, Any] = {
        "schema_version": 2,
        "table_id": table,
        "round_id": rid or f"{table}-{seq:06d}-abcd1234",
        "seq": seq,
        "status": "settled",
        "bets": [],
        **extra,
    }
    if chain is True:
        doc["chain"] = {"seq": 10 * seq, "head": head(seq)}
    elif chain is not None:
        doc["chain"] = chain
    return json.dumps(doc, separators=(",", ":")).encode()


def msg(table: str, seq: int, **kw: Any) -> Incoming:
    return Incoming(table, payload(table, seq, **kw), 1000.0 + seq)


async def test_each_round_is_stored_once_and_kept_byte_for_byte(db_url: str) -> None:
    store = await open_store(db_url)
    try:
        out = await store.ingest([msg("T1", 1), msg("T1", 2), msg("T2", 1)], "rounds", "w1")
        assert len(out.stored) == 3 and out.duplicates == 0
        # Redelivered (alone, and twice within one batch): dropped, counted.
        out = await store.ingest([msg("T1", 2), msg("T1", 2), msg("T1", 3)], "rounds", "w2")
        assert [r.seq for r in out.stored] == [3] and out.duplicates == 2
        rows = await store.rounds_of("T1")
        assert rows == [(s, payload("T1", s).decode()) for s in (1, 2, 3)]
        lag = await store.lag()
        assert lag["rounds"] == 4 and lag["duplicates"] == 2 and lag["conflicts"] == 0
    finally:
        await store.close()


async def test_two_different_rounds_under_one_key_are_conflicts_kept_aside(db_url: str) -> None:
    store = await open_store(db_url)
    try:
        await store.ingest([msg("T1", 1)], "rounds", "w1")
        # Same round id, other bytes; another round id at the same (table, seq).
        other_bytes = msg("T1", 1, void_reason="rewritten")
        other_id = msg("T1", 1, rid="T1-000001-ffffffff")
        out = await store.ingest([other_bytes, other_id], "rounds", "w1")
        assert out.stored == [] and out.conflicts == 2
        assert await store.rounds_of("T1") == [(1, payload("T1", 1).decode())]
        assert (await store.lag())["conflicts"] == 2
        # Within one batch too: the first stored, the other kept aside.
        a, b = msg("T1", 7), msg("T1", 7, void_reason="other")
        out = await store.ingest([a, b], "rounds", "w1")
        assert len(out.stored) == 1 and out.conflicts == 1
        assert (await store.lag())["conflicts"] == 3
        # The same conflict again is not a new row.
        await store.ingest([other_bytes], "rounds", "w1")
        assert (await store.lag())["conflicts"] == 3
    finally:
        await store.close()


async def test_what_is_not_a_round_is_rejected_and_kept(db_url: str) -> None:
    store = await open_store(db_url)
    try:
        bad = [
            Incoming("T1", b"\xff\xfe", 1.0),
            Incoming("T1", b"[1]", 1.0),
            Incoming("T1", payload("T9", 1), 1.0),  # another table's round on T1's topic
            Incoming("T1", json.dumps({"round_id": "x", "table_id": "T1", "seq": 0}).encode(), 1.0),
        ]
        out = await store.ingest([*bad, msg("T1", 1)], "rounds", "w1")
        assert out.rejects == 4 and len(out.stored) == 1
        assert (await store.lag())["rejects"] == 4
    finally:
        await store.close()


async def test_gaps_are_found_after_the_grace_and_closed_when_filled(db_url: str) -> None:
    store = await open_store(db_url)
    try:
        await store.ingest([msg("T1", s) for s in (5, 6, 9, 12)], "rounds", "w1")
        gaps, filled = await store.scan(grace_s=3600)
        assert gaps == [] and filled == 0  # within the grace: maybe in another worker's batch
        lag = await store.lag()
        t = lag["tables"]["T1"]
        assert (t["first_seq"], t["contiguous_seq"], t["last_seq"]) == (5, 6, 12)
        assert [(g["from_seq"], g["to_seq"]) for g in t["gaps"]] == [(7, 8), (10, 11)]
        gaps, _ = await store.scan(grace_s=0)
        assert [(g.from_seq, g.to_seq) for g in gaps] == [(7, 8), (10, 11)]
        due = await store.claim_replays(gaps, retry_s=3600)
        assert due == gaps
        assert await store.claim_replays(gaps, retry_s=3600) == []  # asked already
        await store.ingest([msg("T1", s) for s in (7, 8, 10)], "rounds", "w2")
        gaps, filled = await store.scan(grace_s=0)
        assert [(g.from_seq, g.to_seq) for g in gaps] == [(11, 11)] and filled >= 1
        await store.ingest([msg("T1", 11)], "rounds", "w2")
        gaps, _ = await store.scan(grace_s=0)
        lag = await store.lag()
        assert gaps == [] and lag["gaps_open"] == 0
        assert lag["tables"]["T1"]["contiguous_seq"] == 12
    finally:
        await store.close()


async def test_anchors_are_checked_in_seq_order(db_url: str) -> None:
    store = await open_store(db_url)
    try:
        ok = [msg("T1", s) for s in (1, 2, 3)]
        back = msg("T1", 4, chain={"seq": 15, "head": head(4)})  # before round 3's 30
        bad = msg("T1", 5, chain={"seq": 50, "head": "XYZ"})
        dropped = msg("T1", 6, chain=None)
        old = [msg("T2", s, chain=None) for s in (1, 2)]  # a table before issue 15
        # Arrival out of order: round 3 last; nothing is checked beyond a gap.
        await store.ingest([*ok[:2], back, bad, dropped, *old], "rounds", "w1")
        await store.scan(grace_s=0)
        assert await store.verify_anchors() == 4  # T1 1-2, T2 1-2
        await store.ingest([ok[2]], "rounds", "w2")
        await store.scan(grace_s=0)
        assert await store.verify_anchors() == 4  # T1 3-6
        faults = await store.anchor_faults()
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
        assert lag["anchor_faults"] == 3
    finally:
        await store.close()


async def test_the_lease_goes_to_one_worker_until_it_runs_out(db_url: str) -> None:
    a = await open_store(db_url)
    b = await open_store(db_url)  # a second worker's connection (schema init raced)
    try:
        assert await a.take_lease("w1", 30)
        assert not await b.take_lease("w2", 30)
        assert await a.take_lease("w1", -1)  # renewed, and expired at once
        assert await b.take_lease("w2", 30)
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


async def test_a_lost_tail_is_a_gap_once_the_table_announces_its_last_round(db_url: str) -> None:
    # No later round will ever show rounds 4-5 missing: the table's retained state
    # (last_round_id while idle) does.
    store = await open_store(db_url)
    try:
        await store.ingest([msg("T1", s) for s in (1, 2, 3)], "rounds", "w1")
        gaps, _ = await store.scan(grace_s=0, announced={"T1": "T1-000003-abcd1234"})
        assert gaps == []
        gaps, _ = await store.scan(grace_s=0, announced={"T1": "T1-000005-abcd1234"})
        assert [(g.table_id, g.from_seq, g.to_seq) for g in gaps] == [("T1", 4, None)]
        assert (await store.lag())["tables"]["T1"]["gaps"][0]["to_seq"] is None
        await store.ingest([msg("T1", s) for s in (4, 5)], "rounds", "w1")
        gaps, filled = await store.scan(grace_s=0, announced={"T1": "T1-000005-abcd1234"})
        assert gaps == [] and filled == 1 and (await store.lag())["gaps_open"] == 0
    finally:
        await store.close()
