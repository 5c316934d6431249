"""The link under the broker's limits (issue 28): mosquitto's ``max_queued_messages`` and
``max_inflight_messages`` (which it announces to MQTT 5 clients as its Receive Maximum),
as the tests set them (none), as mosquitto sets them by default, as the shipped
``config/broker/mosquitto-floor.conf`` sets them, and small; MQTT 5 and 3.1.1.

Whatever the limits, the table publishes every round and answers every request, and
flags nothing the broker permits. Its window never holds more publications than the
broker's Receive Maximum. A PUBACK saying the broker's quota is exceeded (0x97, which
mosquitto 2.0.11 was not seen to send for QoS 1: it is made here) is back-pressure: the
publication goes again, nothing is flagged.

What the table cannot help: with small limits mosquitto drops QoS 1 messages for a
*consumer* whose queue (``max_inflight_messages`` in flight plus ``max_queued_messages``)
is full, logging "Outgoing messages are being dropped for client ..."; a floor consumer
then misses rounds (a ``seq`` gap: ``replay_rounds``) and a requester answers
(``docs/mqtt.md``, "The broker is part of the chain")."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from _acl_support import BROKER_LIMITS
from _mqtt_support import Collector, play_round, settings_for
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from firmware_host.journal import Journal
from firmware_host.mqtt import FloorLink
from firmware_host.mqtt.client import _AckClient
from firmware_host.mqtt.window import Window
from tablesim.broker import MosquittoProcess, find_mosquitto

pytestmark = [pytest.mark.mosquitto]

ROOT = "casino/tables/t1"
ROUNDS = 30
REQUESTS = 20


@pytest.fixture
def limited(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    b = MosquittoProcess(
        tmp_path / "m", persistence=False, extra_config="set_tcp_nodelay true",
        **BROKER_LIMITS[request.param],
    )  # fmt: skip
    b.start()
    try:
        yield b
    finally:
        b.close()


def answer(topic: str, payload: bytes) -> dict[str, Any]:
    return {"request_id": json.loads(payload)["request_id"], "status": "ok", "principal": "floor"}


def peak_in_flight(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The publications in the window after each one sent."""
    peaks: list[int] = []
    send = Window.send

    def counting(self: Window, item: Any) -> None:
        send(self, item)
        peaks.append(len(self))

    monkeypatch.setattr(Window, "send", counting)
    return peaks


@pytest.mark.parametrize("limited", list(BROKER_LIMITS), indirect=True)
@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_every_round_is_published_and_every_request_answered_whatever_the_limits(
    limited: MosquittoProcess,
    protocol: str,
    journal: Journal,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="firmware_host.mqtt")
    peaks = peak_in_flight(monkeypatch)
    receive_maximum = limited.max_inflight_messages
    if receive_maximum is None:
        receive_maximum = 20  # mosquitto's default max_inflight_messages
    col = Collector(limited.host, limited.port, f"{ROOT}/#", "floor-1")
    link = FloorLink(settings_for(limited, protocol=protocol), "t1", journal.outbox, handler=answer)
    async with col, link:
        await link.wait_subscribed(10)
        ids = [play_round(journal) for _ in range(ROUNDS)]  # 90 entries at once
        async with aiomqtt.Client(limited.host, limited.port, identifier="requester") as c:
            for i in range(REQUESTS):
                await c.publish(
                    f"{ROOT}/commands/request", json.dumps({"request_id": f"r{i}"}), qos=1
                )
        await link.wait_idle(30)
        # Every entry and every answer taken by the broker; nothing flagged or pushed back.
        assert journal.outbox.pending_count() == 0
        assert link.get_status()["responses_queued"] == 0
        assert link.stats.requests == REQUESTS
        assert not link.faults and link.stats.refused == 0 and link.stats.throttled == 0
        assert link.stats.connects == 1
        # The window never held more than the broker takes (MQTT 5 Receive Maximum).
        expected = min(16, receive_maximum or 16) if protocol == "5" else 16
        assert link.window == expected and max(peaks) <= expected, (link.window, max(peaks))
        if limited.max_queued_messages == 2:
            return  # mosquitto drops messages for a consumer this busy (module docstring)
        await col.wait_for(lambda: len(col.on("rounds")) >= ROUNDS, what="every round")
        await col.wait_for(
            lambda: len(col.on("commands/response")) >= REQUESTS, what="every answer"
        )
    assert [m.json()["round_id"] for m in col.on("rounds")] == ids
    assert {m.json()["request_id"] for m in col.on("commands/response")} == {
        f"r{i}" for i in range(REQUESTS)
    }
    assert "PUBLISH_REFUSED" not in caplog.text


def quota_exceeded_once(monkeypatch: pytest.MonkeyPatch, topic: str) -> list[int]:
    """The first PUBACK of a publication on ``topic`` says 0x97 Quota exceeded (the
    broker took it all the same: the floor gets it twice)."""
    topic_of: dict[int, str] = {}
    made: list[int] = []
    send, on_publish = _AckClient.send, _AckClient._on_publish

    def noting(self: Any, t: str, payload: bytes, **kw: Any) -> Any:
        sent = send(self, t, payload, **kw)
        topic_of[sent.mid] = t
        return sent

    def pushing_back(self: Any, client: Any, userdata: Any, mid: int, rc: Any, props: Any) -> None:
        if topic_of.pop(mid, "").endswith("/" + topic) and not made:
            made.append(mid)
            rc = ReasonCode(PacketTypes.PUBACK, "Quota exceeded")
        on_publish(self, client, userdata, mid, rc, props)

    monkeypatch.setattr(_AckClient, "send", noting)
    monkeypatch.setattr(_AckClient, "_on_publish", pushing_back)
    return made


async def test_a_quota_exceeded_is_back_pressure_not_a_refusal(
    mosquitto_broker: MosquittoProcess,
    journal: Journal,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before issue 28 a PUBACK 0x97 raised PUBLISH_REFUSED on whatever topic it landed on
    and held back the outbox for a backoff, like an ACL's 0x87."""
    caplog.set_level(logging.INFO, logger="firmware_host.mqtt")
    made = quota_exceeded_once(monkeypatch, "rounds")
    col = Collector(mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/rounds", "floor-1")
    link = FloorLink(settings_for(mosquitto_broker, protocol="5"), "t1", journal.outbox)
    async with col, link:
        ids = [play_round(journal) for _ in range(3)]
        await col.wait_for(lambda: bool(made), what="the quota exceeded")
        await link.wait_idle(15)
        await col.wait_for(lambda: len(col.on("rounds")) >= 4, what="the round again")
    assert not link.faults and link.stats.refused == 0 and link.stats.throttled == 1
    assert journal.outbox.pending_count() == 0
    got = [m.json()["round_id"] for m in col.on("rounds")]
    assert len(got) == 4 and list(dict.fromkeys(got)) == ids  # in order, one sent again
    assert "PUBLISH_REFUSED" not in caplog.text
    assert caplog.text.count("not a refusal: publishing pauses") == 1
    assert "the broker takes publications again" in caplog.text
