"""FloorLink against real brokers (mosquitto and amqtt as child processes): retained
state and last will, outbox drained in order, requests answered, snapshots
republished, and the pure parts (topics, settings, backoff) without a broker.

Broker kills in the middle of a stream are in ``test_mqtt_faults.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from _mqtt_support import Collector, play_round, settings_for

from firmware_host import schemas
from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.journal import Journal, OutboxMessage
from firmware_host.mqtt import FloorLink, MqttSettings, TopicError, check_topic

ROOT = "casino/tables/t1"


def assert_schema_valid(col: Collector) -> int:
    """Every message the floor saw conforms to its topic's schema; returns how many."""
    n = 0
    for m in col.messages:
        rel = m.topic[len(ROOT) + 1 :]
        if rel.endswith("/request"):
            # amqtt now and then hands a retained message outside the subscribed filter
            # (here the deliberately stale request); requests are the floor's, not ours.
            continue
        problems = schemas.errors(schemas.schema_for_topic(rel), m.payload)
        assert not problems, f"{m.topic}: {problems}\n{m.payload!r}"
        n += 1
    return n


# -- no broker needed -------------------------------------------------------------------


def test_topics_are_built_under_the_table_root_and_wildcards_refused(journal: Journal) -> None:
    link = FloorLink(MqttSettings(prefix="casino/macau"), "T-7", journal.outbox)
    assert link.topic("rounds") == "casino/macau/tables/T-7/rounds"
    assert link.topic("devices/wheel") == "casino/macau/tables/T-7/devices/wheel"
    for bad in ["a/+/b", "#", "a//b", "", "rounds/", "/rounds", "$SYS"]:
        with pytest.raises(TopicError):
            link.topic(bad)
    with pytest.raises(TopicError):
        link.set_device("wheel/1", {"state": "online"})
    with pytest.raises(TopicError):
        FloorLink(MqttSettings(prefix="casino/+"), "t1", journal.outbox)
    with pytest.raises(TopicError):
        FloorLink(MqttSettings(), "t#1", journal.outbox)
    with pytest.raises(TopicError):
        check_topic("casino//x")


def test_settings_from_url() -> None:
    s = MqttSettings.from_url("mqtt://floor:s3cret@broker.casino.lan:1884")
    assert (s.host, s.port, s.username, s.read_password(), s.tls) == (
        "broker.casino.lan", 1884, "floor", "s3cret", False,
    )  # fmt: skip
    t = MqttSettings.from_url("mqtts://broker")
    assert (t.host, t.port, t.tls) == ("broker", 8883, True)
    assert MqttSettings.from_url("127.0.0.1:1999").port == 1999
    assert MqttSettings.from_url("mqtt://[::1]:1888").host == "::1"
    with pytest.raises(ValueError):
        MqttSettings.from_url("http://x")


def _doc(**mqtt: Any) -> dict[str, Any]:
    return {"version": 1, "table": {"id": "t1", "game": "roulette"}, "mqtt": mqtt}


