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
from collections.abc import Callable, Coroutine
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
from .integrity.selfcheck import SoftwareMismatch
from .integrity.significant import previous_end
from .journal import AuditLog, Journal, JournalError, StorageError, TableOwner
from .journal.rounds import rules_digest
from .jsonio import JSON
from .logsetup import ProgressLine
from .mqtt import AfterPublication, MqttSettings
from .progress import every
from .sdnotify import LoopLag, Notifier
from .table.extension import TableExtensions
from .table.procedures import ManualProcedure
from .tableparts import TableParts, build_parts, floor_check

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
    GPIO pins brought by the caller (tests pass gpiozero's ``MockFactory``);
    ``progress_s``: seconds between two progress lines in the log (``tablectl run
    --progress``; 0: none).

    :meth:`start` opens the journal, compares it with the floor, builds the table's
    parts (:func:`~firmware_host.tableparts.build_parts`: :attr:`parts`, frozen) and
    starts what runs."""

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
        progress_s: float = 0.0,
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
        self.progress_s = progress_s
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
        self.loop_lag = LoopLag()
        #: The journal, once :meth:`start` opened it (closed by :meth:`stop`).
        self.journal: Journal | None = None
        #: The table's parts, once :meth:`start` built them.
        self.parts: TableParts | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._servers: list[asyncio.AbstractServer] = []
        self._stopping = False
        self.ready = asyncio.Event()

    @property
    def drivers(self) -> dict[str, Any]:
        """Device name -> driver (empty before :meth:`start`)."""
        return dict(self.parts.devices.drivers) if self.parts is not None else {}

    # -- life-cycle --------------------------------------------------------------
    async def start(self) -> None:
        plan, cfg = self.plan, self.cfg
        self.notifier.status("opening journal")
        # The table's work after a commit waits for the floor link's publications: made
        # first, the journal defers to it and the link takes it (mqtt/window.py).
        after = AfterPublication()
        j = self.journal = plan.journal.open(
            owner=TableOwner(
                cfg.table_id, cfg.game_id, rules_digest(cfg.game.rules_json(cfg.rules))
            ),
            defer=after.queue,
        )
        self._power_up(j.chain)
        if left := restore_lockout(self.lockout, j.chain):
            log.warning("console locked for %d s more (a lockout from before the restart)", left)
        auth = Authenticator(plan.auth, cfg.table_id)
        self.notifier.status("comparing the journal with the floor")
        check = floor_check(plan, cfg, j, auth)
        checked = await check.check_once()
        p = self.parts = build_parts(
            plan,
            cfg,
            j,
            after=after,
            auth=auth,
            check=check,
            extensions=self.extensions,
            pin_factory=self._pin_factory,
            loop_lag=self.loop_lag,
            config_path=self.config_path,
        )
        # a mismatch: recorded, latched, refused; the download log journaled before
        p.software.at_start(then=p.installs.at_start)
        if not auth.signatures:
            log.warning("[auth] signatures = false: floor requests are NOT authenticated")
        for line in plan.accepted_risk_lines:  # also in the retained state
            log.warning("running with an accepted risk: %s", line)
        j.retention.checkpoint_in_background()
        p.clock_steps.at_start()  # a clock behind the journal's latest event went back
        p.alerts.publish()
        # The rounds a crash left in flight are voided once the journal was compared with
        # the floor (a round whose seq the floor holds is withheld); a technician's clear
        # of JOURNAL_UNCHECKED (play without the floor) lets the next open void them first.
        if checked or plan.simulated:  # a simulated table plays without the floor
            p.engine.resume()
        if checked:
            p.link.start()
        else:  # the link would overwrite the retained anchor before anyone read it
            self._tasks.append(asyncio.create_task(self._check_then_link(p), name="floor-check"))

        self.notifier.status("starting devices")
        await p.devices.start(p.on_device_event, p.link, j.chain)
        p.switches.start()  # each switch's state read, journaled; then every change
        self._task(p.procedure.run(), "procedure")
        self._task(self.extensions.run_ticks(), "extensions")
        self._task(p.software.run(), "software-check")
        if p.clock_watch is not None:
            self._task(p.clock_watch.run(), "clock-check")
        if p.board is not None:
            self._task(p.board.run(), "result-board")
        await self._start_console()
        self._task(self.loop_lag.run(), "loop-lag")
        self._task(self.notifier.run_watchdog(self._healthy), "watchdog")
        if self.progress_s > 0:
            progress = ProgressLine(p.console_backend, p.round_log)
            self._task(every(self.progress_s, progress, log), "progress")
        p.state.refresh()
        # Everything loaded so far (modules, configuration, drivers) lives as long as
        # the process: move it out of the collector's reach, so that a full collection
        # during play scans only what play allocated (measured during the bench's play:
        # 11.8 ms without, 0.6 ms with; docs/performance.md).
        gc.collect()
        gc.freeze()
        self.ready.set()
        self.notifier.ready(f"table {cfg.table_id} ({cfg.game_id}) up")
        log.info("table %s (%s) ready", cfg.table_id, cfg.game_id)
        if isinstance(p.procedure, ManualProcedure) and cfg.game.result_device is not None:
            log.info(
                "no %s device configured: results are entered by command (table.result_source "
                "= \"manual\": console 'open', 'close', 'result'; or MQTT commands/request)",
                cfg.game.result_device,
            )

    def _task(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def _check_then_link(self, p: TableParts) -> None:
        """The check, retried until the broker answers; then (in the same step) the
        rounds left in flight are voided, and the link starts."""
        await p.floor_check.until_checked()
        p.engine.resume()
        p.state.refresh()
        p.link.start()

    def _power_up(self, chain: AuditLog) -> None:
        digest = (
            config_digest(self.config_path)
            if self.config_path and self.config_path.exists()
            else None
        )
        chain.append_event(
            "power_up",
            {
                # how the previous run ended: power_down, or lost (the lab's power loss)
                "previous_end": previous_end(chain),
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

    async def stop(self, reason: str = "shutdown") -> None:
        if self._stopping:
            return
        self._stopping = True
        self.notifier.stopping()
        for srv in self._servers:
            srv.close()
        p = self.parts
        if p is not None:
            with contextlib.suppress(Exception):
                await p.procedure.stop()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(BaseException):
                await t
        if p is not None:
            p.switches.stop()
            await p.devices.stop()
            await p.link.stop()
        if self.journal is not None:
            if p is not None:
                p.floor.refusals.flush()  # the last window's counts, as evidence
            with contextlib.suppress(StorageError):  # a full disk: the guard logged it
                self.journal.chain.append_event("power_down", {"reason": reason})
            self.journal.close()
        self.notifier.close()

    # -- health -------------------------------------------------------------------
    def _healthy(self) -> bool:
        return not self.watchdog_check or self.loop_lag.healthy()

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
        assert self.parts is not None
        return ConsoleSession(
            self.parts.console_backend,
            self.console_settings,
            self.lockout,
            channel=channel,
            dual=self.dual_control,
            presence=self.parts.technicians,
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
            if self.parts is not None:
                self.parts.engine.set_limits(new.limits)
            plan = read_plan(new)
            self.watchdog_check = plan.watchdog_check
            self.console_settings = plan.console
            self.lockout.configure(
                self.console_settings.max_tries, self.console_settings.lockout_seconds
            )
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

    daemon = TableDaemon(
        cfg,
        config_path=config_path,
        state_dir=state_dir,
        runtime_dir=runtime_dir,
        progress_s=progress_s,
    )
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
