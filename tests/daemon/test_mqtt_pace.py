"""Issue 36: after a reconnection the table's link publishes the rounds it makes at
once and the backlog found on the connection beside them at ``backlog_per_minute``
(``firmware_host/mqtt/pace.py``, ``pump.py``). The pump is driven here without a
broker, on a journal, by a client that records what it is handed and a clock the test
moves: the order, the pace, and nothing lost or published twice across a
reconnection, a refusal and a restart mid-backlog, and a backlog of days. The
end-to-end checks, with mosquitto, the emulated tables and the floor ingest, are in
``tests/floor_ingest/test_drain_order.py``."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _mqtt_support import play_round
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from firmware_host.auth.identity import TableIdentity
from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.journal import Journal
from firmware_host.mqtt import FloorLink, MqttSettings
from firmware_host.mqtt import pump as pump_module
from firmware_host.mqtt.items import Item
from firmware_host.mqtt.pace import BacklogPace
from firmware_host.mqtt.pump import OutboxPump, newest_pending
from firmware_host.schemas import validate
from firmware_host.timefmt import utc_now


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Sent:
    def __init__(self, mid: int) -> None:
        self.mid = mid


class Recorder:
    """The client: what the pump hands it, in order (outbox items only)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, bytes, bool]] = []
        self.mid = 0

    def send(self, topic: str, payload: bytes, **kw: Any) -> Sent:
        self.items.append((topic, payload, bool(kw.get("retain"))))
        self.mid += 1
        return Sent(self.mid)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(pump_module.time, "monotonic", c)
    return c


def link_on(
    journal: Journal, per_minute: int = 60, window: int = 16, *, later: float = 600.0
) -> FloorLink:
    """The link, its clock ``later`` s ahead of the journal's: what the journal holds
    was made that long before the connection (a backlog, not the last backoff's)."""
    settings = MqttSettings(backlog_per_minute=per_minute, max_inflight=window)
    return FloorLink(
        settings, "t1", journal.outbox, clock=lambda: utc_now() + timedelta(seconds=later)
    )


def turn(pump: OutboxPump, client: Recorder, *, ack: bool = True) -> list[Item]:
    """One turn of the publisher: the next batch handed over and (``ack``) taken by
    the broker, its marks written; the outbox's items of it."""
    batch = pump.next_batch(pump.window)
    for item in batch:
        pump.send(client, item)  # type: ignore[arg-type]
    if ack:
        for item in batch:
            pump.released(item)
            pump.answered(item, None, 0.0)
        pump.marks.flush()
    return [i for i in batch if i.kind == "outbox"]


def seq_of(item: Item) -> int:
    return int(json.loads(item.payload)["seq"])


def drain(pump: OutboxPump, client: Recorder, clock: Clock, live: Any = None) -> list[Item]:
    """Turns until the outbox is empty, the clock moving 0.1 s a turn (``live(t)``
    called each turn: play rounds meanwhile); every outbox item handed over."""
    out: list[Item] = []
    for t in range(100_000):
        if live is not None:
            live(t)
        out += turn(pump, client)
        if not pump.journal.pending_count() and (live is None or t > 200):
            return out
        clock.now += 0.1
    raise AssertionError("the outbox never drained")


def test_the_pace_allows_a_round_a_period_and_saves_up_no_burst() -> None:
    pace = BacklogPace(per_minute=30, unpaced=16)  # one round every 2 s
    assert not pace.begin(16, 0.0)  # one window or less: not paced
    assert pace.allowed(0.0) and pace.wait(0.0) == 0
    assert pace.begin(17, 0.0)
    assert pace.allowed(0.0)
    pace.spend(0.0)
    assert pace.wait(1.0) == pytest.approx(1.0)
    assert not pace.allowed(1.9)
    assert pace.allowed(2.0)
    pace.spend(2.0)
    # Idle for a minute: still one round's worth, not 30.
    assert pace.allowed(62.0)
    pace.spend(62.0)
    assert not pace.allowed(62.5)
    assert not BacklogPace(0, 16).begin(10_000, 0.0)  # 0: never paced
    with pytest.raises(ValueError):
        BacklogPace(-1, 16)


