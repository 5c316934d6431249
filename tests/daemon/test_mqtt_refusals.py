"""Refusals are seen (issue 14 item 5), against a real mosquitto.

A table whose broker account may not publish on ``events`` (the ACL is wrong) has an
``events`` entry and then a settled round in its outbox. Neither may be marked
published while the broker refuses the first, the floor must get them in order once
the ACL is fixed (mosquitto reloads it on SIGHUP), and the table must say so: a
``PUBLISH_REFUSED`` link fault in ``FloorLink.faults``, in the retained ``state``
(``link_faults``) and in the console's status, one log line when it is raised and one
when it clears, retries with backoff, no reconnect storm.

What mosquitto 2.0 does, found here: on MQTT 5 it answers the refused QoS 1 PUBLISH
with PUBACK reason code 0x87 (Not authorized) and then closes the connection; on MQTT
3.1.1 (whose PUBACK has no reason code) it answers a plain PUBACK and closes the
connection. On 3.1.1 the table therefore counts a publication as taken only once the
connection has outlived its PUBACK, and raises the fault after the same entry was
caught by ``DROPS_TO_FAULT`` closed connections in a row.

A refused subscription needs a broker that refuses SUBSCRIBE: mosquitto's
``acl_file`` grants every subscription and filters at delivery (so a table whose ACL
lacks read on a request topic hears nothing and cannot tell: the documented ACL
grants it), its dynamic-security plugin refuses (SUBACK 0x80 on 3.1.1, 0x87 on 5).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _acl_support import Probe, acl_broker, dynsec_broker, need_mosquitto_tools, reload_broker
from _mqtt_support import play_round
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import TableIdentity
from firmware_host.journal import Journal, OutboxMessage
from firmware_host.mqtt import DROPS_TO_FAULT, FloorLink, MqttSettings
from firmware_host.schemas import validate
from tablesim.broker import MosquittoProcess

pytestmark = [pytest.mark.mosquitto]

ROOT = "casino/tables/t1"
TABLE_PW = "table-pw"
ADMIN = "admin@test"
WRONG_ACL = f"""\
pattern write casino/tables/%u/state
pattern write casino/tables/%u/rounds
pattern write casino/tables/%u/anchor
pattern write casino/tables/%u/bets/response
pattern write casino/tables/%u/commands/response
pattern read casino/tables/%u/bets/request
pattern read casino/tables/%u/commands/request
user {ADMIN}
topic readwrite #
"""
FIXED_ACL = WRONG_ACL + "pattern write casino/tables/%u/events\n"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MosquittoProcess]:
    need_mosquitto_tools()
    b = acl_broker(tmp_path / "b", WRONG_ACL, {"t1": TABLE_PW, ADMIN: "admin-pw"})
    try:
        yield b
    finally:
        b.close()


def settings(broker: MosquittoProcess, protocol: str) -> MqttSettings:
    return MqttSettings(
        host=broker.host, port=broker.port, username="t1", password=TABLE_PW,
        protocol=protocol, reconnect_min_ms=50, reconnect_max_ms=400,
    )  # fmt: skip


async def until(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_a_refused_publication_is_not_marked_the_fault_is_seen_and_nothing_is_lost(
    broker: MosquittoProcess,
    tmp_path: Path,
    protocol: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="firmware_host.mqtt")
    floor = Probe(broker, ADMIN, "admin-pw")
    floor.subscribe(f"{ROOT}/#")
    journal = Journal(tmp_path / "j.sqlite3", identity=TableIdentity(Ed25519PrivateKey.generate()))
    journal.enqueue(OutboxMessage("events", {"event": "betting_open"}))
    rid = play_round(journal)  # its `rounds` entry comes after the event
    link = FloorLink(settings(broker, protocol), "t1", journal)
    link.start()
    try:
        await until(lambda: ("PUBLISH_REFUSED", "events") in link.faults, 15, "the fault")
        t_fault = time.monotonic()
        await asyncio.sleep(2.0)  # the refused entry is retried meanwhile

        # Nothing marked, nothing after it published: the floor got no event, no round
        # (the event, the round's two anchors, opened and finished, and the round).
        assert journal.outbox_pending_count() == 4
        got = [t for t, _ in floor.received]
        assert f"{ROOT}/events" not in got and f"{ROOT}/rounds" not in got, got
        fault = link.faults[("PUBLISH_REFUSED", "events")]
        assert fault.attempts >= 2, "the refused entry was not retried"
        # Retried with backoff, not in a storm: mosquitto closes the connection after
        # each refusal, so each retry is a connection.
        seconds = time.monotonic() - t_fault
        assert link.stats.connects <= DROPS_TO_FAULT + 2 + seconds / 0.1, link.stats
        # Seen: in the link's status (the console), the retained state, one log line.
        assert any(f["code"] == "PUBLISH_REFUSED" for f in link.get_status()["faults"])  # type: ignore[union-attr]
        states = [p for t, p in floor.received if t == f"{ROOT}/state"]
        assert states
        assert [(f["code"], f["topic"]) for f in json.loads(states[-1])["link_faults"]] == [
            ("PUBLISH_REFUSED", "events")
        ]
        validate("state", json.loads(states[-1]))
        assert len(lines(caplog, "PUBLISH_REFUSED on events:")) == 1

        # The ACL is fixed: the event, then the round, reach the floor; the fault clears.
        (broker.workdir.parent / "acl").write_text(FIXED_ACL)
        reload_broker(broker)
        await until(lambda: journal.outbox_pending_count() == 0, 15, "the outbox drained")
        await until(lambda: not link.faults, 5, "the fault cleared")
        floor.wait_received(3, 5)
        order = [t.rsplit("/", 1)[1] for t, _ in floor.received if not t.endswith("/state")]
        assert order[:4] == ["events", "anchor", "anchor", "rounds"], order
        rounds = [p for t, p in floor.received if t == f"{ROOT}/rounds"]
        assert rid.encode() in rounds[0]
        assert len(lines(caplog, "PUBLISH_REFUSED on events cleared")) == 1
        await until(
            lambda: (
                b"link_faults" not in [p for t, p in floor.received if t.endswith("/state")][-1]
            ),
            5,
            "a state without the fault",
        )
    finally:
        await link.stop()
        journal.close()
        floor.close()


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_a_refused_subscription_raises_a_fault_and_is_retried(
    tmp_path: Path, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    need_mosquitto_tools()
    caplog.set_level(logging.INFO, logger="firmware_host.mqtt")
    own = [
        ("publishClientSend", f"{ROOT}/state"),
        ("publishClientSend", f"{ROOT}/rounds"),
        ("publishClientSend", f"{ROOT}/events"),
        ("publishClientSend", f"{ROOT}/bets/response"),
        ("publishClientSend", f"{ROOT}/commands/response"),
        ("subscribeLiteral", f"{ROOT}/bets/request"),  # commands/request: not granted
    ]
    admin = [("publishClientSend", "#"), ("subscribePattern", "#")]
    broker = dynsec_broker(
        tmp_path / "dyn",
        {"t1": (TABLE_PW, "table"), ADMIN: ("admin-pw", "admin")},
        {"table": own, "admin": admin},
    )
    journal = Journal(tmp_path / "j.sqlite3", identity=TableIdentity(Ed25519PrivateKey.generate()))
    answered: list[str] = []

    async def handler(topic: str, payload: bytes) -> dict[str, Any]:
        answered.append(topic)
        return {"ok": True}

    link = FloorLink(settings(broker, protocol), "t1", journal, handler=handler)
    link.start()
    floor = Probe(broker, ADMIN, "admin-pw")
    try:
        await until(
            lambda: ("SUBSCRIBE_REFUSED", "commands/request") in link.faults, 10, "the fault"
        )
        fault = link.faults[("SUBSCRIBE_REFUSED", "commands/request")]
        assert ("0x87" if protocol == "5" else "0x80") in fault.message, fault.message
        assert ("SUBSCRIBE_REFUSED", "bets/request") not in link.faults
        # The granted topic works; the refused one does not reach the table.
        assert not floor.publish(f"{ROOT}/bets/request", b'{"request_id": "r1"}').is_failure
        assert not floor.publish(f"{ROOT}/commands/request", b'{"request_id": "r2"}').is_failure
        await until(lambda: "bets/request" in answered, 5, "the bet request handled")
        await asyncio.sleep(1.5)
        assert answered == ["bets/request"]
        assert link.faults[("SUBSCRIBE_REFUSED", "commands/request")].attempts >= 2
        assert not link._subscribed.is_set()  # wait_subscribed() does not pretend
        assert len(lines(caplog, "SUBSCRIBE_REFUSED on commands/request:")) == 1
        assert link.connected and link.stats.connects == 1  # retried on the connection
    finally:
        await link.stop()
        journal.close()
        floor.close()
        broker.close()
