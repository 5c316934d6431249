r"""The technician console: a line-oriented command interpreter for a dumb terminal.

Reached on a configured serial port (115200 8N1 by default; minicom, screen) and on a
local Unix socket (``tablectl console``). Plain ASCII lines, CR or LF accepted, CRLF
sent, no ANSI, no line editing beyond backspace. ``help`` lists every command with
its syntax.

Privileged commands (open and close betting and enter a result on a table without
its result device, void the round, jackpot adjust/reset/parameters, clear a latched
fault) need ``login NAME`` and the operator's PIN, stored in the configuration as a
salted PBKDF2 hash (``tablectl console --hash-pin``). Jackpot meter adjustments,
resets and parameter changes need two different operators (dual control, as NJAC
13:69D-1.52 asks of a progressive controller): one asks, another approves. Five
wrong PINs lock the console for ``lockout_seconds``, and the lockout survives a
restart (it is journaled with its end); an unknown operator's PIN is checked against
a decoy hash so that it takes as long as a known one's. Every login, failure,
lockout and privileged action is written to the hash-chained event log with who and
why.

What the console prints is made for a dumb terminal and a technician: amounts in the
table's currency, times in ISO-8601 local time, and nothing that came from outside
(the floor's bet ids and reasons, operator names) reaches the terminal with a control
character (:func:`~firmware_host.textsafe.printable`).
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any, Protocol

from .config import FieldSpec, register_section, validate_fields
from .games.money import MoneyRules
from .jsonio import JSON
from .textsafe import printable

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


def decoy_hash(operators: Mapping[str, str]) -> str:
    """What an unknown operator's PIN is checked against, so that the answer takes as
    long as for a known operator (no timing tells which names exist): the iterations of
    a configured operator's hash, a fixed salt, and a digest of zeros that no PIN gives
    (short of a SHA-256 preimage)."""
    iterations = PBKDF2_ITERATIONS
    for stored in operators.values():
        parts = stored.split("$")
        if len(parts) == 4 and parts[1].isdigit():
            iterations = int(parts[1])
            break
    b64 = base64.b64encode
    return f"pbkdf2_sha256${iterations}${b64(b'tablectl-decoy!!').decode()}${b64(bytes(32)).decode()}"


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

    def money(self) -> MoneyRules: ...
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
    def open_betting(self, after_round_id: str | None, who: str) -> JSON: ...
    def close_betting(self, round_id: str, who: str) -> JSON: ...
    def enter_result(self, round_id: str, outcome: JSON, who: str) -> JSON: ...
    def void_round(self, round_id: str, reason: str, who: str) -> JSON: ...
    def jackpot_adjust(self, amount: int, reason: str, who: str) -> JSON: ...
    def jackpot_reset(self, reason: str, who: str) -> JSON: ...
    def jackpot_params(self, key: str, value: str, reason: str, who: str) -> JSON: ...
    def clear_fault(self, code: str, reason: str, who: str) -> JSON: ...
    def alerts(self) -> JSON: ...
    def ack_alert(self, alert_id: int, reason: str, who: str) -> JSON: ...
    def verify_software(self, seed: str | None, who: str | None) -> JSON: ...
    def dealer_sign_in(self, dealer: str | None, who: str) -> JSON: ...
    def pace_report(self) -> JSON: ...


@dataclass(frozen=True)
class Command:
    name: str
    syntax: str
    doc: str
    privileged: bool = False
    #: Needs a second, different operator to ``approve`` it (dual control).
    dual: bool = False


COMMANDS: tuple[Command, ...] = (
    Command("help", "help [COMMAND]", "list commands, or show one command's syntax"),
    Command("status", "status [json]", "table, game, phase, round, journal and broker state"),
    Command("devices", "devices", "health of every device"),
    Command("selftest", "selftest DEVICE", "run a device's self-test"),
    Command("lamptest", "lamptest", "light every lamp of the result board and the sign"),
    Command(
        "recall",
        "recall [N] [full]",
        "the last N rounds (default 1, max 10), one screen each; 'full': every field and raw frame",
    ),
    Command("round", "round", "the round in progress: id, phase, bets"),
    Command("jackpot", "jackpot", "progressive jackpot meter, parameters and last hits"),
    Command("events", "events [N]", "the last N entries of the event log (default 20)"),
    Command("faults", "faults", "latched faults that stop play"),
    Command("check-config", "check-config", "validate the configuration file on disk"),
    Command("login", "login NAME", "log in as an operator (asks for the PIN)"),
    Command("logout", "logout", "end the operator session"),
    Command(
        "open",
        "open [AFTER_ROUND_ID]",
        "open betting for a new round, naming the round it follows as `round` shows it "
        "(a table that takes results by command)",
        True,
    ),
    Command("close", "close ROUND_ID", "close betting of the round in progress (named)", True),
    Command(
        "result",
        "result ROUND_ID OUTCOME-JSON",
        "enter the result of the round in progress (named), e.g. "
        'result ROUND_ID {"number": 17} (tables without their result device)',
        True,
    ),
    Command(
        "void",
        "void ROUND_ID REASON...",
        "void the round in progress (named, as `round` shows it), every bet refunded",
        True,
    ),
    Command(
        "jackpot-adjust",
        "jackpot-adjust AMOUNT REASON...",
        "add (or subtract, negative) AMOUNT in the table's currency (e.g. 250.00) to the meter",
        True,
        True,
    ),
    Command("jackpot-reset", "jackpot-reset REASON...", "reset the meter to the seed", True, True),
    Command(
        "jackpot-param",
        "jackpot-param KEY VALUE REASON...",
        "change a jackpot parameter (takes effect after the next hit)",
        True,
        True,
    ),
    Command("pending", "pending", "requests waiting for a second operator's approval"),
    Command("approve", "approve ID", "approve another operator's pending request (dual control)", True),
    Command("clear-fault", "clear-fault CODE REASON...", "clear a latched fault", True),
    Command("alerts", "alerts", "integrity alerts not yet cleared (docs/integrity.md)"),
    Command("ack", "ack ALERT_ID REASON...", "acknowledge an integrity alert, with a reason", True),
    Command(
        "dealer",
        "dealer [NAME]",
        "sign dealer NAME in at the table (without NAME: the dealer on duty signs out)",
        True,
    ),
    Command("pace", "pace", "the shift so far: games and voids per hour, idle time, per dealer"),
    Command(
        "verify-software",
        "verify-software [SEED]",
        "check the installed files against the signed manifest (SEED: the seeded answer too)",
    ),
    Command("quit", "quit", "close this console session"),
)
_BY_NAME = {c.name: c for c in COMMANDS}


class Lockout:
    """Wrong-PIN counter shared by every session of one console (serial and socket).

    A lockout's end is also kept as wall-clock time (:attr:`until_wall`): the console
    journals it, and :func:`restore_lockout` puts it back after a restart."""

    def __init__(
        self,
        max_tries: int,
        seconds: int,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.max_tries = max_tries
        self.seconds = seconds
        self.clock = clock
        self.wall = wall
        self.failures = 0
        self.until = 0.0

    def locked(self) -> float:
        """Seconds left of a lockout (0 when not locked)."""
        return max(0.0, self.until - self.clock())

    @property
    def until_wall(self) -> float:
        """The lockout's end, seconds since the epoch (0 when not locked)."""
        left = self.locked()
        return self.wall() + left if left else 0.0

    def lock_for(self, seconds: float) -> None:
        self.until = max(self.until, self.clock() + seconds)

    def fail(self) -> bool:
        """Count a failure; True when it locks the console."""
        self.failures += 1
        if self.failures >= self.max_tries:
            self.lock_for(self.seconds)
            self.failures = 0
            return True
        return False

    def success(self) -> None:
        self.failures = 0


