"""The table daemon: devices -> round engine -> journal -> MQTT.

:class:`TableDaemon` assembles the pieces for one table and owns their life-cycle:

1. the journal (SQLite, WAL, full sync) is opened and a ``power_up`` event written;
   latched faults are read back (they survive restarts and stop play);
2. the round engine resumes whatever a crash left in flight;
3. the floor link (MQTT) starts publishing the outbox and answering requests;
4. every configured device driver starts, its health mirrored on
   ``devices/<name>``, its events handed to the game's procedure;
5. the technician console listens (serial port and Unix socket);
6. systemd is told READY, and the event loop itself sends the watchdog pings.

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
from .config import (
    ConfigInvalid,
    FieldSpec,
    TableConfig,
    load_config,
    register_section,
    validate_fields,
)
from .console import ConsoleSession, ConsoleSettings, Lockout, serve_socket, serve_stream
from .journal import Journal, JournalSettings, RoundRecord
from .mqtt import FloorLink, MqttSettings
from .sdnotify import Notifier
from .table.engine import Phase, RoundEngine
from .table.floor import FloorRequests
from .table.procedures import Procedure, make_procedure

log = logging.getLogger(__name__)

JSON = Any

DAEMON_SPECS: dict[str, FieldSpec] = {
    "watchdog_check": FieldSpec("bool", True, doc="withhold watchdog pings while the loop lags"),
    "jackpot_display_ms": FieldSpec(
        "int",
        1000,
        doc="minimum interval between jackpot display updates while the pool grows",
        range=(100, 60000),
    ),
    "auto_open": FieldSpec(
        "bool",
        False,
        doc="open betting again automatically after each settled round (demo, unattended tables)",
    ),
}


def _validate_daemon(data: Any, path: str, errors: list[str]) -> dict[str, Any]:
    return validate_fields(DAEMON_SPECS, data, path, errors)


register_section("daemon", _validate_daemon)

#: Sections that SIGHUP applies without a restart; any other change needs one.
RELOADABLE = ("limits", "console", "daemon")


def config_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class TableDaemon:
    """One table's controller. ``await start()``, then ``await stop()``."""

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
        self.mqtt_settings = mqtt or cfg.section("mqtt") or MqttSettings()
        self.pin_factory = pin_factory
        self.notifier = notifier or Notifier()
        self.journal: Journal | None = None
        self.engine: RoundEngine | None = None
        self.link: FloorLink | None = None
        self.floor: FloorRequests | None = None
        self.drivers: dict[str, Any] = {}
        self.jackpot: Any = None
        self._jackpot_sign: str | None = None
        self._device_kinds: dict[str, str] = {}
        self.procedure: Procedure | None = None
        self.console_settings: ConsoleSettings = cfg.section("console") or ConsoleSettings()
        self.lockout = Lockout(
            self.console_settings.max_tries, self.console_settings.lockout_seconds
        )
        self._tasks: list[asyncio.Task[Any]] = []
        self._servers: list[asyncio.AbstractServer] = []
        self._stopping = False
        self.loop_lag = 0.0
        self.ready = asyncio.Event()

    # -- settings ----------------------------------------------------------------
    @property
    def daemon_settings(self) -> Mapping[str, Any]:
        return self.cfg.section("daemon") or {k: s.default for k, s in DAEMON_SPECS.items()}

    def _journal_settings(self) -> JournalSettings:
        js: JournalSettings = self.cfg.section("journal") or JournalSettings()
        if self.state_dir is not None:
            js = replace(js, path=str(self.state_dir / "journal.sqlite3"))
        return js

    # -- life-cycle --------------------------------------------------------------
    async def start(self) -> None:
        self.notifier.status("opening journal")
        self.journal = self._journal_settings().open()
        j = self.journal
        digest = (
            config_digest(self.config_path)
            if self.config_path and self.config_path.exists()
            else None
        )
        j.append_event(
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
        last = j.events(1, kind="config_loaded")
        if digest and (not last or last[-1].data.get("config_sha256") != digest):
            j.append_event(
                "config_loaded", {"config": str(self.config_path), "config_sha256": digest}
            )

        self.engine = RoundEngine(self.cfg, j)
        self.engine.play_stop = self._play_stop_reason
        self.jackpot = self._make_jackpot(j)
        self.engine.jackpot = self.jackpot
        self.floor = FloorRequests(self.engine)
        self.link = FloorLink(self.mqtt_settings, self.cfg.table_id, j, handler=self._on_request)
        self.engine.on_phase.append(self._phase_changed)
        self.link.start()
        if self.jackpot is not None:
            self.jackpot.link = self.link
            self.jackpot.display(force=True)
            self._tasks.append(asyncio.create_task(self._jackpot_display(), name="jackpot-display"))
        resumed = self.engine.resume()
        for payload in resumed:
            log.warning(
                "resumed round %s: %s %s",
                payload["round_id"],
                payload["status"],
                payload.get("void_reason") or "",
            )

        self.notifier.status("starting devices")
        await self._start_drivers()
        self.procedure = make_procedure(self)
        self.floor.procedure = self.procedure
        self.engine.manual_results = self.procedure.manual_results
        self._tasks.append(asyncio.create_task(self.procedure.run(), name="procedure"))
        await self._start_console()
        self._tasks.append(asyncio.create_task(self._watch_loop_lag(), name="loop-lag"))
        self._tasks.append(
            asyncio.create_task(self.notifier.run_watchdog(self._healthy), name="watchdog")
        )
        self._phase_changed(self.engine.phase, self.engine.current)
        # Everything loaded so far (modules, configuration, drivers) lives as long as
        # the process: move it out of the collector's reach, so that a full collection
        # during play scans only what play allocated (measured during the bench's play:
        # 11.8 ms without, 0.6 ms with; docs/performance.md).
        gc.collect()
        gc.freeze()
        self.ready.set()
        self.notifier.ready(f"table {self.cfg.table_id} ({self.cfg.game_id}) up")
        log.info("table %s (%s) ready", self.cfg.table_id, self.cfg.game_id)

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
        for drv in self.drivers.values():
            with contextlib.suppress(Exception):
                await drv.stop()
        if self.link is not None:
            await self.link.stop()
        if self.journal is not None:
            self.journal.append_event("power_down", {"reason": reason})
            self.journal.close()
        self.notifier.close()

    # -- jackpot -----------------------------------------------------------------
    def _make_jackpot(self, journal: Journal) -> Any:
        """The progressive jackpot of a stud poker table that offers one (61/2004 art. 10)."""
        rules = self.cfg.rules
        if self.cfg.game_id != "stud-poker" or not getattr(rules, "jackpot_offered", False):
            return None
        from .table.jackpot import JackpotController

        js = self.cfg.section("jackpot") or {"meter_max": 0, "display_ms": 1000, "sign": ""}
        ctl = JackpotController(
            journal,
            rules.jackpot_params(),
            meter_max=js["meter_max"] or None,
            display_ms=js["display_ms"],
            currency=self.cfg.money.currency,
        )
        if not ctl.meter.balanced():
            # A jackpot meter mismatch is a latched fault: play stops until a technician clears it.
            journal.set_fault(
                "JACKPOT_METER_MISMATCH",
                f"pool {ctl.meter.pool} + overflow {ctl.meter.overflow} != expected {ctl.meter.expected_total()}",
            )
        self._jackpot_sign = js.get("sign") or None
        return ctl

    async def _jackpot_display(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            if self.jackpot is not None:
                if self.jackpot.sign is None and self._jackpot_sign:
                    self.jackpot.sign = self.drivers.get(self._jackpot_sign)
                self.jackpot.flush_display()

    # -- drivers -----------------------------------------------------------------
    async def _start_drivers(self) -> None:
        from drivers.registry import create_driver

        devices = self.cfg.section("devices") or {}
        for name, dev in devices.items():
            if not dev.enabled:
                continue
            drv = create_driver(name, dev, pin_factory=self.pin_factory)
            self.drivers[name] = drv
            self._device_kinds[name] = dev.driver
            await drv.start()
            self._tasks.append(asyncio.create_task(self._pump(name, drv), name=f"device-{name}"))
            self._device_snapshot(name, drv)

    def _device_snapshot(self, name: str, drv: Any) -> None:
        """Mirror a driver's health on the retained ``devices/<name>`` topic (device.json)."""
        if self.link is None:
            return
        kind = self._device_kinds.get(name, type(drv).__name__)
        self.link.set_device(name, {**drv.health.to_json(), "kind": kind})

    async def _pump(self, name: str, drv: Any) -> None:
        from drivers.base import HealthChanged

        async for event in drv.events():
            try:
                if isinstance(event, HealthChanged):
                    self._device_snapshot(name, drv)
                    self._device_health_event(name, event)
                if self.procedure is not None:
                    await self.procedure.on_device_event(name, event)
            except Exception:
                log.exception("device event from %s failed", name)

    def _device_health_event(self, name: str, event: Any) -> None:
        assert self.journal is not None
        h = event.health
        kind = "device_recovered" if h.state.value == "online" else "device_fault"
        self.journal.append_event(
            kind, {"device": name, "state": h.state.value, "code": h.code, "message": h.message}
        )

    # -- floor -------------------------------------------------------------------
    async def _on_request(self, topic: str, payload: bytes) -> JSON:
        assert self.floor is not None
        if topic == "bets/request":
            return self.floor.handle_bet_request(payload)
        if topic == "commands/request":
            return self.floor.handle_command_request(payload)
        return None

    def _phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        if self.link is not None:
            self.link.set_state(
                game=self.cfg.game_id,
                phase=phase.value,
                round_id=rnd.round_id if rnd else None,
                faults=[f.code for f in self.journal.active_faults()] if self.journal else [],
            )

    def _play_stop_reason(self) -> str | None:
        if self.journal is None:
            return None
        faults = self.journal.active_faults()
        if faults:
            return "latched fault(s) stop play until cleared from the console: " + ", ".join(
                f.code for f in faults
            )
        return None

    # -- health -------------------------------------------------------------------
    async def _watch_loop_lag(self, interval: float = 0.25) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t0 = loop.time()
            await asyncio.sleep(interval)
            self.loop_lag = max(0.0, loop.time() - t0 - interval)

    def _healthy(self) -> bool:
        if not self.daemon_settings.get("watchdog_check", True):
            return True
        return self.loop_lag < 5.0

    # -- console ------------------------------------------------------------------
    async def _start_console(self) -> None:
        from .commands.ops import DaemonConsoleBackend

        self.console_backend = DaemonConsoleBackend(self)
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
        return ConsoleSession(
            self.console_backend, self.console_settings, self.lockout, channel=channel
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
            self.journal.append_event("config_reload_refused", {"errors": exc.errors[:50]})
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
                self.engine.cfg = replace(self.engine.cfg, limits=new.limits)
            self.console_settings = new.section("console") or self.console_settings
            self.lockout.max_tries = self.console_settings.max_tries
            self.lockout.seconds = self.console_settings.lockout_seconds
        result = {
            "applied": sorted(applied),
            "needs_restart": sorted(restart),
            "config_sha256": config_digest(self.config_path),
        }
        self.journal.append_event("config_reload", result)
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
) -> int:
    """``tablectl run``: start, serve until ``stop`` is set, stop cleanly."""
    import signal

    daemon = TableDaemon(cfg, config_path=config_path, state_dir=state_dir, runtime_dir=runtime_dir)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGHUP, daemon.reload)
    try:
        await daemon.start()
        if on_ready:
            on_ready(daemon)
        await stop.wait()
    finally:
        await daemon.stop("SIGTERM" if stop.is_set() else "error")
    return 0
