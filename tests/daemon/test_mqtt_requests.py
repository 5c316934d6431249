"""How the link hands requests to the table (issue 14 item 6): bets and commands wait in
separate queues and commands go first; a request too large is answered at once without
being read; a full queue answers ``TABLE_BUSY`` instead of growing; a handler that
fails logs one traceback per kind of failure, not one per request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from _acl_support import Probe

from firmware_host import boundedjson
from firmware_host import mqtt as mqtt_module
from firmware_host.journal import Journal
from firmware_host.mqtt import FloorLink, MqttSettings

ROOT = "casino/tables/t1"


async def until(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


class Recorder:
    """A handler that takes ``bet_s`` per bet (a table busy journaling bets)."""

    def __init__(self, bet_s: float = 0.0, fail: bool = False) -> None:
        self.seen: list[tuple[str, str]] = []
        self.waiting: list[int] = []  # bets queued in the link at each request handled
        self.bet_s = bet_s
        self.fail = fail
        self.link: FloorLink | None = None

    async def __call__(self, topic: str, payload: bytes) -> dict[str, Any]:
        if self.fail:
            raise RuntimeError("a bug in the handler")
        rid = json.loads(payload)["request_id"]
        self.seen.append((topic, rid))
        if rid.startswith("x"):  # not authenticated: its id echoed, no principal
            return {"request_id": rid, "status": "error", "code": "UNSIGNED"}
        if self.link is not None:
            self.waiting.append(self.link.get_status()["requests_queued"]["bets/request"])  # type: ignore[index]
        if topic == "bets/request":
            time.sleep(self.bet_s)  # synchronous work, as the engine's journal commit
        return {"request_id": rid, "status": "ok", "principal": "floor"}


async def test_a_dealers_command_overtakes_a_flood_of_bets(
    mosquitto_broker: Any, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    rec = Recorder(bet_s=0.005)
    link = FloorLink(
        MqttSettings(host=mosquitto_broker.host, port=mosquitto_broker.port), "t1", journal.outbox,
        handler=rec,
    )  # fmt: skip
    rec.link = link
    link.start()
    await link.wait_subscribed(10)
    # The floor sends from its own thread (paho's), as another machine would: a client
    # on this event loop would be paced by the table's handler, which blocks the loop.
    floor = Probe(mosquitto_broker, "floor", "")
    try:
        bets = 300
        for i in range(bets):  # QoS 0: sent at once, without waiting for each PUBACK
            floor.client.publish(f"{ROOT}/bets/request", b'{"request_id": "b%d"}' % i, qos=0)
        await until(lambda: len(rec.seen) >= 5, 10, "the first bets handled")
        await asyncio.to_thread(floor.publish, f"{ROOT}/commands/request", b'{"request_id": "c1"}')
        await until(lambda: ("commands/request", "c1") in rec.seen, 10, "the command handled")
        position = rec.seen.index(("commands/request", "c1"))
        # The bets still waiting when the command was handled: it overtook them. In one
        # queue it would have waited behind all of them (about 5 ms each).
        overtaken = rec.waiting[position]
        assert overtaken >= 50, f"the command overtook {overtaken} bets (after {position})"
        await until(lambda: len(rec.seen) == bets + 1, 20, "every request handled")
    finally:
        floor.close()
        await link.stop()
        journal.close()


async def test_too_large_and_busy_requests_are_answered_unread(
    mosquitto_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(mqtt_module.MAX_QUEUED, "bets/request", 3)
    journal = Journal(tmp_path / "j.sqlite3")
    rec = Recorder(bet_s=0.05)
    link = FloorLink(
        MqttSettings(host=mosquitto_broker.host, port=mosquitto_broker.port), "t1", journal.outbox,
        handler=rec,
    )  # fmt: skip
    link.start()
    await link.wait_subscribed(10)
    floor = Probe(mosquitto_broker, "floor", "")
    floor.subscribe(f"{ROOT}/+/response")

    def answers() -> list[dict[str, Any]]:
        return [json.loads(p) for _, p in list(floor.received)]

    try:
        huge = json.dumps({"request_id": "huge", "pad": "x" * boundedjson.MAX_REQUEST_BYTES})
        await asyncio.to_thread(floor.publish, f"{ROOT}/commands/request", huge.encode())
        await until(lambda: answers(), 5, "the refusal")
        big = answers()[0]
        assert big["code"] == "REQUEST_TOO_LARGE" and big["status"] == "error"
        assert big["request_id"] is None
        assert rec.seen == []  # the handler never saw it
        # Far more than the queue holds while each bet takes 50 ms:
        await asyncio.to_thread(
            lambda: [floor.publish(f"{ROOT}/bets/request", b'{"request_id": "b%d"}' % i)
                     for i in range(12)]
        )  # fmt: skip
        await until(lambda: len(answers()) >= 13, 10, "every bet answered")
        busy = [a for a in answers() if a.get("code") == "TABLE_BUSY"]
        assert busy and all(a["status"] == "rejected" and a["request_id"] is None for a in busy)
        assert len(rec.seen) + len(busy) == 12
        assert link.get_status()["requests_refused_unread"] == 1 + len(busy)
    finally:
        floor.close()
        await link.stop()
        journal.close()


async def test_a_failing_handler_logs_one_traceback_per_kind(
    mosquitto_broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="firmware_host.mqtt")
    journal = Journal(tmp_path / "j.sqlite3")
    link = FloorLink(
        MqttSettings(host=mosquitto_broker.host, port=mosquitto_broker.port), "t1", journal.outbox,
        handler=Recorder(fail=True),
    )  # fmt: skip
    link.start()
    await link.wait_subscribed(10)
    floor = Probe(mosquitto_broker, "floor", "")
    try:
        await asyncio.to_thread(
            lambda: [floor.publish(f"{ROOT}/bets/request", b'{"request_id": "b%d"}' % i)
                     for i in range(50)]
        )  # fmt: skip
        await until(lambda: link.stats.handler_errors == 50, 10, "every request tried")
        tracebacks = [r for r in caplog.records if r.exc_info]
        assert len(tracebacks) == 1
        await link.wait_idle(10)
    finally:
        floor.close()
        await link.stop()
        journal.close()


async def test_an_answer_no_requester_can_match_is_never_queued_for_a_terminal(
    mosquitto_broker: Any, tmp_path: Path
) -> None:
    """An answer with ``request_id`` null (a request not read) or naming no principal (a
    request not trusted, its request id echoed: issue 29) goes out at QoS 0: the broker
    neither stores it nor queues it for an offline terminal, so a flood of junk can
    neither make the broker save once per junk message nor fill a terminal's session
    queue (``max_queued_messages``) and push its real answers out. Answers naming their
    request and its principal stay QoS 1 and wait for the terminal."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    got: list[tuple[bytes, int]] = []

    def terminal() -> mqtt.Client:
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="terminal-7",
                        protocol=mqtt.MQTTv311, clean_session=False)  # fmt: skip
        c.on_message = lambda _c, _u, m: got.append((bytes(m.payload), m.qos))
        c.connect(mosquitto_broker.host, mosquitto_broker.port)
        c.loop_start()
        return c

    journal = Journal(tmp_path / "j.sqlite3")
    link = FloorLink(
        MqttSettings(host=mosquitto_broker.host, port=mosquitto_broker.port), "t1", journal.outbox,
        handler=Recorder(),
    )  # fmt: skip
    link.start()
    await link.wait_subscribed(10)
    floor = Probe(mosquitto_broker, "floor", "")
    huge = json.dumps({"request_id": "huge", "pad": "x" * boundedjson.MAX_REQUEST_BYTES}).encode()
    term = terminal()
    try:
        info = term.subscribe(f"{ROOT}/+/response", qos=1)
        await until(lambda: info[0] == 0, 5, "the subscription sent")
        await asyncio.sleep(0.3)  # the SUBACK
        # Online: the unread refusal arrives at QoS 0, the named answer at QoS 1.
        await asyncio.to_thread(floor.publish, f"{ROOT}/commands/request", huge)
        await asyncio.to_thread(floor.publish, f"{ROOT}/commands/request", b'{"request_id": "r1"}')
        await asyncio.to_thread(floor.publish, f"{ROOT}/commands/request", b'{"request_id": "x9"}')
        await until(lambda: len(got) >= 3, 10, "the three answers")
        by_id = {json.loads(p)["request_id"]: qos for p, qos in got}
        assert by_id == {None: 0, "r1": 1, "x9": 0}
        # Offline: only the named answer waits in the terminal's session.
        term.loop_stop()
        term.disconnect()
        got.clear()
        await asyncio.to_thread(floor.publish, f"{ROOT}/commands/request", huge)
        await asyncio.to_thread(floor.publish, f"{ROOT}/commands/request", b'{"request_id": "r2"}')
        await link.wait_idle(10)
        await asyncio.sleep(0.3)
        term = terminal()
        await until(lambda: len(got) >= 1, 10, "the queued answer")
        await asyncio.sleep(0.5)  # anything else queued would have arrived by now
        assert [json.loads(p)["request_id"] for p, _ in got] == ["r2"]
    finally:
        term.loop_stop()
        term.disconnect()
        floor.close()
        await link.stop()
        journal.close()
