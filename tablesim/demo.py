"""``tablectl demo``: a whole table on embedded defaults.

One process runs: an embedded amqtt broker on loopback (unless ``--broker``; amqtt
speaks MQTT 3.1.1 only, so the table runs ``protocol = "3.1.1"`` on it, where a
publication the broker refused could not be detected: it says so; with ``--broker`` it
runs MQTT 5, the table's default), the
game's simulated result device on a pseudo-terminal (served by
:func:`drivers.simulators.serve_simulator`; the daemon's driver opens it exactly as
it would open ``/dev/ttyUSB0``), the table daemon on a temporary journal and a table
file written like a technician's, a floor client, simulated players who place random
valid bets over MQTT ``bets/request``, a simulated croupier who plays the device and
sends the croupier's commands (:mod:`tablesim.dealer`), and a printer of each settled
round as it arrives on ``rounds`` (:mod:`tablesim.printer`).

The demo meets the table only at its public surfaces: the table file, the daemon's
start and stop, the simulators' wire protocols and the MQTT topics
(``docs/mqtt.md``); never the daemon's engine, procedure or drivers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from drivers.cammegh.sim import SimTiming
from drivers.simulators import ServedSim, serve_simulator
from firmware_host.cliargs import CliError
from firmware_host.config import ConfigInvalid, TableConfig, validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.face.state import layout_of
from firmware_host.games import game_ids
from firmware_host.jsonio import JSON
from firmware_host.mqtt import MqttSettings

from .broker import AMQTT_PROTOCOL, EmbeddedBroker
from .dealer import Dealer
from .floor_client import FloorClient, FloorMessage
from .players import SimulatedPlayers
from .principals import Principals, make_principals
from .printer import RoundPrinter, out
from .software import throwaway_manifest
from .tables import DEMO_DRIVERS, table_document, to_toml

PREFIX = "casino"
#: The embedded default port of the demo's web view (``tablectl view``).
VIEW_PORT = 8080


def wheel_timing(speed: float) -> SimTiming:
    """The demo wheel: a game in about two seconds at speed 1 (the real wheel takes a
    minute). Every state lasts several status lines whatever the speed: the driver, like
    the real wheel's host, reads the game from the status lines."""
    k = 1 / max(speed, 0.05)
    return SimTiming(
        status_interval=0.1 * min(1.0, k),
        before_game=0.5 * k,
        braking=0.1 * k,
        launch=0.2 * k,
        ball_in_rim=0.4 * k,
        no_more_bets=0.6 * k,
        result=0.5 * k,
        power_down=0.3,
        self_test=1.0,
        no_ball_stop=10.0,
    )


async def start_devices(
    cfg: TableConfig, seed: int, speed: float
) -> tuple[dict[str, Any], dict[str, Any], list[ServedSim]]:
    """The simulator of the device that reads the game's result (``Game.result_device``)
    and, for a game with a result board layout, a simulated lit result board, each
    served on a pseudo-terminal: (``[devices]`` sections, simulators by kind, served)."""
    devices: dict[str, Any] = {}
    sims: dict[str, Any] = {}
    served: list[ServedSim] = []
    kind = cfg.game.result_device
    driver = DEMO_DRIVERS.get(kind or "")
    if kind is not None and driver is not None:  # else results entered by command
        options: dict[str, Any] = {
            "wheel": {"timing": wheel_timing(speed), "power": "on"},
            "shoe": {"decks": getattr(cfg.rules, "decks", 1)},
        }.get(kind, {})
        result = await serve_simulator(driver, seed=seed, options=options)
        await result.start()
        devices[kind] = {"driver": driver, "port": result.where}
        sims[kind] = result.sim
        served.append(result)
    layout = layout_of(cfg.game_id)
    if layout is not None:
        board = await serve_simulator("board-ref", seed=seed)
        await board.start()
        devices["board"] = {
            "driver": "board-ref",
            "port": board.where,
            "address": 1,
            "layout": layout,
        }
        sims["board"] = board.sim
        served.append(board)
    return devices, sims, served


