"""Game procedures: the regulation's own sequence, driven by devices and dealer inputs.

A procedure receives every typed device event of the table and calls the round
engine: open betting, close, result, void. One procedure per way of running a game:

- :class:`ManualProcedure`: everything from dealer/floor commands (``commands/request``
  and the console); mah-jong and P'ai Kao results are declared by the inspector.
- :class:`WheelProcedure`: roulette driven by the wheel (Cammegh SS2 states, or the
  GPIO wheel), 60/2004 art. 2-4.
- :class:`DiceProcedure`: sic bo and fish-prawn-crab by the shaker, bell and dome
  (57/2004 and 59/2004 art. 2-3).
- :class:`KeypadProcedure`: fantan by the dealer's keypad (58/2004 art. 4-5).
- :class:`ShoeProcedure`: card games card by card from the shoe.

A result that arrives in the wrong phase is refused by the engine and raised here as
a ``result_refused`` fault event; it is never settled.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .games.errors import RulesError
from .journal import OutboxMessage, iso_utc, utc_now
from .rounds import SCHEMA_VERSION, Phase

if TYPE_CHECKING:
    from .daemon import TableDaemon

log = logging.getLogger(__name__)

JSON = Any


class Procedure:
    """Base: manual operation; subclasses react to device events."""

    #: Whether a result may be entered by command (no device reads it).
    manual_results = True

    def __init__(self, daemon: TableDaemon) -> None:
        self.daemon = daemon
        assert daemon.engine is not None
        self.engine = daemon.engine

    async def run(self) -> None:
        """Background work of the procedure (polling, timers). Default: none."""

    async def stop(self) -> None:
        return None

    async def on_device_event(self, device: str, event: Any) -> None:
        raw = getattr(event, "raw", b"")
        if raw:
            self.engine.record_frames(device, [("rx", raw)])

    # -- helpers -----------------------------------------------------------------
    def fault(self, kind: str, data: Mapping[str, JSON]) -> None:
        """Publish a fault on ``events`` and write it to the event log."""
        journal = self.engine.journal
        payload: dict[str, JSON] = {
            "schema_version": SCHEMA_VERSION,
            "table_id": self.engine.cfg.table_id,
            "event": kind,
            "at": iso_utc(utc_now()),
            "data": dict(data),
        }
        cur = self.engine.current
        if cur is not None:
            payload["round_id"] = cur.round_id
        journal.enqueue(OutboxMessage("events", payload, round_id=cur.round_id if cur else None))
        journal.append_event(kind, dict(data))
        log.warning("%s: %s", kind, data)

    def try_result(self, outcome: JSON, source: str) -> Mapping[str, JSON] | None:
        try:
            return self.engine.submit_result(outcome, source=source)
        except RulesError as exc:
            self.fault(
                "result_refused",
                {"source": source, "outcome": outcome, "code": exc.code, "message": exc.message},
            )
            return None

    def try_open(self, source: str) -> None:
        if self.engine.phase is Phase.IDLE:
            try:
                self.engine.open_betting(source=source)
            except RulesError as exc:
                self.fault(
                    "open_refused", {"source": source, "code": exc.code, "message": exc.message}
                )

    def try_close(self, source: str) -> None:
        if self.engine.phase is Phase.OPEN:
            self.engine.close_betting(source=source)


class ManualProcedure(Procedure):
    """Every phase from commands (floor MQTT ``commands/request`` or the console)."""


def make_procedure(daemon: TableDaemon) -> Procedure:
    """The procedure for the table's game and devices."""
    return ManualProcedure(daemon)
