"""Shared pytest fixtures. Others may add theirs below; keep each fixture documented.

MQTT brokers:

- ``mosquitto_broker``: a :class:`~tablesim.broker.MosquittoProcess` started on a
  free loopback port with on-disk persistence; ``.kill()`` (SIGKILL), ``.start()``
  (same port), ``.restart()``. Skipped when mosquitto is not installed, FAILED when
  ``TABLECTL_REQUIRE_MOSQUITTO=1`` (``.ci/run`` sets it).
- ``amqtt_broker``: an :class:`~tablesim.broker.EmbeddedBroker` running in the
  test's own event loop (async tests only), like ``tablectl demo``.
- ``amqtt_process``: amqtt in a child process (killable, in-memory state).
- ``broker``: mosquitto when available, else ``amqtt_process``; mandatory mosquitto
  under ``TABLECTL_REQUIRE_MOSQUITTO=1``.
- ``broker_process``: parametrized over ``mosquitto`` and ``amqtt`` (child
  processes), for tests that must pass on both.
- ``mosquitto_in_memory``: mosquitto without persistence, for tests that publish
  thousands of retained messages (saving after each change would dominate them).

Every broker object has ``.host``, ``.port``, ``.kind`` and ``.endpoint`` (``.url``).
Tests using mosquitto are marked ``mosquitto`` automatically.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tablesim.broker import AmqttProcess, EmbeddedBroker, MosquittoProcess, find_mosquitto

# No property test may fail because the machine is busy: hypothesis' default deadline
# (200 ms per example) failed tests/games/test_sicbo.py::test_math_follows_configured_totals
# (an exact enumeration, 305 ms) on a two-core machine under load. Examples are bounded
# by max_examples and the suite's timeout, not by a wall-clock deadline.
settings.register_profile("table", deadline=None)
settings.load_profile("table")

REQUIRE_MOSQUITTO = os.environ.get("TABLECTL_REQUIRE_MOSQUITTO") == "1"
_MOSQUITTO_FIXTURES = {"mosquitto_broker", "mosquitto_in_memory"}


def _need_mosquitto() -> None:
    if find_mosquitto() is None:
        msg = "mosquitto is not installed (/usr/sbin/mosquitto or on PATH)"
        if REQUIRE_MOSQUITTO:
            pytest.fail(f"{msg}, and TABLECTL_REQUIRE_MOSQUITTO=1 makes it mandatory")
        pytest.skip(msg)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        params = getattr(item, "callspec", None)
        uses = bool(names & _MOSQUITTO_FIXTURES)
        if "broker" in names and find_mosquitto() is not None:
            uses = True
        if params is not None and params.params.get("broker_process") == "mosquitto":
            uses = True
        if uses:
            item.add_marker(pytest.mark.mosquitto)


@pytest.fixture
def mosquitto_broker(tmp_path: Path) -> Iterator[MosquittoProcess]:
    _need_mosquitto()
    proc = MosquittoProcess(tmp_path / "mosquitto")
    proc.start()
    try:
        yield proc
    finally:
        proc.close()


@pytest.fixture
def mosquitto_in_memory(tmp_path: Path) -> Iterator[MosquittoProcess]:
    _need_mosquitto()
    proc = MosquittoProcess(tmp_path / "mosquitto", persistence=False)
    proc.start()
    try:
        yield proc
    finally:
        proc.close()


@pytest.fixture
async def amqtt_broker() -> AsyncIterator[EmbeddedBroker]:
    broker = EmbeddedBroker()
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()


@pytest.fixture
def amqtt_process(tmp_path: Path) -> Iterator[AmqttProcess]:
    proc = AmqttProcess(tmp_path / "amqtt")
    proc.start(timeout=30)
    try:
        yield proc
    finally:
        proc.close()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Any]:
    """mosquitto if installed (mandatory under TABLECTL_REQUIRE_MOSQUITTO=1), else amqtt."""
    if find_mosquitto() is not None or REQUIRE_MOSQUITTO:
        _need_mosquitto()
        proc: MosquittoProcess | AmqttProcess = MosquittoProcess(tmp_path / "mosquitto")
    else:
        proc = AmqttProcess(tmp_path / "amqtt")
    proc.start(timeout=30)
    try:
        yield proc
    finally:
        proc.close()


@pytest.fixture(params=["mosquitto", "amqtt"])
def broker_process(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Each broker in turn, as a killable child process."""
    if request.param == "mosquitto":
        _need_mosquitto()
        proc: MosquittoProcess | AmqttProcess = MosquittoProcess(tmp_path / "mosquitto")
    else:
        proc = AmqttProcess(tmp_path / "amqtt")
    proc.start(timeout=30)
    try:
        yield proc
    finally:
        proc.close()
