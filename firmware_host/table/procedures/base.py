"""What every game procedure shares: its narrow context and the engine calls it makes.

A procedure receives every typed device event of the table
(:meth:`Procedure.on_device_event`) and calls the round engine: open betting, close,
result, void. It never sees the daemon: it gets a :class:`ProcedureContext` (the round
engine, the table's devices by kind, where faults are reported, the clock and the
extensions it may follow) and the device that drives it.

A result that arrives in the wrong phase is refused by the engine and reported here as
a ``result_refused`` fault event; it is never settled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Protocol

from tablecommon.events.base import DeviceEvent

from ...games.errors import RulesError
from ...jsonio import JSON
from ...timefmt import utc_now
from ..engine import Frame, RoundEngine
from ..extension import TableExtensions
from ..phase import Phase


@dataclass(frozen=True, slots=True)
class Device:
    """A configured device as a procedure sees it: its name (``[devices.<name>]``),
    its kind (what its driver declares: ``drivers.registry.kind_of``) and its driver."""

    name: str
    kind: str
    driver: object


class ResultSink(Protocol):
    """Where a procedure's result goes: the round engine, or the table's witness
    (``table/witness.py``), which holds it until a second reading agrees."""

    def submit_result(
        self, raw_outcome: JSON, *, source: str, frames: Sequence[Frame] = ()
    ) -> Mapping[str, JSON] | None: ...

    def holding(self) -> bool:
        """Whether the round in flight has its reading and waits (the device's next
        game is not a round of it)."""
        ...


@dataclass(frozen=True)
class ProcedureContext:
    """Everything a procedure may use, and nothing more."""

    engine: RoundEngine
    #: The table's enabled devices.
    devices: Sequence[Device] = ()
    #: ``report_fault(kind, data)``: publish a fault on ``events`` and log it.
    report_fault: Callable[[str, Mapping[str, JSON]], None] | None = None
    clock: Callable[[], datetime] = utc_now
    #: The table's extensions (a procedure that follows the phases registers here).
    extensions: TableExtensions = field(default_factory=TableExtensions)
    #: Where results go when not straight to the engine: the table's witness.
    results: ResultSink | None = None

    def device_of_kind(self, kind: str) -> Device | None:
        """The first enabled device of ``kind``, if any."""
        return next((d for d in self.devices if d.kind == kind), None)


class Procedure:
    """Base: every phase from commands; subclasses react to the events of their device."""

    #: Whether a result may be entered by command (no device reads it).
    manual_results: ClassVar[bool] = True

    def __init__(self, ctx: ProcedureContext, device: Device | None = None) -> None:
        self.ctx = ctx
        self.engine = ctx.engine
        self.device = device
        self._report = ctx.report_fault or ctx.engine.report_fault

    async def run(self) -> None:
        """Background work of the procedure (polling, timers). Default: none."""

    async def stop(self) -> None:
        return None

    def carries_result(self, event: DeviceEvent) -> bool:
        """Whether ``event`` is a result this procedure settles: its raw frames are then
        journaled with the settlement (one transaction), not on their own before it."""
        return False

    async def on_device_event(self, device: str, event: DeviceEvent) -> None:
        """Every event of every device of the table; the base keeps its raw frames."""
        if event.raw and not self.carries_result(event):
            self.engine.record_frames([(device, "rx", event.raw)])

    def holding(self) -> bool:
        """Whether the round's result is held (read, waiting for the witness or a
        supervisor): the device's next game is not a round of it."""
        return self.ctx.results is not None and self.ctx.results.holding()

    def is_mine(self, device: str) -> bool:
        """Whether ``device`` is the device that drives this procedure."""
        return self.device is not None and device == self.device.name

    # -- floor operations (player decisions, deal setup); none by default ----------
    def decide(self, args: Mapping[str, JSON], source: str) -> JSON:
        """A player's decision (blackjack, stud poker)."""
        raise RulesError("this table takes no player decisions", code="NOT_SUPPORTED")

    def deal_setup(self, args: Mapping[str, JSON], source: str) -> JSON:
        """The setup a deal needs before its first card (Super Pan 9)."""
        raise RulesError("this table takes no deal setup", code="NOT_SUPPORTED")

    # -- helpers -----------------------------------------------------------------
    def fault(self, kind: str, data: Mapping[str, JSON]) -> None:
        """Publish a fault on ``events`` and write it to the event log."""
        self._report(kind, data)

    def submit_result(
        self, outcome: JSON, *, source: str, frames: Sequence[Frame] = ()
    ) -> Mapping[str, JSON] | None:
        """The round's result, from the device or a command: to the table's witness when
        it has one (held until a second reading agrees: None), else settled."""
        sink = self.ctx.results
        if sink is not None:
            return sink.submit_result(outcome, source=source, frames=frames)
        return self.engine.submit_result(outcome, source=source, frames=frames)

    def try_result(
        self, outcome: JSON, source: str, frames: Sequence[Frame] = ()
    ) -> Mapping[str, JSON] | None:
        try:
            return self.submit_result(outcome, source=source, frames=frames)
        except RulesError as exc:
            self.engine.record_frames(frames)
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


def problem_data(device: str, event: DeviceEvent) -> dict[str, JSON]:
    """A ``device_problem`` fault's data: the device, the event's kind and its fields."""
    return {
        "device": device,
        "kind": event.kind,
        **{k: v for k, v in event.to_json().items() if k not in ("raw", "device")},
    }
