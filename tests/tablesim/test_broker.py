"""Broker helpers: the embedded amqtt broker, mosquitto and amqtt child processes that
can be killed and restarted on the same port, and the fixtures built on them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from firmware_host.mqtt import MqttSettings
from tablesim.broker import (
    AmqttProcess,
    EmbeddedBroker,
    MosquittoProcess,
    find_mosquitto,
    free_port,
    port_open,
)


async def roundtrip(host: str, port: int, topic: str = "t/x", payload: bytes = b"hello") -> bytes:
    async with aiomqtt.Client(host, port) as c:
        await c.subscribe(topic, qos=1)
        await c.publish(topic, payload, qos=1)
        async for m in c.messages:
            return bytes(m.payload)  # type: ignore[arg-type]
    raise AssertionError("no message")


async def retained(host: str, port: int, topic: str) -> bytes | None:
    async with aiomqtt.Client(host, port) as c:
        await c.subscribe(topic, qos=1)
        try:
            async with asyncio.timeout(1.0):
                async for m in c.messages:
                    return bytes(m.payload)  # type: ignore[arg-type]
        except TimeoutError:
            return None
    return None


def test_demo_broker_urls_are_read_by_the_daemons_parser() -> None:
    """``tablectl demo --broker URL`` is read by ``MqttSettings.from_url``, the parser
    of the daemon's own settings (one URL syntax, not two)."""

    def host_port(url: str) -> tuple[str, int]:
        s = MqttSettings.from_url(url)
        return s.host, s.port

    assert host_port("mqtt://10.0.0.5:1884") == ("10.0.0.5", 1884)
    assert host_port("broker.lan") == ("broker.lan", 1883)
    assert host_port("[::1]:1999") == ("::1", 1999)


async def test_embedded_amqtt_broker_on_loopback(amqtt_broker: EmbeddedBroker) -> None:
    assert amqtt_broker.host == "127.0.0.1" and amqtt_broker.kind == "amqtt"
    assert amqtt_broker.url == f"mqtt://127.0.0.1:{amqtt_broker.port}"
    assert await roundtrip(amqtt_broker.host, amqtt_broker.port) == b"hello"


async def test_embedded_broker_stops_and_frees_its_port() -> None:
    b = EmbeddedBroker()
    async with b as ep:
        assert port_open(ep.host, ep.port)
    await asyncio.sleep(0.1)
    assert not port_open(ep.host, ep.port)


async def test_mosquitto_restarts_on_the_same_port_and_keeps_retained_after_sigkill(
    mosquitto_broker: MosquittoProcess,
) -> None:
    port = mosquitto_broker.port
    async with aiomqtt.Client(mosquitto_broker.host, port) as c:
        await c.publish("t/keep", b"persisted", qos=1, retain=True)
    await asyncio.sleep(0.05)
    await asyncio.to_thread(mosquitto_broker.kill)
    assert not port_open(mosquitto_broker.host, port)
    await asyncio.to_thread(mosquitto_broker.start)
    assert (
        mosquitto_broker.port == port
        and mosquitto_broker.kills == 1
        and mosquitto_broker.starts == 2
    )
    assert await retained(mosquitto_broker.host, port, "t/keep") == b"persisted"
    assert (mosquitto_broker.workdir / "mosquitto.db").exists()


async def test_mosquitto_queues_for_an_offline_persistent_session_across_sigkill(
    mosquitto_broker: MosquittoProcess,
) -> None:
    h, p = mosquitto_broker.host, mosquitto_broker.port
    async with aiomqtt.Client(h, p, identifier="floor", clean_session=False) as c:
        await c.subscribe("t/q", qos=1)
    async with aiomqtt.Client(h, p) as c:
        for i in range(5):
            await c.publish("t/q", str(i).encode(), qos=1)
    # mosquitto saves after each change but *after* acknowledging it: a SIGKILL within
    # the same instant can lose the last message queued for an offline session.
    await asyncio.sleep(0.3)
    await asyncio.to_thread(mosquitto_broker.restart)
    got = []
    async with aiomqtt.Client(h, p, identifier="floor", clean_session=False) as c:
        async with asyncio.timeout(5):
            async for m in c.messages:
                got.append(bytes(m.payload))  # type: ignore[arg-type]
                if len(got) == 5:
                    break
    assert got == [b"0", b"1", b"2", b"3", b"4"]


def test_amqtt_process_can_be_killed_and_restarted(amqtt_process: AmqttProcess) -> None:
    port = amqtt_process.port
    assert asyncio.run(roundtrip(amqtt_process.host, port)) == b"hello"
    amqtt_process.kill()
    assert not port_open(amqtt_process.host, port)
    amqtt_process.start(timeout=30)
    assert asyncio.run(roundtrip(amqtt_process.host, port, payload=b"again")) == b"again"


def test_broker_fixture_prefers_mosquitto(broker: Any) -> None:
    assert broker.kind == ("mosquitto" if find_mosquitto() else "amqtt")
    assert asyncio.run(roundtrip(broker.host, broker.port)) == b"hello"


def test_mosquitto_process_reports_a_bad_config(tmp_path: Path) -> None:
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    m = MosquittoProcess(tmp_path, extra_config="this_is_not_an_option 1")
    with pytest.raises(RuntimeError, match="mosquitto exited"):
        m.start(timeout=5)
    m.close()


def test_free_port_is_free() -> None:
    p = free_port()
    assert 1024 <= p <= 65535 and not port_open("127.0.0.1", p)


FIXTURE_CHECK = """
def test_needs_mosquitto(mosquitto_broker):
    pass
"""


def test_require_mosquitto_turns_a_skip_into_a_failure(tmp_path: Path) -> None:
    """Under TABLECTL_REQUIRE_MOSQUITTO=1 (.ci/run), a missing mosquitto fails the tests."""
    conftest = Path(__file__).resolve().parents[1] / "conftest.py"
    (tmp_path / "conftest.py").write_text(conftest.read_text())
    (tmp_path / "test_x.py").write_text(FIXTURE_CHECK)
    # Hide mosquitto: an empty PATH and a find_mosquitto that finds nothing.
    (tmp_path / "sitecustomize.py").write_text(
        "import tablesim.broker as b\nb.find_mosquitto = lambda: None\n"
    )
    root = Path(__file__).resolve().parents[2]
    base = dict(os.environ, PYTHONPATH=f"{tmp_path}:{root}", PATH="/nonexistent")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        str(tmp_path),
    ]

    def run(require: str) -> subprocess.CompletedProcess[str]:
        env = dict(base, TABLECTL_REQUIRE_MOSQUITTO=require)
        return subprocess.run(
            cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )

    skipped = run("0")
    assert "1 skipped" in skipped.stdout, skipped.stdout + skipped.stderr
    failed = run("1")
    assert failed.returncode != 0 and ("1 failed" in failed.stdout or "1 error" in failed.stdout), (
        failed.stdout
    )
    assert "TABLECTL_REQUIRE_MOSQUITTO" in failed.stdout
