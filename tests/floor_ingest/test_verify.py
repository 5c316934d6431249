"""Issue 28 item 2: the check of every round (``flooringest/verify.py``), without a
broker or a database: each way a message fails, with its code; a key rotation; what
a table announced, verified lazily (an anchor costs a signature check only when a
round needs it)."""

from __future__ import annotations

import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth.evidence import seal
from flooringest import messages as m
from flooringest.messages import Incoming, Quarantined, Round
from flooringest.registry import Registry
from flooringest.verify import Announcements, Verifier, replay_answer, seq_of_round_id

from .signing import Tables, round_doc


def check(v: Verifier, table: str, raw: bytes) -> Round | Quarantined:
    return v.round(Incoming(table, raw, 1.0))


def code(x: Round | Quarantined) -> str:
    return "ROUND" if isinstance(x, Round) else x.code


def test_each_way_a_round_fails_has_its_code() -> None:
    t = Tables("MO-R-07", "MO-B-01")
    said = Announcements()
    said.raise_to("MO-R-07", 10, 0)
    v = Verifier(t.registry(), said)
    good = t.round("MO-R-07", 3)
    doc = json.loads(good)
    cases: dict[str, tuple[str, bytes]] = {
        "ROUND": ("MO-R-07", good),
        m.UNKNOWN_TABLE: ("FAKE-99", t.round("MO-R-07", 3)),
        m.UNSIGNED: ("MO-R-07", json.dumps(round_doc("MO-R-07", 3)).encode()),
        m.NOT_CANONICAL: ("MO-R-07", json.dumps(doc, indent=1).encode()),
        m.BAD_SIGNATURE: ("MO-R-07", good.replace(b'"payout":2000', b'"payout":200000')),
        m.NOT_JSON: ("MO-R-07", b"\x00\x01 not json"),
        m.NOT_A_ROUND: ("MO-R-07", t.sealed("MO-R-07", "rounds", {"status": "settled"})),
        m.SEQ_NOT_ANNOUNCED: ("MO-R-07", t.round("MO-R-07", 999999999)),
    }
    for want, (table, raw) in cases.items():
        assert code(check(v, table, raw)) == want, (want, check(v, table, raw))
    # Signed by another table's key, or for another topic: not this table's round.
    assert code(check(v, "MO-R-07", t.round("MO-B-01", 3))) == m.BAD_SIGNATURE
    other = t.round("MO-R-07", 3, key=t.keys["MO-B-01"])
    assert code(check(v, "MO-R-07", other)) == m.BAD_SIGNATURE
    as_anchor = t.sealed("MO-R-07", "anchor", round_doc("MO-R-07", 3))
    assert code(check(v, "MO-R-07", as_anchor)) == m.BAD_SIGNATURE
    # A duplicated member that a first-wins parser would read otherwise.
    dup = good.replace(b'"seq":3,', b'"seq":3,"seq":4,')
    assert code(check(v, "MO-R-07", dup)) == m.NOT_CANONICAL
    # Another table's round, signed by that table, on this table's topic.
    assert code(check(v, "MO-B-01", t.round("MO-R-07", 3))) == m.BAD_SIGNATURE
    # The quarantined keep what is readable, for a person.
    q = check(v, "MO-R-07", cases[m.BAD_SIGNATURE][1])
    assert isinstance(q, Quarantined) and (q.seq, q.round_id) == (3, "MO-R-07-000003-abcd1234")
    r = check(v, "MO-R-07", good)
    assert isinstance(r, Round) and r.raw == good and r.text == good.decode()
    assert r.chain is not None and r.chain.seq == 30


def test_two_keys_verify_during_a_rotation() -> None:
    t = Tables("MO-R-07")
    new = Ed25519PrivateKey.generate()
    said = Announcements()
    said.raise_to("MO-R-07", 10, 0)
    v = Verifier(Registry([t.entry("MO-R-07", new)]), said)
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 1))) == "ROUND"
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 2, key=new))) == "ROUND"
    # The old key removed: its rounds no longer verify.
    v.registry = Registry([Tables("MO-R-07").entry("MO-R-07")])
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 3))) == m.BAD_SIGNATURE


