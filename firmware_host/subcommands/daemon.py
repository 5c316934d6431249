"""``tablectl run`` (the daemon) and ``tablectl demo`` (a whole simulated table, from
the ``tablesim`` package, imported by the command function alone)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import tomllib
from pathlib import Path
from typing import Any

from ..cliargs import CliError, broker_url, count, existing_file, number, work_dir
from ..config import validate_document
from ..games import GAME_IDS
from ..logsetup import LEVELS, setup_logging
from .rules import checked_table

log = logging.getLogger("firmware_host.run")

#: Seconds between two games of a wheel ``tablectl run --simulate`` serves.
DEFAULT_INTERVAL = 15.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run the table daemon (what the systemd unit starts)",
        description="Run one table: its devices, rounds, journal, MQTT link and console, "
        "until SIGTERM or Ctrl-C. The file is checked first exactly as check-config checks "
        "it (refused in one line otherwise). SIGHUP reloads the keys safe to reload. Under "
        "systemd the log goes to the journal with priorities and no timestamp of its own. "
        "The log names the broker it connects to, each outage (one line when it starts, "
        "one when it ends, with how long it lasted), one line per round settled or voided, "
        "and every --progress seconds one line of progress (phase, rounds settled and "
        "voided, rounds waiting to be published, broker connected or not, latched faults). "
        'A table whose file says table.result_source = "manual" takes results by command '
        "(console 'open', 'close', 'result').",
    )
    p.add_argument("--config", required=True, type=existing_file, help="table configuration file")
    p.add_argument(
        "--state-dir",
        type=work_dir,
        help="directory of the journal (overrides [journal] path; created if missing)",
    )
    p.add_argument(
        "--runtime-dir",
        type=work_dir,
        help="directory of the console socket (created if missing)",
    )
    p.add_argument(
        "--log-level", default="INFO", type=str.upper, choices=LEVELS, help="default INFO"
    )
    p.add_argument(
        "--progress",
        type=number(minimum=0),
        default=60.0,
        metavar="S",
        help="seconds between two progress lines in the log (default 60; 0: none)",
    )
    p.add_argument(
        "--simulate",
        action="store_true",
        help="serve the simulator of every device of the file that has one (wheel, shoe, "
        "shaker, board, sign...) on a pseudo-terminal instead of its port, with mock GPIO "
        "pins; no device is added: a file check-config refuses is refused; a wheel is spun "
        "every --interval seconds",
    )
    p.add_argument(
        "--interval",
        type=number(above=0),
        metavar="S",
        help="with --simulate: seconds from one game of a simulated wheel to the next (default 15)",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "demo",
        help="a whole table on embedded defaults: simulated devices, embedded broker, simulated players",
        description="Run a whole table in one process: an embedded MQTT broker, the game's "
        "simulated device, the daemon on a temporary journal, simulated players and "
        "croupier. Prints the game as it plays (phases, every bet, the board) and a "
        "summary on exit (after --rounds, or on Ctrl-C). Each run has a random seed, "
        "printed; --seed replays the same rounds.",
    )
    p.add_argument(
        "--game",
        default="roulette",
        choices=GAME_IDS,
        metavar="GAME",
        help=f"the game (default roulette): {', '.join(GAME_IDS)}",
    )
    p.add_argument(
        "--rounds",
        type=count(0),
        default=0,
        help="exit 0 after N settled rounds (default 0: run until Ctrl-C)",
    )
    p.add_argument(
        "--broker",
        type=broker_url(),
        help="use this MQTT 5 broker (mqtt://host:port) instead of the embedded one (amqtt, "
        "MQTT 3.1.1 only: there a refused publication could not be detected)",
    )
    p.add_argument(
        "--speed",
        type=number(above=0, maximum=100),
        default=1.0,
        help="speed factor, above 0 and at most 100 (2 = twice as fast)",
    )
    p.add_argument(
        "--seed",
        type=number(integer=True, minimum=0),
        default=None,
        help="seed of the simulated devices and players (default: a random one, printed)",
    )
    p.add_argument(
        "--bets", type=count(0), default=6, help="bets per round from the simulated players"
    )
    p.add_argument(
        "--registry",
        help="add the demo's table to this floor-ingest registry file (with --broker: "
        "tablectl floor-ingest run --registry FILE then stores its rounds, docs/floor.md)",
    )
    p.add_argument("--quiet", action="store_true", help="one line per round, then the summary")
    p.add_argument(
        "--log-level", default="ERROR", type=str.upper, choices=LEVELS,
        help="the table daemon's log on standard error (default ERROR)",
    )  # fmt: skip
    p.set_defaults(func=cmd_demo)


def cmd_run(args: argparse.Namespace) -> int:
    from ..daemon import run_daemon

    if args.interval is not None and not args.simulate:
        raise CliError(
            "--interval applies only with --simulate (the seconds between two games of a "
            "simulated wheel)",
            code="OPTION_NOT_APPLICABLE",
        )
    interval = DEFAULT_INTERVAL if args.interval is None else args.interval
    cfg = checked_table(args.config, simulated=args.simulate)
    if args.runtime_dir is not None:
        try:
            Path(args.runtime_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CliError(
                f"--runtime-dir {args.runtime_dir}: cannot create it: {exc.strerror or exc}",
                code="DIRECTORY_UNUSABLE",
            ) from None
    setup_logging(args.log_level)

    async def main() -> int:
        played: list[Any] = []
        player: asyncio.Task[None] | None = None
        run_cfg = cfg
        if args.simulate:
            run_cfg, played = await simulated_table(args.config)
        try:
            for served in played:
                await served.start(playing=True)
            if played:
                player = asyncio.create_task(_play(played, interval), name="simulated")
            return await run_daemon(
                run_cfg,
                config_path=args.config,
                state_dir=args.state_dir,
                runtime_dir=args.runtime_dir,
                stop=asyncio.Event(),
                progress_s=args.progress,
            )
        finally:
            if player is not None:
                player.cancel()
                with contextlib.suppress(BaseException):
                    await player
            for served in played:
                with contextlib.suppress(Exception):
                    await served.close()

    return asyncio.run(main())


async def simulated_table(path: str) -> tuple[Any, list[Any]]:
    """``--simulate``: the table file (checked as ``check-config`` checks it, with mock
    GPIO pins: :func:`checked_table`) with every enabled device that has a simulator
    served on a pseudo-terminal (its ``port`` replaced) and ``[daemon] simulated =
    true``. No device is added: a file without its result device is refused here as
    everywhere (``table.result_source``)."""
    from drivers.registry import kind_of
    from drivers.simulators import serve_simulator, simulated

    cfg = checked_table(path, simulated=True)
    doc: dict[str, Any] = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    devices: dict[str, Any] = dict(doc.get("devices") or {})
    served_all = []
    try:
        for name, dev in devices.items():
            driver = str(dev.get("driver"))
            if driver not in simulated() or not dev.get("enabled", True):
                continue
            options: dict[str, Any] = {
                "shoe": {"decks": getattr(cfg.rules, "decks", 1)},
                "wheel": {"speed": 4.0},  # a game in about 15 s (the real wheel takes a minute)
            }.get(kind_of(driver), {})
            served = await serve_simulator(driver, options=options)
            served_all.append(served)
            devices[name] = {**dev, "port": served.where}
            log.info("--simulate: %s (%s) served on %s", name, driver, served.where)
    except BaseException:
        for served in served_all:
            with contextlib.suppress(Exception):
                await served.close()
        raise
    doc["devices"] = devices
    doc["daemon"] = {**dict(doc.get("daemon") or {}), "simulated": True}
    kind = cfg.game.result_device
    if kind is not None and kind != "wheel" and served_all:
        log.info(
            "the simulated %s follows the croupier: open and close betting and deal from "
            "the console or MQTT commands/request ('tablectl demo --game %s' plays it all)",
            kind,
            cfg.game_id,
        )
    return validate_document(doc, path, require_version=True), served_all


async def _play(served: list[Any], interval: float) -> None:
    """Start a game of each simulated wheel every ``interval`` seconds, from one start to
    the next (the croupier's start key; a game longer than that starts the next at once)."""
    from drivers.registry import kind_of

    wheels = [s for s in served if kind_of(s.name) == "wheel"]
    if not wheels:
        return
    await asyncio.sleep(2.0)
    loop = asyncio.get_running_loop()
    while True:
        began = loop.time()
        for s in wheels:
            await s.play(interval, lambda line: log.info("simulated wheel: %s", line))
            for line in s.news():
                log.info("simulated wheel: %s", line)
        await asyncio.sleep(max(0.0, interval - (loop.time() - began)))


def cmd_demo(args: argparse.Namespace) -> int:
    # The demo lives in the tablesim package, which the runtime never imports at module
    # level (tests/test_tablesim_boundary.py): imported here, only when a demo is asked
    # for, so that ``tablectl run`` on a production table loads none of it.
    from tablesim.demo import run_demo

    setup_logging(args.log_level)  # the demo prints what matters; faults show as events
    return asyncio.run(
        run_demo(
            game=args.game,
            rounds=args.rounds,
            broker=args.broker,
            speed=args.speed,
            seed=args.seed,
            bets=args.bets,
            quiet=args.quiet,
            registry=args.registry,
        )
    )
