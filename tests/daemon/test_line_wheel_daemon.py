"""A roulette table whose wheel is described by a line-protocol file (the worked
example of docs/drivers.md, the ACME RW-2), through the real daemon: the capture
replayed as the device over TCP, the wheel procedure opening and closing betting on
its states and settling each round on its result, as for a native wheel."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from drivers.lineproto.load import load_protocol
from drivers.lineproto.sim import ReplaySim
from firmware_host.config import validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.table.engine import Phase

ROOT = Path(__file__).resolve().parents[2]
ACME = ROOT / "docs" / "protocols" / "examples" / "acme-wheel.toml"
ACME_LOG = ROOT / "docs" / "protocols" / "examples" / "acme-wheel.log"


async def wait_for(pred: Any, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_rounds_settled_on_a_described_wheel(tmp_path: Path, amqtt_broker: Any) -> None:
    # 20 s of bets in the capture: one second here
    sim = ReplaySim(load_protocol(ACME), ACME_LOG.read_bytes(), speed=20.0, loop=False)
    server = await sim.serve_tcp()
    cfg = validate_document(
        {
            "table": {"id": "lw-1", "game": "roulette"},
            "devices": {"wheel": {"driver": "line-wheel", "protocol": str(ACME),
                                  "port": server.url}},
        }
    )  # fmt: skip
    d = TableDaemon(
        cfg, state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(host=amqtt_broker.host, port=amqtt_broker.port,
                          protocol=amqtt_broker.protocol),
    )  # fmt: skip
    await d.start()
    try:
        e = d.parts.engine

        def settled() -> list[Any]:
            return [r for r in reversed(d.journal.recall(5)) if r.settlement is not None]

        for n, number in enumerate((17, 0, 32)):
            await wait_for(lambda: e.phase is Phase.OPEN)  # GAME <n> OPEN
            bet = {"bet_id": f"b{n}", "seat": 1, "bet_type": "straight", "selection": number,
                   "stake": 100}  # fmt: skip
            assert e.desk.place(bet).accepted
            await wait_for(lambda: e.phase is not Phase.OPEN)  # CLOSED (or SPIN)
            await wait_for(lambda n=n: len(settled()) > n)  # WIN <n> <number>, twice
        rounds = settled()
        assert [r.settlement["outcome"]["number"] for r in rounds] == [17, 0, 32]
        assert all(r.settlement["bets"][0]["net"] == 3500 for r in rounds)  # 35 to 1
    finally:
        await d.stop()
        await sim.close()