def test_live_rounds_go_first_and_the_backlog_beside_them_at_the_pace(
    journal: Journal, clock: Clock
) -> None:
    backlog = [play_round(journal) for _ in range(20)]  # 60 entries: more than a window
    link = link_on(journal, per_minute=60)
    pump, client = link.pump, Recorder()
    pump.connected()
    assert pump.pace.active and pump.backlog_top == 60
    live: list[str] = []

    def play(t: int) -> None:
        if t % 30 == 0 and len(live) < 5:  # a round every 3 s
            live.append(play_round(journal))

    items = drain(pump, client, clock, play)
    rounds = [i for i in items if i.topic == "rounds"]
    ids = [json.loads(i.payload)["round_id"] for i in rounds]
    assert sorted(ids) == sorted(backlog + live) and len(ids) == len(set(ids))
    # Each live round went in the turn it was made; the backlog in its order, one round
    # a second (the clock moves 0.1 s a turn: ten turns a round).
    turns = {json.loads(i.payload)["round_id"]: n for n, i in enumerate(rounds)}
    assert [i for i in ids if i in set(backlog)] == backlog
    assert ids.index(live[0]) < ids.index(backlog[1])  # made after the return, ahead
    assert ids[-1] == backlog[-1]  # the backlog ends last: 20 s, the live rounds by 12 s
    assert turns  # every round was handed over once
    entries = [i.ref for i in items]
    assert len(entries) == len(set(entries)) == 3 * (len(backlog) + len(live))
    assert journal.outbox.pending_count() == 0


def test_the_backlog_rounds_are_spaced_by_the_period(journal: Journal, clock: Clock) -> None:
    for _ in range(12):
        play_round(journal)
    pump, client = link_on(journal, per_minute=120).pump, Recorder()  # one every 0.5 s
    pump.connected()
    at: list[float] = []
    while journal.outbox.pending_count():
        for item in turn(pump, client):
            if item.topic == "rounds":
                at.append(clock.now)
        clock.now += 0.05
    assert len(at) == 12
    gaps = [b - a for a, b in itertools.pairwise(at)]
    assert min(gaps) >= 0.5 - 1e-6 and max(gaps) < 0.5 + 0.05 + 1e-6


def journal_ten_minutes_behind(
    tmp_path: Path, identity: TableIdentity | None = None
) -> tuple[Journal, list[datetime], list[str]]:
    """A journal on a clock the test moves (``made[0]``), ten rounds played, then the
    clock ten minutes on: those rounds are a backlog."""
    made = [datetime(2026, 11, 28, 10, 0, tzinfo=utc_now().tzinfo)]
    journal = Journal(tmp_path / "j.sqlite3", clock=lambda: made[0], identity=identity)
    old = [play_round(journal) for _ in range(10)]
    made[0] += timedelta(minutes=10)
    return journal, made, old


def test_rounds_made_during_the_last_backoff_are_live_not_backlog(
    tmp_path: Path, clock: Clock
) -> None:
    """A round made after the floor returned, while the table waited for its next try
    (within ``reconnect_max_ms`` of the connection), goes with the live ones: at the
    end of the backlog it would wait for all of it."""
    journal, made, old = journal_ten_minutes_behind(tmp_path)
    try:
        recent = [play_round(journal) for _ in range(2)]  # 1 s before the connection
        link = FloorLink(
            MqttSettings(reconnect_max_ms=3000), "t1", journal.outbox,
            clock=lambda: made[0] + timedelta(seconds=1),
        )  # fmt: skip
        pump, client = link.pump, Recorder()
        pump.connected()
        assert pump.pace.active and pump.pace.recent_s == 3.0
        first = [
            json.loads(i.payload)["round_id"] for i in turn(pump, client) if i.topic == "rounds"
        ]
        assert first == [*recent, old[0]]  # the recent ones first, then the backlog's first
        rounds = [i for i in drain(pump, client, clock) if i.topic == "rounds"]
        assert [json.loads(i.payload)["round_id"] for i in rounds] == old[1:]
    finally:
        journal.close()


def test_a_backlog_of_one_window_goes_at_once_in_order(journal: Journal, clock: Clock) -> None:
    ids = [play_round(journal) for _ in range(5)]  # 15 entries: within the window of 16
    pump, client = link_on(journal).pump, Recorder()
    pump.connected()
    assert not pump.pace.active
    batch = turn(pump, client)
    assert [json.loads(i.payload)["round_id"] for i in batch if i.topic == "rounds"] == ids


