"""The journal: atomic round operations, idempotent bets, outbox order, retention,
jackpot two-step hits, latched faults, configuration, schema versions.

Crash atomicity (SIGKILL) is in ``test_journal_crash.py``; the hash-chained event
log in ``test_journal_chain.py``.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import pytest
from _mqtt_support import play_round, round_payload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.journal import (
    DB_SCHEMA_VERSION,
    BetConflict,
    BetNotFound,
    FaultNotFound,
    JackpotHit,
    JackpotHitConflict,
    Journal,
    JournalCorrupt,
    JournalError,
    JournalSettings,
    OutboxMessage,
    PhaseNotAllowed,
    RoundExists,
    RoundFinished,
    RoundInFlight,
    RoundNotFound,
)

RULES = {"regulation": "60/2004"}


def outbox_rows(j: Journal) -> list[tuple[Any, ...]]:
    return j.db.sql.execute(
        "SELECT id, topic, round_id, published_at FROM outbox ORDER BY id"
    ).fetchall()


# -- opening, pragmas, schema versions ------------------------------------------------


def test_opens_in_wal_mode_with_full_synchronous_commits(journal: Journal) -> None:
    assert journal.db.sql.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert journal.db.sql.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert journal.db.schema_version == DB_SCHEMA_VERSION
    assert journal.db.sql.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_reopening_keeps_data_and_does_not_migrate_again(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p) as j:
        rid = play_round(j)
    with Journal(p) as j:
        assert j.rounds.round(rid).status == "settled"
        assert j.db.schema_version == DB_SCHEMA_VERSION


def test_a_newer_journal_schema_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    Journal(p).close()
    db = sqlite3.connect(p)
    db.execute(f"PRAGMA user_version = {DB_SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(JournalCorrupt) as exc:
        Journal(p)
    assert exc.value.code == "JOURNAL_TOO_NEW"


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    p.write_bytes(b"this is not a database" * 200)
    with pytest.raises((JournalCorrupt, sqlite3.DatabaseError)):
        Journal(p)


def test_a_corrupted_page_fails_the_integrity_check(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p) as j:
        for _ in range(30):
            play_round(j, stakes=(100,) * 20)
        j.db.sql.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(p.read_bytes())
    page = 4096
    assert len(data) > 6 * page
    for n in range(2, 6):  # scribble over the headers of b-tree pages
        for i in range(n * page, n * page + 12):
            data[i] = 0xA5
    p.write_bytes(bytes(data))
    with pytest.raises((JournalCorrupt, sqlite3.DatabaseError)):
        Journal(p, integrity_check="full")


def test_readonly_journal_reads_but_refuses_writes(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p) as writer:
        rid = play_round(writer)
        ro = Journal(p, readonly=True)
        assert ro.rounds.round(rid).status == "settled"
        with pytest.raises(JournalError) as exc:
            ro.chain.append_event("power_up", {})
        assert exc.value.code == "JOURNAL_READONLY"
        ro.close()


# -- rounds -----------------------------------------------------------------------------


def test_open_round_assigns_increasing_seq_per_table(journal: Journal) -> None:
    seqs = []
    for _ in range(3):
        rid = play_round(journal, "t1")
        seqs.append(journal.rounds.round(rid).seq)
    other = journal.rounds.open_round("t2", "roulette", RULES)
    assert seqs == [1, 2, 3]
    assert other.seq == 1
    assert other.round_id.startswith("t2-000001-")


def test_a_second_round_cannot_open_while_one_is_in_flight(journal: Journal) -> None:
    journal.rounds.open_round("t1", "roulette", RULES)
    with pytest.raises(RoundInFlight):
        journal.rounds.open_round("t1", "roulette", RULES)
    journal.rounds.open_round("t1", "roulette", RULES, allow_concurrent=True)
    assert len(journal.rounds.in_flight("t1")) == 2


def test_round_ids_and_seqs_are_unique(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES, round_id="R1")
    with pytest.raises(RoundExists):
        journal.rounds.open_round("t1", "roulette", RULES, round_id="R1", allow_concurrent=True)
    with pytest.raises(RoundExists):
        journal.rounds.open_round("t1", "roulette", RULES, seq=r.seq, allow_concurrent=True)


def test_set_phase_records_first_entry_time_and_outcome(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    journal.rounds.set_phase(r.round_id, "closed")
    journal.rounds.set_phase(r.round_id, "open")  # a voided throw reopens betting (57/2004 art. 3 4))
    again = journal.rounds.set_phase(r.round_id, "closed")
    assert (
        again.timestamps["closed"] == journal.rounds.set_phase(r.round_id, "closed").timestamps["closed"]
    )
    res = journal.rounds.set_phase(r.round_id, "result", outcome=[1, 2, 3])
    assert res.outcome == [1, 2, 3] and res.phase == "result"
    assert set(res.timestamps) == {"open", "closed", "result"}
    with pytest.raises(ValueError):
        journal.rounds.set_phase(r.round_id, "settled")


def test_unknown_round_is_reported(journal: Journal) -> None:
    with pytest.raises(RoundNotFound):
        journal.rounds.round("nope")
    with pytest.raises(RoundNotFound):
        journal.rounds.settle_round("nope", 1, {})


def test_settle_commits_round_payload_and_outbox_entry_together(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    payload = round_payload(r, [100])
    outbox_id = journal.rounds.settle_round(r.round_id, 18, payload, {"pool": 123})
    rnd = journal.rounds.round(r.round_id)
    assert (rnd.status, rnd.phase, rnd.outcome) == ("settled", "settled", 18)
    assert rnd.finished_at is not None and rnd.timestamps["settled"] == rnd.finished_at
    stored = journal.rounds.settlement(r.round_id)
    assert isinstance(stored, dict) and stored.pop("signature")  # signed by the table
    assert stored == payload
    entry = journal.outbox.entry(outbox_id)
    assert entry is not None
    assert (entry.topic, entry.qos, entry.retain, entry.round_id) == (
        "rounds",
        1,
        False,
        r.round_id,
    )
    assert json.loads(entry.payload) == dict(
        payload, signature=json.loads(entry.payload)["signature"]
    )
    assert entry.payload.decode() == json.dumps(
        journal.rounds.settlement(r.round_id), separators=(",", ":")
    )
    assert journal.jackpot.state() == {"pool": 123}
    assert rnd.summary == {"bets": 1, "totals": payload["totals"], "jackpot": payload["jackpot"]}


def test_nothing_is_settled_twice(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    payload = round_payload(r, [100])
    journal.rounds.settle_round(r.round_id, 18, payload, {"pool": 1})
    before = (outbox_rows(journal), journal.rounds.settlement(r.round_id), journal.jackpot.state())
    other = dict(payload, outcome=0)
    with pytest.raises(RoundFinished) as exc:
        journal.rounds.settle_round(r.round_id, 0, other, {"pool": 2})
    assert exc.value.code == "ROUND_FINISHED"
    with pytest.raises(RoundFinished):
        journal.rounds.void_round(r.round_id, "late void", round_payload(r, [100], status="void"))
    assert (outbox_rows(journal), journal.rounds.settlement(r.round_id), journal.jackpot.state()) == before
    assert journal.rounds.round(r.round_id).outcome == 18


def test_a_voided_round_is_never_settled(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    journal.bets.place_bet(r.round_id, {"bet_id": "a", "bet_type": "red", "stake": 100})
    journal.rounds.void_round(
        r.round_id, "chip in the wheel (60/2004 art. 2)", round_payload(r, [100], status="void")
    )
    rnd = journal.rounds.round(r.round_id)
    assert (rnd.status, rnd.void_reason) == ("void", "chip in the wheel (60/2004 art. 2)")
    with pytest.raises(RoundFinished):
        journal.rounds.settle_round(r.round_id, 18, round_payload(r, [100]))
    assert [e.kind for e in journal.chain.events() if e.kind != "identity_key"] == [
        "round_opened",
        "bet_placed",
        "round_void",
    ]
    with pytest.raises(ValueError):
        journal.rounds.void_round(r.round_id, "", {})


def test_a_failure_inside_settle_rolls_everything_back(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    notified = []
    journal.outbox.add_listener(lambda: notified.append(1))
    bad_state = {"pool": {1, 2}}  # a set is not JSON: fails after the round row was updated
    with pytest.raises(TypeError):
        journal.rounds.settle_round(r.round_id, 18, round_payload(r, [100]), bad_state)
    rnd = journal.rounds.round(r.round_id)
    assert rnd.status is None and rnd.phase == "open"
    assert journal.rounds.settlement(r.round_id) is None
    # Only the opening's retained anchor is left: nothing of the failed settlement.
    assert [row[1] for row in outbox_rows(journal)] == ["anchor"] and notified == []
    journal.rounds.settle_round(r.round_id, 18, round_payload(r, [100]))  # and it can still settle
    assert notified == [1]


def test_payload_must_belong_to_the_round(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    with pytest.raises(ValueError):
        journal.rounds.settle_round(r.round_id, 18, dict(round_payload(r, [1]), round_id="other"))
    with pytest.raises(ValueError):
        journal.rounds.settle_round(r.round_id, 18, round_payload(r, [1], status="void"))
    assert journal.rounds.round(r.round_id).status is None


def test_in_flight_rounds_and_recorded_outcome_survive_reopen(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p) as j:
        play_round(j)
        r = j.rounds.open_round("t1", "sicbo", {"regulation": "57/2004"})
        j.bets.place_bet(r.round_id, {"bet_id": "x", "bet_type": "big", "stake": 500})
        j.rounds.set_phase(r.round_id, "result", outcome=[2, 3, 6])
    with Journal(p) as j:
        (rnd,) = j.rounds.in_flight()
        assert (rnd.round_id, rnd.phase, rnd.outcome) == (r.round_id, "result", [2, 3, 6])
        assert [b.bet_id for b in j.bets.bets(r.round_id)] == ["x"]


# -- bets --------------------------------------------------------------------------------


def test_place_bet_is_idempotent_by_bet_id(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    bet = {"bet_id": "b1", "seat": 3, "bet_type": "split", "selection": [17, 20], "stake": 500}
    first, created = journal.bets.place_bet(r.round_id, bet)
    again, created_again = journal.bets.place_bet(r.round_id, dict(bet))
    assert created and not created_again
    assert again == first
    with pytest.raises(BetConflict) as exc:
        journal.bets.place_bet(r.round_id, dict(bet, stake=600))
    assert exc.value.code == "BET_DUPLICATE_ID"
    with pytest.raises(BetConflict):
        journal.bets.place_bet(r.round_id, dict(bet, selection=[17, 18]))
    assert len(journal.bets.bets(r.round_id)) == 1


def test_selection_compared_canonically(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    journal.bets.place_bet(
        r.round_id, {"bet_id": "b", "bet_type": "x", "selection": {"a": 1, "b": 2}, "stake": 1}
    )
    _, created = journal.bets.place_bet(
        r.round_id, {"bet_id": "b", "bet_type": "x", "selection": {"b": 2, "a": 1}, "stake": 1}
    )
    assert not created


def test_bets_refused_outside_allowed_phases_and_after_finish(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    journal.rounds.set_phase(r.round_id, "closed")
    with pytest.raises(PhaseNotAllowed):
        journal.bets.place_bet(
            r.round_id, {"bet_id": "late", "bet_type": "red", "stake": 1}, phases=["open"]
        )
    journal.rounds.settle_round(r.round_id, 1, round_payload(r, []))
    with pytest.raises(RoundFinished):
        journal.bets.place_bet(r.round_id, {"bet_id": "late", "bet_type": "red", "stake": 1})


@pytest.mark.parametrize("stake", [0, -5, 1.5, True, "100"])
def test_journal_refuses_non_positive_or_non_integer_stakes(journal: Journal, stake: Any) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    with pytest.raises(ValueError):
        journal.bets.place_bet(r.round_id, {"bet_id": "b", "bet_type": "red", "stake": stake})


def test_cancel_bet_is_idempotent(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES)
    journal.bets.place_bet(r.round_id, {"bet_id": "a", "bet_type": "red", "stake": 100})
    rec, changed = journal.bets.cancel_bet(r.round_id, "a")
    assert changed and rec.status == "cancelled" and rec.cancelled_at
    rec2, changed2 = journal.bets.cancel_bet(r.round_id, "a")
    assert not changed2 and rec2 == rec
    with pytest.raises(BetNotFound):
        journal.bets.cancel_bet(r.round_id, "zz")
    assert journal.bets.bets(r.round_id, include_cancelled=False) == []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["place", "cancel"]),
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from([100, 200]),
        ),
        max_size=25,
    )
)
def test_bets_match_a_plain_model_under_any_sequence(tmp_path_factory: Any, ops: list[Any]) -> None:
    """Whatever the sequence of places and cancels, the journal agrees with a dict model."""
    j = Journal(tmp_path_factory.mktemp("j") / "j.sqlite3")
    r = j.rounds.open_round("t1", "roulette", RULES)
    model: dict[str, tuple[int, str]] = {}  # bet_id -> (stake, status)
    for op, bet_id, stake in ops:
        if op == "place":
            if bet_id in model and model[bet_id][0] != stake:
                with pytest.raises(BetConflict):
                    j.bets.place_bet(r.round_id, {"bet_id": bet_id, "bet_type": "red", "stake": stake})
            else:
                rec, created = j.bets.place_bet(
                    r.round_id, {"bet_id": bet_id, "bet_type": "red", "stake": stake}
                )
                assert created == (bet_id not in model)
                model.setdefault(bet_id, (stake, "placed"))
                assert rec.status == model[bet_id][1]
        elif bet_id not in model:
            with pytest.raises(BetNotFound):
                j.bets.cancel_bet(r.round_id, bet_id)
        else:
            _, changed = j.bets.cancel_bet(r.round_id, bet_id)
            assert changed == (model[bet_id][1] == "placed")
            model[bet_id] = (model[bet_id][0], "cancelled")
    assert {b.bet_id: (b.stake, b.status) for b in j.bets.bets(r.round_id)} == model
    j.close()


# -- outbox --------------------------------------------------------------------------------


def test_outbox_pending_is_in_commit_order_and_marks_are_idempotent(journal: Journal) -> None:
    r = journal.rounds.open_round("t1", "roulette", RULES, outbox=[OutboxMessage("events", {"e": "open"})])
    journal.rounds.set_phase(r.round_id, "closed", outbox=[OutboxMessage("events", {"e": "closed"})])
    journal.rounds.settle_round(r.round_id, 18, round_payload(r, [100]))
    journal.outbox.enqueue(OutboxMessage("jackpot", b"raw", qos=1, retain=True))
    # Each round's retained anchor goes before that round's own messages (anchor.py).
    everything = journal.outbox.pending()
    assert [e.topic for e in everything] == [
        "anchor",
        "events",
        "events",
        "anchor",
        "rounds",
        "jackpot",
    ]
    assert [e.id for e in everything] == sorted(e.id for e in everything)
    assert journal.outbox.mark_published([e.id for e in everything if e.topic == "anchor"]) == 2
    pending = journal.outbox.pending()
    assert [e.topic for e in pending] == ["events", "events", "rounds", "jackpot"]
    assert pending[3].retain and pending[3].payload == b"raw"
    ids = [e.id for e in pending]
    assert journal.outbox.mark_published([ids[2], ids[0]]) == 2
    assert journal.outbox.mark_published(ids[0]) == 0
    assert [e.id for e in journal.outbox.pending()] == [ids[1], ids[3]]
    assert [e.id for e in journal.outbox.pending(1)] == [ids[1]]
    assert [e.id for e in journal.outbox.pending(after_id=ids[1])] == [ids[3]]
    assert journal.outbox.pending_count() == 2


@pytest.mark.parametrize("topic", ["", "a/+/b", "#", "a//b", "/a", "a/", "$SYS/x"])
def test_outbox_refuses_unpublishable_topics(journal: Journal, topic: str) -> None:
    with pytest.raises(ValueError):
        journal.outbox.enqueue(OutboxMessage(topic, {}))
    assert journal.outbox.pending() == []


def test_listeners_run_only_after_commits_that_queue_messages(journal: Journal) -> None:
    calls = []
    journal.outbox.add_listener(lambda: calls.append("x"))
    r = journal.rounds.open_round("t1", "roulette", RULES)  # queues the round's anchor
    assert calls == ["x"]
    journal.bets.place_bet(r.round_id, {"bet_id": "a", "bet_type": "red", "stake": 1})
    assert calls == ["x"]
    journal.rounds.set_phase(r.round_id, "closed", outbox=[OutboxMessage("events", {})])
    assert calls == ["x", "x"]
    with pytest.raises(RoundFinished):
        journal.rounds.settle_round(r.round_id, 1, round_payload(r, [1]))
        journal.rounds.settle_round(r.round_id, 1, round_payload(r, [1]))
    assert calls == ["x", "x", "x"]


# -- raw frames, recall and retention -------------------------------------------------------


def test_recall_returns_rounds_newest_first_in_full(journal: Journal) -> None:
    rids = []
    for i in range(3):
        r = journal.rounds.open_round("t1", "roulette", RULES)
        journal.frames.add(r.round_id, "wheel", "rx", f"*5;{i}\r".encode())
        journal.frames.add_many([(r.round_id, "wheel", "tx", b"ACK")])
        journal.bets.place_bet(r.round_id, {"bet_id": "a", "bet_type": "red", "stake": 100})
        journal.rounds.settle_round(r.round_id, i, round_payload(r, [100]))
        rids.append(r.round_id)
    rec = journal.recall(2)
    assert [x.round.round_id for x in rec] == rids[::-1][:2]
    assert [f.data for f in rec[0].frames] == [b"*5;2\r", b"ACK"]
    assert [f.direction for f in rec[0].frames] == ["rx", "tx"]
    assert rec[0].settlement["round_id"] == rids[2]
    assert [b.bet_id for b in rec[0].bets] == ["a"]
    json.dumps([x.to_json() for x in rec])  # printable on the console


def test_retention_keeps_frames_of_last_n_rounds_and_summaries_forever(tmp_path: Path) -> None:
    j = Journal(
        tmp_path / "j.sqlite3", raw_frame_rounds=10, full_rounds=12, published_outbox_keep=5
    )
    rids = []
    for i in range(20):
        r = j.rounds.open_round("t1", "roulette", RULES)
        j.frames.add(r.round_id, "wheel", "rx", bytes([i]))
        j.bets.place_bet(r.round_id, {"bet_id": "a", "bet_type": "red", "stake": 100})
        j.rounds.settle_round(r.round_id, i, round_payload(r, [100]))
        j.outbox.mark_published([e.id for e in j.outbox.pending()])
        rids.append(r.round_id)
    live = j.rounds.open_round("t1", "roulette", RULES)
    j.frames.add(live.round_id, "wheel", "rx", b"live")
    play_round(j, "t2")  # one more finished round; the in-flight one is never pruned
    rec = {x.round.round_id: x for x in j.recall(30)}
    for k, rid in enumerate(reversed(rids)):  # k = 0 is the newest finished of the 20
        x = rec[rid]
        if k < 9:  # play_round above finished one more round: it is the 1st of the 10
            assert x.round.detail == "full" and len(x.frames) == 1 and x.settlement is not None
        elif k < 11:
            assert x.round.detail == "no_frames" and x.frames == () and x.settlement is not None
            assert len(x.bets) == 1
        else:
            assert x.round.detail == "summary" and x.frames == () and x.settlement is None
            assert x.bets == () and x.round.summary["totals"]["stakes"] == 100
    assert len(j.rounds.summary(100)) == 22
    assert [f.data for f in j.frames.of_round(live.round_id)] == [b"live"]
    published = j.db.sql.execute(
        "SELECT COUNT(*) FROM outbox WHERE published_at IS NOT NULL"
    ).fetchone()[0]
    assert published <= 6
    j.close()


def test_retention_window_has_a_floor_of_ten_rounds(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Journal(tmp_path / "j.sqlite3", raw_frame_rounds=9)


# -- jackpot ------------------------------------------------------------------------------------


def test_jackpot_hit_is_recorded_then_paid_and_neither_lost_nor_repeated(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    hit = JackpotHit("H1", 2_500_000, round_id=None, details={"seat": 3, "hand": "royal_flush"})
    with Journal(p) as j:
        r = j.rounds.open_round("t1", "stud-poker", {"regulation": "61/2004"})
        j.rounds.settle_round(r.round_id, {}, round_payload(r, []), {"pool": 100}, jackpot_hits=[hit])
    with Journal(p) as j:  # "crash" between the two steps: the hit is still there, unpaid
        (unpaid,) = j.jackpot.unpaid_hits()
        assert (unpaid.hit_id, unpaid.amount, unpaid.paid) == ("H1", 2_500_000, False)
        assert j.jackpot.state() == {"pool": 100}
        assert j.jackpot.record_hit(hit).recorded_at == unpaid.recorded_at  # idempotent
        with pytest.raises(JackpotHitConflict):
            j.jackpot.record_hit(JackpotHit("H1", 1))
        paid, changed = j.jackpot.confirm_payment(
            "H1", {"by": "cage"}, state={"pool": 100, "hits": 1}
        )
        assert changed and paid.paid and paid.payment == {"by": "cage"}
        _, changed = j.jackpot.confirm_payment("H1", {"by": "cage"})
        assert not changed
        assert j.jackpot.unpaid_hits() == []
        assert j.jackpot.state() == {"pool": 100, "hits": 1}
        assert [e.kind for e in j.chain.events()] == [
            "round_opened",
            "jackpot_hit",
            "jackpot_saved",
            "round_settled",  # the settlement
            "jackpot_saved",
            "jackpot_paid",  # the payment, with the state it leaves
        ]
        assert j.chain.verify().ok


def test_jackpot_history_keeps_the_last_hits_newest_first(journal: Journal) -> None:
    for i in range(30):
        journal.jackpot.record_hit(JackpotHit(f"H{i}", i))
    hits = journal.jackpot.hits(25)
    assert len(hits) == 25 and hits[0].hit_id == "H29" and hits[-1].hit_id == "H5"


# -- latched faults --------------------------------------------------------------------------------


def test_latched_faults_survive_restart_until_cleared(tmp_path: Path) -> None:
    p = tmp_path / "j.sqlite3"
    with Journal(p) as j:
        f, new = j.faults.set_fault("JACKPOT_METER_MISMATCH", "meter 100 != journal 90", {"meter": 100})
        assert new
        _, again = j.faults.set_fault("JACKPOT_METER_MISMATCH", "second report")
        assert not again
    with Journal(p) as j:
        assert [x.code for x in j.faults.active()] == ["JACKPOT_METER_MISMATCH"]
        cleared = j.faults.clear_fault("JACKPOT_METER_MISMATCH", by="tech-7", reason="meter recalibrated")
        assert cleared.cleared_by == "tech-7"
        with pytest.raises(FaultNotFound):
            j.faults.clear_fault("JACKPOT_METER_MISMATCH", by="x", reason="y")
        assert j.faults.active() == []
        ev = j.chain.events()
        assert [e.kind for e in ev] == ["fault_latched", "fault_cleared"]
        assert ev[1].data == {
            "code": "JACKPOT_METER_MISMATCH",
            "by": "tech-7",
            "reason": "meter recalibrated",
        }
    with Journal(p) as j:
        assert j.faults.active() == []
        j.faults.set_fault("JACKPOT_METER_MISMATCH", "again")  # can latch again after a clear
        assert len(j.faults.active()) == 1


# -- configuration ----------------------------------------------------------------------------------


def _doc(**journal: Any) -> dict[str, Any]:
    return {"version": 1, "table": {"id": "t1", "game": "roulette"}, "journal": journal}


def test_journal_section_is_validated_with_paths() -> None:
    cfg = validate_document(_doc(path="/tmp/x.sqlite3", raw_frame_rounds=25))
    js = cfg.section("journal")
    assert isinstance(js, JournalSettings)
    assert (js.path, js.raw_frame_rounds, js.full_rounds) == ("/tmp/x.sqlite3", 25, 10000)
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(_doc(raw_frame_rounds=5, bogus=1))
    text = str(exc.value)
    assert "journal.raw_frame_rounds" in text and "journal.bogus: unknown key" in text
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(_doc(raw_frame_rounds=50, full_rounds=20))
    assert "journal.full_rounds" in str(exc.value)


def test_settings_open_a_journal(tmp_path: Path) -> None:
    j = JournalSettings(path=str(tmp_path / "sub" / "j.sqlite3"), raw_frame_rounds=10).open()
    assert j.retention.windows.raw_frame_rounds == 10 and Path(j.path).exists()
    j.close()


# -- commit latency ----------------------------------------------------------------------------------


def test_commit_latency_is_measured_and_reported(
    journal: Journal, capsys: pytest.CaptureFixture[str]
) -> None:
    """settle_round with 100 bets: one fsync'd transaction. Printed for docs/performance.md."""
    wall = []
    for _ in range(60):
        r = journal.rounds.open_round("t1", "roulette", RULES)
        payload = round_payload(r, [100] * 100)
        t0 = time.perf_counter()
        journal.rounds.settle_round(r.round_id, 18, payload)
        wall.append(time.perf_counter() - t0)
    lat = journal.db.commit_latency()
    assert lat["settle_round"]["count"] == 60 and lat["open_round"]["count"] == 60
    p50 = statistics.median(wall) * 1e3
    with capsys.disabled():
        print(f"\n  journal commit latency (this machine): {json.dumps(lat)}")
        print(f"  settle_round with 100 bets, wall p50 {p50:.3f} ms, max {max(wall) * 1e3:.3f} ms")
    assert p50 < 50  # generous: catches an accidental O(rounds) scan, not a slow disk


