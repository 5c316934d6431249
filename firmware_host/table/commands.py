"""Commands answered: the handler of each command, registered by the part of the table
that implements it, and the one way a command runs, from the floor or the console.

A command is declared once, in :mod:`firmware_host.commands` (its
:class:`~firmware_host.commands.CommandSpec`). What answers it is registered here, in
the table's :class:`Commands`, by the part that does the work:
``round_commands.RoundCommands`` (the round engine and the procedure: open and close
betting, voids, results, decisions, a new shoe, ``status``),
``round_commands.JackpotPayments`` (``jackpot_paid``), ``floor.FloorRequests``
(``replay_rounds``, rate-limited per principal), ``integrity.alerts.Alerts``
(``ack_alert``), ``integrity.selfcheck.SoftwareCheck`` (``verify_software``) and
``integrity.pace.DealerRoster`` (``dealer_sign_in``, ``dealer_sign_out``). A handler
takes one :class:`CommandCall` (the command's arguments, who asks and through which
channel, the round it names) and returns the answer's data, or raises a coded error.

:meth:`Commands.run` does what every command needs before its handler: a command no
part answers on this table is refused (``NOT_SUPPORTED``, or the code the part gave:
``RESULT_FROM_DEVICE_ONLY``), and the round its scope names is checked (``STALE_ROUND``).
The floor (``floor.py``) reads, authenticates, authorises and journals a request around
it; the console (``console/verbs.py``) parses a typed line into the same call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..auth import Principal
from ..commands import CATALOGUE, Catalogue, CommandSpec
from ..jsonio import JSON
from .reading import RequestError

if TYPE_CHECKING:
    from .engine import RoundEngine

#: The channels a command comes through: signed on ``commands/request``, or typed by
#: an operator logged in at the console.
CHANNELS = ("mqtt", "console")


@dataclass(frozen=True)
class CommandCall:
    """One command to run: what a handler is given."""

    spec: CommandSpec
    args: Mapping[str, JSON] = field(default_factory=dict)
    #: ``mqtt`` (the floor) or ``console``.
    via: str = "mqtt"
    #: Who asks: the principal the floor established, or the operator logged in at the
    #: console (None: nobody logged in, for a command that needs no login).
    who: Principal | None = None
    #: The round it names (scope ``round`` and ``hit``), or the round it follows
    #: (scope ``follows``).
    round_id: str | None = None
    after_round_id: str | None = None
    #: The floor's request id (two-person approvals name it).
    request_id: str | None = None
    #: Whether it acts only once two different principals confirmed it (``[auth]
    #: two_person`` of the table).
    two_person: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def console(self) -> bool:
        """Typed at the console by an operator (who logged in with a PIN at the table
        itself; the console shows a technician more than the floor's answer says)."""
        return self.via == "console"

    @property
    def operator(self) -> str:
        """Who asks, as the audit names them (``dealer-07``, ``unverified:x``, the
        operator's name), or ``?``."""
        return self.who.audit if self.who is not None else "?"

    @property
    def source(self) -> str:
        """The source of what the command causes, as the journal records it:
        ``mqtt:<principal>``, ``console:<operator>``, or ``console`` (nobody logged in)."""
        return f"{self.via}:{self.who.audit}" if self.who is not None else self.via


#: What answers a command: its data, or a coded error.
Handler = Callable[[CommandCall], JSON]


class Deferred(Exception):
    """Raised by a command handler whose answer needs slow work first (hashing the
    installed files): what was done rolls back (the floor's transaction; nothing acted
    yet), ``work`` runs in a worker thread, off the event loop and outside any
    transaction, then the command runs afresh with ``work``'s result (never None) in
    :data:`PREPARED` for the handler (which must not defer again: the floor answers that
    ``INTERNAL_ERROR``). A synchronous caller (``FloorRequests.answer``) runs ``work``
    inline."""

    def __init__(self, work: Callable[[], object]) -> None:
        super().__init__("deferred")
        self.work = work


#: What a :class:`Deferred` handler's work returned, during the command's next pass.
PREPARED: ContextVar[object] = ContextVar("floor_prepared", default=None)


@dataclass(frozen=True)
class _Unavailable:
    code: str
    message: str


class Commands:
    """The commands one table answers: the ``catalogue``'s specs and the handler a part
    registered for each. ``engine``: the round each command names is checked against it."""

    def __init__(self, engine: RoundEngine, catalogue: Catalogue = CATALOGUE) -> None:
        self.engine = engine
        self.catalogue = catalogue
        self._handlers: dict[str, Handler | _Unavailable] = {}

    def spec(self, name: str) -> CommandSpec:
        """The spec of ``name``; ``UNKNOWN_COMMAND`` if there is none."""
        spec = self.catalogue.get(name)
        if spec is None:
            raise RequestError(
                "UNKNOWN_COMMAND", f"unknown command {name!r}; known: {', '.join(self.catalogue)}"
            )
        return spec

    def register(self, name: str, handler: Handler, *, replace: bool = False) -> None:
        """``handler`` answers ``name`` (a command of the catalogue, registered once)."""
        self.spec(name)
        if name in self._handlers and not replace:
            raise ValueError(f"command {name!r} has a handler already")
        self._handlers[name] = handler

    def unavailable(self, name: str, code: str, message: str) -> None:
        """``name`` is refused on this table with ``code`` (a table that reads its results
        from its device: ``result``, ``RESULT_FROM_DEVICE_ONLY``)."""
        self.spec(name)
        self._handlers[name] = _Unavailable(code, message)

    def handler(self, name: str) -> Handler | None:
        h = self._handlers.get(name)
        return None if isinstance(h, _Unavailable) else h

    def owner(self, name: str) -> str | None:
        """The class (under ``firmware_host``) whose method answers ``name``, as a
        spec's ``handler`` names it; None if it is not a method."""
        owner = getattr(self.handler(name), "__self__", None)
        if owner is None:
            return None
        kind = type(owner)
        return f"{kind.__module__}.{kind.__qualname__}".removeprefix("firmware_host.")

    def run(self, call: CommandCall) -> JSON:
        """Run ``call``: refused if nothing answers it here, its round checked (the round
        in progress for scope ``round``, the table's last round for ``follows``), then
        its handler. Raises a coded error to refuse (``STALE_ROUND``...)."""
        spec = call.spec
        h = self._handlers.get(spec.name)
        if h is None:
            raise RequestError("NOT_SUPPORTED", f"{spec.name} is not available on this table")
        if isinstance(h, _Unavailable):
            raise RequestError(h.code, h.message)
        if spec.scope == "follows":
            self.engine.check_follows(call.after_round_id, spec.name)
        elif spec.scope == "round":
            self.engine.check_round(call.round_id, spec.name)
        return h(call)

    async def run_async(self, call: CommandCall) -> JSON:
        """:meth:`run`, with a :class:`Deferred` handler's work done in a worker thread
        (the console: the loop keeps serving while the files are hashed)."""
        try:
            return self.run(call)
        except Deferred as d:
            token = PREPARED.set(await asyncio.to_thread(d.work))
        try:
            return self.run(call)
        finally:
            PREPARED.reset(token)
