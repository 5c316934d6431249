"""A simulated Cammegh SS2 wheel controller speaking the real wire protocol.

Behaves like the wheel of the real capture (firmware V2.50, mode 1159 = user start,
reverse each game, automatic status every 500 ms): power-up in state 6, ``*P 1``
-> 1 -> 2, ``*u 1`` -> braking, launch, 3 -> 4 -> bare number line -> 5 -> 2 with the
spin number + 1 (wrapping 256 -> 1). Replies as observed: ``*P NO`` when already in
that power state, ``*o BUSY`` / ``*F BUSY`` outside state 6, ``*<c> NO`` for
unknown commands, ``*T <letter> <value>`` for queries.

Programmatic API (tests, demo):

- ``await sim.spin(number=None)``: the croupier's "start" key: plays one game and
  returns the number (drawn from the seeded RNG when None);
- ``sim.set_next(number)``: the number of the next game a host starts with ``*u``;
- ``sim.inject(name, **params)``: wheel faults (see :data:`INJECTABLE`);
- ``sim.faults``: :class:`~drivers.testing.Faults` applied to everything it sends
  (garbage, chunking, dropped writes, silence...);
- ``sim.results``: every (spin, number) it announced, to compare with what a
  driver accepted;
- serving: ``await sim.serve_pty()``, ``await sim.serve_tcp(port)``,
  ``sim.opener()`` (in-process pipe, a fresh one per open).

Choices where the real behaviour is unknown (documented in
``docs/protocols/cammegh-ss2.md``): ``*u`` outside an idle state 2 answers
``*u NO``; ``*R`` outside a miss-spin restarts the game in progress (state 1 -> 2).
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar

from ..base import LinkError
from ..testing import Faults, FaultyConnection
from ..transport import (
    Connection,
    Opener,
    PtyServer,
    TcpServer,
    cancel_and_wait,
    pipe_pair,
    serve_pty,
    serve_tcp,
)
from .codec import (
    Direction,
    GameState,
    ModeBit,
    Status,
    WarningFlag,
    encode_fault,
    encode_reply,
    encode_status,
    encode_winning_line,
    next_spin,
)

__all__ = ["INJECTABLE", "CammeghSim", "SimTiming"]


@dataclass(frozen=True)
class SimTiming:
    """Durations in seconds (defaults: the real wheel's medians, [ref §12.3])."""

    status_interval: float = 0.5
    before_game: float = 9.0  # state 1 after *P 1
    braking: float = 2.5  # *u 1 -> rotor stopped at the firing position
    launch: float = 3.5  # fire -> ball seen in the rim (state 3)
    ball_in_rim: float = 4.0  # state 3
    no_more_bets: float = 26.5  # state 4
    result: float = 5.5  # state 5 -> next game's state 2
    power_down: float = 4.0  # *P 0 -> state 6
    self_test: float = 60.0  # *F -> *F <code>
    no_ball_stop: float = 75.0  # flag 1 this long: the wheel stops itself

    def scaled(self, factor: float) -> SimTiming:
        return replace(self, **{f.name: getattr(self, f.name) * factor for f in fields(self)})

    @classmethod
    def fast(cls) -> SimTiming:
        """For tests: a game in about a quarter of a second, 3-4 status lines per state."""
        return cls(
            status_interval=0.02,
            before_game=0.06,
            braking=0.02,
            launch=0.02,
            ball_in_rim=0.06,
            no_more_bets=0.06,
            result=0.08,
            power_down=0.06,
            self_test=0.1,
            no_ball_stop=2.0,
        )


#: Wheel faults for :meth:`CammeghSim.inject` and their parameters.
INJECTABLE: dict[str, str] = {
    "launch_failure": "next launch fails for `duration` s (flag 8 in state 2), then succeeds",
    "miss_spin": "next game: flag 2 in state 3 until the host sends *R (then a re-spin)",
    "no_ball": "next game: flag 1 in state 4 for `duration` s (>= no_ball_stop: wheel stops)",
    "component_fault": "now: the game ends unread, flag 4, *F `code` if mode bit 256, then power-down to state 6",
    "power_down": "now: the wheel stops by itself (state 6) without a host command",
    "power_cycle": "now: mains power cycle (state 6, spin 001, no last number)",
    "garbage_line": "now: one line of random bytes",
    "torn_line": "now: the tail of a status line (like the capture's damaged lines)",
    "silence": "now: send nothing for `duration` s",
    "line_mismatch": "next result: the bare line shows another number than the status",
    "self_test_codes": "the next self-tests report `codes` (default (0,) = pass)",
}


class CammeghSim:
    """A simulated SS2 controller; one instance may serve several connections."""

    def __init__(
        self,
        *,
        seed: int | None = 0,
        timing: SimTiming | None = None,
        mode: int = 1159,
        state: GameState = GameState.CLOSE_TABLE,
        spin: int = 1,
        pockets: int = 37,
        faults: Faults | None = None,
        version: str = "V2.50",
        bias: Mapping[int, float] | None = None,
    ) -> None:
        self.rng = random.Random(seed)
        #: A biased wheel (integrity tests): pocket -> weight (a fair pocket weighs 1).
        self.bias = dict(bias or {})
        self.timing = timing or SimTiming()
        self.mode = mode
        self.history: set[tuple[int, int]] = set()  # every (spin, state) the wheel was in
        self.spin_number = spin
        self._state = GameState(state)
        self.history.add((spin, int(state)))  # the status line's spin counter (1..256)
        self.win: int | None = None
        self.flags = WarningFlag(0)
        self.speed = 0 if state == GameState.CLOSE_TABLE else 165
        self.direction = Direction.CLOCKWISE
        self.pockets = pockets
        self.faults = faults or Faults()
        self.version = version
        self.quiet = False  # *q 0
        self.separator = ";"
        self.results: list[tuple[int, int]] = []
        self.received: list[bytes] = []
        self.setup: dict[str, str] = {
            "d": "15", "c": "8465", "p": "50", "q": "800", "k": "1900", "i": "10",
            "j": "6705 3386 26 1", "r": "28000 32000", "s": "16.0 18.0", "t": "4000",
            "n": "2920", "m": "2.0", "h": "60", "z": str(pockets), "g": "0",
        }  # fmt: skip
        self.self_test_codes: tuple[int, ...] = (0,)
        self._next: deque[int] = deque()
        self._pending: dict[str, Any] = {}
        self._conns: set[Connection] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._game: asyncio.Task[None] | None = None
        self._power: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._silent_until = 0.0
        self._restart = asyncio.Event()
        self._result_cond = asyncio.Condition()
        self._result_lock = asyncio.Lock()  # no status line between the bare line and state 5
        self._servers: list[PtyServer | TcpServer] = []

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the automatic status output; servers call it too."""
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._tick(), name="ss2 sim ticker")

    async def stop(self) -> None:
        for server in self._servers:
            await server.close()
        self._servers.clear()
        await cancel_and_wait(self._ticker, self._game, self._power, *self._tasks)
        self._ticker = self._game = self._power = None
        for conn in list(self._conns):
            await conn.close()
        self._conns.clear()

    async def close(self) -> None:
        """The same as :meth:`stop`, under the name every simulator has."""
        await self.stop()

    async def __aenter__(self) -> CammeghSim:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ serving
    async def serve(self, conn: Connection) -> None:
        """Talk to one host over ``conn`` until it closes."""
        await self.start()
        out = FaultyConnection(conn, tx=self.faults)
        self._conns.add(out)
        buf = bytearray()
        try:
            while True:
                data = await conn.read()
                for byte in data:
                    if byte in (0x0D, 0x0A):
                        if buf:
                            line = bytes(buf)
                            buf.clear()
                            self.received.append(line)
                            await self._command(line)
                    elif len(buf) < 200:
                        buf.append(byte)
        except LinkError:
            pass
        finally:
            self._conns.discard(out)

    async def serve_pty(self, link: str | Path | None = None) -> PtyServer:
        server = await serve_pty(self.serve, link)
        self._servers.append(server)
        await self.start()
        return server

    async def serve_tcp(self, port: int = 0, host: str = "127.0.0.1") -> TcpServer:
        server = await serve_tcp(self.serve, host, port)
        self._servers.append(server)
        await self.start()
        return server

    def pick_number(self) -> int:
        """The pocket the ball falls in: uniform, or weighted by :attr:`bias`."""
        if not self.bias:
            return self.rng.randrange(self.pockets)
        weights = [self.bias.get(p, 1.0) for p in range(self.pockets)]
        return self.rng.choices(range(self.pockets), weights)[0]

    def opener(self) -> Opener:
        """An opener for a driver's Link: each call is a fresh in-process pipe."""

        async def open_pipe() -> Connection:
            host, device = pipe_pair("ss2-sim")
            self._spawn(self.serve(device))
            return host

        return open_pipe

    # ------------------------------------------------------------------ output
    def status(self) -> Status:
        return Status(
            self.state,
            self.spin_number,
            self.win,
            self.flags,
            self.speed,
            self.direction,
            self.separator,
        )

    async def send(self, data: bytes) -> None:
        """Send raw bytes to every connected host (through ``faults``)."""
        loop = asyncio.get_running_loop()
        if loop.time() < self._silent_until:
            return
        for conn in list(self._conns):
            try:
                await conn.write(data)
            except LinkError:
                self._conns.discard(conn)

    async def send_status(self) -> None:
        await self.send(encode_status(self.status()))

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.timing.status_interval)
            if self.mode & ModeBit.AUTO_STATUS and not self.quiet:
                async with self._result_lock:
                    await self.send_status()

    # ------------------------------------------------------------------ commands
    async def _reply(self, letter: str, text: str = "") -> None:
        await self.send(encode_reply(letter, text))

    async def _command(self, line: bytes) -> None:
        try:
            text = line.decode("ascii")
        except UnicodeDecodeError:
            text = "?"
        if not text.startswith("*"):
            return  # the real wheel ignores lines without the leading '*'
        letter = text[1:2] or " "
        arg = text[2:].strip() if len(text) > 2 and text[2:3] == " " else None
        exact = text[2:] == "" or text[2:3] == " "
        handler = self._HANDLERS.get(letter) if exact else None
        if handler is None:
            await self._reply(letter, "NO")
            return
        await handler(self, arg)

    async def _cmd_status(self, arg: str | None) -> None:
        await self.send_status()

    async def _cmd_power(self, arg: str | None) -> None:
        if arg == "1":
            if self.state != GameState.CLOSE_TABLE:
                await self._reply("P", "NO")
                return
            await self._reply("P", "OK")
            self._set_power_task(self._power_up())
        elif arg == "0":
            if self.state == GameState.CLOSE_TABLE:
                await self._reply("P", "NO")
                return
            await self._reply("P", "OK")
            if self._power is None or self._power.done():
                self._set_power_task(self._power_down())
        else:
            await self._reply("P", "NO")

    async def _cmd_restart(self, arg: str | None) -> None:
        await self._reply("R", "OK")
        if self._pending.get("awaiting_restart"):
            self._restart.set()
        elif self.state in (GameState.PLACE_BETS, GameState.BALL_IN_RIM, GameState.NO_MORE_BETS):
            self._cancel_game()
            self._set_power_task(self._to_state_2_via_1())

    async def _cmd_start(self, arg: str | None) -> None:
        if arg not in ("1", "3") or self.state != GameState.PLACE_BETS or self.game_running:
            await self._reply("u", "NO")
            return
        await self._reply("u", "OK")
        direction = Direction.ANTICLOCKWISE if arg == "3" else None
        self._start_game(self._next.popleft() if self._next else None, direction)

    async def _cmd_ident(self, arg: str | None) -> None:
        await self._reply("K", "CAM" if self.state == GameState.CLOSE_TABLE else "OK")

    async def _cmd_version(self, arg: str | None) -> None:
        await self._reply("S", self.version)

    async def _cmd_full_version(self, arg: str | None) -> None:
        text = f"{self.version} Cammegh / Syoptic - SlingShot 2 Roulette Wheel (simulated)"
        await self._reply("V", text)

    async def _cmd_mode(self, arg: str | None) -> None:
        if arg is None:
            await self._reply("o", str(self.mode))
            return
        if self.state != GameState.CLOSE_TABLE:
            await self._reply("o", "BUSY")
            return
        try:
            self.mode = int(arg)
        except ValueError:
            await self._reply("o", "NO")
            return
        await self._reply("o", str(self.mode))

    async def _cmd_extra(self, arg: str | None) -> None:
        await self._reply("O", f"{int(self.state)} 1 {self.setup['h']} {self.mode}")

    async def _cmd_quiet(self, arg: str | None) -> None:
        self.quiet = arg == "0"
        await self._reply("q", "OK")

    async def _cmd_self_test(self, arg: str | None) -> None:
        if self.state != GameState.CLOSE_TABLE:
            await self._reply("F", "BUSY")
            return

        async def run() -> None:
            await asyncio.sleep(self.timing.self_test)
            for code in self.self_test_codes:
                await self.send(encode_fault(code))

        self._spawn(run())

    async def _cmd_setup(self, arg: str | None) -> None:
        parts = (arg or "").split()
        if not parts or len(parts[0]) != 1:
            await self._reply("T", "NO")
            return
        letter = parts[0]
        if letter == "f":
            await self._reply("T", "OK")
        elif letter.isupper() and letter.lower() in self.setup and len(parts) == 1:
            await self._reply("T", f"{letter.lower()} {self.setup[letter.lower()]}")
        elif letter in self.setup and len(parts) > 1:
            self.setup[letter] = " ".join(parts[1:])
            await self._reply("T", "OK")
        else:
            await self._reply("T", "NO")

    _HANDLERS: ClassVar[dict[str, Callable[[CammeghSim, str | None], Awaitable[None]]]] = {
        "X": _cmd_status,
        "P": _cmd_power,
        "R": _cmd_restart,
        "u": _cmd_start,
        "K": _cmd_ident,
        "S": _cmd_version,
        "V": _cmd_full_version,
        "o": _cmd_mode,
        "O": _cmd_extra,
        "q": _cmd_quiet,
        "F": _cmd_self_test,
        "T": _cmd_setup,
    }

    # ------------------------------------------------------------------ game model
    @property
    def state(self) -> GameState:
        return self._state

    @state.setter
    def state(self, value: GameState) -> None:
        self._state = GameState(value)
        self.history.add((self.spin_number, int(value)))

    @property
    def game_running(self) -> bool:
        return self._game is not None and not self._game.done()

    def set_next(self, *numbers: int) -> None:
        """Numbers for the next games (then the seeded RNG)."""
        for n in numbers:
            if not 0 <= n < self.pockets:
                raise ValueError(f"no pocket {n} on a {self.pockets}-pocket wheel")
            self._next.append(n)

    async def spin(
        self, number: int | None = None, direction: Direction | None = None, timeout: float = 60.0
    ) -> int:
        """Start a game as the croupier's key does, wait for its result, return it.

        Waits first (up to ``timeout``) for the previous game to end (state 2);
        raises RuntimeError if the wheel is powered off (state 6).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.state != GameState.PLACE_BETS or self.game_running:
            if self.state == GameState.CLOSE_TABLE and (self._power is None or self._power.done()):
                raise RuntimeError("the wheel is powered off (state 6): power_on() first")
            if loop.time() > deadline:
                raise TimeoutError(f"wheel not ready for a game (state {int(self.state)})")
            await asyncio.sleep(self.timing.status_interval / 4)
        before = len(self.results)
        if number is None and self._next:
            number = self._next.popleft()
        self._start_game(number, direction)
        async with self._result_cond:
            async with asyncio.timeout(timeout):
                await self._result_cond.wait_for(lambda: len(self.results) > before)
        return self.results[before][1]

    async def wait_state(self, state: GameState, timeout: float = 10.0) -> None:
        async def poll() -> None:
            while self.state != state:
                await asyncio.sleep(self.timing.status_interval / 4)

        async with asyncio.timeout(timeout):
            await poll()

    async def power_on(self) -> None:
        """As if the host sent ``*P 1`` (no reply is sent)."""
        if self.state == GameState.CLOSE_TABLE:
            self._set_power_task(self._power_up())

    def inject(self, name: str, **params: Any) -> None:
        """Inject a wheel fault; see :data:`INJECTABLE`."""
        if name not in INJECTABLE:
            raise ValueError(f"unknown fault {name!r}; known: {', '.join(INJECTABLE)}")
        if name in ("launch_failure", "no_ball"):
            self._pending[name] = float(params.get("duration", 1.0))
        elif name in ("miss_spin", "line_mismatch"):
            self._pending[name] = True
        elif name == "component_fault":
            self._spawn(self._component_fault(int(params.get("code", 5))))
        elif name == "power_down":
            self._cancel_game()
            self._set_power_task(self._power_down())
        elif name == "power_cycle":
            self._cancel_game()
            if self._power is not None:
                self._power.cancel()
            self.spin_number, self.win = 1, None
            self.state = GameState.CLOSE_TABLE
            self.flags, self.speed = WarningFlag(0), 0
        elif name == "garbage_line":
            data = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 40)))
            self._spawn(self.send(data.replace(b"\n", b"") + b"\r\n"))
        elif name == "torn_line":
            whole = encode_status(self.status())
            self._spawn(self.send(whole[self.rng.randrange(2, len(whole) - 3) :]))
        elif name == "silence":
            self._silent_until = asyncio.get_running_loop().time() + float(
                params.get("duration", 1.0)
            )
        elif name == "self_test_codes":
            self.self_test_codes = tuple(params.get("codes", (0,)))

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _cancel_game(self) -> None:
        if self._game is not None:
            self._game.cancel()
            self._game = None
        self._pending.pop("awaiting_restart", None)

    def _set_power_task(self, coro: Awaitable[None]) -> None:
        if self._power is not None and not self._power.done():
            self._power.cancel()
        self._power = asyncio.ensure_future(coro)

    def _start_game(self, number: int | None, direction: Direction | None) -> None:
        self._game = asyncio.create_task(self._play(number, direction), name="ss2 sim game")

    async def _ramp(self, target: int, duration: float) -> None:
        steps = max(1, round(duration / self.timing.status_interval))
        start = self.speed
        for i in range(1, steps + 1):
            await asyncio.sleep(duration / steps)
            self.speed = round(start + (target - start) * i / steps)

    async def _power_up(self) -> None:
        self.state = GameState.BEFORE_GAME
        self.flags = WarningFlag(0)
        await self._ramp(self.rng.randrange(160, 181), self.timing.before_game)
        self.state = GameState.PLACE_BETS
        if not self.mode & ModeBit.USER_START:
            self._start_game(self._next.popleft() if self._next else None, None)

    async def _power_down(self) -> None:
        self._cancel_game()
        await self._ramp(0, self.timing.power_down)
        self.state = GameState.CLOSE_TABLE
        self.speed = 0

    async def _to_state_2_via_1(self) -> None:
        self.state = GameState.BEFORE_GAME
        self.flags = WarningFlag(0)
        await asyncio.sleep(self.timing.status_interval * 2)
        self.state = GameState.PLACE_BETS

    async def _component_fault(self, code: int) -> None:
        # The game in progress ends with the fault: a wheel whose motor or sensors
        # failed reads no winning number (it used to play on for four status lines, and
        # on a loaded machine reached state 5 with a number before it stopped).
        self._cancel_game()
        self.flags |= WarningFlag.COMPONENT_FAULT
        if self.mode & ModeBit.FAULT_PACKETS:
            await self.send(encode_fault(code))
        await asyncio.sleep(self.timing.status_interval * 4)
        await self._ramp(0, self.timing.power_down)
        self.state = GameState.CLOSE_TABLE  # flag 4 stays until the next *P 1

    async def _play(self, number: int | None, direction: Direction | None) -> None:
        t = self.timing
        await self._ramp(0, t.braking)
        if direction is not None:
            self.direction = direction
        elif self.mode & ModeBit.REVERSE_EACH_GAME:
            self.direction = Direction(1 - int(self.direction))
        failure = self._pending.pop("launch_failure", None)
        if failure:
            self.flags |= WarningFlag.LAUNCH_FAILURE
            await asyncio.sleep(failure)
            self.flags &= ~WarningFlag.LAUNCH_FAILURE
        await self._ramp(self.rng.randrange(160, 181), t.launch)
        self.state = GameState.BALL_IN_RIM
        if self._pending.pop("miss_spin", False):
            await asyncio.sleep(t.status_interval * 3)
            self.flags |= WarningFlag.MISS_SPIN
            self._restart.clear()
            self._pending["awaiting_restart"] = True
            await self._restart.wait()
            self._pending.pop("awaiting_restart", None)
            self.flags &= ~WarningFlag.MISS_SPIN
            await self._to_state_2_via_1()
            await self._play(number, direction)  # the wheel re-spins the same game
            return
        await asyncio.sleep(t.ball_in_rim)
        self.state = GameState.NO_MORE_BETS
        no_ball = self._pending.pop("no_ball", None)
        if no_ball:
            self.flags |= WarningFlag.NO_BALL
            if no_ball >= t.no_ball_stop:
                await asyncio.sleep(t.no_ball_stop)
                self.flags &= ~WarningFlag.NO_BALL
                await self._ramp(0, t.power_down)
                self.state = GameState.CLOSE_TABLE
                return
            await asyncio.sleep(no_ball)
            self.flags &= ~WarningFlag.NO_BALL
        await asyncio.sleep(t.no_more_bets)
        if number is None:
            number = self.pick_number()
        # The state-5 line follows at the next status tick, never a state-4 line
        # between (the real wheel: 15-497 ms after the bare line).
        async with self._result_lock:
            if not self.mode & ModeBit.NO_WINNING_LINE:
                shown = number
                if self._pending.pop("line_mismatch", False):
                    shown = (number + 1) % self.pockets
                await self.send(encode_winning_line(shown))
            self.win = number
            self.state = GameState.WINNING_NUMBER
        async with self._result_cond:
            self.results.append((self.spin_number, number))
            self._result_cond.notify_all()
        await asyncio.sleep(t.result)
        self.spin_number = next_spin(self.spin_number)
        self.state = GameState.PLACE_BETS
        if not self.mode & ModeBit.USER_START:
            self._start_game(self._next.popleft() if self._next else None, None)
