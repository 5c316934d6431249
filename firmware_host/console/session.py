"""One console session: the commands, what they act on (:class:`ConsoleBackend`), login
and the privileged actions."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..games.money import MoneyRules
from ..jsonio import JSON
from ..textsafe import printable
from .lockout import DualControl, Lockout
from .render import Renderer
from .settings import MAX_LINE, ConsoleSettings, check_pin, decoy_hash


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
    async def verify_software(self, seed: str | None, who: str | None) -> JSON: ...
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
    Command(
        "approve", "approve ID", "approve another operator's pending request (dual control)", True
    ),
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


def _left(seconds: float) -> str:
    """What is left of a lockout, for a person: ``47 s``, ``4 min 47 s``."""
    s = math.ceil(seconds)
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


def _shown(word: str) -> str:
    """A typed word as an error may repeat it: never one with a digit in it (a PIN
    typed at the wrong moment is never shown back)."""
    return "(not repeated: it has digits)" if any(c.isdigit() for c in word) else repr(word)


class ConsoleSession:
    """One terminal session. Feed it lines; it returns the lines to print.

    While the console is locked (too many wrong PINs) a session without an operator
    logged in shows :attr:`LOCKED_PROMPT`, and what is typed after it is *hidden*
    (:attr:`input_hidden`): the serial line does not echo it, ``tablectl console`` turns
    its terminal's echo off, and a line that is not a command is answered with the time
    left of the lockout, never repeated (a PIN typed at the wrong moment never appears
    on the screen or in a log). Commands still run (``status``: ``tablectl status``)."""

    PROMPT = "table> "
    PIN_PROMPT = "PIN: "
    #: The prompt while the console is locked: it ends like :attr:`PROMPT`.
    LOCKED_PROMPT = "locked table> "

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
        #: Whether what is typed after the last prompt is hidden (a PIN, or a lockout).
        self._hidden = False
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

    @property
    def input_hidden(self) -> bool:
        """Whether the line typed after the last :meth:`prompt` must not be echoed: the
        PIN, or anything while the console is locked (decided when the prompt is shown,
        so that a lockout ending while a line is typed never echoes half of it)."""
        return self._hidden

    def _locked(self) -> float:
        """Seconds left of a lockout that hides this session's input (0: none); a
        logged-in operator is not typing a PIN."""
        return 0.0 if self.user else self.lockout.locked()

    def prompt(self) -> str:
        """The prompt to show next (it also decides :attr:`input_hidden`)."""
        if self._pending_login is not None:
            self._hidden = True
            return self.PIN_PROMPT
        if self.user:
            self._hidden = False
            return f"{printable(self.user, ascii_only=True)}@table# "
        self._hidden = self._locked() > 0
        return self.LOCKED_PROMPT if self._hidden else self.PROMPT

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
        hidden, self._hidden = self._hidden or self._locked() > 0, False
        if not line:
            return []
        if hidden and _BY_NAME.get(line.partition(" ")[0].lower()) is None:
            # typed while locked, and not a command: perhaps a PIN; never shown back
            left = self._locked()
            if left:
                return [self._locked_message(left)]
            return [
                "error: not a command (what was typed while the console was locked is not shown)"
            ]
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
            return [f"error: unknown command {_shown(name)}; type 'help'"]
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
            return [self._locked_message(left)]
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
            return [
                f"error: wrong PIN; console locked for {_left(self.lockout.seconds)}; "
                "nothing typed is shown until then"
            ]
        return ["error: wrong operator or PIN"]

    @staticmethod
    def _locked_message(left: float) -> str:
        return (
            f"error: console locked after too many wrong PINs: {_left(left)} left; "
            "nothing typed is shown until then"
        )

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
                    return [f"error: unknown command {_shown(args)}"]
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
                return [self._locked_message(left)]
            if args.isdigit() and args not in self.settings.operators:
                # a PIN typed for the name: never asked for a PIN, repeated or logged
                return ["error: no operator's name is a number (if that was the PIN: it is "
                        "not shown nor logged); syntax: login NAME"]  # fmt: skip
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
                return [
                    f"error: syntax: result ROUND_ID OUTCOME-JSON ({exc.msg} at column {exc.pos + 1})"
                ]
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
        if n == "clear-fault":
            code, _, reason = args.partition(" ")
            if not code or not reason.strip():
                return ["error: syntax: clear-fault CODE REASON..."]
            return r.lines(b.clear_fault(code, reason.strip(), who))
        if n == "verify-software":
            if args and " " in args:
                return ["error: syntax: verify-software [SEED]"]
            from ..integrity.software import SEED

            if args and not SEED.match(args):
                return ["error: SEED: 8-128 of A-Z a-z 0-9 _ . : + / = -"]
            return r.lines(await b.verify_software(args or None, self.user))
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