def test_backlog_anchors_older_than_a_live_one_go_unretained(
    journal: Journal, clock: Clock
) -> None:
    for _ in range(10):
        play_round(journal)
    pump, client = link_on(journal).pump, Recorder()
    pump.connected()
    first = turn(pump, client)  # the backlog's first round and its anchors: unretained,
    # the journal holding a newer anchor (round 10's) than theirs
    assert [i.retain for i in first if i.topic == "anchor"] == [False, False]
    live = play_round(journal)
    items = drain(pump, client, clock)
    anchors = [(json.loads(i.payload)["seq"], i.retain) for i in items if i.topic == "anchor"]
    assert anchors[0] == (11, True) and anchors[1] == (11, True)  # the live round's, first
    assert all(not r for s, r in anchors[2:]) and {s for s, _ in anchors[2:]} == set(range(2, 11))
    # What the broker was handed: the retained anchor never went back below seq 11.
    retained = [json.loads(p)["seq"] for t, p, r in client.items if t.endswith("anchor") and r]
    assert retained == [11, 11]
    assert live


def test_a_reconnection_mid_backlog_loses_nothing_and_resends_only_what_was_in_flight(
    journal: Journal, clock: Clock
) -> None:
    backlog = [play_round(journal) for _ in range(15)]
    pump, client = link_on(journal).pump, Recorder()
    pump.connected()
    for _ in range(30):  # 3 s: 3 backlog rounds
        turn(pump, client)
        clock.now += 0.1
    live = [play_round(journal)]
    turn(pump, client)
    clock.now += 1.0
    caught = turn(pump, client, ack=False)  # in flight when the connection ends
    assert caught
    pump.count_drops()
    live.append(play_round(journal))  # made while disconnected: part of the next backlog
    pump.connected()
    assert pump.pace.active
    items = drain(pump, client, clock)
    handed = [json.loads(p)["round_id"] for t, p, _ in client.items if t.endswith("rounds")]
    assert set(handed) == set(backlog + live)
    twice = {r for r in handed if handed.count(r) > 1}
    assert twice <= {json.loads(i.payload)["round_id"] for i in caught if i.topic == "rounds"}
    assert journal.outbox.pending_count() == 0 and items


def test_a_refusal_mid_backlog_holds_back_the_backlog_after_it_not_the_live_rounds(
    journal: Journal, clock: Clock
) -> None:
    backlog = [play_round(journal) for _ in range(10)]
    pump, client = link_on(journal).pump, Recorder()
    pump.connected()
    clock.now += 5
    batch = pump.next_batch(16)
    for item in batch:
        pump.send(client, item)  # type: ignore[arg-type]
    refused = next(i for i in batch if i.topic == "rounds")
    for item in batch:
        pump.released(item)
        if item is refused:
            pump.answered(item, ReasonCode(PacketTypes.PUBACK, "Not authorized"), 0.0)
        else:
            pump.answered(item, None, 0.0)
    pump.marks.flush()
    assert pump.backlog_after < refused.ref
    live = play_round(journal)
    # The live round goes though the backlog's round is held back ("rounds" is held:
    # the live one waits for the hold too, as any entry on a refused topic).
    clock.now += 60  # the hold is over
    items = drain(pump, client, clock)
    rounds = [json.loads(i.payload)["round_id"] for i in items if i.topic == "rounds"]
    assert rounds.count(json.loads(refused.payload)["round_id"]) == 1
    assert set(rounds) | {json.loads(refused.payload)["round_id"]} >= set([*backlog[1:], live])
    assert journal.outbox.pending_count() == 0


def test_a_restart_mid_backlog_goes_on_from_the_journal(tmp_path: Path, clock: Clock) -> None:
    identity = TableIdentity(Ed25519PrivateKey.generate())
    journal = Journal(tmp_path / "j.sqlite3", identity=identity)
    try:
        backlog = [play_round(journal) for _ in range(12)]
        pump, client = link_on(journal).pump, Recorder()
        pump.connected()
        for _ in range(40):
            turn(pump, client)
            clock.now += 0.1
        turn(pump, client, ack=False)  # in flight at the crash: never marked
    finally:
        journal.close()
    journal = Journal(tmp_path / "j.sqlite3", identity=identity)
    try:
        pump2 = link_on(journal).pump
        pump2.connected()
        live = play_round(journal)
        drain(pump2, client, clock)
        handed = [json.loads(p)["round_id"] for t, p, _ in client.items if t.endswith("rounds")]
        assert set(handed) == set([*backlog, live])
        assert len(handed) - len(set(handed)) <= 1  # at most the one in flight at the crash
        assert journal.outbox.pending_count() == 0
    finally:
        journal.close()