class DemoTable:
    """A whole simulated table: broker (embedded unless given), simulators, daemon,
    players and the floor's subscriber. ``async with DemoTable(...) as t:`` then
    ``await t.play(n)``; ``t.rounds`` holds every settled round the floor received."""

    def __init__(
        self,
        game: str,
        *,
        broker: str | None = None,
        speed: float = 1.0,
        seed: int = 1,
        bets: int = 6,
        quiet: bool = True,
        printer: bool = False,
        view: bool = False,
        view_port: int = 0,
    ) -> None:
        self.game = game
        self.broker = broker
        self.speed = speed
        self.seed = seed
        self.bets = bets
        self.quiet = quiet
        self.print = printer
        self.tmp = Path(tempfile.mkdtemp(prefix="tablectl-demo-"))
        self.embedded: EmbeddedBroker | None = None
        self.served: list[ServedSim] = []
        self.daemon: TableDaemon | None = None
        self.floor: FloorClient | None = None
        self.rounds: list[JSON] = []
        self.ids: list[str] = []
        self.config_path = self.tmp / "table.toml"
        #: On the embedded broker (new at every run), ``demo-<game>``. On a broker given
        #: with --broker, a table of its own at every run (``demo-<game>-<4 hex>``): a
        #: table is one journal, and the broker keeps the last run's table's retained
        #: anchor, which a new journal under the same id would be behind (the table
        #: refuses it, JOURNAL_BEHIND_FLOOR, as a real table must).
        self.table_id = f"demo-{game}" + (f"-{secrets.token_hex(2)}" if broker else "")
        #: ``tablectl view`` of the table (with ``view=True``): an MQTT subscriber only.
        self.want_view, self.view_port = view, view_port
        self.view: Any = None
        #: The floor's principals, their keys generated in the demo's directory: the
        #: table requires signed requests, as on a casino floor.
        self.principals: Principals = make_principals(self.tmp / "keys")

    @property
    def protocol(self) -> str:
        """The table's MQTT version: 3.1.1 on the embedded amqtt (it speaks no other),
        else 5."""
        return AMQTT_PROTOCOL if self.broker is None else "5"

    async def __aenter__(self) -> DemoTable:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self.broker:
            url = MqttSettings.from_url(self.broker)
            self.host, self.port = url.host, url.port
        else:
            self.embedded = EmbeddedBroker()
            ep = await self.embedded.start()
            self.host, self.port = ep.host, ep.port
        plain = validate_document(
            table_document(self.game, {}, table_id=self.table_id), f"demo:{self.game}"
        )
        self.devices, self.sims, self.served = await start_devices(plain, self.seed, self.speed)
        # Short reconnect delays: the broker of a demo is at hand. The protocol is said
        # in so many words: MQTT 5 (the default) on a given broker, 3.1.1 on amqtt.
        mqtt = {
            "host": self.host,
            "port": self.port,
            "protocol": self.protocol,
            "reconnect_min_ms": 100,
            "reconnect_max_ms": 2000,
        }
        doc = table_document(
            self.game,
            self.devices,
            mqtt=mqtt,
            auth=self.principals.auth_section(),
            table_id=self.table_id,
        )
        doc["software"] = throwaway_manifest(self.tmp / "software")  # verified at start-up
        self.config_path.write_text(to_toml(doc))
        self.cfg = validate_document(doc, str(self.config_path))
        self.printer = RoundPrinter(self.cfg, self.quiet)
        # The floor subscribes first, so that it sees the table come online.
        self.floor = FloorClient(
            self.host,
            self.port,
            self.cfg.table_id,
            prefix=PREFIX,
            client_id=f"demo-floor-{self.seed}",
            on_message=self._on_message,
            signers=self.principals,
        )
        await self.floor.start()
        started = datetime.now(UTC) - timedelta(seconds=1)  # the table's clock is in ms
        self.daemon = TableDaemon(
            self.cfg, config_path=self.config_path, state_dir=self.tmp, runtime_dir=self.tmp
        )
        await self.daemon.start()
        await self.floor.wait_online(started)
        if self.want_view:
            await self._start_view()
        self.players = SimulatedPlayers(self.cfg, self.seed)
        self.dealer = Dealer(
            self.cfg, self.floor, self.players, self.sims, self.speed, self.bets, self.seed
        )

    async def _start_view(self) -> None:
        """The web view of the table on its embedded default port (any free port if that
        one is taken), following the table over MQTT like any floor display, and
        verifying its signatures with the table's public key."""
        from firmware_host.auth.keys import load_public_key
        from tableview.server import ViewServer

        settings = MqttSettings(host=self.host, port=self.port, prefix=PREFIX)
        # the view verifies what the table signed, with the public key its first start
        # wrote beside its journal for the floor's registry
        keys = {self.cfg.table_id: (load_public_key(self.tmp / "identity.pub"),)}
        for port in dict.fromkeys((self.view_port, 0)):
            view = ViewServer(settings, tables=[self.cfg.table_id], port=port, keys=keys)
            try:
                await view.start()
            except OSError:
                await view.stop()
                continue
            await view.wait_subscribed()
            self.view = view
            return

    def _on_message(self, msg: FloorMessage) -> None:
        if msg.topic == "rounds":
            r = msg.json()
            self.ids.append(r["round_id"])
            if r["round_id"] not in {x["round_id"] for x in self.rounds}:
                self.rounds.append(r)
        if self.print:
            self.printer.on_message(msg)

    async def play(self, rounds: int) -> list[JSON]:
        """Play until ``rounds`` more rounds have reached the floor."""
        target = len(self.rounds) + rounds
        while len(self.rounds) < target:
            before = len(self.rounds)
            await self.dealer.play_round()
            deadline = time.monotonic() + 30
            while len(self.rounds) == before and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if len(self.rounds) == before:
                raise TimeoutError("no settled round arrived within 30 s")
            await self.dealer.pause(0.4)
        return self.rounds

    def register(self, registry: Path) -> Path:
        """Add this table to a floor ingest's registry file (``docs/floor.md``): its id,
        game and identity public key (copied beside the file, as ``<table>.pub``), so
        that an ingest run with ``--registry FILE`` stores its rounds. Other tables of
        the file are kept. Returns the public key's copy."""
        import tomllib

        registry.parent.mkdir(parents=True, exist_ok=True)
        key = registry.parent / f"{self.table_id}.pub"
        key.write_bytes((self.tmp / "identity.pub").read_bytes())
        doc: dict[str, Any] = (
            tomllib.loads(registry.read_text(encoding="utf-8")) if registry.exists() else {}
        )
        doc.setdefault("tables", {})[self.table_id] = {"game": self.game, "keys": [key.name]}
        tmp = registry.with_name(registry.name + ".tmp")
        tmp.write_text(to_toml(doc), encoding="utf-8")
        tmp.replace(registry)  # the ingest re-reads a whole file, never half of one
        return key

    async def stop(self, reason: str = "demo finished") -> None:
        if self.view is not None:
            with contextlib.suppress(Exception):
                await self.view.stop()
        if self.floor is not None:
            with contextlib.suppress(Exception):
                await self.floor.stop()
        if self.daemon is not None:
            with contextlib.suppress(Exception):
                await self.daemon.stop(reason)
        for served in self.served:
            with contextlib.suppress(Exception):
                await served.close()
        if self.embedded is not None:
            await self.embedded.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