class LockoutJournal(Protocol):
    def events(self, limit: int = ..., *, kind: str | None = ...) -> Sequence[Any]: ...


def restore_lockout(lockout: Lockout, journal: LockoutJournal) -> float:
    """After a restart: a lockout journaled (``console_lockout`` with its ``until``) that
    has not ended yet locks the console again for what is left of it. Returns the
    seconds left (0: none)."""
    _restore_failures(lockout, journal)
    last = journal.events(1, kind="console_lockout")
    if not last:
        return 0.0
    until = last[-1].data.get("until_epoch")
    if not isinstance(until, (int, float)):
        return 0.0
    left = float(until) - lockout.wall()
    if left <= 0:
        return 0.0
    lockout.lock_for(min(left, float(lockout.seconds)))
    return lockout.locked()


def _restore_failures(lockout: Lockout, journal: LockoutJournal) -> None:
    """The wrong PINs since the last login or lockout count again after a restart (a
    restart between tries does not give a guesser a fresh count)."""
    n = 0
    for ev in reversed(journal.events(500)):
        if ev.kind in ("console_login", "console_lockout"):
            break
        if ev.kind == "console_login_failed":
            n += 1
    lockout.failures = min(n, max(lockout.max_tries - 1, 0))


@dataclass
class PendingRequest:
    """A dual-control request waiting for a second operator."""

    id: int
    command: str
    args: str
    by: str
    at: float
    run: Callable[[str], JSON]  # called with the approver's name


