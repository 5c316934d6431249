"""The table as parts: what the daemon builds from its plan, once.

:func:`build_parts` makes every part of a running table from the
:class:`~firmware_host.assembly.TablePlan`, the opened journal and the floor check
already made, each part given its collaborators through its constructor, in an order
where every collaborator exists before the part that uses it; nothing is wired after
(no attribute of a part is set from outside). It returns :class:`TableParts`, a frozen
table of them. It does no I/O: the daemon then starts what runs (``daemon.py``).

Two collaborations go against the order of construction and are subscriptions, not
wiring: the retained ``state`` follows the journal's faults (``FaultStore.add_listener``:
whoever latches or clears one), its storage guard and the refusals' windows; and the
link's ``after`` (the work after the outbox's publications) is made before the journal
that defers to it (``firmware_host/mqtt/window.py``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.switches.bank import SwitchBank

from .assembly import TablePlan
from .auth import Authenticator
from .config import TableConfig
from .console import Lockout, OperatorPresence
from .console.keypad import KeypadSignInDesk
from .console_backend import TableConsoleBackend
from .devices import TableDevices, pin_factory_for
from .face.board import BoardDevice, ResultBoard, TableStatistics
from .face.limits import TableLimits
from .integrity.alerts import Alerts
from .integrity.clock import ClockWatch, StepWatch
from .integrity.installs import RECORD, SoftwareInstalls
from .integrity.monitor import IntegrityMonitor, max_payout_of
from .integrity.pace import DealerRoster, PaceMonitor
from .integrity.selfcheck import SoftwareCheck
from .integrity.switches import TableSwitches
from .journal import Journal
from .logsetup import RoundLog
from .mqtt import AfterPublication, FloorLink, read_retained
from .sdnotify import LoopLag
from .table.ahead import loop_runner
from .table.commands import Commands
from .table.engine import RoundEngine
from .table.extension import TableExtensions
from .table.floor import FloorRequests
from .table.floorcheck import FLOOR_RECORD, RETAINED, JournalFloorCheck, floor_record_topic
from .table.jackpot import JackpotController, JackpotDisplay, JackpotSign
from .table.maintenance import Maintenance
from .table.phase import Phase
from .table.procedures import Procedure, ProcedureContext, make_procedure
from .table.round_commands import table_commands
from .table.state import LatchedFaults, TableState
from .table.witness import ResultWitness, WitnessDevice, WitnessHealth, without_witness

log = logging.getLogger(__name__)

__all__ = ["TableParts", "build_parts", "floor_check"]


@dataclass(frozen=True, slots=True)
class TableParts:
    """A running table's parts, each built once with its collaborators (see the module
    docstring). ``None``: a part the table's game or configuration does not have."""

    auth: Authenticator
    floor_check: JournalFloorCheck
    #: The faults that stop play: the journal's latched ones and its storage fault.
    faults: LatchedFaults
    dealers: DealerRoster
    #: A dealer's sign-in at the keypad (number and PIN, docs/console.md).
    keypad_sign_in: KeypadSignInDesk
    jackpot: JackpotController | None
    engine: RoundEngine
    devices: TableDevices
    procedure: Procedure
    #: Each command's handler, registered by the part that answers it.
    commands: Commands
    floor: FloorRequests
    link: FloorLink
    state: TableState
    #: Integrity alerts held until acknowledged (``docs/integrity.md``).
    alerts: Alerts
    software: SoftwareCheck
    #: The download log journaled at start (``integrity/installs.py``).
    installs: SoftwareInstalls
    #: Out of play between rounds for an update (``table/maintenance.py``).
    maintenance: Maintenance
    round_log: RoundLog
    jackpot_display: JackpotDisplay | None
    board: ResultBoard | None
    #: The table's limits per bet type, retained for the screens (``limits`` topic).
    limits: TableLimits
    statistics: TableStatistics | None
    integrity: IntegrityMonitor
    pace: PaceMonitor
    clock_watch: ClockWatch | None
    #: The wall clock against the monotonic clock on every tick (CLOCK_STEP).
    clock_steps: StepWatch
    console_backend: TableConsoleBackend
    #: The technicians logged in at the console now (each session tells it).
    technicians: OperatorPresence
    #: The table's doors, lids, boxes and tamper loops as significant events.
    switches: TableSwitches
    #: The result's second reading (``[witness]``, ``docs/witness.md``) and its health.
    witness: ResultWitness | None = None
    witness_health: WitnessHealth | None = None
    #: A ``device`` or ``keypad`` witness's events as its readings.
    witness_device: WitnessDevice | None = None

    async def on_device_event(self, device: str, event: Any) -> None:
        """A device's event: to the procedure, the witness, then to the integrity
        detectors and to the keypad's sign-in."""
        await self.procedure.on_device_event(device, event)
        if self.witness_device is not None:
            await self.witness_device.on_device_event(device, event)
        await self.integrity.on_device_event(device, event)
        await self.keypad_sign_in.on_device_event(device, event)


