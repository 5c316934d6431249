"""Transports, the reconnecting Link, fault-injecting wrappers, event hub, captures, GPIO helpers.

Bounded-time checks use generous limits (a loaded 2-core machine); the measured
times are printed with ``pytest -s``.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest

from drivers.base import DeviceEvent, HealthChanged, HealthState, LinkError
from drivers.capture import is_frame_log, read_capture
from drivers.common import DriverBase, EventHub
from drivers.gpio import is_raspberry_pi, make_pin_factory
from drivers.link import Backoff, Link, LinkState
from drivers.testing import Faults, FaultyConnection, FaultyOpener, mangle, parse_faults
from drivers.transport import (
    Connection,
    open_connection,
    pipe_pair,
    serial_opener,
    serve_pty,
    serve_tcp,
)


async def read_exactly(conn: Connection, n: int, timeout: float = 5.0) -> bytes:
    out = b""
    async with asyncio.timeout(timeout):
        while len(out) < n:
            out += await conn.read()
    return out


# --------------------------------------------------------------------------- backoff


def test_backoff_is_capped_and_jittered() -> None:
    b = Backoff(initial=0.1, maximum=2.0, factor=2.0, jitter=0.5, rng=random.Random(1))
    delays = [b.next() for _ in range(12)]
    bases = [min(2.0, 0.1 * 2**n) for n in range(12)]
    assert all(base * 0.5 <= d <= base for d, base in zip(delays, bases, strict=True))
    assert max(delays) <= 2.0
    assert len(set(delays)) == len(delays)  # jittered: no two the same
    b.reset()
    assert b.next() <= 0.1
    with pytest.raises(ValueError):
        Backoff(initial=0, maximum=1)


# --------------------------------------------------------------------------- connections


async def test_pipe_pair_both_ways_and_close() -> None:
    host, dev = pipe_pair()
    await host.write(b"*X\r\n")
    assert await dev.read() == b"*X\r\n"
    await dev.write(b"abc")
    assert await host.read(2) == b"ab"
    assert await host.read() == b"c"
    await dev.close()
    with pytest.raises(LinkError):
        await host.read()
    with pytest.raises(LinkError):
        await host.write(b"x")


async def test_loop_url_is_a_loopback() -> None:
    conn = await open_connection("loop://")
    await conn.write(b"hello")
    assert await conn.read() == b"hello"
    await conn.close()
    assert conn.closed


async def test_socket_url_through_pyserial_asyncio_fast() -> None:
    async def echo(conn: Connection) -> None:
        while True:
            await conn.write((await conn.read()).upper())

    server = await serve_tcp(echo)
    try:
        conn = await open_connection(server.url)
        await conn.write(b"ping")
        assert await read_exactly(conn, 4) == b"PING"
        await server.close()
        with pytest.raises(LinkError):
            async with asyncio.timeout(5):
                while True:
                    await conn.read()
        await conn.close()
    finally:
        await server.close()


async def test_open_failures_are_link_errors(tmp_path: Path) -> None:
    with pytest.raises(LinkError):
        await open_connection(str(tmp_path / "ttyNONE"))
    with pytest.raises(LinkError):
        await open_connection("socket://127.0.0.1:1")


async def test_pty_serial_port_round_trip_unplug_and_replug(tmp_path: Path) -> None:
    got: list[bytes] = []

    async def device(conn: Connection) -> None:
        while True:
            data = await conn.read()
            got.append(data)
            await conn.write(b"ack:" + data)

    server = await serve_pty(device, link=tmp_path / "ttyUSB-sim")
    conn = await open_connection(server.path, baudrate=9600)
    await conn.write(b"*S\r\n")
    assert await read_exactly(conn, 8) == b"ack:*S\r\n"
    t0 = time.monotonic()
    await server.pty.unplug()
    with pytest.raises(LinkError):
        async with asyncio.timeout(5):
            while True:
                await conn.read()
    detect = time.monotonic() - t0
    await conn.close()
    assert not Path(server.path).exists()
    with pytest.raises(LinkError):
        await open_connection(server.path)
    server.replug()
    conn = await open_connection(server.path)
    await conn.write(b"again")
    assert await read_exactly(conn, 9) == b"ack:again"
    await conn.close()
    await server.close()
    assert detect < 1.0
    print(f"pty unplug seen by the reader after {detect * 1000:.1f} ms")


# --------------------------------------------------------------------------- link


class Device:
    """A device on an in-process pipe that talks every ``period`` s unless silent."""

    def __init__(self, period: float = 0.01) -> None:
        self.period = period
        self.silent = False
        self.present = True
        self.conns: list[Connection] = []
        self.tasks: list[asyncio.Task[None]] = []

    async def opener(self) -> Connection:
        if not self.present:
            raise LinkError("no such device")
        host, dev = pipe_pair()
        self.conns.append(dev)
        self.tasks.append(asyncio.create_task(self._talk(dev)))
        return host

    async def _talk(self, conn: Connection) -> None:
        try:
            while True:
                await asyncio.sleep(self.period)
                if not self.silent:
                    await conn.write(b"*X;2;001;  ;0;150;0\r\n")
        except LinkError:
            pass

    async def unplug(self) -> None:
        self.present = False
        for c in self.conns:
            await c.close()

    async def close(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def test_link_silence_unplug_and_recovery_are_reported() -> None:
    dev = Device()
    states: list[tuple[float, LinkState]] = []
    link = Link(
        dev.opener,
        on_data=lambda data: None,
        on_state=lambda s: states.append((time.monotonic(), s)),
        silence_timeout=0.3,
        backoff=Backoff(0.02, 0.1),
    )
    await link.start()
    try:
        await link.wait_up(5)
        assert link.up and link.stats.bytes_rx > 0
        # silence
        t0 = time.monotonic()
        dev.silent = True
        await link.wait_down(5)
        t_silent = time.monotonic() - t0
        assert link.state.code == "LINK_SILENT"
        dev.silent = False
        t0 = time.monotonic()
        await link.wait_up(5)
        t_back = time.monotonic() - t0
        # unplug
        t0 = time.monotonic()
        await dev.unplug()
        await link.wait_down(5)
        t_unplug = time.monotonic() - t0
        await asyncio.sleep(0.3)
        assert link.stats.open_failures >= 2  # it keeps trying, with backoff
        dev.present = True
        t0 = time.monotonic()
        await link.wait_up(5)
        t_replug = time.monotonic() - t0
    finally:
        await link.stop()
        await dev.close()
    ups = [s.up for _, s in states]
    assert ups == [True, False, True, False, True, False]  # one report per change, then "stopped"
    assert 0.25 < t_silent < 0.3 + 1.5
    assert t_unplug < 0.5
    assert t_replug < 0.1 + 1.0  # backoff capped at 0.1 s
    print(
        f"link: silent -> down {t_silent:.3f} s (timeout 0.3), back up {t_back:.3f} s; "
        f"unplug -> down {t_unplug * 1000:.1f} ms; replug -> up {t_replug:.3f} s"
    )


async def test_link_stop_is_prompt_while_data_flows() -> None:
    """Regression: on 3.11 asyncio.wait_for swallowed a cancel racing a finished read."""
    for _ in range(20):
        dev = Device(period=0.0005)
        link = Link(dev.opener, on_data=lambda d: None, silence_timeout=0.5)
        await link.start()
        await link.wait_up(5)
        await asyncio.sleep(random.uniform(0, 0.01))
        async with asyncio.timeout(2):
            await link.stop()
        await dev.close()
        assert not link.up


async def test_link_without_silence_timeout_is_up_when_open_and_drop_reconnects() -> None:
    dev = Device()
    dev.silent = True
    link = Link(dev.opener, on_data=lambda d: None, backoff=Backoff(0.01, 0.05))
    with pytest.raises(LinkError):
        await link.write(b"x")  # not started: no connection
    await link.start()
    try:
        await link.wait_up(5)
        await link.write(b"*X\r\n")  # polled devices: writable before the first byte
        link.drop("no answer to 3 polls")
        await link.wait_down(5)
        assert link.state.reason == "no answer to 3 polls"
        await link.wait_up(5)
        assert link.stats.opens == 2
    finally:
        await link.stop()
        await dev.close()


async def test_link_over_a_real_tty_path_comes_back_when_the_port_returns(tmp_path: Path) -> None:
    async def talk(conn: Connection) -> None:
        while True:
            await conn.write(b"tick\r\n")
            await asyncio.sleep(0.01)

    server = await serve_pty(talk, link=tmp_path / "ttyACM-sim")
    link = Link(
        serial_opener(server.path), on_data=lambda d: None, silence_timeout=0.5,
        backoff=Backoff(0.02, 0.1),
    )  # fmt: skip
    await link.start()
    try:
        await link.wait_up(5)
        t0 = time.monotonic()
        await server.unplug()
        await link.wait_down(5)
        t_down = time.monotonic() - t0
        await asyncio.sleep(0.2)
        server.replug()
        t0 = time.monotonic()
        await link.wait_up(5)
        t_up = time.monotonic() - t0
    finally:
        await link.stop()
        await server.close()
    assert t_down < 1.0
    print(f"tty link: unplug -> down {t_down * 1000:.1f} ms; port back -> up {t_up:.3f} s")


# --------------------------------------------------------------------------- faults


async def test_faulty_connection_byte_by_byte_and_delay() -> None:
    host, dev = pipe_pair()
    faulty = FaultyConnection(host, rx=Faults(chunk_size=1, delay=0.001))
    await dev.write(b"abcdef")
    chunks = [await faulty.read() for _ in range(6)]
    assert chunks == [b"a", b"b", b"c", b"d", b"e", b"f"]


def test_garbage_and_corruption_rates() -> None:
    data = b"*X;2;001;  ;0;150;0\r\n" * 500
    f = Faults(garbage_rate=0.01, seed=4)
    out = mangle(data, f)
    assert len(out) == len(data) + f.stats.garbage_bytes
    assert 60 <= f.stats.garbage_bytes <= 150  # 1 % of 10,500 bytes
    c = Faults(corrupt_rate=0.01, seed=4)
    out = mangle(data, c)
    assert len(out) == len(data)
    assert sum(a != b for a, b in zip(out, data, strict=True)) == c.stats.corrupted_bytes > 0


def test_garbage_between_frames_only() -> None:
    data = b"line one\r\nline two\r\n" * 50
    f = Faults(garbage_rate=1.0, frame_end=b"\n", garbage_alphabet=b"#", seed=1)
    out = mangle(data, f)
    for frame in out.split(b"\n"):
        assert b"#" not in frame.lstrip(b"#")  # garbage only at the start of a frame


async def test_dropped_writes_and_silence() -> None:
    host, dev = pipe_pair()
    faulty = FaultyConnection(host, tx=Faults(drop_rate=1.0), rx=Faults(silent=True))
    await faulty.write(b"lost")
    await dev.write(b"unheard")
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await faulty.read()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await dev.read()
    assert faulty.tx.stats.dropped_chunks == 1
    assert faulty.rx.stats.silenced_bytes == 7


async def test_faulty_opener_unplug_replug() -> None:
    dev = Device()
    opener = FaultyOpener(dev.opener)
    conn = await opener()
    assert await conn.read()
    opener.unplug()
    with pytest.raises(LinkError):
        await conn.read()
    with pytest.raises(LinkError):
        await opener()
    opener.replug()
    assert await (await opener()).read()
    await dev.close()


def test_parse_faults() -> None:
    f = parse_faults("chunk=1,garbage=0.01,drop=0.05,delay=0.002,silent=1,seed=9,between")
    assert (f.chunk_size, f.garbage_rate, f.drop_rate, f.delay, f.silent, f.seed) == (
        1, 0.01, 0.05, 0.002, True, 9,
    )  # fmt: skip
    assert f.frame_end == b"\n"
    for bad in ("garbage", "bogus=1", "garbage=x", "drop=1.5"):
        with pytest.raises(ValueError):
            parse_faults(bad)


# --------------------------------------------------------------------------- hub, base


async def test_event_hub_subscribers() -> None:
    hub = EventHub(maxsize=3)
    early = hub.subscribe()
    for i in range(5):
        hub.publish(DeviceEvent(device=str(i)))
    late = hub.subscribe()
    hub.publish(DeviceEvent(device="5"))
    got = [early.get_nowait() for _ in range(3)]
    assert [e.device for e in got if e] == ["3", "4", "5"]  # the oldest were dropped
    assert early.dropped == 3
    assert (await late.get(1)).device == "5"
    hub.close()
    assert [e async for e in late] == []


def test_driver_base_health_changes_and_fault_dump() -> None:
    d = DriverBase("wheel")
    sub = d.events()
    d.frames.rx(b"*X;4;001;  ;4;000;0")
    assert d.set_health(HealthState.ONLINE)
    assert not d.set_health(HealthState.ONLINE)
    d.set_health(HealthState.FAULT, "COMPONENT_FAULT", "motor")
    events = [sub.get_nowait(), sub.get_nowait(), sub.get_nowait()]
    assert [e.health.state for e in events if isinstance(e, HealthChanged)] == [
        HealthState.ONLINE, HealthState.FAULT,
    ]  # fmt: skip
    status = d.get_status()
    assert status["health"]["code"] == "COMPONENT_FAULT"
    assert status["fault_frames"][0].endswith("\tRX\t*X;4;001;  ;4;000;0")


# --------------------------------------------------------------------------- captures, GPIO


def test_read_capture_formats() -> None:
    log = b"# session 3\n1757990686.581\tRX\t*X;2;002;31;0;146;1\n1757990686.6\tTX\t*u 1\n"
    assert is_frame_log(log)
    recs = list(read_capture(log))
    assert [(r.direction, r.data, r.session) for r in recs] == [
        ("SESSION", b"", 3), ("RX", b"*X;2;002;31;0;146;1", 3), ("TX", b"*u 1", 3),
    ]  # fmt: skip
    assert recs[1].time == 1757990686.581
    raw = b"*X;2;002;31;0;146;1\r\n\x00\xff"
    assert not is_frame_log(raw)
    assert next(iter(read_capture(raw))).data == raw


def test_pin_factory_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpiozero.pins.mock import MockFactory

    assert isinstance(make_pin_factory("mock"), MockFactory)
    monkeypatch.delenv("GPIOZERO_PIN_FACTORY", raising=False)
    model = tmp_path / "model"
    model.write_bytes(b"Raspberry Pi 4 Model B Rev 1.4\x00")
    assert is_raspberry_pi(str(model))
    model.write_bytes(b"QEMU Virtual Machine")
    assert not is_raspberry_pi(str(model))
    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
    assert isinstance(make_pin_factory("auto"), MockFactory)
    with pytest.raises(ValueError):
        make_pin_factory("bogus")


async def test_a_close_cancelled_as_the_stream_closes_ends_cancelled() -> None:
    """stop() cancels a connection's close in the very turn the stream finishes closing:
    the closing task must end cancelled. With ``asyncio.wait_for`` (Python 3.11,
    gh-86296) the cancellation was swallowed and the close returned as if nothing had
    asked it to stop (the USB shoe's hang, found in drivers/usb.py, had this shape)."""
    from drivers.transport import StreamConnection

    loop = asyncio.get_running_loop()
    closed: asyncio.Future[None] = loop.create_future()

    class Transport:
        def is_closing(self) -> bool:
            return False

        def abort(self) -> None:
            pass

    class Writer:
        transport = Transport()

        async def wait_closed(self) -> None:
            await closed

    conn = StreamConnection(asyncio.StreamReader(), Writer(), "test stream")  # type: ignore[arg-type]
    closer = asyncio.create_task(conn.close())
    for _ in range(3):
        await asyncio.sleep(0)  # the closer now waits for the stream to close
    assert not closer.done()
    closed.set_result(None)  # the stream closes, and in the same turn
    closer.cancel()  # stop() cancels the task that was closing it
    async with asyncio.timeout(5):
        await asyncio.wait([closer])
    assert closer.cancelled()
    assert conn.closed
