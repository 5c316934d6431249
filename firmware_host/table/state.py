"""The table's retained ``state`` snapshot and the latched faults that stop play."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Protocol

from ..journal import Fault, RoundRecord, StorageError, StorageGuard
from ..jsonio import JSON
from .extension import TableExtension, TableExtensions
from .phase import Phase


class ActiveFaults(Protocol):
    """What :class:`LatchedFaults` reads of the journal's faults (``FaultStore`` is one)."""

    def active(self) -> list[Fault]: ...


class LatchedFaults:
    """Faults that survive a restart until a technician clears them from the console
    (GLI-style); while any is latched no round opens.

    ``faults``: the journal's latched faults; ``storage``: the journal's storage guard,
    whose fault (``DISK_FULL``, ``JOURNAL_IO``) is listed with them while it lasts (it
    clears itself when the journal writes again, and cannot be journaled while it
    lasts)."""

    def __init__(self, faults: ActiveFaults, *, storage: StorageGuard | None = None) -> None:
        self.faults = faults
        self.storage = storage
        self._last: list[dict[str, JSON]] = []

    def _journaled(self) -> list[dict[str, JSON]]:
        with contextlib.suppress(StorageError):  # unreadable for now: the last known list
            self._last = [
                {"code": f.code, "message": f.message} for f in self.faults.active()
            ]
        return list(self._last)

    def journaled(self) -> list[str]:
        """The codes of the faults latched in the journal (cleared from the console)."""
        return [str(d["code"]) for d in self._journaled()]

    def codes(self) -> list[str]:
        """Every fault stopping play: the journaled ones, then the storage fault."""
        codes = self.journaled()
        if self.storage is not None and self.storage.fault is not None:
            codes.append(self.storage.fault.code)
        return codes

    def details(self) -> list[dict[str, JSON]]:
        """Each fault's code and message (what a technician must know), in the order
        of :meth:`codes`."""
        details = self._journaled()
        if self.storage is not None and self.storage.fault is not None:
            fault = self.storage.fault
            details.append({"code": fault.code, "message": fault.message})
        return details

    def play_stop(self) -> str | None:
        """Why play is stopped, or None (the round engine's ``play_stop``; the engine
        asks the storage guard itself, which answers with its own code)."""
        codes = self.journaled()
        if codes:
            return "latched fault(s) stop play until cleared from the console: " + ", ".join(codes)
        return None


class TableState(TableExtension):
    """The retained ``state`` topic follows the table: the game, the phase, the round in
    flight, the last round (what opening betting follows), the latched faults with their
    messages, whether requests must be signed (``auth``), where results come from
    (``result_source``), the policy risks the table runs with (``accepted_risks``,
    ``[auth] accept_risks``), the requests refused before authorisation
    (``refused_requests``), whether it is in maintenance (``maintenance``: no round
    opens) and the journal's latest round anchor (``state.json``)."""

    name = "state"

    def __init__(
        self,
        extensions: TableExtensions,
        *,
        publish: Callable[..., None],
        game_id: str,
        faults: LatchedFaults,
        auth: str = "signed",
        result_source: str = "device",
        last_round: Callable[[], str | None] = lambda: None,
        anchor: Callable[[], JSON] | None = None,
        accepted_risks: tuple[str, ...] = (),
        refused: Callable[[], JSON] | None = None,
        maintenance: Callable[[], JSON] | None = None,
    ) -> None:
        """``anchor``: the journal's latest round anchor (``Journal.round_anchor``);
        ``refused``: the counts of requests refused before authorisation
        (``RefusalLedger.snapshot``); ``maintenance``: the table's maintenance, or None
        (``table/maintenance.py``)."""
        self.maintenance = maintenance
        self.accepted_risks = accepted_risks
        self.refused = refused
        self.publish = publish
        self.game_id = game_id
        self.faults = faults
        self.auth = auth
        self.result_source = result_source
        self.last_round = last_round
        self.anchor = anchor
        self._anchor: JSON = None
        self.phase = Phase.IDLE
        self.round: RoundRecord | None = None
        extensions.add(self)

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        self.phase, self.round = phase, rnd
        self.refresh()

    def refresh(self) -> None:
        """Publish the snapshot again (after a latched fault was set or cleared)."""
        details = self.faults.details()
        fields: dict[str, JSON] = {
            "game": self.game_id,
            "phase": self.phase.value,
            "round_id": self.round.round_id if self.round else None,
            "last_round_id": self.last_round(),
            "faults": [d["code"] for d in details],
            "fault_details": details,
            "auth": self.auth,
            "result_source": self.result_source,
            "accepted_risks": list(self.accepted_risks),
        }
        if self.refused is not None:
            fields["refused_requests"] = self.refused()
        if self.maintenance is not None:
            fields["maintenance"] = self.maintenance()
        if self.anchor is not None:
            with contextlib.suppress(StorageError):  # unreadable for now: the last known
                self._anchor = self.anchor()
            fields["anchor"] = self._anchor
        self.publish(**fields)