def floor_check(
    plan: TablePlan, cfg: TableConfig, journal: Journal, auth: Authenticator
) -> JournalFloorCheck:
    """The start-up comparison of the journal with what the table last published (its
    retained messages and the floor's signed record of it: ``table/floorcheck.py``)."""
    record = {FLOOR_RECORD: floor_record_topic(plan.mqtt.prefix, cfg.table_id)}
    return JournalFloorCheck(
        journal,
        cfg.table_id,
        lambda: read_retained(plan.mqtt, cfg.table_id, RETAINED, others=record),
        retry_min=plan.mqtt.reconnect_min_ms / 1000,
        retry_max=plan.mqtt.reconnect_max_ms / 1000,
        simulated=plan.simulated,
        record_keys=auth.keys_allowed("floor_record"),
    )


def build_parts(
    plan: TablePlan,
    cfg: TableConfig,
    journal: Journal,
    *,
    after: AfterPublication,
    auth: Authenticator,
    check: JournalFloorCheck,
    extensions: TableExtensions,
    pin_factory: Any,
    loop_lag: LoopLag,
    config_path: Path | None,
) -> TableParts:
    """Every part of the table, in the order their collaborators need (no I/O; the
    event loop must be running: the settlements ahead run on it). ``after``: what the
    journal was opened to defer to, which the link takes; ``check``: the floor check
    already made (:func:`floor_check`); ``pin_factory``: GPIO pins brought by the caller
    (None: the plan's)."""
    j = journal
    faults = LatchedFaults(j.faults, storage=j.db.storage)
    roster = DealerRoster(j.chain, auth=plan.auth)
    console = plan.console
    keypad = KeypadSignInDesk(
        roster, console.dealers, Lockout(console.max_tries, console.lockout_seconds), j.chain
    )
    jackpot = _jackpot(j, plan, cfg) if plan.jackpot_params is not None else None
    maintenance = Maintenance(j.chain, cfg.table_id)
    engine = RoundEngine(
        cfg,
        j,
        jackpot=jackpot,
        # no round opens while a fault is latched or the table is in maintenance
        play_stop=functools.partial(maintenance.play_stop, faults.play_stop),
        extensions=extensions,
        caps=plan.bet_caps,
        dealer=roster.current,
        # the game's own admission rules: the jackpot's (61/2004 art. 11 1), 4))
        admission=(jackpot.admit,) if jackpot is not None else (),
        # While the ball spins, the bets are settled for every outcome (table/ahead.py).
        runner=loop_runner(asyncio.get_running_loop().call_soon),
    )
    pins = pin_factory or pin_factory_for(
        plan.devices, simulated=plan.simulated, switches=any(s.enabled for s in plan.switches)
    )
    devices = TableDevices(plan.devices, pin_factory=pins)
    # A second reading of each result, between the procedure and the engine (docs/witness.md).
    witness = (
        ResultWitness(
            plan.witness,
            engine,
            db=j.db,
            chain=j.chain,
            faults=j.faults,
            approvals=j.requests,
            extensions=extensions,
        )
        if plan.witness is not None
        else None
    )
    procedure = make_procedure(
        ProcedureContext(
            engine,
            devices=tuple(devices),
            report_fault=engine.report_fault,
            extensions=extensions,
            results=witness,
        )
    )
    # Each command's handler, registered by the part that answers it (table/commands.py).
    commands = table_commands(engine, procedure, j, jackpot=jackpot)
    roster.register_commands(commands)
    maintenance.register_commands(commands)
    if witness is not None:
        witness.register_commands(commands)
    else:
        without_witness(commands)
    floor = FloorRequests(engine, procedure, j, auth=auth, commands=commands)
    link = FloorLink(
        plan.mqtt,
        cfg.table_id,
        j.outbox,
        handler=floor.handle,
        identity=j.outbox.identity,
        after=after,
    )
    state = TableState(
        extensions,
        publish=link.set_state,
        game_id=cfg.game_id,
        faults=faults,
        auth=auth.mode,
        result_source=plan.result_source,
        last_round=engine.last_round_id,
        anchor=j.rounds.anchor,
        accepted_risks=plan.accepted_risks,
        refused=floor.refusals.snapshot,
        maintenance=maintenance.snapshot,
    )
    # The retained state follows the faults, the maintenance, the refusals' windows and
    # the storage fault; the link retries what it could not mark published when the
    # storage answers.
    j.faults.add_listener(state.refresh)
    maintenance.add_listener(state.refresh)
    floor.refusals.listeners.append(state.refresh)
    j.db.storage.add_listener(state.refresh)
    j.db.storage.add_listener(link.storage_changed)
    alerts = Alerts(j.alerts, j.db, publish=functools.partial(link.set_snapshot, "alerts"))
    alerts.register_commands(commands)
    software = SoftwareCheck(plan.software, j.chain, j.faults, alerts)
    software.register_commands(commands)
    witness_health = (
        WitnessHealth(witness, raise_alert=alerts.raise_, publish=link.set_device)
        if witness is not None
        else None
    )
    board, statistics = _faces(plan, cfg, extensions, devices, link, j, roster)
    limits = TableLimits(
        extensions,
        game=cfg.game,
        rules=cfg.rules,
        money=cfg.money,
        limits=lambda: engine.cfg.limits,
        name=cfg.name,
        publish=functools.partial(link.set_snapshot, "limits"),
    )
    clock_watch = (
        ClockWatch(
            alerts,
            unsync_max_s=plan.integrity.clock_unsync_max_s,
            check_s=plan.integrity.clock_check_s,
        )
        if plan.integrity.clock_unsync_max_s
        else None
    )
    pace = PaceMonitor(
        extensions,
        roster=roster,
        chain=j.chain,
        table_id=cfg.table_id,
        shift_start_hour=plan.integrity.shift_start_hour,
        shift_hours=plan.integrity.shift_hours,
    )
    steps = StepWatch(
        extensions,
        alerts=alerts,
        chain=j.chain,
        table_id=cfg.table_id,
        tolerance_ms=plan.integrity.clock_step_tolerance_ms,
        synchronised=clock_watch.synchronised if clock_watch is not None else lambda: None,
    )
    steps.add_listener(pace.clock_stepped)
    technicians = OperatorPresence()
    switches = TableSwitches(
        # a simulated table's mock pins start with every switch closed (at rest)
        SwitchBank(plan.switches, pin_factory=pins, at_rest=plan.simulated),
        chain=j.chain,
        db=j.db,
        alerts=alerts,
        table_id=cfg.table_id,
        round_in_flight=functools.partial(_round_in_flight, engine),
        present=technicians.present,
        health=link.set_device,
    )
    return TableParts(
        auth=auth,
        floor_check=check,
        faults=faults,
        dealers=roster,
        keypad_sign_in=keypad,
        jackpot=jackpot,
        engine=engine,
        devices=devices,
        procedure=procedure,
        commands=commands,
        floor=floor,
        link=link,
        state=state,
        alerts=alerts,
        software=software,
        installs=SoftwareInstalls(j.chain, cfg.table_id, Path(plan.journal.path).parent / RECORD),
        maintenance=maintenance,
        round_log=RoundLog(extensions, cfg.money),
        jackpot_display=_jackpot_display(plan, extensions, jackpot, devices, link),
        board=board,
        limits=limits,
        statistics=statistics,
        integrity=_integrity(plan, cfg, extensions, alerts, devices, j),
        pace=pace,
        clock_watch=clock_watch,
        clock_steps=steps,
        console_backend=TableConsoleBackend(
            name=cfg.name,
            engine=engine,
            journal=j,
            link=link,
            # the console's `devices` shows the table's switches too
            drivers={**devices.drivers, **switches.bank.switches},
            jackpot_controller=jackpot,
            loop_lag=loop_lag.seconds,
            config_path=config_path,
            commands=commands,
            alerts_board=alerts,
            dealers=roster,
            pace=pace,
        ),
        technicians=technicians,
        switches=switches,
        witness=witness,
        witness_health=witness_health,
        witness_device=(
            WitnessDevice(witness, extensions)
            if witness is not None and witness.settings.source != "mqtt"
            else None
        ),
    )


