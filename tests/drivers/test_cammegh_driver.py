"""The Cammegh SS2 driver back to back with its simulator, over faulty transports.

Transports: in-process pipe (with :class:`~drivers.testing.FaultyOpener`), a real
pseudo-terminal opened by pyserial, and ``socket://``. Faults: one byte at a time,
garbage inserted at 1 % of bytes, bytes substituted at 1 %, dropped writes, delay,
silence, unplug/replug. The exception-handling rules are exercised through the
simulator's wheel faults ([ref §9] = ``docs/protocols/cammegh-ss2-reference.md`` §9).

Timing bounds are generous (loaded 2-core CI); the measured figures are printed
(``pytest -s``) and reported in ``docs/protocols/cammegh-ss2.md``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from drivers.base import DeviceEvent, DeviceTimeout, HealthChanged, HealthState
from drivers.cammegh.codec import Direction, GameState, ModeBit, pocket_text
from drivers.cammegh.driver import CammeghDriver, CommandRefused
from drivers.cammegh.events import (
    GameStateChanged,
    GameVoided,
    SelfTestResult,
    WarningCleared,
    WheelFault,
    WheelWarning,
    WinningNumber,
)
from drivers.cammegh.sim import CammeghSim, SimTiming
from drivers.testing import Faults, FaultyOpener

FAST = SimTiming.fast()
BASE: dict[str, Any] = {
    "port": "",
    "status_timeout_ms": 600,
    "reply_timeout_ms": 500,
    "reconnect_max_ms": 200,
    "identify_on_connect": False,
}


class Rig:
    """A simulator, a driver and the list of every event the driver emitted."""

    def __init__(self, sim: CammeghSim, driver: CammeghDriver) -> None:
        self.sim = sim
        self.driver = driver
        self.events: list[DeviceEvent] = []
        self._sub = driver.events()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        async def pump() -> None:
            async for ev in self._sub:
                self.events.append(ev)

        self._task = asyncio.create_task(pump())
        await self.driver.start()

    async def stop(self) -> None:
        async with asyncio.timeout(10):
            await self.driver.stop()
            await self.sim.stop()
        self._sub.close()
        if self._task is not None:
            await asyncio.wait_for(self._task, 2)

    def of(self, cls: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]

    def results(self) -> list[tuple[int, int]]:
        return [(e.spin, e.number) for e in self.of(WinningNumber)]

    async def until(self, cond: Callable[[], bool], timeout: float = 10.0) -> float:
        t0 = time.monotonic()
        while not cond():
            if time.monotonic() - t0 > timeout:
                raise AssertionError(
                    f"condition not met in {timeout} s; events: {self.events[-8:]}"
                )
            await asyncio.sleep(0.005)
        return time.monotonic() - t0

    def health(self) -> HealthState:
        return self.driver.health.state


@pytest.fixture
async def make_rig() -> AsyncIterator[Callable[..., Any]]:
    rigs: list[Rig] = []

    async def make(sim: CammeghSim | None = None, opener: Any = None, **settings: Any) -> Rig:
        sim = sim or CammeghSim(seed=7, timing=FAST, state=GameState.PLACE_BETS)
        await sim.start()
        if opener is None and not settings.get("port"):
            opener = sim.opener()  # in-process pipe; with a port, the real serial path
        driver = CammeghDriver("wheel", {**BASE, **settings}, opener=opener)
        rig = Rig(sim, driver)
        rigs.append(rig)
        await rig.start()
        await rig.until(lambda: rig.health() is HealthState.ONLINE)
        return rig

    yield make
    for rig in rigs:
        await rig.stop()


async def spins(rig: Rig, n: int) -> None:
    for _ in range(n):
        await rig.sim.spin(timeout=20)
    await asyncio.sleep(FAST.status_interval * 6)


async def test_results_back_to_back_exactly_once(make_rig: Any) -> None:
    rig = await make_rig()
    rig.sim.set_next(0, 36, 17, 17)
    await spins(rig, 4)
    assert rig.results() == rig.sim.results
    assert [e.number for e in rig.of(WinningNumber)] == [0, 36, 17, 17]
    assert all(e.confirmed_by == "line" for e in rig.of(WinningNumber))
    # the state sequence of a game [ref §3]: 2 -> 3 -> 4 -> 5 -> 2
    states = [e.state for e in rig.of(GameStateChanged)]
    assert states[:5] == [2, 3, 4, 5, 2]


async def test_host_starts_games_and_chooses_direction(make_rig: Any) -> None:
    """State 5 lasts 2 s here (the real wheel's 3-8 s, scaled): the result needs three
    lines, so with the fast sim's 0.08 s it could be completed by the next game's first
    line, an idle state 2 that accepts ``*u`` (seen on a loaded machine)."""
    sim = CammeghSim(
        seed=7, timing=dataclasses.replace(FAST, result=2.0), state=GameState.PLACE_BETS
    )
    rig = await make_rig(sim)
    rig.sim.set_next(23)
    await rig.driver.start_game(Direction.ANTICLOCKWISE)
    await rig.until(lambda: len(rig.of(WinningNumber)) == 1)
    assert b"*u 3" in rig.sim.received
    ev = rig.of(WinningNumber)[0]
    assert (ev.number, ev.direction) == (23, "anticlockwise")
    with pytest.raises(CommandRefused):  # a game is running: not an idle state 2
        await rig.driver.start_game()


async def test_one_byte_at_a_time(make_rig: Any) -> None:
    sim = CammeghSim(seed=3, timing=FAST, state=GameState.PLACE_BETS)
    opener = FaultyOpener(sim.opener(), rx=Faults(chunk_size=1))
    rig = await make_rig(sim, opener)
    await spins(rig, 3)
    assert rig.results() == sim.results


async def test_delay_on_every_chunk(make_rig: Any) -> None:
    sim = CammeghSim(seed=4, timing=FAST, state=GameState.PLACE_BETS)
    opener = FaultyOpener(sim.opener(), rx=Faults(delay=0.002), tx=Faults(delay=0.01))
    rig = await make_rig(sim, opener)
    await spins(rig, 2)
    assert rig.results() == sim.results
    assert await rig.driver.version_string() == "V2.50"


def _no_wrong_event(rig: Rig) -> None:
    sent = set(rig.sim.results)
    got = rig.results()
    assert set(got) <= sent, f"results not sent by the wheel: {set(got) - sent}"
    assert len({spin for spin, _ in got}) == len(got), "a spin produced two results"
    for ev in rig.of(GameStateChanged):
        assert (ev.spin, ev.state) in rig.sim.history, f"state never shown by the wheel: {ev}"
    assert not rig.of(GameVoided)
    # a corrupted line may cost a result (missing, disputed), never give a wrong one
    assert {w.code for w in rig.of(WheelWarning)} <= {"RESULT_MISSING", "RESULT_DISPUTED"}


@pytest.mark.parametrize("mode", ["garbage", "corrupt"])
async def test_one_percent_bad_bytes_no_wrong_event_and_recovery(make_rig: Any, mode: str) -> None:
    faults = Faults(seed=11)
    sim = CammeghSim(seed=5, timing=FAST, state=GameState.PLACE_BETS, faults=faults)
    rig = await make_rig(sim)
    setattr(faults, f"{mode}_rate", 0.01)
    await spins(rig, 14)
    _no_wrong_event(rig)
    during = len(rig.results())
    touched = faults.stats.garbage_bytes + faults.stats.corrupted_bytes
    assert touched > 15  # the faults really happened
    # most results survive: each has a bare line and ~4 status lines to confirm it
    assert during >= 10, f"only {during}/14 results under 1% {mode}"
    setattr(faults, f"{mode}_rate", 0.0)
    before = len(rig.results())
    await spins(rig, 3)
    assert len(rig.results()) == before + 3  # recovered: every result again
    assert rig.health() is HealthState.ONLINE
    print(
        f"1% {mode}: {touched} bytes hit, {during}/14 results, garbled={rig.driver.decoder.garbled}"
    )


async def test_dropped_writes_time_out_then_work_again(make_rig: Any) -> None:
    sim = CammeghSim(seed=6, timing=FAST, state=GameState.PLACE_BETS)
    opener = FaultyOpener(sim.opener(), tx=Faults(drop_rate=1.0))
    rig = await make_rig(sim, opener)
    with pytest.raises(DeviceTimeout):
        await rig.driver.start_game()
    assert b"*u 1" not in sim.received
    opener.tx.drop_rate = 0.0
    sim.set_next(9)
    await rig.driver.start_game()
    await rig.until(lambda: len(sim.results) == 1 and rig.results() == [(sim.results[0][0], 9)])


async def test_silence_is_detected_and_recovered(make_rig: Any) -> None:
    sim = CammeghSim(seed=8, timing=FAST, state=GameState.PLACE_BETS)
    rig = await make_rig(sim, status_timeout_ms=600)
    sim.faults.silent = True
    t_detect = await rig.until(lambda: rig.health() is HealthState.OFFLINE, timeout=5)
    assert rig.driver.health.code in ("LINK_SILENT", "NO_STATUS")
    sim.faults.silent = False
    t_back = await rig.until(lambda: rig.health() is HealthState.ONLINE, timeout=5)
    await spins(rig, 1)
    assert rig.results() == sim.results
    assert t_detect < 0.6 + 1.5
    print(f"silence: offline after {t_detect:.3f} s (timeout 0.6 s), online {t_back:.3f} s after")


async def test_unplug_and_replug(make_rig: Any) -> None:
    sim = CammeghSim(seed=9, timing=FAST, state=GameState.PLACE_BETS)
    opener = FaultyOpener(sim.opener())
    rig = await make_rig(sim, opener)
    opener.unplug()
    t_detect = await rig.until(lambda: rig.health() is HealthState.OFFLINE, timeout=5)
    await asyncio.sleep(0.3)  # some failed reopen attempts
    opener.replug()
    t_back = await rig.until(lambda: rig.health() is HealthState.ONLINE, timeout=5)
    assert opener.opens >= 2
    await spins(rig, 1)
    assert rig.results() == sim.results
    assert t_detect < 1.0
    assert t_back < 0.2 + 1.5  # backoff cap 0.2 s
    print(f"unplug: offline after {t_detect * 1000:.1f} ms; replug: online after {t_back:.3f} s")


async def test_pty_serial_unplug_and_replug(make_rig: Any, tmp_path: Path) -> None:
    """A real tty path (like /dev/serial/by-id/...) that disappears and comes back."""
    sim = CammeghSim(seed=10, timing=FAST, state=GameState.PLACE_BETS)
    server = await sim.serve_pty(link=tmp_path / "ttyWHEEL")
    rig = await make_rig(sim, port=server.path)
    await spins(rig, 1)
    t0 = time.monotonic()
    await server.pty.unplug()
    await rig.until(lambda: rig.health() is HealthState.OFFLINE, timeout=5)
    t_detect = time.monotonic() - t0
    await asyncio.sleep(0.3)
    server.replug()
    t_back = await rig.until(lambda: rig.health() is HealthState.ONLINE, timeout=5)
    await spins(rig, 2)
    assert rig.results() == sim.results
    assert len(rig.results()) == 3
    print(
        f"pty unplug: offline after {t_detect * 1000:.1f} ms; replug: online after {t_back:.3f} s"
    )


async def test_socket_url(make_rig: Any) -> None:
    sim = CammeghSim(seed=12, timing=FAST, state=GameState.PLACE_BETS)
    server = await sim.serve_tcp()
    rig = await make_rig(sim, port=server.url)
    await spins(rig, 2)
    assert rig.results() == sim.results


async def test_spin_counter_wrap_256_to_1(make_rig: Any) -> None:
    sim = CammeghSim(seed=13, timing=FAST, state=GameState.PLACE_BETS, spin=255)
    rig = await make_rig(sim)
    await spins(rig, 3)
    assert [s for s, _ in rig.results()] == [255, 256, 1]  # [ref §4.1] range 1-256, wraps


async def test_power_cycle_resets_the_spin_counter_and_results_continue(make_rig: Any) -> None:
    sim = CammeghSim(seed=14, timing=FAST, state=GameState.PLACE_BETS, spin=1)
    rig = await make_rig(sim)
    await spins(rig, 1)
    sim.inject("power_cycle")
    await rig.until(
        lambda: rig.driver.tracker.last is not None and rig.driver.tracker.last.state == 6
    )
    assert await rig.driver.power(True)
    await sim.wait_state(GameState.PLACE_BETS)
    await spins(rig, 1)
    assert rig.results() == sim.results == [(1, sim.results[0][1]), (1, sim.results[1][1])]


# --------------------------------------------------------------------- exception rules [ref §9]


async def test_miss_spin_voids_and_needs_restart(make_rig: Any) -> None:
    rig = await make_rig()
    rig.sim.inject("miss_spin")
    rig.sim.set_next(11)
    await rig.driver.start_game()
    await rig.until(lambda: bool(rig.of(GameVoided)))
    void = rig.of(GameVoided)[0]
    # [ref §9] vendor: miss-spin = state 3 with flag 2 -> VOID GAME, lock bets, send *R
    assert (void.reason, void.restart_required, void.source) == ("MISS_SPIN", True, "vendor")
    await asyncio.sleep(0.1)
    assert not rig.of(WinningNumber)  # the wheel waits for *R
    await rig.driver.restart()
    await rig.until(lambda: bool(rig.of(WinningNumber)))
    ev = rig.of(WinningNumber)[0]
    assert ev.number == 11 and ev.void_reason == ""  # the re-spin is a new game
    assert len(rig.of(GameVoided)) == 1


async def test_auto_restart_after_void(make_rig: Any) -> None:
    rig = await make_rig(auto_restart_after_void=True)
    rig.sim.inject("miss_spin")
    await rig.driver.start_game()
    await rig.until(lambda: bool(rig.of(WinningNumber)))
    assert b"*R" in rig.sim.received


async def test_no_ball_ignored_during_grace_then_void(make_rig: Any) -> None:
    # [ref §9] vendor: flag 1 in state 4 -> ignore >= 5 s, then VOID (grace shortened here)
    rig = await make_rig(no_ball_grace_ms=150)
    rig.sim.inject("no_ball", duration=0.5)
    rig.sim.set_next(4)
    await rig.driver.start_game()
    await rig.until(lambda: bool(rig.of(WinningNumber)))
    warn = [w for w in rig.of(WheelWarning) if w.code.startswith("NO_BALL")]
    assert [w.action for w in warn] == ["ignore", "void"]
    void = rig.of(GameVoided)[0]
    assert void.reason == "NO_BALL" and not void.restart_required
    assert rig.of(WinningNumber)[0].void_reason == "NO_BALL"
    assert rig.of(WarningCleared)


async def test_short_no_ball_blip_does_not_void(make_rig: Any) -> None:
    rig = await make_rig(no_ball_grace_ms=2000)
    rig.sim.inject("no_ball", duration=0.1)
    await rig.driver.start_game()
    await rig.until(lambda: bool(rig.of(WinningNumber)))
    assert not rig.of(GameVoided)
    assert rig.of(WinningNumber)[0].void_reason == ""


async def test_launch_failure_warns_and_the_game_goes_on(make_rig: Any) -> None:
    # [ref §9] vendor: no action needed, the controller retries
    rig = await make_rig(launch_alert_ms=100)
    rig.sim.inject("launch_failure", duration=0.3)
    await rig.driver.start_game()
    await rig.until(lambda: bool(rig.of(WinningNumber)))
    codes = [w.code for w in rig.of(WheelWarning)]
    assert codes == ["LAUNCH_FAILURE", "LAUNCH_FAILURE_PERSISTS"]
    assert not rig.of(GameVoided)


async def test_component_fault_packet_fault_health_and_void(make_rig: Any) -> None:
    """A component fault in state 4 voids the game, whatever the machine's load: the
    sim ends the game at the fault (no number after it), and state 4 lasts long enough
    (5 s) that the test cannot miss it and inject in another state."""
    timing = dataclasses.replace(FAST, no_more_bets=5.0)
    sim = CammeghSim(
        seed=15, timing=timing, state=GameState.PLACE_BETS, mode=1159 | ModeBit.FAULT_PACKETS
    )
    rig = await make_rig(sim)
    await rig.driver.start_game()
    await sim.wait_state(GameState.NO_MORE_BETS)
    sim.inject("component_fault", code=5)
    await rig.until(lambda: rig.health() is HealthState.FAULT)
    await rig.until(lambda: bool(rig.of(GameVoided)))
    assert [(f.code, f.meaning) for f in rig.of(WheelFault)] == [
        (5, "motor is not driving the wheel correctly")
    ]
    assert rig.of(GameVoided)[0].reason in ("COMPONENT_FAULT", "WHEEL_STOPPED")
    status = rig.driver.get_status()
    assert status["fault_frames"]  # the last frames were dumped on the fault (Klipper)
    await sim.wait_state(GameState.CLOSE_TABLE)
    assert await rig.driver.power(True)  # [ref §5] *P 1 clears flag 4
    await sim.wait_state(GameState.PLACE_BETS)
    await rig.until(lambda: rig.health() is HealthState.ONLINE)
    health_codes = [e.health.code for e in rig.of(HealthChanged)]
    assert any(c in ("WHEEL_FAULT_5", "COMPONENT_FAULT") for c in health_codes)


async def test_wheel_stopping_mid_game_voids_it(make_rig: Any) -> None:
    rig = await make_rig()
    await rig.driver.start_game()
    await rig.sim.wait_state(GameState.NO_MORE_BETS)
    rig.sim.inject("power_down")
    await rig.until(lambda: bool(rig.of(GameVoided)))
    assert rig.of(GameVoided)[0].reason == "WHEEL_STOPPED"
    assert not rig.of(WinningNumber)


async def test_bare_line_mismatch_disputes_the_spin_and_the_next_one_is_read(
    make_rig: Any,
) -> None:
    """Bare line and status line disagree: either may be the corrupted one, so no result
    is taken for that spin (the round waits or voids); the next spin is read as usual."""
    rig = await make_rig()
    rig.sim.inject("line_mismatch")
    await spins(rig, 2)
    (first, shown), second = rig.sim.results
    assert rig.results() == [second]
    warnings = rig.of(WheelWarning)
    assert [(w.code, w.spin) for w in warnings] == [("RESULT_DISPUTED", first)]
    assert pocket_text(shown) in warnings[0].message


async def test_garbage_and_torn_lines_are_counted_not_events(make_rig: Any) -> None:
    rig = await make_rig()
    rig.sim.inject("garbage_line")
    rig.sim.inject("torn_line")
    await spins(rig, 1)
    assert rig.results() == rig.sim.results
    assert rig.driver.counters["garbled_lines"] >= 1


# --------------------------------------------------------------------- commands [ref §6]


async def test_commands_power_mode_self_test_setup(make_rig: Any) -> None:
    rig = await make_rig()
    d, sim = rig.driver, rig.sim
    assert await d.version_string() == "V2.50"
    assert "SlingShot 2" in await d.full_version()
    assert await d.operating_mode() == 1159
    with pytest.raises(CommandRefused):  # [ref §6.2 obs] *o BUSY outside state 6
        await d.set_operating_mode(1158)
    with pytest.raises(CommandRefused):  # [ref §6.4] *F BUSY outside state 6
        await d.self_test(timeout=2)
    assert await d.setup_query("H") == "60"
    assert (await d.poll_status()).state == GameState.PLACE_BETS
    assert await d.power(False) is True
    await sim.wait_state(GameState.CLOSE_TABLE)
    assert await d.power(False) is False  # [ref §6.1 obs] *P NO: already off
    assert await d.manufacturer() == "CAM"
    await d.set_operating_mode(1158)
    assert sim.mode == 1158
    assert await d.set_automatic_status(True) == 1158  # bit 128 already set
    result = await d.self_test(timeout=5, quiet=0.2)
    assert result.passed and result.codes == (0,)
    sim.inject("self_test_codes", codes=(22, 5))
    result = await d.self_test(timeout=5, quiet=0.2)
    assert not result.passed and result.codes == (22, 5)
    assert result.meanings[0] == "sensor 2 broken off"
    await rig.until(lambda: len(rig.of(SelfTestResult)) == 2)
    assert await d.power(True) is True


async def test_polling_mode_without_automatic_status(make_rig: Any) -> None:
    slow = FAST.scaled(4)
    sim = CammeghSim(
        seed=16, timing=slow, state=GameState.PLACE_BETS, mode=1159 & ~ModeBit.AUTO_STATUS
    )
    rig = await make_rig(sim, auto_status=False, poll_interval_ms=100, status_timeout_ms=1000)
    sim.set_next(32)
    await rig.driver.start_game()
    await rig.until(lambda: bool(rig.of(WinningNumber)), timeout=15)
    assert rig.results() == sim.results
    assert sim.received.count(b"*X") >= 5


async def test_identify_on_connect_warns_when_automatic_status_is_off(make_rig: Any) -> None:
    sim = CammeghSim(seed=17, timing=FAST, state=GameState.PLACE_BETS, mode=1159)
    rig = await make_rig(sim, identify_on_connect=True)
    await rig.until(lambda: rig.driver.mode == 1159)
    assert rig.driver.get_status()["version"] == "V2.50"
    assert not rig.of(WheelWarning)