class DualControl:
    """Requests that need two different operators (shared by every session). A request
    expires after :attr:`ttl` seconds; each is journaled when asked, approved or expired."""

    def __init__(self, ttl: float = 600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._next = 1
        self._pending: dict[int, PendingRequest] = {}

    def ask(self, command: str, args: str, by: str, run: Callable[[str], JSON]) -> PendingRequest:
        req = PendingRequest(self._next, command, args, by, self.clock(), run)
        self._next += 1
        self._pending[req.id] = req
        return req

    def expire(self) -> list[PendingRequest]:
        now = self.clock()
        gone = [r for r in self._pending.values() if now - r.at > self.ttl]
        for r in gone:
            del self._pending[r.id]
        return gone

    def pending(self) -> list[PendingRequest]:
        self.expire()
        return sorted(self._pending.values(), key=lambda r: r.id)

    def take(self, rid: int) -> PendingRequest | None:
        self.expire()
        return self._pending.pop(rid, None)

    def put_back(self, req: PendingRequest) -> None:
        self._pending[req.id] = req


# -- what the console prints --------------------------------------------------
#: Keys whose integer values are amounts in minor units.
MONEY_KEYS = frozenset(
    {
        "stake", "stakes", "net", "payout", "commission", "amount", "pool", "pool_before",
        "pool_after", "credited", "overflow", "prize", "capital", "gross", "house_net",
        "seed", "meter", "expected", "minimum", "maximum", "meter_max", "casino_net",
        "banker_capital", "casino_capital", "min_stake", "max_stake", "jackpot_stake",
        "jackpot_seed", "contribution", "unpaid", "paid", "total", "min", "max",
    }
)  # fmt: skip
#: Keys whose values are times (epoch seconds or ISO-8601 UTC strings).
TIME_KEYS = frozenset(
    {"at", "since", "time", "opened_at", "finished_at", "connected_since", "set_at",
     "cleared_at", "last_seen", "last_frame_at", "updated_at", "created_at"}
)  # fmt: skip
#: Mappings whose every value is a time (a round's phase timestamps).
TIME_MAPS = frozenset({"timestamps"})
#: Money keys that are counts, never amounts, in these parents (a sic bo ``total``).
NOT_MONEY_PARENTS = frozenset({"outcome", "rules", "selection", "counters", "dice"})


def local_time(value: JSON) -> str | None:
    """An epoch float or an ISO-8601 UTC string as ISO-8601 local time (None if it is
    neither)."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e8:
            dt = datetime.fromtimestamp(float(value)).astimezone()
        elif isinstance(value, str) and len(value) >= 19 and value[4] == "-" and "T" in value:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone()
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return dt.isoformat(timespec="milliseconds" if dt.microsecond else "seconds")


@dataclass(frozen=True)
class Renderer:
    """Plain-text rendering of JSON data for a dumb terminal, in the table's currency
    and local time."""

    money: MoneyRules

    def amount(self, value: JSON) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return self.money.format(value)
        if isinstance(value, str) and "/" in value:  # an exact fraction of the minor unit
            try:
                f = Fraction(value)
            except (ValueError, ZeroDivisionError):
                return value
            return f"{self.money.format(int(f))} (exactly {value} minor units)"
        return str(value)

    def scalar(self, key: str, value: JSON, parent: str = "") -> str:
        if key in TIME_KEYS or parent in TIME_MAPS:
            t = local_time(value)
            if t is not None:
                return t
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if is_int and key in MONEY_KEYS and parent not in NOT_MONEY_PARENTS:
            return self.amount(value)
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=True)

    def lines(self, data: JSON, indent: str = "", parent: str = "") -> list[str]:
        """``parent``: the key above; below an outcome, the rules or a selection every
        number is a count (a dice total, a hand's points), never an amount."""
        out: list[str] = []
        if isinstance(data, Mapping):
            if not data:
                out.append(f"{indent}(none)")
            for k, v in data.items():
                below = parent if parent in NOT_MONEY_PARENTS else str(k)
                if isinstance(v, (Mapping, list)) and v:
                    out.append(f"{indent}{k}:")
                    out += self.lines(v, indent + "  ", below)
                else:
                    out.append(f"{indent}{k}: {self.scalar(str(k), v, parent)}")
        elif isinstance(data, list):
            for i, v in enumerate(data):
                if isinstance(v, (Mapping, list)):
                    out.append(f"{indent}- [{i}]")
                    out += self.lines(v, indent + "  ", parent)
                else:
                    out.append(f"{indent}- {self.scalar('', v, parent)}")
        else:
            out.append(f"{indent}{data}")
        return out

    def recall(self, rounds: JSON, full: bool) -> list[str]:
        """``recall N``: one screen per round (the round, its outcome on one line, a line
        per bet, the totals, the raw frames in hex); ``full``: every field."""
        if not isinstance(rounds, list) or not rounds:
            return ["no round in the journal yet"]
        if full:
            return self.lines(rounds)
        out: list[str] = []
        for item in rounds:
            if not isinstance(item, Mapping):
                continue
            out += self.round_screen(item)
        out.append("('recall N full' shows every field: rules, settlement detail, timestamps)")
        return out

    def round_screen(self, item: Mapping[str, JSON]) -> list[str]:
        rnd = item.get("round")
        rnd = rnd if isinstance(rnd, Mapping) else {}
        settlement = item.get("settlement")
        pay = settlement if isinstance(settlement, Mapping) else {}
        status = rnd.get("status") or rnd.get("phase")
        reason = f" ({rnd.get('void_reason')})" if rnd.get("void_reason") else ""
        opened = local_time(rnd.get("opened_at")) or "-"
        finished = local_time(rnd.get("finished_at")) or "-"
        out = [
            f"round {rnd.get('round_id')} (seq {rnd.get('seq')}): {status}{reason}",
            f"  opened {opened}, finished {finished}",
            f"  outcome: {json.dumps(rnd.get('outcome'), ensure_ascii=True, separators=(', ', ': '))}",
        ]
        bets = pay.get("bets") if isinstance(pay.get("bets"), list) else item.get("bets")
        if isinstance(bets, list) and bets:
            for b in bets:
                if not isinstance(b, Mapping):
                    continue
                sel = b.get("selection")
                sel_text = "" if sel is None else " " + json.dumps(sel, separators=(",", ":"))
                res = f" {str(b.get('result')).upper()} net {self.amount(b.get('net'))}" if "result" in b else ""
                com = f" commission {self.amount(b.get('commission'))}" if b.get("commission") else ""
                out.append(
                    f"  seat {b.get('seat')} {b.get('bet_type')}{sel_text} stake "
                    f"{self.amount(b.get('stake'))}{res}{com}  [{b.get('bet_id')}]"
                )
        else:
            out.append("  no bets")
        t = pay.get("totals")
        if isinstance(t, Mapping):
            out.append(
                f"  totals: stakes {self.amount(t.get('stakes'))}, players net "
                f"{self.amount(t.get('net'))}, commission {self.amount(t.get('commission'))}, "
                f"house {self.amount(t.get('house_net'))}"
            )
        frames = item.get("frames")
        if isinstance(frames, list):
            for f in frames:
                if isinstance(f, Mapping):
                    out.append(
                        f"  frame {f.get('device')} {f.get('direction')} "
                        f"{local_time(f.get('at')) or ''} {f.get('hex') or f.get('data')}"
                    )
        return out


def _fmt(data: JSON, indent: str = "") -> list[str]:
    """Plain-text rendering without a currency (kept for callers outside a session)."""
    return Renderer(MoneyRules()).lines(data, indent)


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
        dual: DualControl | None = None,
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.lockout = lockout
        self.channel = channel
        self.clock = clock
        self.dual = dual if dual is not None else DualControl()
        self.user: str | None = None
        self._pending_login: str | None = None
        self._last_activity = clock()
        self.closed = False
        self.render = Renderer(backend.money())

    @property
    def awaiting_pin(self) -> bool:
        return self._pending_login is not None

    def banner(self) -> list[str]:
        st = self.backend.status()
        st = st if isinstance(st, Mapping) else {}
        return [
            printable(
                f"tablectl console - table {st.get('table_id')} ({st.get('game')}) - type 'help'",
                ascii_only=True,
            )
        ]

    def prompt(self) -> str:
        if self._pending_login is not None:
            return "PIN: "
        return f"{printable(self.user, ascii_only=True)}@table# " if self.user else self.PROMPT

    async def handle(self, line: str) -> list[str]:
        """The lines to print for one typed line; none holds a control character."""
        return [printable(ln, ascii_only=True) for ln in await self._handle(line)]

    async def _handle(self, line: str) -> list[str]:
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
        for req in self.dual.expire():
            self._audit(
                "privileged_request_expired",
                {"id": req.id, "action": req.command, "operator": req.by},
            )
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
        # An unknown name costs the same PBKDF2 as a known one (no timing oracle).
        ok = check_pin(pin, stored if stored is not None else decoy_hash(self.settings.operators))
        if stored is not None and ok:
            self.lockout.success()
            self.user = name
            self._audit("console_login", {"operator": name})
            return [f"logged in as {name}"]
        locked = self.lockout.fail()
        self._audit("console_login_failed", {"operator": name})
        if locked:
            self._audit(
                "console_lockout",
                {
                    "operator": name,
                    "seconds": self.lockout.seconds,
                    "until_epoch": round(self.lockout.until_wall, 3),
                },
            )
            return [f"error: wrong PIN; console locked for {self.lockout.seconds} s"]
        return ["error: wrong operator or PIN"]

    def _dual(self, cmd: Command, args: str, run: Callable[[str], JSON]) -> list[str]:
        """A dual-control command: asked by this operator, run when another approves."""
        who = self.user or "?"
        req = self.dual.ask(cmd.name, args, who, run)
        self._audit(
            "privileged_request", {"id": req.id, "action": cmd.name, "args": args, "operator": who}
        )
        return [
            f"request {req.id} pending: {cmd.name} {args}",
            f"dual control: another operator must 'approve {req.id}' within "
            f"{int(self.dual.ttl // 60)} min",
        ]

    def _approve(self, args: str) -> list[str]:
        try:
            rid = int(args)
        except ValueError:
            return ["error: syntax: approve ID (see 'pending')"]
        req = self.dual.take(rid)
        if req is None:
            return [f"error: no pending request {rid} (see 'pending')"]
        who = self.user or "?"
        if req.by == who:
            self.dual.put_back(req)
            return [
                f"error: DUAL_CONTROL: request {rid} was asked by {who}; another operator "
                "must approve it"
            ]
        self._audit(
            "privileged_approval",
            {"id": req.id, "action": req.command, "operator": req.by, "approved_by": who},
        )
        return [f"approved by {who}: {req.command} {req.args}", *self.render.lines(req.run(who))]

    async def _run(self, cmd: Command, args: str) -> list[str]:
        b = self.backend
        n = cmd.name
        r = self.render
        if n == "help":
            if args:
                c = _BY_NAME.get(args.lower())
                if c is None:
                    return [f"error: unknown command {args!r}"]
                needs = " (needs login)" if c.privileged else ""
                if c.dual:
                    needs = " (needs login and a second operator's approval)"
                return [f"{c.syntax}  - {c.doc}{needs}"]
            width = max(len(c.syntax) for c in COMMANDS)
            return [
                "commands (* needs an operator login, ** and a second operator's approval):"
            ] + [
                f"  {c.syntax:<{width}}  {('**' if c.dual else '* ') if c.privileged else '  '} {c.doc}"
                for c in COMMANDS
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
            if args == "json":
                return [json.dumps(b.status(), ensure_ascii=True, separators=(",", ":"))]
            if args:
                return ["error: syntax: status [json]"]
            return r.lines(b.status())
        if n == "devices":
            return r.lines(b.devices())
        if n == "selftest":
            if not args:
                return ["error: syntax: selftest DEVICE"]
            return r.lines(await b.self_test(args))
        if n == "lamptest":
            return r.lines(await b.lamp_test())
        if n == "recall":
            words = args.split()
            full = bool(words) and words[-1].lower() == "full"
            if full:
                words = words[:-1]
            try:
                (count,) = [int(w) for w in words] or [1]
            except ValueError:
                return [f"error: syntax: {cmd.syntax}"]
            if not 1 <= count <= 10:
                return ["error: N must be 1..10"]
            return r.recall(b.recall(count), full)
        if n == "events":
            try:
                count = int(args) if args else 20
            except ValueError:
                return [f"error: syntax: {cmd.syntax}"]
            if not 1 <= count <= 1000:
                return ["error: N must be 1..1000"]
            events = b.events(count)
            return r.lines(events) if events else ["no event in the log"]
        if n == "round":
            return r.lines(b.round_info())
        if n == "jackpot":
            return r.lines(b.jackpot())
        if n == "faults":
            return r.lines(b.faults())
        if n == "check-config":
            return r.lines(b.check_config())
        if n == "pending":
            reqs = self.dual.pending()
            if not reqs:
                return ["no request waits for approval"]
            return [f"  {q.id}: {q.command} {q.args}  (asked by {q.by})" for q in reqs]
        if n == "approve":
            return self._approve(args)
        who = self.user or "?"
        if n == "open":
            after = args.strip() or None
            if after is not None and " " in after:
                return ["error: syntax: open [AFTER_ROUND_ID] (the last round as `round` shows it)"]
            return r.lines(b.open_betting(after, who))
        if n == "close":
            round_id = args.strip()
            if not round_id or " " in round_id:
                return ["error: syntax: close ROUND_ID (the round as `round` shows it)"]
            return r.lines(b.close_betting(round_id, who))
        if n == "result":
            round_id, _, text = args.strip().partition(" ")
            if not round_id or not text.strip():
                return ["error: syntax: result ROUND_ID OUTCOME-JSON"]
            try:
                outcome = json.loads(text)
            except json.JSONDecodeError as exc:
                return [f"error: syntax: result ROUND_ID OUTCOME-JSON ({exc.msg} at column {exc.pos + 1})"]
            return r.lines(b.enter_result(round_id, outcome, who))
        if n == "void":
            round_id, _, reason = args.partition(" ")
            if not reason.strip():
                return ["error: syntax: void ROUND_ID REASON... (the round id as `round` shows it)"]
            return r.lines(b.void_round(round_id, reason.strip(), who))
        if n == "jackpot-adjust":
            amount, _, reason = args.partition(" ")
            value = self._minor_units(amount)
            if value is None:
                return [
                    "error: syntax: jackpot-adjust AMOUNT REASON... (AMOUNT in "
                    f"{self.render.money.currency}, e.g. 250.00 or -10)"
                ]
            if not reason.strip():
                return ["error: a reason is required"]
            why = reason.strip()
            shown = f"{self.render.money.format(value)} {why}"
            return self._dual(cmd, shown, lambda ok: b.jackpot_adjust(value, why, f"{who}+{ok}"))
        if n == "jackpot-reset":
            if not args:
                return ["error: syntax: jackpot-reset REASON..."]
            return self._dual(cmd, args, lambda ok: b.jackpot_reset(args, f"{who}+{ok}"))
        if n == "jackpot-param":
            parts = args.split(" ", 2)
            if len(parts) < 3:
                return ["error: syntax: jackpot-param KEY VALUE REASON..."]
            key, value_s, why = parts
            return self._dual(
                cmd, args, lambda ok: b.jackpot_params(key, value_s, why, f"{who}+{ok}")
            )
        if n == "verify-software":
            if args and " " in args:
                return ["error: syntax: verify-software [SEED]"]
            from .integrity.software import SEED

            if args and not SEED.match(args):
                return ["error: SEED: 8-128 of A-Z a-z 0-9 _ . : + / = -"]
            return r.lines(b.verify_software(args or None, self.user))
        if n == "dealer":
            if " " in args:
                return ["error: syntax: dealer [NAME]"]
            return r.lines(b.dealer_sign_in(args or None, self.user or "?"))
        if n == "pace":
            return r.lines(b.pace_report())
        if n == "alerts":
            return r.lines(b.alerts())
        if n == "ack":
            ident, _, reason = args.partition(" ")
            if not ident.isdigit() or not reason.strip():
                return ["error: syntax: ack ALERT_ID REASON... (the id as `alerts` shows it)"]
            return r.lines(b.ack_alert(int(ident), reason.strip(), who))
        if n == "clear-fault":
            code, _, reason = args.partition(" ")
            if not code or not reason.strip():
                return ["error: syntax: clear-fault CODE REASON..."]
            return r.lines(b.clear_fault(code, reason.strip(), who))
        return [f"error: {n} is not available"]  # pragma: no cover

    def _minor_units(self, text: str) -> int | None:
        """An amount typed in the table's currency (``250``, ``-10.50``) as minor units;
        None if it is not one (more decimals than the currency has)."""
        digits = self.render.money.minor_digits
        sign = -1 if text.startswith("-") else 1
        body = text.lstrip("+-").replace(",", "")
        whole, dot, frac = body.partition(".")
        if not whole.isdigit() or (dot and not frac.isdigit()) or len(frac) > digits:
            return None
        scale = int(10**digits)
        return sign * (int(whole) * scale + int(frac.ljust(digits, "0") or 0))


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
