"""Issue 20: the publication window answers each publication through the PUBACK's
callback (no task, ``wait_for`` or event per publication), and keeps the guarantees the
tasks gave: a publication the broker never answers times out and goes again on a new
connection, nothing is lost or marked unanswered, and every outbox entry in flight when a
connection ends is counted as caught by the drop. Against mosquitto."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest
from _mqtt_support import Collector, play_round, settings_for

from firmware_host.journal import Journal
from firmware_host.mqtt import FloorLink
from firmware_host.mqtt.client import _AckClient
from firmware_host.mqtt.pump import OutboxPump

ROOT = "casino/tables/t1"


def clients_of(link: FloorLink) -> list[_AckClient]:
    """Every client the link makes, in order."""
    made: list[_AckClient] = []
    make = link.connection.make_client

    def spy() -> _AckClient:
        made.append(make())
        return made[-1]

    link.connection.make_client = spy  # type: ignore[method-assign]
    return made


def swallow_pubacks(monkeypatch: pytest.MonkeyPatch, topic: str, budget: int = 1) -> list[int]:
    """The first ``budget`` PUBACKs of publications on ``topic`` never reach the link
    (``_AckClient``'s ``send`` and ``_on_publish`` patched); the message ids swallowed."""
    topic_of: dict[int, str] = {}
    swallowed: list[int] = []
    send, on_publish = _AckClient.send, _AckClient._on_publish

    def noting(self: Any, t: str, payload: bytes, **kw: Any) -> Any:
        sent = send(self, t, payload, **kw)
        topic_of[sent.mid] = t
        return sent

    def swallowing(self: Any, client: Any, userdata: Any, mid: int, rc: Any, props: Any) -> None:
        if topic_of.pop(mid, "").endswith("/" + topic) and len(swallowed) < budget:
            swallowed.append(mid)
            return
        on_publish(self, client, userdata, mid, rc, props)

    monkeypatch.setattr(_AckClient, "send", noting)
    monkeypatch.setattr(_AckClient, "_on_publish", swallowing)
    return swallowed


async def test_a_backlog_is_answered_without_a_task_per_publication(
    mosquitto_broker: Any, journal: Journal
) -> None:
    """Each publication used to start a task that awaited its PUBACK through
    ``asyncio.wait_for`` (a second task): two tasks a publication. Now none."""
    ids = [play_round(journal) for _ in range(40)]  # 40 rounds: 120 entries, 3 a round
    entries = journal.outbox.pending_count()
    loop = asyncio.get_running_loop()
    created: list[str] = []

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        created.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop, **kw)

    col = Collector(mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/#", "floor-1")
    link = FloorLink(settings_for(mosquitto_broker, max_inflight=8, backlog_per_minute=0), "t1", journal.outbox)
    async with col:
        loop.set_task_factory(counting)
        try:
            async with link:
                await link.wait_idle(20)
                await col.wait_for(lambda: len(col.on("rounds")) >= 40, what="40 rounds")
        finally:
            loop.set_task_factory(None)
    assert [m.json()["round_id"] for m in col.on("rounds")] == ids
    assert journal.outbox.pending_count() == 0
    assert link.stats.outbox_published == entries
    # The floor's subscriber (aiomqtt's message iterator) makes one per message it
    # reads; the link's own (its loops, connecting) are a fixed few, not one (or two:
    # ``_complete`` and ``wait_for``'s) per publication.
    link_tasks = [name for name in created if name != "Queue.get"]
    assert len(link_tasks) < entries / 4, (sorted(set(link_tasks)), entries)


async def test_a_publication_never_answered_times_out_and_goes_again(
    mosquitto_broker: Any, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PUBACK that never comes: after ``publish_timeout_ms`` the connection is given
    up (as a timed-out ``publish`` would), the entry is not marked meanwhile, and it
    goes again on the next connection, where it is answered and marked."""
    swallowed = swallow_pubacks(monkeypatch, "rounds")
    rid = play_round(journal)
    col = Collector(mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/#", "floor-1")
    link = FloorLink(settings_for(mosquitto_broker, publish_timeout_ms=500), "t1", journal.outbox)
    async with col:
        link.start()
        try:
            await col.wait_for(lambda: bool(col.on("rounds")), what="the round, sent once")
            sent_at = time.monotonic()
            while not link.stats.disconnects:
                assert journal.outbox.pending_count() >= 1, "marked without its PUBACK"
                assert time.monotonic() - sent_at < 5, "the missing PUBACK never timed out"
                await asyncio.sleep(0.01)
            assert time.monotonic() - sent_at >= 0.4  # the timeout, not something sooner
            await link.wait_idle(10)
            await col.wait_for(lambda: len(col.on("rounds")) >= 2, what="the round again")
        finally:
            await link.stop()
    assert len(swallowed) == 1
    assert {m.json()["round_id"] for m in col.on("rounds")} == {rid}
    assert journal.outbox.pending_count() == 0  # answered on the second connection


async def test_every_entry_in_flight_when_a_connection_ends_is_counted_as_caught(
    mosquitto_broker: Any, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How a broker refusing by closing the connection is seen starts with the entries a
    drop catches in flight (since issue 28 none of them is blamed: the next connection
    sends its first entry alone, and only drops catching such a lone entry count). An
    entry whose PUBACK was being awaited when the connection ended used to be released by
    its task's cancellation before the count, and escaped it; only entries sent in the
    very turn of the drop were caught."""
    swallowed = swallow_pubacks(monkeypatch, "rounds")
    caught: list[dict[int, str]] = []
    count_drops = OutboxPump.count_drops

    def spy(self: OutboxPump) -> None:
        caught.append(dict(self.in_flight))
        count_drops(self)

    monkeypatch.setattr(OutboxPump, "count_drops", spy)
    play_round(journal)
    (round_entry,) = [e.id for e in journal.outbox.pending(100) if e.topic == "rounds"]
    col = Collector(mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/#", "floor-1")
    link = FloorLink(
        settings_for(mosquitto_broker, publish_timeout_ms=30_000), "t1", journal.outbox
    )
    made = clients_of(link)
    async with col:
        link.start()
        try:
            await col.wait_for(lambda: bool(swallowed), what="the round's PUBACK swallowed")
            await asyncio.sleep(0.2)  # its wait well under way
            sock = made[0]._client.socket()
            assert sock is not None
            sock.shutdown(socket.SHUT_RDWR)  # the connection ends under it
            await col.wait_for(lambda: bool(caught), what="the connection's end")
            await link.wait_idle(10)
        finally:
            await link.stop()
    assert caught[0] == {round_entry: "rounds"}, caught
    assert not link.pump.drops and not link.faults  # caught with others: not blamed
    assert journal.outbox.pending_count() == 0  # sent again, answered, marked