def _round_in_flight(engine: RoundEngine) -> str | None:
    """The round whose betting is open or closed (a switch opened then opened in it)."""
    cur = engine.current
    return cur.round_id if cur is not None and engine.phase in (Phase.OPEN, Phase.CLOSED) else None


def _jackpot(journal: Journal, plan: TablePlan, cfg: TableConfig) -> JackpotController:
    """The progressive jackpot of a table that offers one (61/2004 art. 10)."""
    assert plan.jackpot_params is not None and plan.jackpot is not None
    ctl = JackpotController(
        journal.jackpot,
        journal.db,
        plan.jackpot_params,
        meter_max=plan.jackpot.meter_max,
        currency=cfg.money.currency,
    )
    if not ctl.meter.balanced():
        # A jackpot meter mismatch is a latched fault: play stops until a technician clears it.
        journal.faults.set_fault(
            "JACKPOT_METER_MISMATCH",
            f"pool {ctl.meter.pool} + overflow {ctl.meter.overflow} != expected "
            f"{ctl.meter.expected_total()}",
        )
    return ctl


def _jackpot_display(
    plan: TablePlan,
    extensions: TableExtensions,
    jackpot: JackpotController | None,
    devices: TableDevices,
    link: FloorLink,
) -> JackpotDisplay | None:
    """The jackpot's retained topic and its sign (a device named by ``[jackpot] sign``)."""
    if jackpot is None or plan.jackpot is None:
        return None
    sign = devices.get(plan.jackpot.sign) if plan.jackpot.sign else None
    if sign is not None and not isinstance(sign, JackpotSign):
        log.error("[jackpot] sign: device %r is not a sign; MQTT only", plan.jackpot.sign)
        sign = None
    return JackpotDisplay(
        jackpot,
        extensions,
        publish=link.set_jackpot,
        sign=sign,
        display_ms=plan.jackpot.display_ms,
    )