def test_a_backlog_of_days_is_found_without_reading_it(journal: Journal, clock: Clock) -> None:
    for _ in range(1500):  # 4,500 entries: a week at 9 rounds an hour, or 7 h at 200
        play_round(journal)
    reads: list[int] = []
    pending = journal.outbox.pending

    class Counting:
        in_transaction = False

        def pending(self, limit: int, *, after_id: int) -> list[Any]:
            reads.append(limit)
            return pending(limit, after_id=after_id)

        def pending_count(self) -> int:
            return journal.outbox.pending_count()

    assert newest_pending(Counting(), 1) == 4500  # type: ignore[arg-type]
    assert sum(reads) <= 30  # single-entry reads: a doubling search, then halving
    pump, client = link_on(journal).pump, Recorder()
    pump.connected()
    assert pump.backlog_top == 4500
    first = turn(pump, client)
    assert [i.ref for i in first] == [1, 2, 3]  # one round's worth of the backlog, no more
    live = play_round(journal)
    clock.now += 0.2
    assert [
        json.loads(i.payload)["round_id"] for i in turn(pump, client) if i.topic == "rounds"
    ] == [live]


def _doc(**mqtt: Any) -> dict[str, Any]:
    return {"version": 1, "table": {"id": "t1", "game": "roulette"}, "mqtt": mqtt}


def test_the_reconnect_cap_and_the_pace_are_settings_checked_as_a_whole() -> None:
    defaults = validate_document(_doc()).section("mqtt")
    assert isinstance(defaults, MqttSettings)
    # A floor's tables back within 3 s of the broker, jittered (issue 36; was 30 s).
    assert (defaults.reconnect_min_ms, defaults.reconnect_max_ms) == (250, 3000)
    assert defaults.backlog_per_minute == 60
    ok = validate_document(_doc(reconnect_max_ms=5000, backlog_per_minute=0)).section("mqtt")
    assert isinstance(ok, MqttSettings)
    assert (ok.reconnect_max_ms, ok.backlog_per_minute) == (5000, 0)
    bad = [
        # A first delay above the (new, lower) default cap names the key to change.
        (_doc(reconnect_min_ms=5000), "mqtt.reconnect_min_ms: 5000 is above reconnect_max_ms"),
        (_doc(reconnect_max_ms=5), "mqtt.reconnect_max_ms"),
        (_doc(backlog_per_minute=-1), "mqtt.backlog_per_minute"),
        (_doc(backlog_per_minute=60_001), "mqtt.backlog_per_minute"),
        (_doc(backlog_per_minute="fast"), "mqtt.backlog_per_minute"),
        (_doc(backlog_per_minute=1.5), "mqtt.backlog_per_minute"),
    ]
    for doc, expect in bad:
        with pytest.raises(ConfigInvalid) as exc:
            validate_document(doc)
        assert expect in str(exc.value), (doc, str(exc.value))


def test_the_backoff_with_the_default_cap_stays_within_3_s_and_spreads_a_floor() -> None:
    from firmware_host.mqtt.items import Backoff

    backoff = Backoff(MqttSettings(), random.Random(36))
    late = [backoff(n) for n in range(5, 1005)]  # a thousand tables after a long outage
    assert max(late) <= 3.0 and min(late) >= 1.5
    # Jitter: the returns are spread over the half of the cap, not one instant.
    assert len({round(d, 2) for d in late}) > 100


def test_after_a_restart_mid_backlog_the_retained_anchor_never_goes_back(
    tmp_path: Path, clock: Clock
) -> None:
    """A live round's anchor went retained before the restart; after it, with no live
    round yet, the backlog's older anchors go unretained: what the pump knows of the
    newest retained entry comes from the journal, not from the process that died."""
    identity = TableIdentity(Ed25519PrivateKey.generate())
    journal = Journal(tmp_path / "j.sqlite3", identity=identity)
    client = Recorder()
    try:
        for _ in range(10):
            play_round(journal)
        pump = link_on(journal).pump
        pump.connected()
        turn(pump, client)  # the backlog's first round: its anchors retained
        play_round(journal)  # live: seq 11
        turn(pump, client)  # the live round's anchors: retained
    finally:
        journal.close()
    journal = Journal(tmp_path / "j.sqlite3", identity=identity)
    try:
        pump2 = link_on(journal).pump
        pump2.connected()
        assert pump2.pace.active
        drain(pump2, client, clock)
        assert journal.outbox.pending_count() == 0
    finally:
        journal.close()
    retained = [json.loads(p)["seq"] for t, p, r in client.items if t.endswith("anchor") and r]
    assert 11 in retained
    after = retained[retained.index(11) :]
    assert min(after) == 11, retained  # the broker's retained anchor never went back


