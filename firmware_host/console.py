"""The technician console: a line-oriented command interpreter for a dumb terminal.

Reached on a configured serial port (115200 8N1 by default; minicom, screen) and on a
local Unix socket (``tablectl console``). Plain ASCII lines, CR or LF accepted, CRLF
sent, no ANSI, no line editing beyond backspace. ``help`` lists every command with
its syntax.

Privileged commands (void the round, jackpot adjust/reset/parameters, clear a
latched fault) need ``login NAME`` and the operator's PIN, stored in the
configuration as a salted PBKDF2 hash (``tablectl console --hash-pin``). Five wrong
PINs lock the console for ``lockout_seconds``; every login, failure, lockout and
privileged action is written to the hash-chained event log with who and why.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .config import FieldSpec, register_section, validate_fields
from .jsonio import JSON

log = logging.getLogger(__name__)

PBKDF2_ITERATIONS = 200_000
MAX_LINE = 512


# -- PINs ---------------------------------------------------------------------
def hash_pin(pin: str, *, salt: bytes | None = None, iterations: int = PBKDF2_ITERATIONS) -> str:
    """``pbkdf2_sha256$<iterations>$<salt b64>$<hash b64>``."""
    if not pin.isdigit() or not 4 <= len(pin) <= 12:
        raise ValueError("a PIN is 4 to 12 digits")
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", pin.encode(), salt, iterations)
    b64 = base64.b64encode
    return f"pbkdf2_sha256${iterations}${b64(salt).decode()}${b64(digest).decode()}"


def check_pin(pin: str, stored: str) -> bool:
    try:
        algo, iters, salt, digest = stored.split("$")
        if algo != "pbkdf2_sha256":
            return False
        got = hashlib.pbkdf2_hmac("sha256", pin.encode(), base64.b64decode(salt), int(iters))
        return hmac.compare_digest(got, base64.b64decode(digest))
    except (ValueError, TypeError):
        return False


def _check_hash(value: str) -> str | None:
    parts = value.split("$")
    if len(parts) != 4 or parts[0] != "pbkdf2_sha256" or not parts[1].isdigit():
        return "must be a PIN hash from `tablectl console --hash-pin` (pbkdf2_sha256$...)"
    if int(parts[1]) < 100_000:
        return "PBKDF2 iterations must be at least 100000"
    return None


# -- configuration ------------------------------------------------------------
CONSOLE_SPECS: dict[str, FieldSpec] = {
    "serial_port": FieldSpec(
        "str", "", doc="serial port of the console ('' = none), e.g. /dev/table-console"
    ),
    "baud": FieldSpec(
        "int", 115200, doc="serial speed", choices=(9600, 19200, 38400, 57600, 115200)
    ),
    "socket": FieldSpec(
        "str", "console.sock", doc="Unix socket, relative to the runtime directory"
    ),
    "max_tries": FieldSpec("int", 5, doc="wrong PINs before the console locks", range=(1, 10)),
    "lockout_seconds": FieldSpec("int", 300, doc="how long a lockout lasts", range=(10, 86400)),
    "session_timeout": FieldSpec(
        "int", 600, doc="idle seconds before a login expires", range=(30, 86400)
    ),
    "operators": FieldSpec("table", {}, doc="[console.operators.<name>] pin_hash = ..."),
}


@dataclass(frozen=True)
class ConsoleSettings:
    serial_port: str = ""
    baud: int = 115200
    socket: str = "console.sock"
    max_tries: int = 5
    lockout_seconds: int = 300
    session_timeout: int = 600
    operators: Mapping[str, str] = field(default_factory=dict)  # name -> pin hash


def _validate(data: Any, path: str, errors: list[str]) -> ConsoleSettings:
    n = len(errors)
    vals = validate_fields(CONSOLE_SPECS, data, path, errors)
    ops: dict[str, str] = {}
    for name, spec in (vals.get("operators") or {}).items():
        sub = validate_fields(
            {"pin_hash": FieldSpec("str", required=True, doc="PIN hash", check=_check_hash)},
            spec,
            f"{path}.operators.{name}",
            errors,
        )
        if sub.get("pin_hash"):
            ops[str(name)] = sub["pin_hash"]
    if len(errors) > n:
        return ConsoleSettings()
    vals["operators"] = ops
    return ConsoleSettings(**vals)


register_section("console", _validate)


# -- what the console acts on -------------------------------------------------
class ConsoleBackend(Protocol):
    """What the daemon offers the console (each returns JSON-able data or raises)."""

    def status(self) -> JSON: ...
    def devices(self) -> JSON: ...
    async def self_test(self, device: str) -> JSON: ...
    async def lamp_test(self) -> JSON: ...
    def recall(self, n: int) -> JSON: ...
    def round_info(self) -> JSON: ...
    def jackpot(self) -> JSON: ...
    def events(self, n: int) -> JSON: ...
    def check_config(self) -> JSON: ...
    def faults(self) -> JSON: ...
    def audit_event(self, kind: str, data: Mapping[str, JSON]) -> None: ...
    def void_round(self, round_id: str, reason: str, who: str) -> JSON: ...
    def jackpot_adjust(self, amount: int, reason: str, who: str) -> JSON: ...
    def jackpot_reset(self, reason: str, who: str) -> JSON: ...
    def jackpot_params(self, key: str, value: str, reason: str, who: str) -> JSON: ...
    def clear_fault(self, code: str, reason: str, who: str) -> JSON: ...


@dataclass(frozen=True)
class Command:
    name: str
    syntax: str
    doc: str
    privileged: bool = False


COMMANDS: tuple[Command, ...] = (
    Command("help", "help [COMMAND]", "list commands, or show one command's syntax"),
    Command("status", "status", "table, game, phase, round, journal and broker state"),
    Command("devices", "devices", "health of every device"),
    Command("selftest", "selftest DEVICE", "run a device's self-test"),
    Command("lamptest", "lamptest", "light every lamp of the result board and the sign"),
    Command(
        "recall",
        "recall [N]",
        "the last N rounds (default 1, max 10 in full): outcome, bets, settlements, raw frames",
    ),
    Command("round", "round", "the round in progress: id, phase, bets"),
    Command("jackpot", "jackpot", "progressive jackpot meter, parameters and last hits"),
    Command("events", "events [N]", "the last N entries of the event log (default 20)"),
    Command("faults", "faults", "latched faults that stop play"),
    Command("check-config", "check-config", "validate the configuration file on disk"),
    Command("login", "login NAME", "log in as an operator (asks for the PIN)"),
    Command("logout", "logout", "end the operator session"),
    Command(
        "void",
        "void ROUND_ID REASON...",
        "void the round in progress (named, as `round` shows it), every bet refunded",
        True,
    ),
    Command(
        "jackpot-adjust",
        "jackpot-adjust AMOUNT REASON...",
        "add (or subtract, negative) minor units to the meter",
        True,
    ),
    Command("jackpot-reset", "jackpot-reset REASON...", "reset the meter to the seed", True),
    Command(
        "jackpot-param",
        "jackpot-param KEY VALUE REASON...",
        "change a jackpot parameter (takes effect after the next hit)",
        True,
    ),
    Command("clear-fault", "clear-fault CODE REASON...", "clear a latched fault", True),
    Command("quit", "quit", "close this console session"),
)
_BY_NAME = {c.name: c for c in COMMANDS}


class Lockout:
    """Wrong-PIN counter shared by every session of one console (serial and socket)."""

    def __init__(
        self, max_tries: int, seconds: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_tries = max_tries
        self.seconds = seconds
        self.clock = clock
        self.failures = 0
        self.until = 0.0

    def locked(self) -> float:
        """Seconds left of a lockout (0 when not locked)."""
        return max(0.0, self.until - self.clock())

    def fail(self) -> bool:
        """Count a failure; True when it locks the console."""
        self.failures += 1
        if self.failures >= self.max_tries:
            self.until = self.clock() + self.seconds
            self.failures = 0
            return True
        return False

    def success(self) -> None:
        self.failures = 0


def _fmt(data: JSON, indent: str = "") -> list[str]:
    """Readable plain-text rendering of JSON data for a dumb terminal."""
    lines: list[str] = []
    if isinstance(data, Mapping):
        for k, v in data.items():
            if isinstance(v, (Mapping, list)) and v:
                lines.append(f"{indent}{k}:")
                lines += _fmt(v, indent + "  ")
            else:
                lines.append(
                    f"{indent}{k}: {json.dumps(v, ensure_ascii=True) if not isinstance(v, str) else v}"
                )
    elif isinstance(data, list):
        for i, v in enumerate(data):
            if isinstance(v, (Mapping, list)):
                lines.append(f"{indent}- [{i}]")
                lines += _fmt(v, indent + "  ")
            else:
                lines.append(f"{indent}- {v}")
    else:
        lines.append(f"{indent}{data}")
    return lines


class ConsoleSession:
    """One terminal session. Feed it lines; it returns the lines to print."""

    PROMPT = "table> "

    def __init__(
        self,
        backend: ConsoleBackend,
        settings: ConsoleSettings,
        lockout: Lockout,
        *,
        channel: str = "console",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.lockout = lockout
        self.channel = channel
        self.clock = clock
        self.user: str | None = None
        self._pending_login: str | None = None
        self._last_activity = clock()
        self.closed = False

    @property
    def awaiting_pin(self) -> bool:
        return self._pending_login is not None

    def banner(self) -> list[str]:
        st = self.backend.status()
        return [f"tablectl console - table {st.get('table_id')} ({st.get('game')}) - type 'help'"]

    def prompt(self) -> str:
        if self._pending_login is not None:
            return "PIN: "
        return f"{self.user}@table# " if self.user else self.PROMPT

    async def handle(self, line: str) -> list[str]:
        now = self.clock()
        if self.user and now - self._last_activity > self.settings.session_timeout:
            self._audit("console_logout", {"operator": self.user, "why": "idle timeout"})
            self.user = None
        self._last_activity = now
        line = line.strip()[:MAX_LINE]
        if self._pending_login is not None:
            return self._finish_login(line)
        if not line:
            return []
        if not line.isascii() or not line.isprintable():
            return ["error: only printable ASCII is accepted"]
        name, _, rest = line.partition(" ")
        name = name.lower()
        cmd = _BY_NAME.get(name)
        if cmd is None:
            return [f"error: unknown command {name!r}; type 'help'"]
        if cmd.privileged and not self.user:
            return [f"error: {name} needs an operator login ('login NAME')"]
        try:
            return await self._run(cmd, rest.strip())
        except Exception as exc:  # the console must survive anything
            code = getattr(exc, "code", type(exc).__name__)
            msg = getattr(exc, "message", str(exc))
            return [f"error: {code}: {msg}"]

    def _audit(self, kind: str, data: Mapping[str, JSON]) -> None:
        self.backend.audit_event(kind, {"channel": self.channel, **data})

    def _finish_login(self, pin: str) -> list[str]:
        name, self._pending_login = self._pending_login, None
        assert name is not None
        left = self.lockout.locked()
        if left:
            return [f"error: console locked for {int(left) + 1} s after too many wrong PINs"]
        stored = self.settings.operators.get(name)
        if stored is not None and check_pin(pin, stored):
            self.lockout.success()
            self.user = name
            self._audit("console_login", {"operator": name})
            return [f"logged in as {name}"]
        locked = self.lockout.fail()
        self._audit("console_login_failed", {"operator": name})
        if locked:
            self._audit("console_lockout", {"operator": name, "seconds": self.lockout.seconds})
            return [f"error: wrong PIN; console locked for {self.lockout.seconds} s"]
        return ["error: wrong operator or PIN"]

    async def _run(self, cmd: Command, args: str) -> list[str]:
        b = self.backend
        n = cmd.name
        if n == "help":
            if args:
                c = _BY_NAME.get(args.lower())
                return (
                    [f"{c.syntax}  - {c.doc}{' (needs login)' if c.privileged else ''}"]
                    if c
                    else [f"error: unknown command {args!r}"]
                )
            width = max(len(c.syntax) for c in COMMANDS)
            return ["commands (* needs an operator login):"] + [
                f"  {c.syntax:<{width}}  {'*' if c.privileged else ' '} {c.doc}" for c in COMMANDS
            ]
        if n == "quit":
            self.closed = True
            if self.user:
                self._audit("console_logout", {"operator": self.user, "why": "quit"})
            return ["bye"]
        if n == "login":
            if not args or " " in args:
                return ["error: syntax: login NAME"]
            left = self.lockout.locked()
            if left:
                return [f"error: console locked for {int(left) + 1} s after too many wrong PINs"]
            self._pending_login = args
            return []
        if n == "logout":
            if self.user:
                self._audit("console_logout", {"operator": self.user, "why": "logout"})
            self.user = None
            return ["logged out"]
        if n == "status":
            return _fmt(b.status())
        if n == "devices":
            return _fmt(b.devices())
        if n == "selftest":
            if not args:
                return ["error: syntax: selftest DEVICE"]
            return _fmt(await b.self_test(args))
        if n == "lamptest":
            return _fmt(await b.lamp_test())
        if n in ("recall", "events"):
            default = 1 if n == "recall" else 20
            try:
                count = int(args) if args else default
            except ValueError:
                return [f"error: syntax: {cmd.syntax}"]
            if not 1 <= count <= (10 if n == "recall" else 1000):
                return [f"error: N must be 1..{10 if n == 'recall' else 1000}"]
            return _fmt(b.recall(count) if n == "recall" else b.events(count))
        if n == "round":
            return _fmt(b.round_info())
        if n == "jackpot":
            return _fmt(b.jackpot())
        if n == "faults":
            return _fmt(b.faults())
        if n == "check-config":
            return _fmt(b.check_config())
        who = self.user or "?"
        if n == "void":
            round_id, _, reason = args.partition(" ")
            if not reason.strip():
                return ["error: syntax: void ROUND_ID REASON... (the round id as `round` shows it)"]
            return _fmt(b.void_round(round_id, reason.strip(), who))
        if n == "jackpot-adjust":
            amount, _, reason = args.partition(" ")
            try:
                value = int(amount)
            except ValueError:
                return ["error: syntax: jackpot-adjust AMOUNT REASON... (AMOUNT in minor units)"]
            if not reason.strip():
                return ["error: a reason is required"]
            return _fmt(b.jackpot_adjust(value, reason.strip(), who))
        if n == "jackpot-reset":
            if not args:
                return ["error: syntax: jackpot-reset REASON..."]
            return _fmt(b.jackpot_reset(args, who))
        if n == "jackpot-param":
            parts = args.split(" ", 2)
            if len(parts) < 3:
                return ["error: syntax: jackpot-param KEY VALUE REASON..."]
            return _fmt(b.jackpot_params(parts[0], parts[1], parts[2], who))
        if n == "clear-fault":
            code, _, reason = args.partition(" ")
            if not code or not reason.strip():
                return ["error: syntax: clear-fault CODE REASON..."]
            return _fmt(b.clear_fault(code, reason.strip(), who))
        return [f"error: {n} is not available"]  # pragma: no cover


# -- transports ---------------------------------------------------------------
async def serve_stream(
    session: ConsoleSession,
    read: Callable[[], Awaitable[bytes]],
    write: Callable[[bytes], Awaitable[None]],
    *,
    echo: bool = False,
) -> None:
    """Run one session over a byte stream (serial port or socket).

    ``read`` returns the next bytes (``b""`` at end of stream); ``write`` sends.
    ``echo``: a serial terminal does not echo locally, so we echo typed characters
    (never the PIN) and handle backspace.
    """
    out = bytearray()

    def send(text: str) -> None:
        out.extend(text.encode("ascii", "replace"))

    async def flush() -> None:
        if out:
            data = bytes(out)
            out.clear()
            await write(data)

    for ln in session.banner():
        send(ln + "\r\n")
    send(session.prompt())
    await flush()
    buf = bytearray()
    last_cr = False  # a LF right after a CR ends no second line (CRLF terminals)
    while not session.closed:
        chunk = await read()
        if not chunk:
            break
        for byte in chunk:
            if byte == 0x0A and last_cr:
                last_cr = False
                continue
            last_cr = byte == 0x0D
            if byte in (0x0D, 0x0A):
                if echo:
                    send("\r\n")
                line = buf.decode("ascii", "replace")
                buf.clear()
                for reply in await session.handle(line):
                    send(reply + "\r\n")
                if session.closed:
                    break
                send(session.prompt())
            elif byte in (0x08, 0x7F):
                if buf:
                    buf.pop()
                    if echo and not session.awaiting_pin:
                        send("\b \b")
            elif 0x20 <= byte < 0x7F and len(buf) < MAX_LINE:
                buf.append(byte)
                if echo and not session.awaiting_pin:
                    send(chr(byte))
            # other control bytes (and ANSI escapes from fancy terminals) are ignored
        await flush()
    await flush()


async def serve_socket(
    session: ConsoleSession, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A console session on a Unix socket connection (``tablectl console``)."""

    async def write(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    try:
        await serve_stream(session, lambda: reader.read(256), write)
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
