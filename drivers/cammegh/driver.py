"""The Cammegh SS2 wheel driver: a :class:`~drivers.transport.Link`, the line codec,
the :class:`~drivers.cammegh.tracker.WheelTracker`, and the integrator's commands.

Configuration (``[devices.<name>]`` with ``driver = "cammegh-ss2"``): see
:data:`CammeghDriver.SETTINGS` and ``docs/drivers.md``.

Health: OFFLINE while the port is closed or silent, or while no valid status line
arrived for ``status_timeout_ms`` (bytes that never form a status line: wrong baud
rate, a second program on the port); FAULT while a warning flag's rule says fault
(component fault) or after a ``*F`` fault packet until the next game starts or a
self-test passes; ONLINE otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from tablecommon.settings import FieldSpec

from ..base import DeviceTimeout, DriverError, HealthState, LinkError
from ..common import DriverBase
from ..link import Backoff, Link, LinkState
from ..transport import Opener, cancel_and_wait, serial_opener
from .codec import (
    FAULT_CODES,
    Direction,
    FaultPacket,
    Frame,
    GameState,
    Garbled,
    LineDecoder,
    ModeBit,
    Reply,
    Status,
    cmd_full_version,
    cmd_manufacturer,
    cmd_mode,
    cmd_poll_status,
    cmd_power,
    cmd_restart,
    cmd_self_test,
    cmd_setup_query,
    cmd_start_game,
    cmd_version,
)
from .events import (
    GameStateChanged,
    GameVoided,
    SelfTestResult,
    WheelEvent,
    WheelFault,
    WheelWarning,
)
from .policy import PolicySettings
from .tracker import WheelTracker

log = logging.getLogger(__name__)

__all__ = ["CammeghDriver", "CommandRefused"]


class CommandRefused(DriverError):
    """The wheel answered ``BUSY`` or ``NO`` to a command."""

    code = "COMMAND_REFUSED"


def _ms(v: int) -> float:
    return v / 1000.0


class CammeghDriver(DriverBase[WheelEvent]):
    """Cammegh Slingshot 2 / SS2 roulette wheel controller over RS-232."""

    driver_name = "cammegh-ss2"

    SETTINGS: ClassVar[dict[str, FieldSpec]] = {
        "port": FieldSpec(
            "str",
            required=True,
            doc="serial port URL: /dev/serial/by-id/..., /dev/ttyUSB0, socket://host:port",
        ),
        "baud": FieldSpec(
            "int", 9600, doc="line speed; the SS2 uses 9600 8N1", range=(1200, 115200)
        ),
        "auto_status": FieldSpec(
            "bool",
            True,
            doc="the wheel sends status every 500 ms (mode bit 128); false: poll with *X",
        ),
        "poll_interval_ms": FieldSpec(
            "int",
            500,
            doc="*X poll period when auto_status is false (>= 100 ms)",
            range=(100, 10000),
        ),
        "status_timeout_ms": FieldSpec(
            "int",
            2000,
            doc="no byte / no valid status line for this long: link silent, device offline",
            range=(600, 60000),
        ),
        "reply_timeout_ms": FieldSpec(
            "int", 1000, doc="how long to wait for a command's reply", range=(100, 10000)
        ),
        "reconnect_max_ms": FieldSpec(
            "int",
            1000,
            doc="cap of the reconnect backoff (back online within 2 s of the port returning)",
            range=(100, 60000),
        ),
        "pockets": FieldSpec(
            "int",
            37,
            doc="pockets of the wheel (*T z): 37 single zero, 38 double zero",
            choices=(37, 38, 39, 40),
        ),
        "launch_grace_ms": FieldSpec(
            "int",
            3000,
            doc="ignore flag 8 (launch failure) during the first part of state 3",
            range=(3000, 60000),
            cite="Cammegh SS2 integration guide 4.1 (at least 3 s)",
        ),
        "no_ball_grace_ms": FieldSpec(
            "int",
            5000,
            doc="ignore flag 1 (no ball) in state 4 this long before voiding",
            range=(5000, 75000),
            cite="Cammegh SS2 integration guide 4.1 (at least 5 s; the wheel stops at 75 s)",
        ),
        "launch_alert_ms": FieldSpec(
            "int",
            30000,
            doc="alert when launch retries (flag 8, state 2) last this long",
            range=(1000, 600000),
        ),
        "auto_restart_after_void": FieldSpec(
            "bool",
            False,
            doc="send *R by itself after a void miss-spin (else the round logic calls restart())",
        ),
        "identify_on_connect": FieldSpec(
            "bool", True, doc="read the firmware version (*S) and mode (*o) after each connect"
        ),
    }

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        pin_factory: Any = None,
        opener: Opener | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name, clock=clock)
        s = {k: spec.default for k, spec in self.SETTINGS.items()}
        s.update(settings)
        self.settings = s
        self.port = str(s["port"] or "")
        self.auto_status = bool(s["auto_status"])
        self.poll_interval = _ms(s["poll_interval_ms"])
        self.status_timeout = _ms(s["status_timeout_ms"])
        self.reply_timeout = _ms(s["reply_timeout_ms"])
        self.auto_restart = bool(s["auto_restart_after_void"])
        self.identify = bool(s["identify_on_connect"])
        self.decoder = LineDecoder()
        self.tracker = WheelTracker(
            name,
            policy=PolicySettings(
                launch_grace=_ms(s["launch_grace_ms"]),
                no_ball_grace=_ms(s["no_ball_grace_ms"]),
                launch_alert=_ms(s["launch_alert_ms"]),
            ),
            pockets=int(s["pockets"]),
        )
        self.link = Link(
            opener or serial_opener(self.port, int(s["baud"])),
            on_data=self._on_data,
            on_state=self._on_link_state,
            on_connect=self._on_connect,
            silence_timeout=self.status_timeout if self.auto_status else None,
            backoff=Backoff(0.1, max(0.1, _ms(s["reconnect_max_ms"]))),
            name=f"{name} ({self.port or 'custom opener'})",
        )
        self.version = ""
        self.mode: int | None = None
        self.last_status_at: float | None = None
        self._link_up_at = 0.0
        self._fault_packet: WheelFault | None = None
        self._waiter: tuple[str, asyncio.Future[Frame]] | None = None
        self._cmd_lock = asyncio.Lock()
        self._self_test_codes: list[int] | None = None
        self._self_test_event = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._watchdog: asyncio.Task[None] | None = None
        self._running = False

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Open the port in the background and start the watchdog; returns at once."""
        if self._running:
            return
        self._running = True
        await self.link.start()
        self._watchdog = asyncio.create_task(self._watch(), name=f"{self.name} watchdog")

    async def stop(self) -> None:
        """Stop the watchdog, pending commands and the link; idempotent."""
        self._running = False
        tasks = [self._watchdog, *self._tasks]
        self._watchdog = None
        await cancel_and_wait(*tasks)
        await self.link.stop()
        self.set_health(HealthState.OFFLINE, "STOPPED", "driver stopped")

    # ------------------------------------------------------------------ input path
    def _on_data(self, data: bytes) -> None:
        now = self.clock()
        for item in self.decoder.feed(data):
            self.frames.rx(item.raw)
            if isinstance(item, Garbled):
                self.counters["garbled_lines"] += 1
                log.debug("%s: garbled line %r: %s", self.name, item.raw, item.reason)
                continue
            self._on_frame(item, now)

    def _on_frame(self, frame: Frame, now: float) -> None:
        self.counters[f"rx.{type(frame).__name__}"] += 1
        waiter = self._waiter
        if isinstance(frame, Status):
            self.last_status_at = now
            if waiter is not None and "X" in waiter[0] and not waiter[1].done():
                waiter[1].set_result(frame)
        elif isinstance(frame, FaultPacket) and self._self_test_codes is not None:
            self._self_test_codes.append(frame.code)
            self._self_test_event.set()
            if waiter is not None and "F" in waiter[0] and not waiter[1].done():
                waiter[1].set_result(frame)
            return
        elif isinstance(frame, Reply):
            if waiter is not None and frame.letter in waiter[0] and not waiter[1].done():
                waiter[1].set_result(frame)
            return
        for event in self.tracker.feed(frame, now):
            self._handle_event(event)
        self._refresh_health()

    def _handle_event(self, event: WheelEvent) -> None:
        if isinstance(event, WheelFault):
            self._fault_packet = event
        elif isinstance(event, SelfTestResult) and event.passed:
            self._fault_packet = None
        if isinstance(event, GameVoided) and event.restart_required and self.auto_restart:
            self._spawn(self._auto_restart(event))
        if isinstance(event, GameStateChanged) and event.state == GameState.PLACE_BETS:
            self._fault_packet = None  # a new game started: the wheel recovered
        self.emit(event)

    async def _auto_restart(self, event: GameVoided) -> None:
        try:
            await self.restart()
            log.info("%s: sent *R after void (%s)", self.name, event.reason)
        except DriverError as exc:
            log.warning("%s: automatic restart failed: %s", self.name, exc)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ health
    def _on_link_state(self, state: LinkState) -> None:
        self.decoder.reset()
        self._link_up_at = self.clock()
        if not state.up:
            self.counters["link_down"] += 1
        self._refresh_health()

    def _refresh_health(self) -> None:
        if not self._running:
            return
        ls = self.link.state
        if not ls.up:
            self.set_health(HealthState.OFFLINE, ls.code or LinkError.code, ls.reason)
            return
        now = self.clock()
        ref = self.last_status_at if self.last_status_at is not None else self._link_up_at
        if now - ref > self.status_timeout:
            self.set_health(
                HealthState.OFFLINE,
                "NO_STATUS",
                f"no valid status line for {self.status_timeout:g} s "
                f"({self.counters['garbled_lines']} garbled lines so far)",
            )
            return
        if self.last_status_at is None:
            return  # connected, first status line not in yet
        if self.tracker.fault is not None:
            code, message = self.tracker.fault
            self.set_health(HealthState.FAULT, code, message)
            return
        if self._fault_packet is not None:
            fp = self._fault_packet
            self.set_health(HealthState.FAULT, f"WHEEL_FAULT_{fp.code}", fp.meaning)
            return
        self.set_health(HealthState.ONLINE)

    async def _watch(self) -> None:
        """Polls (if ``auto_status`` is off) and notices the absence of status lines."""
        missed = 0
        period = self.poll_interval if not self.auto_status else min(0.25, self.status_timeout / 4)
        while True:
            await asyncio.sleep(period)
            if not self.auto_status and self.link.connected and not self._cmd_lock.locked():
                before = self.last_status_at
                with contextlib.suppress(LinkError):
                    await self.link.write(cmd_poll_status())
                    self.frames.tx(b"*X")
                await asyncio.sleep(min(self.reply_timeout, period))
                if self.last_status_at == before:
                    missed += 1
                    if missed * period >= self.status_timeout:
                        missed = 0
                        self.link.drop(f"no answer to *X for {self.status_timeout:g} s")
                else:
                    missed = 0
            self._refresh_health()

    async def _on_connect(self) -> None:
        if not self.identify:
            return
        try:
            self.version = await self.version_string()
            self.mode = await self.operating_mode()
        except DriverError as exc:
            log.info("%s: could not identify the wheel: %s", self.name, exc)
            return
        if self.auto_status and not self.mode & ModeBit.AUTO_STATUS:
            self.emit(
                WheelWarning(
                    device=self.name,
                    code="MODE_NO_AUTO_STATUS",
                    message=f"operating mode {self.mode} lacks bit 128 (automatic status) but "
                    "auto_status is configured: set_automatic_status(True) or poll",
                    flags=0,
                    flag_names=(),
                    state=int(self.tracker.last.state) if self.tracker.last else 0,
                    spin=self.tracker.last.spin if self.tracker.last else 0,
                    action="warn",
                    source="suggested",
                )
            )

    # ------------------------------------------------------------------ commands
    async def _command(self, line: bytes, letters: str, timeout: float | None = None) -> Frame:
        async with self._cmd_lock:
            fut: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
            self._waiter = (letters, fut)
            try:
                self.frames.tx(line.rstrip(b"\r\n"))
                self.counters["tx.commands"] += 1
                await self.link.write(line)
                try:
                    async with asyncio.timeout(timeout or self.reply_timeout):
                        return await fut
                except TimeoutError:
                    self.counters["tx.timeouts"] += 1
                    cmd = line.rstrip(b"\r\n").decode("ascii")
                    raise DeviceTimeout(f"{self.name}: no reply to {cmd}") from None
            finally:
                self._waiter = None

    async def _reply(self, line: bytes, letter: str, ok: tuple[str, ...] = ("OK",)) -> str:
        frame = await self._command(line, letter)
        assert isinstance(frame, Reply)
        if frame.text not in ok:
            cmd = line.rstrip(b"\r\n").decode("ascii")
            raise CommandRefused(f"{self.name}: {cmd} answered {frame.text!r}")
        return frame.text

    async def start_game(self, direction: Direction | str | None = None) -> None:
        """``*u 1`` / ``*u 3``: start a game (user-start mode), optionally anticlockwise."""
        if isinstance(direction, str):
            direction = Direction[direction.upper()]
        await self._reply(cmd_start_game(direction), "u")

    async def restart(self) -> None:
        """``*R``: restart the game; required after a void miss-spin."""
        await self._reply(cmd_restart(), "R")

    async def power(self, on: bool) -> bool:
        """``*P 1``/``*P 0``; returns False if the wheel was already in that power state."""
        return await self._reply(cmd_power(on), "P", ("OK", "NO")) == "OK"

    async def version_string(self) -> str:
        """``*S``: the firmware version (``V2.50``)."""
        frame = await self._command(cmd_version(), "S")
        assert isinstance(frame, Reply)
        self.version = frame.text
        return frame.text

    async def full_version(self) -> str:
        """``*V``: the full identification string."""
        frame = await self._command(cmd_full_version(), "V")
        assert isinstance(frame, Reply)
        return frame.text

    async def manufacturer(self) -> str:
        """``*K``: ``CAM`` for a Cammegh controller."""
        frame = await self._command(cmd_manufacturer(), "K")
        assert isinstance(frame, Reply)
        return frame.text

    async def operating_mode(self) -> int:
        """``*o``: the operating mode bit sum."""
        frame = await self._command(cmd_mode(), "o")
        assert isinstance(frame, Reply)
        try:
            self.mode = int(frame.text)
        except ValueError:
            raise CommandRefused(f"{self.name}: *o answered {frame.text!r}") from None
        return self.mode

    async def set_operating_mode(self, mode: int) -> None:
        """``*o <mode>``: only accepted in state 6 (else ``*o BUSY``)."""
        await self._reply(cmd_mode(mode), "o", (str(mode),))
        self.mode = mode

    async def set_automatic_status(self, on: bool) -> int:
        """Set or clear mode bit 128 (status every 500 ms); returns the new mode."""
        mode = await self.operating_mode()
        new = mode | ModeBit.AUTO_STATUS if on else mode & ~ModeBit.AUTO_STATUS
        if new != mode:
            await self.set_operating_mode(int(new))
        return int(new)

    async def poll_status(self) -> Status:
        """``*X``: one status line."""
        frame = await self._command(cmd_poll_status(), "X")
        assert isinstance(frame, Status)
        return frame

    async def setup_query(self, letter: str) -> str:
        """``*T <LETTER>``: one setup parameter, as the wheel prints it (``161``)."""
        frame = await self._command(cmd_setup_query(letter), "T")
        assert isinstance(frame, Reply)
        head, _, value = frame.text.partition(" ")
        if head != letter.lower():
            raise CommandRefused(f"{self.name}: *T {letter.upper()} answered {frame.text!r}")
        return value

    async def self_test(self, timeout: float = 330.0, quiet: float = 1.0) -> SelfTestResult:
        """``*F``: run the self-test (state 6 only, up to 5 minutes).

        Collects every ``*F <code>`` until ``quiet`` seconds pass without another;
        emits and returns a :class:`SelfTestResult`. Raises :class:`CommandRefused`
        on ``*F BUSY``.
        """
        self._self_test_codes = []
        self._self_test_event.clear()
        try:
            first = await self._command(cmd_self_test(), "F", timeout=timeout)
            if isinstance(first, Reply):
                raise CommandRefused(f"{self.name}: *F answered {first.text!r} (state 6 only)")
            while True:
                self._self_test_event.clear()
                try:
                    async with asyncio.timeout(quiet):
                        await self._self_test_event.wait()
                except TimeoutError:
                    break
            codes = tuple(self._self_test_codes)
        finally:
            self._self_test_codes = None
        result = SelfTestResult(
            device=self.name,
            codes=codes,
            meanings=tuple(FAULT_CODES.get(c, f"unknown code {c}") for c in codes),
            passed=codes == (0,),
        )
        self._handle_event(result)
        self._refresh_health()
        return result

    # ------------------------------------------------------------------ snapshot
    def get_status(self) -> dict[str, Any]:
        out = super().get_status()
        out.update(
            port=self.port,
            link={
                "up": self.link.up,
                "reason": self.link.state.reason,
                **self.link.stats.to_json(),
            },
            version=self.version,
            mode=self.mode,
            wheel=self.tracker.snapshot(),
            decoder={"lines": self.decoder.lines, "garbled": self.decoder.garbled},
        )
        return out
