"""One console session: what it acts on (:class:`ConsoleBackend`), login, the lockout
and dual control; its verbs are a table (``verbs.py``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from ..games.money import MoneyRules
from ..jsonio import JSON
from ..textsafe import printable
from .lockout import DualControl, Lockout
from .presence import OperatorPresence
from .render import Renderer
from .settings import MAX_LINE, ConsoleSettings, check_pin, decoy_hash
from .verbs import COMMANDS, VERBS, Command, shown_word

__all__ = ["COMMANDS", "Command", "ConsoleBackend", "ConsoleSession"]


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
    async def command(
        self,
        name: str,
        args: Mapping[str, JSON],
        *,
        round_id: str | None = None,
        after_round_id: str | None = None,
        operator: str | None = None,
    ) -> JSON:
        """Run the command to the table ``name`` (its spec: ``firmware_host/commands.py``)
        typed by ``operator`` (None: nobody logged in)."""
        ...

    def jackpot_adjust(self, amount: int, reason: str, who: str) -> JSON: ...
    def jackpot_reset(self, reason: str, who: str) -> JSON: ...
    def jackpot_params(self, key: str, value: str, reason: str, who: str) -> JSON: ...
    def clear_fault(self, code: str, reason: str, who: str) -> JSON: ...
    def alerts(self) -> JSON: ...
    def pace_report(self) -> JSON: ...


def _left(seconds: float) -> str:
    """What is left of a lockout, for a person: ``47 s``, ``4 min 47 s``."""
    s = math.ceil(seconds)
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


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
        verbs: Mapping[str, Command] | None = None,
        presence: OperatorPresence | None = None,
    ) -> None:
        """``verbs``: the console's verbs (by default over the table's commands,
        :data:`~.verbs.VERBS`); ``presence``: told who is logged in here (the table's
        switches ask it whether an opening is attended)."""
        self.backend: ConsoleBackend = backend
        self.settings = settings
        self.lockout = lockout
        self.channel = channel
        self.clock = clock
        self.dual = dual if dual is not None else DualControl()
        self.presence = presence
        self._user: str | None = None
        self._pending_login: str | None = None
        #: Whether what is typed after the last prompt is hidden (a PIN, or a lockout).
        self._hidden = False
        self._last_activity = clock()
        self.closed = False
        self.render = Renderer(backend.money())
        self.verbs: Mapping[str, Command] = VERBS if verbs is None else verbs

    @property
    def user(self) -> str | None:
        """The operator logged in, or None."""
        return self._user

    @user.setter
    def user(self, name: str | None) -> None:
        self._user = name
        if self.presence is not None:
            if name:
                self.presence.logged_in(
                    self, name, self.channel, float(self.settings.session_timeout)
                )
            else:
                self.presence.logged_out(self)

    def end(self) -> None:
        """The terminal closed: its operator is no longer present."""
        if self.presence is not None:
            self.presence.logged_out(self)

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
            self.audit("console_logout", {"operator": self.user, "why": "idle timeout"})
            self.user = None
        self._last_activity = now
        if self.user and self.presence is not None:
            self.presence.active(self)
        line = line.strip()[:MAX_LINE]
        if self._pending_login is not None:
            return self._finish_login(line)
        hidden, self._hidden = self._hidden or self._locked() > 0, False
        if not line:
            return []
        if hidden and self.verbs.get(line.partition(" ")[0].lower()) is None:
            # typed while locked, and not a command: perhaps a PIN; never shown back
            left = self._locked()
            if left:
                return [self.locked_message(left)]
            return [
                "error: not a command (what was typed while the console was locked is not shown)"
            ]
        if not line.isascii() or not line.isprintable():
            return ["error: only printable ASCII is accepted"]
        for req in self.dual.expire():
            self.audit(
                "privileged_request_expired",
                {"id": req.id, "action": req.command, "operator": req.by},
            )
        name, _, rest = line.partition(" ")
        name = name.lower()
        cmd = self.verbs.get(name)
        if cmd is None:
            return [f"error: unknown command {shown_word(name)}; type 'help'"]
        if cmd.privileged and not self.user:
            return [f"error: {name} needs an operator login ('login NAME')"]
        try:
            assert cmd.run is not None
            return await cmd.run(self, cmd, rest.strip())
        except Exception as exc:  # the console must survive anything
            code = getattr(exc, "code", type(exc).__name__)
            msg = getattr(exc, "message", str(exc))
            return [f"error: {code}: {msg}"]

    def audit(self, kind: str, data: Mapping[str, JSON]) -> None:
        self.backend.audit_event(kind, {"channel": self.channel, **data})

    def _finish_login(self, pin: str) -> list[str]:
        name, self._pending_login = self._pending_login, None
        assert name is not None
        left = self.lockout.locked()
        if left:
            return [self.locked_message(left)]
        stored = self.settings.operators.get(name)
        # An unknown name costs the same PBKDF2 as a known one (no timing oracle).
        ok = check_pin(pin, stored if stored is not None else decoy_hash(self.settings.operators))
        if stored is not None and ok:
            self.lockout.success()
            self.user = name
            self.audit("console_login", {"operator": name})
            return [f"logged in as {name}"]
        locked = self.lockout.fail()
        self.audit("console_login_failed", {"operator": name})
        if locked:
            self.audit(
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
    def locked_message(left: float) -> str:
        return (
            f"error: console locked after too many wrong PINs: {_left(left)} left; "
            "nothing typed is shown until then"
        )

    def ask_pin(self, name: str) -> None:
        """``login NAME``: the PIN is asked next."""
        self._pending_login = name

    def ask_dual(self, cmd: Command, args: str, run: Callable[[str], JSON]) -> list[str]:
        """A dual-control command: asked by this operator, run when another approves."""
        who = self.user or "?"
        req = self.dual.ask(cmd.name, args, who, run)
        self.audit(
            "privileged_request", {"id": req.id, "action": cmd.name, "args": args, "operator": who}
        )
        return [
            f"request {req.id} pending: {cmd.name} {args}",
            f"dual control: another operator must 'approve {req.id}' within "
            f"{int(self.dual.ttl // 60)} min",
        ]

    def minor_units(self, text: str) -> int | None:
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
