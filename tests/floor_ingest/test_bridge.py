"""Issue 18 item 4: tables -> pit broker -> floor broker over a mosquitto bridge
(persistent, QoS 1), real mosquitto processes; the link between the brokers cut and
restored during play, nothing lost; the floor's replay requests cross the bridge in."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flooringest.worker import IngestSettings
from tablesim.emulator import Emulator
from tablesim.floornet import PitAndFloor

from .support import WorkerTask, more_rounds, registry_of, until_stored

pytestmark = pytest.mark.mosquitto


@pytest.fixture
def net(tmp_path: Path, mosquitto_broker: Any) -> Any:
    n = PitAndFloor(tmp_path)
    n.start()
    try:
        yield n
    finally:
        n.close()


async def test_a_bridge_cut_during_play_loses_nothing(net: PitAndFloor, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'floor.sqlite3'}"
    emu = Emulator(net.pit.host, net.pit.port, 10, rate=10)
    worker = WorkerTask(
        IngestSettings(host=net.floor.host, port=net.floor.port, db=db, duty_interval_s=0.2,
                       gap_grace_s=0.5, replay_retry_s=2.0,
                       registry_file=registry_of(emu, tmp_path))
    )  # fmt: skip
    await worker.subscribed()
    await asyncio.sleep(1.5)  # the bridge connected and subscribed on the floor
    play = asyncio.create_task(emu.run(rounds_per_table=40))
    try:
        await asyncio.sleep(1.0)
        net.cable.cut()
        await asyncio.sleep(1.5)  # the tables keep playing into the pit broker
        cut_at = emu.total_rounds
        net.cable.restore()
        assert await emu.finished(60)
        h = await until_stored(db, emu, 60)
        assert cut_at < 400
        assert h["rows"] == 400 and h["missing"] == 0 and h["differ"] == 0, h
        assert h["gaps_open"] == 0 and h["conflicts"] == 0
        assert h["faults_open"] == 0, h["lag"]["faults"]
        assert net.cable.cuts == 1
    finally:
        emu.stop()
        await play
        await worker.stop()


async def test_a_replay_request_crosses_the_bridge(net: PitAndFloor, tmp_path: Path) -> None:
    import aiomqtt

    db = f"sqlite:///{tmp_path / 'floor.sqlite3'}"
    emu = Emulator(net.pit.host, net.pit.port, 2, rate=20)
    reg = registry_of(emu, tmp_path)

    def ingest() -> WorkerTask:
        return WorkerTask(
            IngestSettings(host=net.floor.host, port=net.floor.port, db=db,
                           duty_interval_s=0.2, gap_grace_s=0.3, replay_retry_s=2.0,
                           registry_file=reg)
        )  # fmt: skip

    worker = ingest()
    await worker.subscribed()
    await asyncio.sleep(1.5)
    play = asyncio.create_task(emu.run(rounds_per_table=3))
    try:
        assert await emu.finished(30)
        assert (await until_stored(db, emu, 20))["rows"] == 6
        await worker.stop()
        # The floor broker loses the ingest's session: rounds 4-5 reach nobody.
        async with aiomqtt.Client(
            net.floor.host, net.floor.port, identifier="floor-ingest-w1",
            protocol=aiomqtt.ProtocolVersion.V5, clean_start=True,
        ):  # fmt: skip
            pass
        await more_rounds(emu, 5)
        worker = ingest()
        await worker.subscribed()
        await more_rounds(emu, 6)  # round 6 shows the gap; the replay goes floor -> pit -> table
        h = await until_stored(db, emu, 30)
        assert h["rows"] == 12 and h["missing"] == 0 and h["gaps_open"] == 0, h
        assert emu.stats.replays == 2 and emu.stats.replayed == 4
        await worker.stop()
    finally:
        emu.stop()
        await play
