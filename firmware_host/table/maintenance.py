"""Maintenance: the table finishes the round in progress and opens no new one (issue 35).

A rolling update (``deploy/ansible/update.yml``, ``docs/install.md``) takes a table out
of play *between rounds*: a supervisor's signed ``maintenance`` command (or the
console's ``maintenance REASON...``) lets the round in progress run to its settlement
(or its void), and from then on refuses to open a round (``MAINTENANCE``) until
``end_maintenance``. The retained ``state`` says so (``maintenance``: since when, who
asked, why; ``null`` when in play), so the updater waits for ``maintenance`` and
``phase`` ``idle`` before it touches the software.

Maintenance survives a restart (the update restarts the daemon inside it): each change
is a ``maintenance`` event of the journal's chain, published on ``events`` in the same
transaction, and the latest one is read back at start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..journal import AuditLog
from ..jsonio import JSON
from ..timefmt import iso_utc, utc_now
from .commands import CommandCall, Commands
from .reading import RequestError, reason_text
from .roundfault import RoundFault

#: The event of the chain (and of ``events``) each change is.
EVENT = "maintenance"
#: The code a round refused to open during maintenance is answered with.
CODE = "MAINTENANCE"

def _event(chain: AuditLog, table_id: str, data: dict[str, JSON], at: datetime) -> None:
    # Imported here: ``integrity`` imports ``table`` (its command handlers).
    from ..integrity.events import table_event

    table_event(chain, table_id, EVENT, data, at=at)


class Maintenance:
    """Whether the table is in maintenance, kept in the chain; the commands
    ``maintenance`` and ``end_maintenance``; the check the round engine's
    ``play_stop`` makes before a round opens (:meth:`check_open`)."""

    def __init__(
        self,
        chain: AuditLog,
        table_id: str,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.chain = chain
        self.table_id = table_id
        self.clock = clock
        self._listeners: list[Callable[[], None]] = []
        #: ``{"since", "by", "reason"}`` while in maintenance, else None.
        self.current: dict[str, JSON] | None = None
        last = chain.events(1, kind=EVENT)
        if last and isinstance(last[-1].data, dict) and last[-1].data.get("active") is True:
            d = last[-1].data
            self.current = {"since": d.get("since"), "by": d.get("by"), "reason": d.get("reason")}

    def add_listener(self, listener: Callable[[], None]) -> None:
        """``listener``: called after each change (the retained ``state`` follows)."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()

    def play_stop(self, faults: Callable[[], str | None]) -> str | None:
        """The round engine's ``play_stop``: the latched faults (``faults``) first; when
        none stops play, :meth:`check_open` (``MAINTENANCE``)."""
        stopped = faults()
        if stopped is None:
            self.check_open()
        return stopped

    @property
    def active(self) -> bool:
        return self.current is not None

    def snapshot(self) -> JSON:
        """What the retained ``state`` says (``maintenance``)."""
        return dict(self.current) if self.current is not None else None

    def check_open(self) -> None:
        """Raise ``MAINTENANCE`` (a :class:`RoundFault`) while in maintenance: no round
        opens; the round in progress is not touched."""
        if self.current is not None:
            raise RoundFault(
                f"the table is in maintenance since {self.current['since']} "
                f"({self.current['reason']}): no round opens until end_maintenance",
                code=CODE,
            )

    def register_commands(self, commands: Commands) -> None:
        """The table's commands this answers (their specs: ``firmware_host/commands.py``)."""
        commands.register("maintenance", self.command_enter)
        commands.register("end_maintenance", self.command_leave)

    def command_enter(self, call: CommandCall) -> JSON:
        """``maintenance`` ``{"reason": "..."}``: from now no round opens. Asked again
        while in maintenance: the maintenance as it stands (nothing journaled)."""
        reason = _reason(call.args.get("reason"), required=True)
        if self.current is None:
            now = self.clock()
            self.current = {"since": iso_utc(now), "by": call.source, "reason": reason}
            _event(self.chain, self.table_id, {"active": True, **self.current}, now)
            self._changed()
        return {"maintenance": self.snapshot()}

    def command_leave(self, call: CommandCall) -> JSON:
        """``end_maintenance`` (optional ``reason``): rounds open again. Asked when not in
        maintenance: ``NOT_IN_MAINTENANCE``."""
        reason = _reason(call.args.get("reason"), required=False)
        if self.current is None:
            raise RequestError("NOT_IN_MAINTENANCE", "the table is not in maintenance")
        now = self.clock()
        ended = self.current
        self.current = None
        data: dict[str, JSON] = {
            "active": False, "since": iso_utc(now), "by": call.source, "reason": reason,
            "began": ended["since"],
        }  # fmt: skip
        _event(self.chain, self.table_id, data, now)
        self._changed()
        return {"maintenance": None, "ended": ended}


def _reason(value: JSON, *, required: bool) -> str:
    if value is None and not required:
        return ""
    return reason_text(value, "reason")
