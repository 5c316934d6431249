"""The table daemon: devices -> round engine -> journal -> MQTT.

:class:`TableDaemon` only assembles: it reads the configuration once
(:func:`~firmware_host.assembly.read_plan`, refusing options set but never read and
GPIO missing), then builds each piece with its collaborators through its constructor,
and owns their life-cycle:

1. the journal (SQLite, WAL, full sync, its chain keyed with the table's audit key)
   is opened and a ``power_up`` event written; it is compared with what the table last
   published (its retained ``anchor`` and ``state``: ``table/floorcheck.py``), which
   may latch ``JOURNAL_BEHIND_FLOOR`` or, broker unreachable, ``JOURNAL_UNCHECKED``;
   latched faults are read back (they survive restarts and stop play);
2. the progressive jackpot (on a table that offers one), the round engine, the
   devices' drivers (one GPIO pin factory for all), the game's procedure (chosen by the
   device kind that carries the result), the floor requests and the floor link are
   built; the table's extensions (retained ``state``, jackpot display) register;
3. the floor link (MQTT) starts publishing the outbox and answering requests (once
   the journal has been compared with the floor: until then it waits);
4. the round engine resolves whatever a crash left in flight;
5. every device driver starts, its health mirrored on ``devices/<name>``, its events
   handed to the procedure;
6. the technician console listens (serial port and Unix socket);
7. systemd is told READY, and the event loop itself sends the watchdog pings.

Shutdown (SIGTERM) reverses it: STOPPING, the procedure and drivers stop, the floor
link finishes the publication in flight and says ``offline``, ``power_down`` is
journaled. SIGHUP reloads the keys that are safe to reload (see :data:`RELOADABLE`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import __version__
from .assembly import TablePlan, read_plan
from .auth import Authenticator, IdentityKeyError
from .config import ConfigInvalid, TableConfig, load_config
from .console import (
    ConsoleSession,
    ConsoleSettings,
    DualControl,
    Lockout,
    restore_lockout,
    serve_socket,
    serve_stream,
)
from .console.keypad import KeypadSignInDesk
from .console_backend import TableConsoleBackend
from .devices import TableDevices, pin_factory_for
from .face.board import BoardDevice, ResultBoard, TableStatistics
from .integrity.alerts import Alerts
from .integrity.clock import ClockWatch, StepWatch
from .integrity.installs import RECORD, SoftwareInstalls
from .integrity.monitor import IntegrityMonitor, max_payout_of
from .integrity.pace import DealerRoster, PaceMonitor
from .integrity.selfcheck import SoftwareCheck, SoftwareMismatch
from .journal import AuditLog, Journal, JournalError, StorageError, TableOwner
from .journal.rounds import rules_digest
from .jsonio import JSON
from .logsetup import ProgressLine, RoundLog
from .mqtt import FloorLink, MqttSettings, read_retained
from .progress import every
from .sdnotify import Notifier
from .table.ahead import loop_runner
from .table.engine import RoundEngine
from .table.extension import TableExtensions
from .table.floor import FloorRequests
from .table.floorcheck import (
    FLOOR_RECORD,
    RETAINED,
    JournalFloorCheck,
    floor_record_topic,
)
from .table.jackpot import JackpotController, JackpotDisplay, JackpotSign
from .table.maintenance import Maintenance
from .table.procedures import ManualProcedure, Procedure, ProcedureContext, make_procedure
from .table.round_commands import table_commands
from .table.state import LatchedFaults, TableState

log = logging.getLogger(__name__)


#: ``tablectl run``'s exit status when the journal refuses to open (damaged, disk full,
#: I/O error): the reason is one log line with its code.
EXIT_JOURNAL = 3

#: ``tablectl run``'s exit status when the installed software does not match its signed
#: manifest (``docs/integrity.md``): the fault is latched and the table refuses to start.
EXIT_SOFTWARE = 4

#: Sections that SIGHUP applies without a restart; any other change needs one.
RELOADABLE = ("limits", "console", "daemon")


def config_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class TableDaemon:
    """One table's controller. ``await start()``, then ``await stop()``.

    The constructor reads the configuration and raises
    :class:`~firmware_host.config.ConfigInvalid` if the table cannot run here (an
    option set but never read, GPIO pins missing); it does no I/O. ``pin_factory``:
    GPIO pins brought by the caller (tests pass gpiozero's ``MockFactory``)."""

    def __init__(
        self,
        cfg: TableConfig,
        *,
        config_path: str | Path | None = None,
        state_dir: str | Path | None = None,
        runtime_dir: str | Path | None = None,
        mqtt: MqttSettings | None = None,
        pin_factory: Any = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.cfg = cfg
        self.config_path = Path(config_path) if config_path else None
        self.state_dir = Path(state_dir) if state_dir else None
        self.runtime_dir = Path(runtime_dir) if runtime_dir else None
        self.plan: TablePlan = read_plan(
            cfg, mqtt=mqtt, state_dir=state_dir, pin_factory_given=pin_factory is not None
        )
        if self.plan.problems:
            raise ConfigInvalid(cfg.source, list(self.plan.problems))
        self._pin_factory = pin_factory
        self.mqtt_settings = self.plan.mqtt
        self.watchdog_check = self.plan.watchdog_check
        self.console_settings: ConsoleSettings = self.plan.console
        self.notifier = notifier or Notifier()
        self.lockout = Lockout(
            self.console_settings.max_tries, self.console_settings.lockout_seconds
        )
        #: Jackpot requests waiting for a second operator (shared by every session).
        self.dual_control = DualControl()
        #: The table's extensions: what follows the rounds (state, jackpot display).
        self.extensions = TableExtensions()
        self.journal: Journal | None = None
        self.engine: RoundEngine | None = None
        self.jackpot: JackpotController | None = None
        self.jackpot_display: JackpotDisplay | None = None
        self.devices: TableDevices | None = None
        self.procedure: Procedure | None = None
        self.floor: FloorRequests | None = None
        self.link: FloorLink | None = None
        self.state: TableState | None = None
        self.board: ResultBoard | None = None
        self.statistics: TableStatistics | None = None
        self.floor_check: JournalFloorCheck | None = None
        self.console_backend: TableConsoleBackend | None = None
        #: Integrity alerts held until acknowledged (``docs/integrity.md``).
        self.alerts: Alerts | None = None
        self.software: SoftwareCheck | None = None
        self.integrity: IntegrityMonitor | None = None
        self.clock_watch: ClockWatch | None = None
        #: The wall clock against the monotonic clock on every tick (CLOCK_STEP).
        self.clock_steps: StepWatch | None = None
        self.dealers: DealerRoster | None = None
        self.pace: PaceMonitor | None = None
        #: A dealer's sign-in at the keypad (number and PIN, docs/console.md).
        self.keypad_sign_in: KeypadSignInDesk | None = None
        self.faults: LatchedFaults | None = None
        #: Out of play between rounds for an update (``table/maintenance.py``).
        self.maintenance: Maintenance | None = None
        #: Rounds left in flight by a crash, not resolved yet (``_resolve_in_flight``).
        self._unresolved = False
        self._tasks: list[asyncio.Task[Any]] = []
        self._servers: list[asyncio.AbstractServer] = []
        self._stopping = False
        self.loop_lag = 0.0
        self.ready = asyncio.Event()
        #: Seconds between two progress lines in the log (``tablectl run --progress``;
        #: 0: none), and what counts the rounds for them.
        self.progress_s = 0.0
        self.round_log: RoundLog | None = None

    @property
    def drivers(self) -> dict[str, Any]:
        """Device name -> driver (empty before :meth:`start`)."""
        return dict(self.devices.drivers) if self.devices is not None else {}

    # -- life-cycle --------------------------------------------------------------
    async def start(self) -> None:
        plan, cfg = self.plan, self.cfg
        self.notifier.status("opening journal")
        j = self.journal = plan.journal.open(
            owner=TableOwner(
                cfg.table_id, cfg.game_id, rules_digest(cfg.game.rules_json(cfg.rules))
            )
        )
        # Pruning and the extensions' hooks run after what a commit queued: on the next
        # loop turn until the floor link exists, then once the broker acknowledged it.
        j.db.defer = asyncio.get_running_loop().call_soon
        self._power_up(j.chain)
        if left := restore_lockout(self.lockout, j.chain):
            log.warning("console locked for %d s more (a lockout from before the restart)", left)
        auth = Authenticator(plan.auth, cfg.table_id)
        self.notifier.status("comparing the journal with the floor")
        record = {FLOOR_RECORD: floor_record_topic(plan.mqtt.prefix, cfg.table_id)}
        check = self.floor_check = JournalFloorCheck(
            j,
            cfg.table_id,
            lambda: read_retained(plan.mqtt, cfg.table_id, RETAINED, others=record),
            retry_min=plan.mqtt.reconnect_min_ms / 1000,
            retry_max=plan.mqtt.reconnect_max_ms / 1000,
            on_change=lambda: self.state.refresh() if self.state is not None else None,
            simulated=plan.simulated,
            record_keys=auth.keys_allowed("floor_record"),
        )
        checked = await check.check_once()

        faults = self.faults = LatchedFaults(j.faults, storage=j.db.storage)
        alerts = self.alerts = Alerts(j.alerts, j.db, publish=self._publish_alerts)
        software = self.software = SoftwareCheck(
            plan.software, j.chain, j.faults, alerts, faults_changed=self._faults_changed
        )
        installs = SoftwareInstalls(j.chain, cfg.table_id, Path(plan.journal.path).parent / RECORD)
        software.at_start(then=installs.at_start)  # a mismatch: recorded, latched, refused
        self.maintenance = Maintenance(j.chain, cfg.table_id, changed=self._faults_changed)
        roster = self.dealers = DealerRoster(j.chain, auth=plan.auth)
        self.keypad_sign_in = KeypadSignInDesk(
            roster,
            self.console_settings.dealers,
            Lockout(self.console_settings.max_tries, self.console_settings.lockout_seconds),
            j.chain,
        )
        if plan.jackpot_params is not None:
            self.jackpot = self._jackpot(j, plan)
        engine = self.engine = RoundEngine(
            cfg,
            j,
            jackpot=self.jackpot,
            play_stop=self._play_stop,
            extensions=self.extensions,
            caps=plan.bet_caps,
            dealer=roster.current,
        )
        # While the ball spins, the bets are settled for every outcome (table/ahead.py).
        engine.ahead.runner = loop_runner(asyncio.get_running_loop().call_soon)
        devices = self.devices = TableDevices(
            plan.devices,
            pin_factory=self._pin_factory
            or pin_factory_for(plan.devices, simulated=plan.simulated),
        )
        procedure = self.procedure = make_procedure(
            ProcedureContext(
                engine,
                devices=tuple(devices),
                report_fault=engine.report_fault,
                extensions=self.extensions,
            )
        )
        if not auth.signatures:
            log.warning("[auth] signatures = false: floor requests are NOT authenticated")
        for line in plan.accepted_risk_lines:  # also in the retained state
            log.warning("running with an accepted risk: %s", line)
        # Each command's handler, registered by the part that answers it (table/commands.py).
        commands = table_commands(engine, procedure, j, jackpot=self.jackpot)
        for part in (alerts, software, roster, self.maintenance):
            part.register_commands(commands)
        floor = self.floor = FloorRequests(engine, procedure, j, auth=auth, commands=commands)
        link = self.link = FloorLink(
            plan.mqtt, cfg.table_id, j.outbox, handler=floor.handle, identity=j.outbox.identity
        )
        # The round reaches the floor before the table's own work after it competes with
        # the broker and the floor for the CPU (docs/performance.md, "after publication").
        j.db.defer = link.after_publication
        j.retention.checkpoint_in_background()
        self.state = TableState(
            self.extensions,
            publish=link.set_state,
            game_id=cfg.game_id,
            faults=faults,
            auth=auth.mode,
            result_source=plan.result_source,
            last_round=engine.last_round_id,
            anchor=j.rounds.anchor,
            accepted_risks=plan.accepted_risks,
            refused=floor.refusals.snapshot,
            maintenance=self.maintenance.snapshot,
        )
        floor.refusals.listeners.append(self.state.refresh)
        # A storage fault raised or cleared: the retained state says so at once, and the
        # link retries what it could not mark published.
        j.db.storage.add_listener(self.state.refresh)
        j.db.storage.add_listener(link.storage_changed)
        self.round_log = RoundLog(self.extensions, cfg.money)
        if self.jackpot is not None and plan.jackpot is not None:
            sign = devices.get(plan.jackpot.sign) if plan.jackpot.sign else None
            if sign is not None and not isinstance(sign, JackpotSign):
                log.error("[jackpot] sign: device %r is not a sign; MQTT only", plan.jackpot.sign)
                sign = None
            self.jackpot_display = JackpotDisplay(
                self.jackpot,
                self.extensions,
                publish=link.set_jackpot,
                sign=sign,
                display_ms=plan.jackpot.display_ms,
            )
        self._faces(devices, link, j.chain)
        self.integrity = IntegrityMonitor(
            self.extensions,
            alerts=alerts,
            chain=j.chain,
            table_id=cfg.table_id,
            result_device=cfg.game.result_device,
            settings=plan.integrity,
            wheel_name=next((d.name for d in devices if d.kind == "wheel"), "wheel"),
            shaker_name=next((d.name for d in devices if d.kind == "shaker"), "shaker"),
            shoe_name=(shoe := next((d.name for d in devices if d.kind == "shoe"), "shoe")),
            deck_check=getattr(devices.get(shoe), "request_deck_check", None),
            decks=int(getattr(cfg.rules, "decks", 8) or 8),
            currency=cfg.money.currency,
            max_payout=max_payout_of(cfg.game, cfg.rules, cfg.money)
            if plan.integrity.large_transaction
            else None,
        )
        self.pace = PaceMonitor(
            self.extensions,
            roster=roster,
            chain=j.chain,
            table_id=cfg.table_id,
            shift_start_hour=plan.integrity.shift_start_hour,
            shift_hours=plan.integrity.shift_hours,
        )
        steps = self.clock_steps = StepWatch(
            self.extensions,
            alerts=alerts,
            chain=j.chain,
            table_id=cfg.table_id,
            tolerance_ms=plan.integrity.clock_step_tolerance_ms,
            synchronised=self._clock_synchronised,
        )
        steps.add_listener(self.pace.clock_stepped)
        steps.at_start()  # a clock behind the journal's latest event went back
        alerts.publish()
        # The rounds a crash left in flight are resolved once the journal was compared
        # with the floor (a round whose seq the floor holds is withheld), and always
        # before a round opens: a technician's clear of JOURNAL_UNCHECKED (play without
        # the floor) resolves them at the next open (``_play_stop``).
        self._unresolved = True
        if checked or plan.simulated:  # a simulated table plays without the floor
            self._resolve_in_flight()
        if checked:
            link.start()
        else:  # the link would overwrite the retained anchor before anyone read it
            self._tasks.append(
                asyncio.create_task(self._check_then_link(check, link), name="floor-check")
            )

        self.notifier.status("starting devices")
        await devices.start(self._on_device_event, link, j.chain)
        self._tasks.append(asyncio.create_task(procedure.run(), name="procedure"))
        self._tasks.append(asyncio.create_task(self.extensions.run_ticks(), name="extensions"))
        self._tasks.append(asyncio.create_task(software.run(), name="software-check"))
        if plan.integrity.clock_unsync_max_s:
            self.clock_watch = ClockWatch(
                alerts,
                unsync_max_s=plan.integrity.clock_unsync_max_s,
                check_s=plan.integrity.clock_check_s,
            )
            self._tasks.append(asyncio.create_task(self.clock_watch.run(), name="clock-check"))
        if self.board is not None:
            self._tasks.append(asyncio.create_task(self.board.run(), name="result-board"))
        self.console_backend = TableConsoleBackend(
            name=cfg.name,
            engine=engine,
            journal=j,
            link=link,
            drivers=devices.drivers,
            jackpot_controller=self.jackpot,
            state=self.state,
            loop_lag=lambda: self.loop_lag,
            config_path=self.config_path,
            commands=commands,
            alerts_board=alerts,
            dealers=roster,
            pace=self.pace,
        )
        await self._start_console()
        self._tasks.append(asyncio.create_task(self._watch_loop_lag(), name="loop-lag"))
        self._tasks.append(
            asyncio.create_task(self.notifier.run_watchdog(self._healthy), name="watchdog")
        )
        if self.progress_s > 0:
            progress = ProgressLine(self.console_backend, self.round_log)
            self._tasks.append(
                asyncio.create_task(every(self.progress_s, progress, log), name="progress")
            )
        self.state.refresh()
        # Everything loaded so far (modules, configuration, drivers) lives as long as
        # the process: move it out of the collector's reach, so that a full collection
        # during play scans only what play allocated (measured during the bench's play:
        # 11.8 ms without, 0.6 ms with; docs/performance.md).
        gc.collect()
        gc.freeze()
        self.ready.set()
        self.notifier.ready(f"table {cfg.table_id} ({cfg.game_id}) up")
        log.info("table %s (%s) ready", cfg.table_id, cfg.game_id)
        if isinstance(procedure, ManualProcedure) and cfg.game.result_device is not None:
            log.info(
                "no %s device configured: results are entered by command (table.result_source "
                "= \"manual\": console 'open', 'close', 'result'; or MQTT commands/request)",
                cfg.game.result_device,
            )

    async def _on_device_event(self, device: str, event: Any) -> None:
        """A device's event: to the procedure, then to the integrity detectors (and a
        keypad's sign-in to its check)."""
        assert self.procedure is not None
        await self.procedure.on_device_event(device, event)
        if self.integrity is not None:
            await self.integrity.on_device_event(device, event)
        if self.keypad_sign_in is not None:
            await self.keypad_sign_in.on_device_event(device, event)

    def _clock_synchronised(self) -> bool | None:
        """What the time service last said (None: not asked yet, or not watched)."""
        w = self.clock_watch
        return w.state.synchronised if w is not None and w.state is not None else None

    def _faults_changed(self) -> None:
        if self.state is not None:
            self.state.refresh()

    def _publish_alerts(self, body: Mapping[str, JSON]) -> None:
        """The retained ``alerts`` topic (once the floor link exists)."""
        if self.link is not None:
            self.link.set_snapshot("alerts", body)

    def _faces(self, devices: TableDevices, link: FloorLink, chain: AuditLog) -> None:
        """The result board (``board`` topic and the board devices) and the statistics
        (``stats`` topic) of a table whose game has a result layout."""
        cfg = self.cfg
        boards = [d.driver for d in devices if d.kind == "board"]
        if ResultBoard.applies(cfg.game_id):
            self.board = ResultBoard(
                self.extensions,
                game_id=cfg.game_id,
                publish=lambda body: link.set_snapshot("board", body),
                boards=[b for b in boards if isinstance(b, BoardDevice)],
                shoe_log=chain,
            )
        if TableStatistics.applies(cfg.game_id):
            self.statistics = TableStatistics(
                self.extensions,
                game_id=cfg.game_id,
                publish=lambda body: link.set_snapshot("stats", body),
                settings=self.plan.statistics,
            )

    def _resolve_in_flight(self) -> None:
        """Resolve the rounds a crash left in flight, once (``RoundEngine.resume``)."""
        if not self._unresolved or self.engine is None:
            return
        self._unresolved = False
        for payload in self.engine.resume():
            log.warning(
                "resumed round %s: %s %s",
                payload["round_id"],
                payload["status"],
                payload.get("void_reason") or "",
            )

    def _play_stop(self) -> str | None:
        """The engine's ``play_stop``: the latched faults; when none stops play, the rounds
        left in flight are resolved first (in the same step as the round that opens)."""
        assert self.faults is not None
        stopped = self.faults.play_stop()
        if stopped is None and self.maintenance is not None:
            self.maintenance.check_open()  # raises MAINTENANCE: no round opens
        if stopped is None:
            self._resolve_in_flight()
        return stopped

    async def _check_then_link(self, check: JournalFloorCheck, link: FloorLink) -> None:
        """The check, retried until the broker answers; then (in the same step) the
        rounds left in flight are resolved, and the link starts."""
        await check.until_checked()
        self._resolve_in_flight()
        link.start()

    def _power_up(self, chain: AuditLog) -> None:
        digest = (
            config_digest(self.config_path)
            if self.config_path and self.config_path.exists()
            else None
        )
        chain.append_event(
            "power_up",
            {
                "version": __version__,
                "table_id": self.cfg.table_id,
                "game": self.cfg.game_id,
                "config": str(self.config_path) if self.config_path else None,
                "config_sha256": digest,
                "pid": os.getpid(),
            },
        )
        last = chain.events(1, kind="config_loaded")
        if digest and (not last or last[-1].data.get("config_sha256") != digest):
            chain.append_event(
                "config_loaded", {"config": str(self.config_path), "config_sha256": digest}
            )

    def _jackpot(self, journal: Journal, plan: TablePlan) -> JackpotController:
        """The progressive jackpot of a table that offers one (61/2004 art. 10)."""
        assert plan.jackpot_params is not None and plan.jackpot is not None
        ctl = JackpotController(
            journal.jackpot,
            journal.db,
            plan.jackpot_params,
            meter_max=plan.jackpot.meter_max,
            currency=self.cfg.money.currency,
        )
        if not ctl.meter.balanced():
            # A jackpot meter mismatch is a latched fault: play stops until a technician clears it.
            journal.faults.set_fault(
                "JACKPOT_METER_MISMATCH",
                f"pool {ctl.meter.pool} + overflow {ctl.meter.overflow} != expected {ctl.meter.expected_total()}",
            )
        return ctl

    async def stop(self, reason: str = "shutdown") -> None:
        if self._stopping:
            return
        self._stopping = True
        self.notifier.stopping()
        for srv in self._servers:
            srv.close()
        if self.procedure is not None:
            with contextlib.suppress(Exception):
                await self.procedure.stop()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(BaseException):
                await t
        if self.devices is not None:
            await self.devices.stop()
        if self.link is not None:
            await self.link.stop()
        if self.journal is not None:
            if self.floor is not None:
                self.floor.refusals.flush()  # the last window's counts, as evidence
            with contextlib.suppress(StorageError):  # a full disk: the guard logged it
                self.journal.chain.append_event("power_down", {"reason": reason})
            self.journal.close()
        self.notifier.close()

    # -- health -------------------------------------------------------------------
    async def _watch_loop_lag(self, interval: float = 0.25) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t0 = loop.time()
            await asyncio.sleep(interval)
            self.loop_lag = max(0.0, loop.time() - t0 - interval)

    def _healthy(self) -> bool:
        if not self.watchdog_check:
            return True
        return self.loop_lag < 5.0

    # -- console ------------------------------------------------------------------
    async def _start_console(self) -> None:
        cs = self.console_settings
        if self.runtime_dir is not None and cs.socket:
            path = self.runtime_dir / cs.socket
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            srv = await asyncio.start_unix_server(
                lambda r, w: serve_socket(self.new_session("socket"), r, w), path=str(path)
            )
            os.chmod(path, 0o660)
            self._servers.append(srv)
        if cs.serial_port:
            self._tasks.append(
                asyncio.create_task(
                    self._serial_console(cs.serial_port, cs.baud), name="console-serial"
                )
            )

    def new_session(self, channel: str) -> ConsoleSession:
        assert self.console_backend is not None
        return ConsoleSession(
            self.console_backend,
            self.console_settings,
            self.lockout,
            channel=channel,
            dual=self.dual_control,
        )

    async def _serial_console(self, port: str, baud: int) -> None:
        """Sessions one after another on the console's serial line; reopened if it drops."""
        from drivers.base import LinkError
        from drivers.transport import open_connection

        while True:
            try:
                conn = await open_connection(port, baudrate=baud)
            except (LinkError, OSError) as exc:
                log.warning("console port %s: %s; retrying", port, exc)
                await asyncio.sleep(2)
                continue

            async def read(conn: Any = conn) -> bytes:
                try:
                    data: bytes = await conn.read(256)
                    return data
                except LinkError:
                    return b""

            try:
                while not conn.closed:
                    await serve_stream(self.new_session("serial"), read, conn.write, echo=True)
            except (LinkError, OSError) as exc:
                log.warning("console port %s: %s", port, exc)
            finally:
                await conn.close()
            await asyncio.sleep(1)

    # -- reload -------------------------------------------------------------------
    def reload(self) -> dict[str, JSON]:
        """SIGHUP: apply the keys that are safe to reload; say which changes need a restart."""
        assert self.journal is not None
        if self.config_path is None:
            return {"applied": [], "needs_restart": [], "error": "no configuration file"}
        try:
            new = load_config(self.config_path)
        except ConfigInvalid as exc:
            self.journal.chain.append_event("config_reload_refused", {"errors": exc.errors[:50]})
            log.error(
                "reload refused: %d error(s); keeping the running configuration", len(exc.errors)
            )
            for e in exc.errors:
                log.error("  %s", e)
            return {"applied": [], "needs_restart": [], "errors": exc.errors}
        applied: list[str] = []
        restart: list[str] = []
        old = self.cfg
        for name, _old_value, _new_value in _diff(old, new):
            (applied if name.split(".")[0] in RELOADABLE else restart).append(name)
        if applied:
            self.cfg = replace(
                old,
                limits=new.limits,
                sections={
                    **old.sections,
                    **{k: new.sections[k] for k in RELOADABLE if k in new.sections},
                },
            )
            if self.engine is not None:
                self.engine.set_limits(new.limits)
            plan = read_plan(new)
            self.watchdog_check = plan.watchdog_check
            self.console_settings = plan.console
            self.lockout.max_tries = self.console_settings.max_tries
            self.lockout.seconds = self.console_settings.lockout_seconds
        result = {
            "applied": sorted(applied),
            "needs_restart": sorted(restart),
            "config_sha256": config_digest(self.config_path),
        }
        self.journal.chain.append_event("config_reload", result)
        log.info(
            "reload applied: %s%s",
            ", ".join(applied) or "no change",
            f"; needs a restart: {', '.join(restart)}" if restart else "",
        )
        for name in restart:
            log.warning("config change to %s needs a restart (systemctl restart tablectl)", name)
        return result


def _diff(a: TableConfig, b: TableConfig) -> list[tuple[str, Any, Any]]:
    out = []
    for field in ("table_id", "game_id", "name", "money", "rules", "version"):
        if getattr(a, field) != getattr(b, field):
            out.append(
                (
                    f"table.{field}" if field != "rules" else "rules",
                    getattr(a, field),
                    getattr(b, field),
                )
            )
    if a.limits != b.limits:
        out.append(("limits", a.limits, b.limits))
    for key in sorted(set(a.sections) | set(b.sections)):
        if a.sections.get(key) != b.sections.get(key):
            out.append((key, a.sections.get(key), b.sections.get(key)))
    return out


async def run_daemon(
    cfg: TableConfig,
    *,
    config_path: str | Path | None,
    state_dir: str | Path | None,
    runtime_dir: str | Path | None,
    stop: asyncio.Event,
    on_ready: Callable[[TableDaemon], None] | None = None,
    progress_s: float = 0.0,
) -> int:
    """``tablectl run``: start, serve until ``stop`` is set, stop cleanly; a progress
    line in the log every ``progress_s`` seconds (0: none)."""
    import signal

    daemon = TableDaemon(cfg, config_path=config_path, state_dir=state_dir, runtime_dir=runtime_dir)
    daemon.progress_s = progress_s
    loop = asyncio.get_running_loop()
    why: list[str] = []

    def on_signal(name: str) -> None:
        why.append(name)
        log.info("%s: stopping", name)
        stop.set()

    loop.add_signal_handler(signal.SIGTERM, on_signal, "SIGTERM")
    loop.add_signal_handler(signal.SIGINT, on_signal, "SIGINT (Ctrl-C)")
    loop.add_signal_handler(signal.SIGHUP, daemon.reload)
    try:
        try:
            await daemon.start()
        except (JournalError, IdentityKeyError) as exc:
            # A damaged journal, a full disk or an I/O error at start-up, or its audit or
            # identity key missing or exposed: one line with the documented code
            # (docs/reliability.md, docs/security.md), never a traceback.
            log.error("table %s cannot start: %s", cfg.table_id, exc)
            return EXIT_JOURNAL
        except SoftwareMismatch as exc:
            # The installed files are not the signed build: recorded and latched; one
            # line with the code (docs/integrity.md), never a traceback.
            log.error("table %s refuses to start: %s", cfg.table_id, exc)
            return EXIT_SOFTWARE
        if on_ready:
            on_ready(daemon)
        await stop.wait()
    finally:
        # power_down says what stopped the table: a signal by name, or an error
        await daemon.stop(why[0] if why else ("stop requested" if stop.is_set() else "error"))
    return 0