def test_state_says_where_the_paced_backlog_ends_and_that_it_is_over(
    tmp_path: Path, clock: Clock
) -> None:
    """``state``'s ``backlog`` (schema 8): while the backlog is paced, the newest round
    of it (the rounds above were made since the floor returned and go at once: a hole
    among them is a loss, which the floor asks for at once); a ``state`` without it once
    the backlog is handed over. Without a backlog, nothing is said."""
    identity = TableIdentity(Ed25519PrivateKey.generate())
    journal, made, old = journal_ten_minutes_behind(tmp_path, identity)
    try:
        recent = [play_round(journal) for _ in range(2)]  # within the cap: live
        link = FloorLink(
            MqttSettings(reconnect_max_ms=3000, backlog_per_minute=60), "t1", journal.outbox,
            clock=lambda: made[0] + timedelta(seconds=1),
        )  # fmt: skip
        link.set_state(game="roulette", phase="idle")
        pump, client = link.pump, Recorder()
        pump.snapshots.connected()
        pump.connected()
        turn(pump, client)

        def states() -> list[dict[str, Any]]:
            return [json.loads(p) for t, p, _ in client.items if t.endswith("state")]

        said = states()
        assert len(said) == 1 and client.items[0][0].endswith("state")  # before the rounds
        seqs = {r: journal.rounds.round(r).seq for r in old + recent}
        assert said[0]["backlog"] == {"to_seq": seqs[old[-1]], "per_minute": 60}
        assert all(seqs[r] > said[0]["backlog"]["to_seq"] for r in recent)
        validate("state", said[0])
        drain(pump, client, clock)
        for _ in range(4):  # the pump finds the backlog over at its next read (at the
            clock.now += 0.5  # pace), and the state said again goes in the turn after
            turn(pump, client)
        assert "backlog" not in states()[-1] and len(states()) == 2
        validate("state", states()[-1])
        # A reconnection with nothing to pace says nothing of a backlog.
        play_round(journal)
        pump.snapshots.connected()
        pump.connected()
        turn(pump, client)
        assert not pump.pace.active and "backlog" not in states()[-1]
    finally:
        journal.close()


def test_rounds_made_after_the_last_failed_try_began_are_live(tmp_path: Path, clock: Clock) -> None:
    """What was made after the last try to connect that failed began may be after the
    floor's return: live, however long the next try took to come up (a floor's
    broker taking 1,000 tables back can take longer than ``reconnect_max_ms`` to answer
    one; those rounds waited for the whole backlog, 34 s, in the drain benchmark)."""
    journal, made, old = journal_ten_minutes_behind(tmp_path)
    try:
        failed_try = made[0]
        made[0] += timedelta(seconds=0.5)
        after = [play_round(journal) for _ in range(2)]  # 2.5 s before the connection
        link = FloorLink(
            MqttSettings(reconnect_max_ms=1000), "t1", journal.outbox,
            clock=lambda: made[0] + timedelta(seconds=2.5),
        )  # fmt: skip
        pump, client = link.pump, Recorder()
        # Without the failed try's time they would be the backlog's last (the control).
        pump.connected()
        ids = {e.round_id: e.id for e in journal.outbox.pending(100, after_id=0)}
        assert pump.pace.active and pump.backlog_top >= ids[after[-1]]
        pump.down_at = failed_try
        pump.connected()
        assert pump.pace.active and pump.down_at is None  # used once
        assert pump.backlog_top < ids[after[0]]
        first = [
            json.loads(i.payload)["round_id"] for i in turn(pump, client) if i.topic == "rounds"
        ]
        assert first == [*after, old[0]]  # live, then the backlog's first
    finally:
        journal.close()


async def test_a_failed_try_to_connect_is_remembered_for_the_backlog(journal: Journal) -> None:
    from tablesim.broker import free_port

    settings = MqttSettings(host="127.0.0.1", port=free_port(), reconnect_min_ms=20,
                            reconnect_max_ms=50)  # fmt: skip
    link = FloorLink(settings, "t1", journal.outbox)
    before = utc_now()
    link.start()
    try:
        for _ in range(100):
            await asyncio.sleep(0.02)
            if link.pump.down_at is not None:
                break
        assert link.pump.down_at is not None and link.pump.down_at >= before - timedelta(seconds=1)
    finally:
        await link.stop()
