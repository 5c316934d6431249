"""The table's retained ``state`` snapshot and the latched faults that stop play."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..journal import Fault, RoundRecord
from ..jsonio import JSON
from .extension import TableExtension, TableExtensions
from .phase import Phase


class FaultJournal(Protocol):
    def active_faults(self) -> list[Fault]: ...


class LatchedFaults:
    """Faults that survive a restart until a technician clears them from the console
    (GLI-style); while any is latched no round opens."""

    def __init__(self, journal: FaultJournal) -> None:
        self.journal = journal

    def codes(self) -> list[str]:
        return [f.code for f in self.journal.active_faults()]

    def details(self) -> list[dict[str, JSON]]:
        """Each latched fault's code and message (what a technician must know)."""
        return [{"code": f.code, "message": f.message} for f in self.journal.active_faults()]

    def play_stop(self) -> str | None:
        """Why play is stopped, or None (the round engine's ``play_stop``)."""
        codes = self.codes()
        if codes:
            return "latched fault(s) stop play until cleared from the console: " + ", ".join(codes)
        return None


class TableState(TableExtension):
    """The retained ``state`` topic follows the table: the game, the phase, the round in
    flight, the latched faults with their messages and the journal's latest round anchor
    (``state.json``)."""

    name = "state"

    def __init__(
        self,
        extensions: TableExtensions,
        *,
        publish: Callable[..., None],
        game_id: str,
        faults: LatchedFaults,
        anchor: Callable[[], JSON] | None = None,
    ) -> None:
        """``anchor``: the journal's latest round anchor (``Journal.round_anchor``)."""
        self.publish = publish
        self.game_id = game_id
        self.faults = faults
        self.anchor = anchor
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
            "faults": [d["code"] for d in details],
            "fault_details": details,
        }
        if self.anchor is not None:
            fields["anchor"] = self.anchor()
        self.publish(**fields)