async def probe_broker(host: str, port: int, timeout: float = 5.0) -> str | None:
    """Why the broker at ``host:port`` cannot be reached (None if a TCP connection
    opens): a demo given ``--broker`` says so at once instead of waiting for MQTT."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return os.strerror(exc.errno) if exc.errno else str(exc)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


async def refuses_mqtt5(url: MqttSettings, timeout: float = 5.0) -> bool:
    """Whether the broker refuses an MQTT 5 connection (CONNACK *Unsupported protocol
    version*, 0x84: a 3.1.1-only broker, amqtt among them). Any other outcome (connected,
    not authorised, no answer) is left to the table's own link and its log."""
    import aiomqtt

    client = aiomqtt.Client(
        url.host,
        url.port,
        username=url.username or None,
        password=url.read_password(),
        identifier=f"tablectl-demo-probe-{os.getpid()}",
        protocol=aiomqtt.ProtocolVersion.V5,
        tls_context=url.tls_context(),
        timeout=timeout,
    )
    try:
        async with client:
            return False
    except aiomqtt.MqttCodeError as exc:
        code: object = getattr(exc.rc, "value", exc.rc)
        return code == 0x84
    except (aiomqtt.MqttError, OSError):
        return False


async def run_demo(
    *,
    game: str,
    rounds: int,
    broker: str | None,
    speed: float,
    seed: int | None,
    bets: int,
    quiet: bool,
    registry: str | None = None,
) -> int:
    """``tablectl demo``: play, print the game as it plays and a summary on exit
    (after ``rounds`` rounds, on Ctrl-C or SIGTERM, or on a failure). ``registry``: a
    floor ingest's registry file the demo's table is added to (``DemoTable.register``)."""
    if game not in game_ids():
        raise CliError(
            f"unknown game {game!r}; games: {', '.join(game_ids())}", prog="tablectl demo"
        )
    if seed is None:
        seed = random.SystemRandom().randrange(1, 1_000_000)
    if broker:
        try:
            url = MqttSettings.from_url(broker)
        except (ValueError, ConfigInvalid) as exc:
            raise CliError(f"--broker {broker}: {exc}", prog="tablectl demo") from None
        why = await probe_broker(url.host, url.port)
        if why is not None:
            raise CliError(
                f"cannot reach the MQTT broker {url.host}:{url.port} (--broker {broker}): {why}",
                code="BROKER_UNREACHABLE",
                prog="tablectl demo",
            )
        if await refuses_mqtt5(url):
            raise CliError(
                f"the MQTT broker {url.host}:{url.port} (--broker {broker}) does not speak "
                "MQTT 5, the table's protocol (a 3.1.1 broker cannot say that it refuses a "
                "publication); run the demo without --broker for its embedded MQTT 3.1.1 broker",
                code="BROKER_NOT_MQTT5",
                prog="tablectl demo",
            )
    t = DemoTable(
        game,
        broker=broker,
        speed=speed,
        seed=seed,
        bets=bets,
        quiet=quiet,
        printer=True,
        view=True,
        view_port=VIEW_PORT,
    )
    loop = asyncio.get_running_loop()
    interrupted: list[str] = []
    stop = asyncio.Event()

    def interrupt(name: str) -> None:
        interrupted.append(name)
        stop.set()

    for sig, name in ((signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, interrupt, name)
    rc = 0
    began = time.monotonic()
    replay = f"tablectl demo --game {game} --seed {seed}"

    async def until_stopped(work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` until it ends or a signal stops the demo; then cancel it. The
        demo's own task is never cancelled, so a cancellation swallowed deep in the
        play (asyncio.wait_for racing its inner future, Python 3.11) cannot keep the
        demo running after Ctrl-C."""
        task = asyncio.ensure_future(work)
        stopper = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if task.done():
            task.result()
            return
        task.cancel()
        # a task that swallowed the cancellation is left behind; its end is still read
        task.add_done_callback(lambda done: done.cancelled() or done.exception())
        await asyncio.wait({task}, timeout=5)

    async def play() -> None:
        if broker and not quiet:
            out(f"connecting to the MQTT broker {broker} ...")
        await t.start()
        cfg = t.cfg
        if registry:
            key = t.register(Path(registry))
            out(f"  table {t.table_id} registered in {registry} for a floor ingest (key {key})")
        if not quiet:
            out(f"tablectl demo: {cfg.game.title} ({cfg.game.regulation}), table {cfg.table_id}")
            out(f"  seed {seed} (replay these rounds: {replay})")
            out(
                f"  broker: {'embedded amqtt' if t.embedded else 'external'} on {t.host}:{t.port}"
                f", MQTT {t.protocol}"
            )
            if t.protocol != "5":
                out(
                    "  amqtt speaks MQTT 3.1.1 only: a publication the broker refused could not "
                    "be detected here (no reason code in a 3.1.1 PUBACK); a casino table runs "
                    "MQTT 5 (--broker mqtt://HOST:PORT, e.g. a mosquitto)"
                )
            for name, dev in t.devices.items():
                out(f"  device {name}: {dev['driver']} simulator on {dev['port']}")
            out(f"  configuration: {t.config_path}; journal: {t.tmp / 'journal.sqlite3'}")
            out(f"  technician console: tablectl console --socket {t.tmp / 'console.sock'}")
            out(f"  table status: tablectl status --socket {t.tmp / 'console.sock'}")
            if t.view is not None:
                url, tid = t.view.url, t.table_id  # tablectl view's pages (docs/view.md)
                out(f"  the board facing the players (live): {url}board/{tid}")
                out(f"  the table's page (rounds, bets, devices): {url}table/{tid}")
                out(f"  the pit (every table followed): {url}")
            out(
                f"  the floor's view: mosquitto_sub -h {t.host} -p {t.port} -t '{PREFIX}/tables/{cfg.table_id}/#' -v"
            )
            out("")
        if rounds:
            await t.play(rounds)  # the daemon's stop drains its outbox to the broker
        else:
            while True:
                await t.play(1)

    try:
        await until_stopped(play())
        if interrupted:
            rc = 130 if interrupted[0] == "Ctrl-C" else 143
    except TimeoutError as exc:
        out(f"   ! {exc}")
        rc = 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        why = f"demo interrupted ({interrupted[0]})" if interrupted else "demo finished"
        await asyncio.shield(t.stop(why))
    if interrupted:
        out(f"\ninterrupted ({interrupted[0]}).")
    summary = getattr(t, "printer", None)
    if summary is not None:
        lines = summary.summary.lines(t.cfg)
        out(
            ("" if quiet or interrupted else "\n")
            + lines[0]
            + f" in {time.monotonic() - began:.0f} s."
        )
    out(f"seed {seed}: {replay}")
    return rc