def _faces(
    plan: TablePlan,
    cfg: TableConfig,
    extensions: TableExtensions,
    devices: TableDevices,
    link: FloorLink,
    journal: Journal,
    roster: DealerRoster,
) -> tuple[ResultBoard | None, TableStatistics | None]:
    """The result board (``board`` topic and the board devices; with the dealer on
    duty, published again when the roster changes) and the statistics (``stats`` topic)
    of a table whose game has a result layout."""
    boards = [d.driver for d in devices if d.kind == "board"]
    board = (
        ResultBoard(
            extensions,
            game_id=cfg.game_id,
            publish=functools.partial(link.set_snapshot, "board"),
            boards=[b for b in boards if isinstance(b, BoardDevice)],
            shoe_log=journal.chain,
            rules=cfg.rules,
            dealer=roster.current,
        )
        if ResultBoard.applies(cfg.game_id)
        else None
    )
    if board is not None:  # a subscription: the board shows who deals
        shown = board
        roster.add_listener(lambda _old, _new: shown.refresh())
    statistics = (
        TableStatistics(
            extensions,
            game_id=cfg.game_id,
            publish=functools.partial(link.set_snapshot, "stats"),
            settings=plan.statistics,
        )
        if TableStatistics.applies(cfg.game_id)
        else None
    )
    return board, statistics


def _integrity(
    plan: TablePlan,
    cfg: TableConfig,
    extensions: TableExtensions,
    alerts: Alerts,
    devices: TableDevices,
    journal: Journal,
) -> IntegrityMonitor:
    """The integrity detectors (``docs/integrity.md``), following the rounds and the
    devices' events."""

    def named(kind: str) -> str:
        return next((d.name for d in devices if d.kind == kind), kind)

    shoe = named("shoe")
    deck_check: Callable[..., Any] | None = getattr(devices.get(shoe), "request_deck_check", None)
    return IntegrityMonitor(
        extensions,
        alerts=alerts,
        chain=journal.chain,
        table_id=cfg.table_id,
        result_device=cfg.game.result_device,
        settings=plan.integrity,
        wheel_name=named("wheel"),
        shaker_name=named("shaker"),
        shoe_name=shoe,
        deck_check=deck_check,
        decks=int(getattr(cfg.rules, "decks", 8) or 8),
        currency=cfg.money.currency,
        max_payout=max_payout_of(cfg.game, cfg.rules, cfg.money)
        if plan.integrity.large_transaction
        else None,
    )
