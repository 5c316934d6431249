"""Issue 20: the round goes on the wire in the commit that settles it, and the table's
own work after it (pruning, the extensions' hooks: the journal's ``defer``, the link's
``AfterPublication`` as the daemon gives it)
waits until the broker has acknowledged it, never longer than
``AFTER_PUBLICATION_MAX_S``, and at once when there is no connection to wait for.
Against mosquitto."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _mqtt_support import Collector, play_round, round_payload, settings_for
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import TableIdentity
from firmware_host.journal import Journal, OutboxMessage
from firmware_host.mqtt import AfterPublication, FloorLink, MqttSettings
from firmware_host.mqtt.settings import AFTER_PUBLICATION_MAX_S

ROOT = "casino/tables/t1"


@pytest.fixture
def after() -> AfterPublication:
    """The work after the publications, made first as the daemon makes it."""
    return AfterPublication()


@pytest.fixture
def deferring(tmp_path: Path, after: AfterPublication) -> Iterator[Journal]:
    """A journal that defers its work to ``after`` (as the daemon opens it)."""
    j = Journal(
        tmp_path / "deferring.sqlite3",
        identity=TableIdentity(Ed25519PrivateKey.generate()),
        defer=after.queue,
    )
    yield j
    j.close()


def ready_round(journal: Journal) -> Any:
    """A round open, bet on and closed (its anchors queued): what settling it needs."""
    rnd = journal.rounds.open_round("t1", "roulette", {"regulation": "60/2004"})
    journal.bets.place_bet(rnd.round_id, {"bet_id": "b0", "seat": 1, "bet_type": "red", "stake": 100})
    journal.rounds.set_phase(rnd.round_id, "closed")
    return rnd


def spy_sends(link: FloorLink) -> list[tuple[str, Any]]:
    """(topic, outbox id) of every outbox item the link hands to its client."""
    sent: list[tuple[str, Any]] = []
    send = link.pump.send

    def spy(client: Any, item: Any, *rest: Any) -> Any:
        if item.kind == "outbox":
            sent.append((item.topic, item.ref))
        return send(client, item, *rest)

    link.pump.send = spy  # type: ignore[method-assign]
    return sent


async def until(cond: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


async def test_a_settled_round_is_handed_to_the_client_before_the_commit_returns(
    mosquitto_broker: Any, journal: Journal
) -> None:
    """No loop turn between the commit and the publication: when ``settle_round``
    returns, its anchor and round are already written to the socket."""
    async with Collector(mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/#") as col:
        link = FloorLink(settings_for(mosquitto_broker), "t1", journal.outbox)
        async with link:
            await link.wait_connected(10)
            rnd = ready_round(journal)
            await link.wait_idle(10)
            sent = spy_sends(link)
            journal.rounds.settle_round(rnd.round_id, 18, round_payload(rnd, [100]))
            # No await since the commit: already handed over.
            assert [t for t, _ in sent] == ["anchor", "rounds"]
            pending = {e.id for e in journal.outbox.pending(10)}
            assert {ref for _, ref in sent} == pending  # the entries of that very commit
            await col.wait_for(lambda: len(col.on("rounds")) == 1, what="the round")
        assert col.on("rounds")[0].json()["round_id"] == rnd.round_id


async def test_entries_of_a_transaction_still_open_or_rolled_back_are_never_sent(
    mosquitto_broker: Any, journal: Journal
) -> None:
    async with Collector(mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/#") as col:
        link = FloorLink(settings_for(mosquitto_broker), "t1", journal.outbox)
        async with link:
            await link.wait_connected(10)
            await link.wait_idle(10)
            sent = spy_sends(link)
            with pytest.raises(RuntimeError), journal.db.transaction():
                journal.outbox.enqueue(OutboxMessage("events", {"event": "never"}))
                assert sent == []  # queued inside the transaction: not yet committed
                raise RuntimeError("rolled back")
            journal.outbox.enqueue(OutboxMessage("events", {"event": "committed"}))
            await col.wait_for(lambda: len(col.on("events")) == 1, what="the committed event")
            await link.wait_idle(10)
        assert [m.json()["event"] for m in col.on("events")] == ["committed"]
        assert len(sent) == 1


async def test_work_after_a_round_runs_once_the_broker_acknowledged_it(
    mosquitto_broker: Any, deferring: Journal, after: AfterPublication
) -> None:
    journal = deferring
    link = FloorLink(settings_for(mosquitto_broker), "t1", journal.outbox, after=after)
    seen: list[tuple[str, int]] = []
    async with link:
        await link.wait_connected(10)
        rnd = ready_round(journal)
        await link.wait_idle(10)
        before = link.stats.outbox_published
        journal.rounds.settle_round(rnd.round_id, 18, round_payload(rnd, [100]))  # anchor + round
        journal.db.later(lambda: seen.append(("first", link.stats.outbox_published - before)))
        journal.db.later(lambda: seen.append(("second", link.stats.outbox_published - before)))
        assert seen == []  # not at once, nor
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert seen == []  # on the next loop turns, while the PUBACKs are on their way
        await until(lambda: len(seen) == 2)
    # In order, and only after both entries of the round were acknowledged.
    assert seen == [("first", 2), ("second", 2)]


async def test_a_broker_that_does_not_acknowledge_holds_the_work_only_briefly(
    mosquitto_broker: Any, deferring: Journal, after: AfterPublication
) -> None:
    journal = deferring
    link = FloorLink(
        settings_for(mosquitto_broker, publish_timeout_ms=5000), "t1", journal.outbox, after=after
    )
    ran: list[float] = []
    async with link:
        await link.wait_connected(10)
        await link.wait_idle(10)
        assert mosquitto_broker.proc is not None
        mosquitto_broker.proc.send_signal(signal.SIGSTOP)  # alive, reading nothing
        try:
            play_round(journal)
            t0 = time.monotonic()
            journal.db.later(lambda: ran.append(time.monotonic() - t0))
            await until(lambda: bool(ran), timeout=5)
            assert link.stats.outbox_published == 0  # no PUBACK came
        finally:
            mosquitto_broker.proc.send_signal(signal.SIGCONT)
        await link.wait_idle(10)
    assert AFTER_PUBLICATION_MAX_S * 0.9 <= ran[0] < AFTER_PUBLICATION_MAX_S + 1.0


async def test_without_a_connection_the_work_runs_on_the_next_loop_turn(
    deferring: Journal, after: AfterPublication
) -> None:
    journal = deferring
    link = FloorLink(
        MqttSettings(host="127.0.0.1", port=1, reconnect_min_ms=1000),
        "t1",
        journal.outbox,
        after=after,
    )
    ran: list[str] = []
    async with link:  # never connects (nothing listens on port 1)
        play_round(journal)
        journal.db.later(lambda: ran.append("pruned"))
        assert ran == []
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert ran == ["pruned"]


async def test_one_failing_piece_of_work_is_logged_and_the_rest_still_runs(
    journal: Journal, caplog: pytest.LogCaptureFixture
) -> None:
    link = FloorLink(MqttSettings(host="127.0.0.1", port=1, reconnect_min_ms=1000), "t1", journal.outbox)
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("a hook's bug")

    async with link:
        link.after_publication(lambda: ran.append("one"))
        link.after_publication(broken)
        link.after_publication(lambda: ran.append("three"))
        with caplog.at_level(logging.ERROR, logger="firmware_host.mqtt"):
            await until(lambda: len(ran) == 2, timeout=2)
    assert ran == ["one", "three"]
    assert "work queued after the publication failed" in caplog.text
    assert "a hook's bug" in caplog.text