def test_announcements_are_verified_only_when_a_round_needs_them() -> None:
    t = Tables("MO-R-07")
    failed: list[Quarantined] = []
    said = Announcements(on_failure=failed.append)
    v = Verifier(t.registry(), said)
    keys = t.registry().keys("MO-R-07")
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 1))) == m.SEQ_NOT_ANNOUNCED
    said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", 1, phase="open"), 1.0)
    said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", 2, phase="open"), 1.0)  # the latest
    assert said.verified == 0 and said.pending_claim("MO-R-07") == 1
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 1))) == "ROUND"
    assert said.verified == 1  # only the latest anchor, once
    assert said.announced("MO-R-07") == 2 and said.finished("MO-R-07") == 1
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 2))) == "ROUND"
    assert said.verified == 1  # nothing pending: covered already
    # A forged anchor (not the table's key) announces nothing, and is reported.
    forger = Ed25519PrivateKey.generate()
    said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", 999999999, key=forger), 2.0)
    assert not said.covers("MO-R-07", 999999999, keys)
    assert [(q.topic, q.code, q.seq) for q in failed] == [("anchor", m.BAD_SIGNATURE, 999999999)]
    assert said.announced("MO-R-07") == 2
    # Another table's anchor, signed by this table: the wrong table named.
    said.offer("MO-R-07", "anchor", t.sealed("MO-R-07", "anchor", {"table_id": "X", "seq": 9}), 3)
    said.settle("MO-R-07", keys)
    assert failed[-1].code == m.MALFORMED
    # The state: its last round (finished while idle) and its anchor.
    said.offer("MO-R-07", "state", t.state("MO-R-07", 7), 4.0)
    said.settle("MO-R-07", keys)
    assert (said.announced("MO-R-07"), said.finished("MO-R-07")) == (7, 7)
    said.offer("MO-R-07", "state", t.state("MO-R-07", 8, phase="open"), 5.0)
    said.settle("MO-R-07", keys)
    assert (said.announced("MO-R-07"), said.finished("MO-R-07")) == (8, 7)
    # The table answers a replay: its newest round is 5 (a journal restored): the
    # announced seq never goes down, the finished one does (a tail beyond it closes).
    said.answered("MO-R-07", 5)
    assert (said.announced("MO-R-07"), said.finished("MO-R-07")) == (8, 5)
    assert ("MO-R-07", 8, 5) in said.dirty() and said.dirty() == []
    # Unknown tables' anchors are dropped when settled without keys.
    said.offer("FAKE-99", "anchor", t.anchor("MO-R-07", 3), 1.0)
    said.settle("FAKE-99", None)
    assert said.announced("FAKE-99") == 0


def test_an_older_anchor_after_a_newer_one_does_not_hide_it() -> None:
    """Issue 36: after a reconnection the table publishes its live round (anchor 35,
    round 35) first and its backlog's older anchors after it; the live round, arriving
    after them, is covered (was: quarantined SEQ_NOT_ANNOUNCED, the latest raw anchor
    kept being the backlog's)."""
    t = Tables("MO-R-07")
    said = Announcements()
    v = Verifier(t.registry(), said)
    said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", 3), 1.0)
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 3))) == "ROUND"
    said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", 35, phase="open"), 2.0)
    said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", 35), 2.0)  # the same seq, settled
    for s in (4, 5, 6):  # the backlog's, published after the live one
        said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", s), 3.0)
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 35))) == "ROUND"
    assert (said.announced("MO-R-07"), said.finished("MO-R-07")) == (35, 35)
    assert said.verified == 2  # anchor 3, then the settled anchor 35 only
    said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", 4), 4.0)  # below what is verified
    assert "anchor" not in said.tables["MO-R-07"].raw
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 4))) == "ROUND"
    # A newer anchor is still taken after an older one.
    said.offer("MO-R-07", "anchor", t.anchor("MO-R-07", 36), 5.0)
    assert code(check(v, "MO-R-07", t.round("MO-R-07", 36))) == "ROUND"


