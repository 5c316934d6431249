"""tests/fault: whole-daemon fault injection (``pytest -m fault -s``).

Makes the support modules importable under ``--import-mode=importlib`` (which does not
put test directories on ``sys.path``): ``_fault_support`` here and the journal/MQTT
helper's ``_mqtt_support`` (its :class:`Collector`, the persistent-session floor
consumer) in ``tests/daemon``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablesim.broker import AmqttProcess, MosquittoProcess, find_mosquitto

_here = Path(__file__).resolve().parent
for _p in (_here, _here.parent / "daemon"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


REQUIRE_MOSQUITTO = os.environ.get("TABLECTL_REQUIRE_MOSQUITTO") == "1"


def _need_mosquitto() -> None:
    if find_mosquitto() is None:
        msg = "mosquitto is not installed (/usr/sbin/mosquitto or on PATH)"
        if REQUIRE_MOSQUITTO:
            pytest.fail(f"{msg}, and TABLECTL_REQUIRE_MOSQUITTO=1 makes it mandatory")
        pytest.skip(msg)


@pytest.fixture
def fast_mosquitto(tmp_path: Path) -> Iterator[MosquittoProcess]:
    """mosquitto (persistence saved after every change) with ``set_tcp_nodelay true``:
    without it, Nagle's algorithm and delayed ACKs add ~40 ms to each request/response
    on loopback and the figures would measure TCP, not the table. Skipped when
    mosquitto is missing, FAILED under ``TABLECTL_REQUIRE_MOSQUITTO=1``."""
    _need_mosquitto()
    proc = MosquittoProcess(tmp_path / "mosquitto", extra_config="set_tcp_nodelay true")
    proc.start()
    try:
        yield proc
    finally:
        proc.close()


@pytest.fixture
def fault_broker(tmp_path: Path) -> Iterator[MosquittoProcess | AmqttProcess]:
    """A broker for tests that do not kill it: mosquitto as :func:`fast_mosquitto` when
    installed (mandatory under ``TABLECTL_REQUIRE_MOSQUITTO=1``), else amqtt in a child
    process."""
    proc: MosquittoProcess | AmqttProcess
    if find_mosquitto() is not None or REQUIRE_MOSQUITTO:
        _need_mosquitto()
        proc = MosquittoProcess(tmp_path / "mosquitto", extra_config="set_tcp_nodelay true")
    else:
        proc = AmqttProcess(tmp_path / "amqtt")
    proc.start(timeout=30)
    try:
        yield proc
    finally:
        proc.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that run on mosquitto (``-m mosquitto`` selects them)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if "fast_mosquitto" in names or ("fault_broker" in names and find_mosquitto()):
            item.add_marker(pytest.mark.mosquitto)
