"""The emulated tables' client connects on the event loop (``tablesim/emulink.py``
``EmuClient``): never through the loop's executor (whose threads, waiting for the
interpreter's lock behind a busy loop, made a thousand tables' return after a broker's
restart take a second and more), refused at once by a closed port, and a working MQTT
client once connected."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiomqtt
import pytest

from tablesim.broker import free_port
from tablesim.emulink import EmuClient


def no_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the loop's executor was used")

    monkeypatch.setattr(asyncio.get_running_loop(), "run_in_executor", refuse)


async def test_a_closed_port_is_refused_at_once_on_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    no_executor(monkeypatch)
    client = EmuClient("127.0.0.1", free_port(), identifier="t", timeout=10)
    t0 = time.monotonic()
    with pytest.raises(aiomqtt.MqttError):
        await client.__aenter__()
    assert time.monotonic() - t0 < 1.0
    with pytest.raises(aiomqtt.MqttError):  # reusable after a refusal (the lock released)
        await client.__aenter__()


@pytest.mark.mosquitto
async def test_connected_on_the_loop_it_publishes_and_receives(
    mosquitto_broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_executor(monkeypatch)
    host, port = mosquitto_broker.host, mosquitto_broker.port
    async with EmuClient(host, port, identifier="t1", timeout=10) as c:
        await c.subscribe("t/#", qos=1)
        await c.publish("t/x", b"hello", qos=1)
        async with asyncio.timeout(10):
            async for m in c.messages:
                assert (m.topic.value, m.payload) == ("t/x", b"hello")
                break
    async with EmuClient(host, port, identifier="t1", timeout=10) as c:  # again
        await c.publish("t/y", b"again", qos=1)


@pytest.mark.mosquitto
async def test_a_host_name_is_looked_up(mosquitto_broker: Any) -> None:
    """A name, not an address: looked up, then its addresses tried in turn (on a
    machine where ``localhost`` names ::1 first, the broker on 127.0.0.1 is the second;
    here it names 127.0.0.1 only, so the turn itself is not exercised)."""
    async with EmuClient("localhost", mosquitto_broker.port, identifier="t2", timeout=10) as c:
        await c.publish("t/z", b"by name", qos=1)