def test_where_a_paced_backlog_ends_is_believed_only_signed() -> None:
    """Issue 36: ``state``'s ``backlog.to_seq`` (the rounds above it were published
    live) is read from a verified state only; a pending state that says something new
    of it is verified once, one that says the same is not verified again."""
    t = Tables("MO-R-07")
    failed: list[Quarantined] = []
    said = Announcements(on_failure=failed.append)
    keys = t.registry().keys
    backlog = {"to_seq": 20, "per_minute": 60}
    said.offer("MO-R-07", "state", t.state("MO-R-07", 22, backlog=backlog), 1.0)
    assert said.backlog_news("MO-R-07") and said.verified == 0
    assert said.paced(keys) == {"MO-R-07": 20} and said.verified == 1
    said.offer("MO-R-07", "state", t.state("MO-R-07", 23, backlog=backlog), 2.0)
    assert not said.backlog_news("MO-R-07")  # the same backlog: left pending
    assert said.paced(keys) == {"MO-R-07": 20} and said.verified == 1
    # Signed by another key: not believed, quarantined; what was verified stands.
    forger = Ed25519PrivateKey.generate()
    said.offer("MO-R-07", "state", t.state("MO-R-07", 23, backlog={"to_seq": 2,
                                                                    "per_minute": 60},
                                           key=forger), 3.0)  # fmt: skip
    assert said.paced(keys) == {"MO-R-07": 20}
    assert [(q.topic, q.code) for q in failed] == [("state", m.BAD_SIGNATURE)]
    # The backlog handed over: a state without it ends it.
    said.offer("MO-R-07", "state", t.state("MO-R-07", 40), 4.0)
    assert said.paced(keys) == {} and said.finished("MO-R-07") == 40


def test_a_replay_answer_is_verified() -> None:
    t = Tables("MO-R-07")
    keys = t.registry().keys("MO-R-07")
    answer: dict[str, Any] = {
        "schema_version": 6,
        "table_id": "MO-R-07",
        "request_id": "floor-ingest-w1-abc",
        "status": "ok",
        "data": {"newest_seq": 1},
    }
    doc, bad = replay_answer(
        t.sealed("MO-R-07", "commands/response", answer), "MO-R-07", keys, "floor-ingest-w1-abc"
    )
    assert bad is None and doc is not None and doc["data"]["newest_seq"] == 1
    doc, bad = replay_answer(json.dumps(answer).encode(), "MO-R-07", keys, "floor-ingest-w1-abc")
    assert doc is None and bad is not None and bad.code == m.UNSIGNED
    forged = seal(Ed25519PrivateKey.generate(), "commands/response", answer)
    _, bad = replay_answer(forged, "MO-R-07", keys, "floor-ingest-w1-abc")
    assert bad is not None and bad.code == m.BAD_SIGNATURE
    _, bad = replay_answer(
        t.sealed("MO-R-07", "commands/response", answer), "MO-R-07", keys, "other-id"
    )
    assert bad is not None and bad.code == m.MALFORMED


def test_only_answers_to_the_ingests_own_requests_are_read(tmp_path: Any) -> None:
    """The worker looks for its own request id before it parses or verifies anything:
    a forger's answer to a request it never made, or an unsigned answer to one it made,
    changes nothing."""
    from flooringest.worker import IngestSettings, IngestWorker

    t = Tables("MO-R-07")
    w = IngestWorker(IngestSettings(db=str(tmp_path / "f.sqlite3")))
    w.registry = w.verifier.registry = t.registry()
    answer = {"table_id": "MO-R-07", "status": "ok", "data": {"newest_seq": 0}}
    w._answer("MO-R-07", t.sealed("MO-R-07", "commands/response", {**answer, "request_id": "x"}))
    assert w.stats.answers == 0 and w._failed == []
    rid = f"{w.s.client_id}-0001"
    w.requests[rid] = ("MO-R-07", 6, 8, 0.0)
    w._answer("MO-R-07", json.dumps({**answer, "request_id": rid}).encode())
    assert w.stats.answers == 0 and [q.code for q in w._failed] == [m.UNSIGNED]
    assert rid in w.requests  # still waiting for the table's own answer
    w._answer("MO-R-07", t.sealed("MO-R-07", "commands/response", {**answer, "request_id": rid}))
    assert w.stats.answers == 1 and rid not in w.requests
    assert w._answers == [("MO-R-07", 0)]


def test_the_seq_of_a_round_id() -> None:
    assert seq_of_round_id("MO-R-07-000041-ab12cd34") == 41
    assert seq_of_round_id("x") is None and seq_of_round_id(None) is None
    assert seq_of_round_id("T-000000-ab") is None
