"""Game procedures driven by devices: fantan by the dealer's keypad on GPIO
(58/2004 art. 3-5) and sic bo by the shaker with a voided throw (57/2004 art. 3 3)-4))."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gpiozero.pins.mock import MockFactory

from firmware_host.config import validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.table.engine import Phase
from firmware_host.table.procedures import DiceProcedure, KeypadProcedure

PINS = {"1": 5, "2": 6, "3": 13, "4": 19, "confirm": 26, "void": 21, "bell": 20}
SETTLE = 0.08


async def wait_for(pred: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def press(factory: MockFactory, key: str) -> None:
    pin = factory.pin(PINS[key])
    pin.drive_low()
    await asyncio.sleep(SETTLE)
    pin.drive_high()
    await asyncio.sleep(SETTLE)


async def test_fantan_by_the_keypad(tmp_path: Path, amqtt_broker: Any) -> None:
    factory = MockFactory()
    cfg = validate_document(
        {
            "table": {"id": "kp-1", "game": "fantan"},
            "devices": {"keypad": {"driver": "keypad-gpio", "pins": PINS}},
        }
    )
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        pin_factory=factory,
        mqtt=MqttSettings(
            host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol
        ),
    )
    await d.start()
    try:
        assert isinstance(d.parts.procedure, KeypadProcedure)
        e = d.parts.engine
        await press(factory, "confirm")  # confirm alone: betting opens (art. 4)
        await wait_for(lambda: e.phase is Phase.OPEN)
        assert e.desk.place(
            {"bet_id": "a", "seat": 1, "bet_type": "fan", "selection": 3, "stake": 1000}
        ).accepted
        await press(factory, "3")
        await press(factory, "confirm")  # a result while betting is open is refused, not settled
        await asyncio.sleep(0.1)
        assert e.phase is Phase.OPEN
        await press(factory, "bell")  # no more bets (art. 4)
        await wait_for(lambda: e.phase is Phase.CLOSED)
        await press(factory, "3")
        await press(factory, "confirm")
        await wait_for(lambda: e.phase is Phase.IDLE)
        last = d.journal.recall(1)[0]
        assert last.settlement["outcome"] == {"number": 3}
        assert last.settlement["bets"][0]["net"] == 2850  # 3:1 less 5% of the prize (art. 7, 9)
        kinds = [ev.kind for ev in d.journal.chain.events(30)]
        assert "result_refused" in kinds
    finally:
        await d.stop()


async def test_sicbo_tilted_dice_void_the_throw_bets_stay(
    tmp_path: Path, amqtt_broker: Any
) -> None:
    from drivers.shaker.sim import ShakerSimulator

    sim = ShakerSimulator(seed=3)
    server = await sim.serve_pty()
    cfg = validate_document(
        {
            "table": {"id": "sb-1", "game": "sicbo"},
            "devices": {"shaker": {"driver": "shaker-ref", "port": str(server.path)}},
        }
    )
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(
            host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol
        ),
    )
    await d.start()
    try:
        assert isinstance(d.parts.procedure, DiceProcedure)
        e = d.parts.engine
        shaker = d.drivers["shaker"]
        await wait_for(lambda: shaker.health.state.value == "online")
        await shaker.request_shake()  # shaken under the dome: betting opens (art. 2 1))
        await wait_for(lambda: e.phase is Phase.OPEN)
        assert e.desk.place({"bet_id": "s", "seat": 1, "bet_type": "small", "stake": 100}).accepted
        # That shake read one die tilted, sealed until betting closes. Closing makes it the
        # throw's reading: void (art. 3 3)), betting reopens, the dice are shaken again.
        await sim.throw((2, 2, 3), ("flat", "tilted", "flat"))
        await wait_for(lambda: d.parts.procedure.sealed is not None and not d.parts.procedure.sealed.valid)
        e.close_betting()
        await wait_for(lambda: e.phase is Phase.OPEN)
        assert e.desk.place(
            {"bet_id": "b", "seat": 2, "bet_type": "big", "stake": 100}
        ).accepted  # art. 3 4)
        assert [b.bet_id for b in e.desk.bets()] == ["s", "b"]  # the earlier bet stayed
        await wait_for(
            lambda: d.parts.procedure.sealed is not None and d.parts.procedure.sealed.valid
        )  # the new shake
        sealed = d.parts.procedure.sealed
        e.close_betting()
        await wait_for(lambda: e.phase is Phase.IDLE)
        kinds = [ev.kind for ev in d.journal.chain.events(40)]
        assert "spin_void" not in kinds
        payload = d.journal.recall(1)[0].settlement
        assert len(payload["bets"]) == 2 and payload["status"] == "settled"
        assert payload["outcome"]["dice"] == list(sealed.dice)
        void_events = [ev for ev in d.journal.chain.events(40) if ev.kind == "round_void"]
        assert void_events == []  # the throw was void, never the round
    finally:
        await d.stop()
        await sim.close()


async def test_roulette_result_frame_is_journaled_with_the_settlement(tmp_path: Path) -> None:
    # 60/2004 art. 4: the result is the pocket where the ball comes to rest, read from the
    # wheel. The state-5 line that carried it is kept (game recall) against the round, in
    # the settlement's own transaction: same timestamp as the round's finish.
    from bench.table import FAST
    from drivers.cammegh.codec import parse_line
    from drivers.cammegh.sim import CammeghSim

    sim = CammeghSim(seed=5, timing=FAST)  # the bench's fast wheel: a game in ~0.3 s
    server = await sim.serve_pty()
    await sim.power_on()
    cfg = validate_document(
        {
            "table": {"id": "rl-1", "game": "roulette"},
            "devices": {"wheel": {"driver": "cammegh-ss2", "port": str(server.path)}},
        }
    )
    d = TableDaemon(
        cfg, state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(port=1, reconnect_min_ms=5000, reconnect_max_ms=5000),
    )  # fmt: skip
    await d.start()
    # No broker here: the technician lets the table play without the floor check.
    d.parts.console_backend.clear_fault("JOURNAL_UNCHECKED", "bench without a broker", "tech")
    try:
        e = d.parts.engine
        assert e is not None and d.journal is not None
        await wait_for(lambda: e.phase is Phase.OPEN)
        rid = e.current.round_id
        alone: list[bytes] = []  # frames journaled on their own, outside a settlement
        add_raw_frames = d.journal.frames.add_many
        d.journal.frames.add_many = lambda frames, **kw: (  # type: ignore[method-assign]
            alone.extend(f[3] for f in frames),
            add_raw_frames(frames, **kw),
        )[1]
        assert e.desk.place({"bet_id": "a", "seat": 1, "bet_type": "red", "stake": 2500}).accepted
        number = await sim.spin()
        await wait_for(lambda: d.journal.rounds.round(rid).status == "settled")
        rnd = d.journal.rounds.round(rid)

        def carries_the_result(data: bytes) -> bool:
            status = parse_line(data.splitlines()[-1])
            return getattr(status, "state", None) == 5 and getattr(status, "win", None) == number

        frames = d.journal.frames.of_round(rid)
        # exactly one frame of the round was not journaled on its own: the settlement wrote it
        settled = [f for f in frames if f.data not in alone]
        assert len(settled) == 1, frames
        assert carries_the_result(settled[0].data) and settled[0].at == rnd.finished_at
        assert alone  # the other lines of the game were journaled as they came
        assert d.journal.rounds.settlement(rid)["outcome"]["number"] == number
    finally:
        await d.stop()
        await sim.stop()