def test_mqtt_section_is_validated(tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    cfg = validate_document(
        _doc(host="b", port=8883, tls=True, username="u", password_file=str(pw))
    )
    s = cfg.section("mqtt")
    assert isinstance(s, MqttSettings)
    assert (s.host, s.port, s.prefix, s.read_password()) == ("b", 8883, "casino", "secret")
    bad = [
        (_doc(prefix="casino/#"), "mqtt.prefix"),
        (_doc(tls_ca=str(pw)), "mqtt.tls_ca: set, but tls = false"),
        (_doc(tls=True, tls_cert=str(pw)), "mqtt.tls_cert/tls_key"),
        (_doc(password_file=str(tmp_path / "missing")), "mqtt.password_file"),
        (_doc(port=0), "mqtt.port"),
        (_doc(protocol="4"), "mqtt.protocol"),
        (_doc(reconnect_min_ms=5000, reconnect_max_ms=1000), "mqtt.reconnect_min_ms"),
        (_doc(hostname="x"), "mqtt.hostname: unknown key"),
    ]
    for doc, expect in bad:
        with pytest.raises(ConfigInvalid) as exc:
            validate_document(doc)
        assert expect in str(exc.value), (doc, str(exc.value))


def test_backoff_is_capped_exponential_with_jitter(journal: Journal) -> None:
    link = FloorLink(
        MqttSettings(reconnect_min_ms=100, reconnect_max_ms=5000),
        "t1",
        journal.outbox,
        rng=random.Random(7),
    )
    for attempt in range(40):
        step = min(5.0, 0.1 * 2**attempt)
        for _ in range(20):
            d = link.backoff(attempt)
            assert step * 0.5 <= d <= step
    assert max(link.backoff(30) for _ in range(50)) <= 5.0


def test_tls_context_options(tmp_path: Path) -> None:
    assert MqttSettings().tls_context() is None
    ctx = MqttSettings(tls=True, tls_insecure=True).tls_context()
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname
    strict = MqttSettings(tls=True).tls_context()
    assert strict is not None and strict.verify_mode == ssl.CERT_REQUIRED


async def test_table_keeps_journaling_while_no_broker_answers(journal: Journal) -> None:
    from tablesim.broker import free_port

    link = FloorLink(
        MqttSettings(port=free_port(), reconnect_min_ms=10, reconnect_max_ms=50), "t1", journal.outbox
    )
    async with link:
        for _ in range(20):
            play_round(journal)
            await asyncio.sleep(0.01)
        assert not link.connected
        assert link.get_status()["connect_failures"] >= 2
        # Each round: its anchor when opened, its anchor when settled, the round itself.
        assert journal.outbox.pending_count() == 3 * 20


# -- with brokers ---------------------------------------------------------------------------


async def test_state_is_retained_online_then_offline_on_clean_stop(
    broker_process: Any, journal: Journal
) -> None:
    link = FloorLink(settings_for(broker_process), "t1", journal.outbox)
    link.set_state(game="roulette", phase="idle", round_id=None, seq=None)
    async with link:
        await link.wait_connected(10)
        await link.wait_idle(10)
        async with Collector(
            broker_process.host, broker_process.port, f"{ROOT}/state", "late-1", True
        ) as late:
            await late.wait_for(lambda: late.on("state"), what="retained state")
            st = late.on("state")[-1]
            assert (
                st.retain
                and st.json()["availability"] == "online"
                and st.json()["game"] == "roulette"
            )
            assert_schema_valid(late)
    async with Collector(
        broker_process.host, broker_process.port, f"{ROOT}/state", "late-2", True
    ) as late:
        await late.wait_for(lambda: late.on("state"), what="retained state")
        body = late.on("state")[-1].json()
        assert (body["availability"], body["reason"]) == ("offline", "shutdown")
        assert_schema_valid(late)


WILL_CHILD = r"""
import asyncio, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from firmware_host.auth import TableIdentity
from firmware_host.journal import Journal
from firmware_host.mqtt import FloorLink, MqttSettings
async def main():
    journal = Journal(sys.argv[1], identity=TableIdentity(Ed25519PrivateKey.generate()))
    link = FloorLink(MqttSettings(host="127.0.0.1", port=int(sys.argv[2]), protocol=sys.argv[3], keepalive=5), "t1", journal.outbox)
    link.set_state(game="sicbo", phase="open")
    link.start()
    await link.wait_connected(20)
    await link.wait_idle(20)
    print("online", flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


async def test_last_will_marks_the_table_offline_when_its_process_is_killed(
    broker_process: Any, tmp_path: Path
) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    child = subprocess.Popen(
        [sys.executable, "-c", WILL_CHILD, str(tmp_path / "child.sqlite3"), str(broker_process.port),
         broker_process.protocol],
        stdout=subprocess.PIPE, env=env, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 30)
        assert line.strip() == "online"
        async with Collector(
            broker_process.host, broker_process.port, f"{ROOT}/state", "watcher", True
        ) as col:
            await col.wait_for(lambda: col.on("state"), what="online state")
            assert col.on("state")[-1].json()["availability"] == "online"
            child.send_signal(signal.SIGKILL)
            await col.wait_for(
                lambda: col.on("state")[-1].json()["availability"] == "offline", 15, "the will"
            )
            body = col.on("state")[-1].json()
            assert body["reason"] == "connection lost" and body["game"] == "sicbo"
            assert_schema_valid(col)
    finally:
        child.kill()
        child.wait(10)
        if child.stdout:
            child.stdout.close()


async def test_outbox_is_drained_in_order_exactly_once_when_healthy(
    broker_process: Any, journal: Journal
) -> None:
    async with Collector(broker_process.host, broker_process.port, f"{ROOT}/#", "floor-1") as col:
        link = FloorLink(settings_for(broker_process), "t1", journal.outbox)
        link.set_device("wheel", {"state": "online", "code": "", "message": "", "kind": "wheel"})
        link.set_jackpot({"amount": 1_000_000, "currency": "MOP", "last_hit": None, "fault": None})
        async with link:
            await link.wait_connected(10)  # healthy: every round made while connected (live)
            ids = []
            for i in range(40):
                ids.append(play_round(journal))
                if i % 10 == 0:
                    journal.outbox.enqueue(
                        OutboxMessage(
                            "events",
                            {
                                "schema_version": schemas.PAYLOAD_SCHEMA_VERSION,
                                "table_id": "t1",
                                "event": "betting_open",
                                "at": "2026-05-09T07:35:25.123Z",
                            },
                        )
                    )
                    await asyncio.sleep(0)
            await link.wait_idle(20)
            await col.wait_for(lambda: len(col.on("rounds")) >= 40, what="40 rounds")
        got = [m.json()["round_id"] for m in col.on("rounds")]
        assert got == ids  # in order, none twice, none lost
        assert journal.outbox.pending_count() == 0
        assert [m.json()["seq"] for m in col.on("rounds")] == list(range(1, 41))
        assert col.on("devices/wheel")[0].retain is False  # live delivery, retained flag off
        assert len(col.on("events")) == 4
        assert assert_schema_valid(col) >= 40 + 4 + 3


async def test_rounds_settled_while_the_broker_is_down_arrive_in_order_after(
    broker_process: Any, journal: Journal
) -> None:
    async with Collector(broker_process.host, broker_process.port, f"{ROOT}/rounds", "floor-2"):
        pass  # creates the floor's persistent session
    await asyncio.to_thread(broker_process.stop)
    # The link reaches the broker through a gate that stays shut until the floor has
    # subscribed again: amqtt in a process loses its sessions when it stops, so rounds
    # published before the floor is back would be acknowledged and dropped. Without the
    # gate, on a loaded machine the link's reconnect (every <= 300 ms) won that race.
    gate = Gate((broker_process.host, broker_process.port))
    link = FloorLink(
        MqttSettings(
            host=gate.host,
            port=gate.port,
            protocol=broker_process.protocol,
            reconnect_min_ms=20,
            reconnect_max_ms=300,
            backlog_per_minute=0,  # the backlog unpaced: in order (paced: test_mqtt_pace.py)
        ),
        "t1",
        journal.outbox,
    )
    async with link:
        ids = [play_round(journal) for _ in range(25)]
        await asyncio.sleep(0.2)
        assert not link.connected
        await asyncio.to_thread(broker_process.start)
        async with Collector(
            broker_process.host, broker_process.port, f"{ROOT}/rounds", "floor-2"
        ) as col:
            await gate.open()
            await link.wait_idle(20)
            await col.wait_for(lambda: len(col.on("rounds")) >= 25, what="25 rounds")
            assert [m.json()["round_id"] for m in col.on("rounds")] == ids
    await gate.close()


class Gate:
    """A TCP relay to the broker on a port where nothing listens (connection refused)
    until :meth:`open`."""

    def __init__(self, target: tuple[str, int]) -> None:
        from tablesim.broker import free_port

        self.target = target
        self.host, self.port = "127.0.0.1", free_port()
        self.server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._done: list[asyncio.Future[None]] = []

    async def open(self) -> None:
        self.server = await asyncio.start_server(self._relay, self.host, self.port)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._done.append(done)
        try:
            up_r, up_w = await asyncio.open_connection(*self.target)
            self._writers += [writer, up_w]
            await asyncio.gather(self._pump(reader, up_w), self._pump(up_r, writer))
        except OSError:
            writer.close()
        finally:
            done.set_result(None)

    @staticmethod
    async def _pump(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            w.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for w in self._writers:
            w.close()
        await asyncio.wait_for(asyncio.gather(*self._done), 10)


async def test_snapshots_are_republished_after_a_broker_restart(
    broker_process: Any, journal: Journal
) -> None:
    """amqtt forgets retained messages when it restarts; the link republishes them."""
    link = FloorLink(settings_for(broker_process), "t1", journal.outbox)
    link.set_device("shoe", {"state": "fault", "code": "JAM", "message": "card jam"})
    async with link:
        await link.wait_idle(10)
        connects = link.stats.connects
        await asyncio.to_thread(broker_process.restart)
        await asyncio.sleep(0.1)
        await link.wait_connected(10)
        await link.wait_idle(10)
        assert link.stats.connects == connects + 1
        async with Collector(
            broker_process.host, broker_process.port, f"{ROOT}/#", "late-3", True
        ) as col:
            await col.wait_for(
                lambda: col.on("devices/shoe") and col.on("state"), what="retained snapshots"
            )
            assert col.on("devices/shoe")[-1].json()["code"] == "JAM"
            assert col.on("state")[-1].json()["availability"] == "online"


async def test_requests_reach_the_handler_and_every_one_is_answered(
    broker_process: Any, journal: Journal
) -> None:
    seen: list[tuple[str, bytes]] = []

    async def handler(topic: str, payload: bytes) -> Any:
        seen.append((topic, payload))
        doc = json.loads(payload)
        if doc.get("request_id") == "boom":
            raise RuntimeError("handler bug")
        if topic == "bets/request":
            return {"schema_version": schemas.PAYLOAD_SCHEMA_VERSION, "table_id": "t1", "request_id": doc["request_id"], "status": "rejected",
                    "code": "BETTING_CLOSED", "message": "betting is not open", "principal": "pos"}  # fmt: skip
        return {"schema_version": schemas.PAYLOAD_SCHEMA_VERSION, "table_id": "t1", "request_id": doc["request_id"], "command": "status",
                "status": "ok", "data": {}, "principal": "pos"}  # fmt: skip

    async with aiomqtt.Client(broker_process.host, broker_process.port) as floor:
        # Retained before the link subscribes: delivered with RETAIN=1, so not a live request.
        await floor.publish(f"{ROOT}/bets/request", b'{"request_id":"stale"}', qos=1, retain=True)
    link = FloorLink(settings_for(broker_process), "t1", journal.outbox, handler=handler)
    async with (
        link,
        Collector(broker_process.host, broker_process.port, f"{ROOT}/+/response", "floor-4") as col,
    ):
        await link.wait_connected(10)
        await link.wait_idle(10)
        async with aiomqtt.Client(broker_process.host, broker_process.port) as floor:
            for i in range(100):
                await floor.publish(
                    f"{ROOT}/bets/request", json.dumps({"request_id": f"b{i}"}), qos=1
                )
            await floor.publish(
                f"{ROOT}/commands/request", b'{"request_id":"c1","command":"status"}', qos=1
            )
            await floor.publish(
                f"{ROOT}/commands/request", b'{"request_id":"boom","command":"x"}', qos=1
            )
            await floor.publish(
                f"{ROOT}/bets/request", b"", qos=1, retain=True
            )  # clear the retained one
        # Each topic's own count (a count of all 102 was reached once, on amqtt, with
        # the second command's answer still to come: a suite run failed on it).
        await col.wait_for(
            lambda: len(col.on("bets/response")) >= 100 and len(col.on("commands/response")) >= 2,
            what="100 bet and 2 command responses",
        )
        bets = [m.json() for m in col.on("bets/response")]
        cmds = [m.json() for m in col.on("commands/response")]
        assert [b["request_id"] for b in bets] == [
            f"b{i}" for i in range(100)
        ]  # arrival order kept
        assert cmds[0]["status"] == "ok"
        assert (cmds[1]["request_id"], cmds[1]["status"], cmds[1]["code"]) == (
            "boom",
            "error",
            "INTERNAL_ERROR",
        )
        assert link.stats.handler_errors == 1
        assert all(t in ("bets/request", "commands/request") for t, _ in seen)
        assert b'{"request_id":"stale"}' not in [p for _, p in seen]  # retained request ignored
        assert_schema_valid(col)


@pytest.mark.mosquitto
async def test_requests_sent_while_the_link_is_away_are_kept_by_the_persistent_session(
    mosquitto_broker: Any, journal: Journal
) -> None:
    got: list[bytes] = []
    link = FloorLink(
        settings_for(mosquitto_broker), "t1", journal.outbox, handler=lambda t, p: got.append(p)
    )
    async with link:
        await link.wait_idle(10)  # subscribed once: the broker now keeps our session
    async with aiomqtt.Client(mosquitto_broker.host, mosquitto_broker.port) as floor:
        for i in range(5):
            await floor.publish(f"{ROOT}/bets/request", f'{{"request_id":"q{i}"}}', qos=1)
    link2 = FloorLink(
        settings_for(mosquitto_broker), "t1", journal.outbox, handler=lambda t, p: got.append(p)
    )
    async with link2:
        deadline = asyncio.get_running_loop().time() + 10
        while len(got) < 5 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
    assert got == [f'{{"request_id":"q{i}"}}'.encode() for i in range(5)]


@pytest.mark.mosquitto
async def test_mqtt5_session_and_will(mosquitto_broker: Any, journal: Journal) -> None:
    s = settings_for(mosquitto_broker, protocol="5", session_expiry=600)
    async with Collector(
        mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/#", "floor-5"
    ) as col:
        async with FloorLink(s, "t1", journal.outbox) as link:
            ids = [play_round(journal) for _ in range(10)]
            await link.wait_idle(10)
        await col.wait_for(lambda: len(col.on("rounds")) >= 10, what="rounds over MQTT 5")
        assert [m.json()["round_id"] for m in col.on("rounds")] == ids
        await col.wait_for(
            lambda: col.on("state")[-1].json()["availability"] == "offline", what="offline"
        )


async def test_publish_latency_is_measured(
    mosquitto_broker: Any, journal: Journal, capsys: pytest.CaptureFixture[str]
) -> None:
    """From the start of settle_round (journal fsync included) to the floor receiving it."""
    import time

    from _mqtt_support import round_payload

    async with (
        Collector(mosquitto_broker.host, mosquitto_broker.port, f"{ROOT}/rounds", "floor-6") as col,
        FloorLink(settings_for(mosquitto_broker), "t1", journal.outbox) as link,
    ):
        await link.wait_idle(10)
        lat = []
        for i in range(51):
            r = journal.rounds.open_round("t1", "roulette", {"regulation": "60/2004"})
            payload = round_payload(r, [100] * 100)
            n = len(col.messages)
            t0 = time.perf_counter()
            journal.rounds.settle_round(r.round_id, 18, payload)
            await col.wait_for(lambda n=n: len(col.messages) > n, 5, "the round")
            if i:  # the first delivery to a fresh subscriber meets Nagle on the broker: warm-up
                lat.append(col.messages[-1].at - t0)
        lat.sort()
        puback = link.stats.puback.summary()
    p50, p99 = lat[len(lat) // 2] * 1e3, lat[-1] * 1e3
    with capsys.disabled():
        print(
            f"\n  settle->floor (100 bets, loopback mosquitto): p50 {p50:.2f} ms, max {p99:.2f} ms; PUBACK {puback}"
        )
    assert p50 < 100  # generous; the figure is what matters (docs/performance.md)


async def test_a_journal_error_or_a_bad_handler_never_stops_the_link(
    amqtt_broker: Any, journal: Journal
) -> None:
    import sqlite3

    real = journal.outbox.pending
    failures = [1]

    def flaky(*a: Any, **kw: Any) -> Any:
        if failures:
            failures.pop()
            raise sqlite3.OperationalError("disk I/O error")
        return real(*a, **kw)

    journal.outbox.pending = flaky  # type: ignore[method-assign]
    link = FloorLink(settings_for(amqtt_broker), "t1", journal.outbox, handler=lambda t, p: 42)
    async with (
        Collector(amqtt_broker.host, amqtt_broker.port, f"{ROOT}/rounds", "floor-7") as col,
        link,
    ):
        rid = play_round(journal)
        await col.wait_for(lambda: col.on("rounds"), what="the round after the error")
        assert col.on("rounds")[0].json()["round_id"] == rid
        assert "disk I/O error" in link.stats.last_error
        async with aiomqtt.Client(amqtt_broker.host, amqtt_broker.port) as floor:
            await floor.publish(f"{ROOT}/bets/request", b'{"request_id":"r"}', qos=1)
        deadline = asyncio.get_running_loop().time() + 5
        while link.stats.handler_errors < 1 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        assert link.stats.handler_errors == 1 and link.connected


async def test_a_backlog_goes_out_pipelined_in_order_and_its_marks_are_written_together(
    broker_process: Any, journal: Journal
) -> None:
    """Issue 20: up to max_inflight publications in flight, the outbox still reaches the
    floor in id order, each entry marked once, only after its acknowledgement, and the
    marks written in a few transactions, not one per entry."""
    calls: list[list[int]] = []
    mark = journal.outbox.mark_published

    def spy(ids: Any, **kw: Any) -> int:
        ids = [ids] if isinstance(ids, int) else list(ids)
        calls.append(ids)
        return mark(ids, **kw)

    journal.outbox.mark_published = spy  # type: ignore[method-assign]
    ids = [play_round(journal) for _ in range(60)]  # queued before the link starts
    entries = journal.outbox.pending(1000)
    async with Collector(broker_process.host, broker_process.port, f"{ROOT}/#", "floor-1") as col:
        link = FloorLink(settings_for(broker_process, max_inflight=8, backlog_per_minute=0), "t1", journal.outbox)
        async with link:
            await link.wait_idle(20)
            await col.wait_for(lambda: len(col.on("rounds")) >= 60, what="60 rounds")
    assert [m.json()["round_id"] for m in col.on("rounds")] == ids
    marked = [i for c in calls for i in c]
    assert sorted(marked) == sorted(e.id for e in entries)  # each once, all of them
    assert journal.outbox.pending_count() == 0
    assert len(calls) < len(marked) / 2
    # Several windows' worth in one transaction (MARKS_BATCH = 4: a window's worth per
    # transaction left at most 8 + 7 marks in one; a drained backlog wrote 4x as many).
    assert max(len(c) for c in calls) > 2 * 8, [len(c) for c in calls]
    assert link.stats.outbox_published == len(entries)


async def test_the_outbox_is_read_no_further_than_the_window_has_room(
    broker_process: Any, journal: Journal
) -> None:
    """Issue 20: the entries in flight or awaiting their marks sit before the read
    cursor, so a read asks only for the free slots (each row read copies a payload)."""
    asked: list[int] = []
    pending = journal.outbox.pending

    def spy(limit: int = 100, **kw: Any) -> Any:
        asked.append(limit)
        return pending(limit, **kw)

    journal.outbox.pending = spy  # type: ignore[method-assign]
    ids = [play_round(journal) for _ in range(40)]
    link = FloorLink(settings_for(broker_process, max_inflight=8, backlog_per_minute=0), "t1", journal.outbox)
    col = Collector(broker_process.host, broker_process.port, f"{ROOT}/#", "floor-1")
    async with col, link:
        await link.wait_idle(20)
        await col.wait_for(lambda: len(col.on("rounds")) >= 40, what="40 rounds")
    assert [m.json()["round_id"] for m in col.on("rounds")] == ids
    assert asked and max(asked) <= 8