def test_replay_rounds_requeues_the_same_bytes_in_seq_order(journal: Journal) -> None:
    rids = [play_round(journal) for _ in range(4)]
    first = {e.round_id: e.payload for e in journal.outbox.pending() if e.topic == "rounds"}
    journal.outbox.mark_published([e.id for e in journal.outbox.pending()])
    ids = journal.rounds.replay_rounds("t1", 2, 3)
    again = journal.outbox.pending()
    assert [e.id for e in again] == ids
    assert [e.round_id for e in again] == rids[1:3]
    assert [e.payload for e in again] == [first[r] for r in rids[1:3]]
    assert journal.rounds.replay_rounds("t1", 99) == []
    r = journal.rounds.open_round("t1", "roulette", RULES)  # in flight: nothing to replay
    assert journal.rounds.replay_rounds("t1", r.seq) == []


def _wait_checkpoints(j: Journal, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while j.retention.checkpointer is not None and j.retention.checkpointer.done < n:
        assert time.monotonic() < deadline, f"{n} checkpoints not done in {timeout} s"
        time.sleep(0.005)


@pytest.mark.parametrize("checkpoint", [True, False])
def test_a_finished_round_is_checkpointed_into_the_database_file_when_asked(
    tmp_path: Path, checkpoint: bool
) -> None:
    """Issue 20: the daemon checkpoints the WAL after finished rounds on a thread of
    its own (off the event loop), so SQLite's own checkpoint seldom falls inside a
    settlement's commit. The database file alone (the WAL ignored) then holds the round."""
    path = tmp_path / "j.sqlite3"
    j = Journal(path)
    j.db.sql.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # the schema in the file
    if checkpoint:
        j.retention.checkpoint_in_background()
    rid = play_round(j)
    _wait_checkpoints(j, 1)
    main_file_only = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        rows = main_file_only.execute(
            "SELECT status FROM rounds WHERE round_id = ?", (rid,)
        ).fetchall()
    finally:
        main_file_only.close()
    assert rows == ([("settled",)] if checkpoint else [])
    assert j.rounds.round(rid).status == "settled"  # the journal reads it either way
    j.close()
    assert j.retention.checkpointer is None  # the thread is stopped with the journal


def test_checkpoints_are_spaced_to_keep_the_wal_near_its_target(tmp_path: Path) -> None:
    """Small rounds write few pages: the next checkpoint waits for as many rounds as
    fill CHECKPOINT_PAGES (fewer fsyncs), then comes."""
    from firmware_host.journal.checkpoint import CHECKPOINT_PAGES

    j = Journal(tmp_path / "j.sqlite3")
    j.retention.checkpoint_in_background()
    assert j.retention.checkpointer is not None
    play_round(j)  # the first finished round is checkpointed; its pages set the spacing
    _wait_checkpoints(j, 1)
    every = j.retention.checkpointer._every
    assert 1 < every < CHECKPOINT_PAGES
    for _ in range(every - 1):
        play_round(j)
    time.sleep(0.05)
    assert j.retention.checkpointer.done == 1  # not yet
    play_round(j)
    _wait_checkpoints(j, 2)
    assert 0 < j.retention.checkpointer.last_pages <= CHECKPOINT_PAGES * 1.5
    j.close()


def test_a_checkpoint_thread_on_a_file_it_cannot_open_only_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from firmware_host.journal.checkpoint import Checkpointer

    cp = Checkpointer(tmp_path / "no-such-dir" / "j.sqlite3")
    cp.round_finished()
    cp.close()
    assert cp.done == 0
    assert "checkpoint" in caplog.text
