"""The table's retained ``state`` snapshot and the latched faults that stop play."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..journal import Fault, RoundRecord
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

    def play_stop(self) -> str | None:
        """Why play is stopped, or None (the round engine's ``play_stop``)."""
        codes = self.codes()
        if codes:
            return "latched fault(s) stop play until cleared from the console: " + ", ".join(codes)
        return None


class TableState(TableExtension):
    """The retained ``state`` topic follows the table: the game, the phase, the round in
    flight, the last round (what opening betting follows), the latched faults, whether
    requests must be signed (``auth``) and where results come from (``result_source``)
    (``state.json``)."""

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
    ) -> None:
        self.publish = publish
        self.game_id = game_id
        self.faults = faults
        self.auth = auth
        self.result_source = result_source
        self.last_round = last_round
        self.phase = Phase.IDLE
        self.round: RoundRecord | None = None
        extensions.add(self)

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        self.phase, self.round = phase, rnd
        self.refresh()

    def refresh(self) -> None:
        """Publish the snapshot again (after a latched fault was set or cleared)."""
        self.publish(
            game=self.game_id,
            phase=self.phase.value,
            round_id=self.round.round_id if self.round else None,
            last_round_id=self.last_round(),
            faults=self.faults.codes(),
            auth=self.auth,
            result_source=self.result_source,
        )
