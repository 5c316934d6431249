"""``tablectl run`` (the daemon) and ``tablectl demo`` (a whole simulated table, from
the ``tablesim`` package, imported by the command function alone)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import tomllib
from pathlib import Path
from typing import Any

from ..config import ConfigInvalid, load_config, validate_document
from ..games import GAME_IDS
from ..logsetup import LEVELS, setup_logging

log = logging.getLogger("firmware_host.run")

#: Result device kind -> the driver whose simulator ``tablectl run --simulate`` serves
#: when the table file configures no device of that kind.
SIM_DRIVERS = {"wheel": "cammegh-ss2", "shaker": "shaker-ref", "shoe": "shoe-ref"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run the table daemon (what the systemd unit starts)",
        description="Run one table: its devices, rounds, journal, MQTT link and console, "
        "until SIGTERM or Ctrl-C. SIGHUP reloads the keys safe to reload. Under systemd "
        "the log goes to the journal with priorities and no timestamp of its own. A "
        "table without its result device takes results by command (console 'open', "
        "'close', 'result'); --simulate serves a simulated one and plays it.",
    )
    p.add_argument("--config", required=True, help="table configuration file")
    p.add_argument("--state-dir", help="directory of the journal (overrides [journal] path)")
    p.add_argument("--runtime-dir", help="directory of the console socket")
    p.add_argument(
        "--log-level", default="INFO", type=str.upper, choices=LEVELS, help="default INFO"
    )
    p.add_argument(
        "--simulate",
        action="store_true",
        help="serve a simulator for the result device (and every configured device that has "
        "one) on a pseudo-terminal instead of the real port; a wheel is spun every "
        "--interval seconds",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=15.0,
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
        type=int,
        default=0,
        help="exit 0 after N settled rounds (default: run until Ctrl-C)",
    )
    p.add_argument(
        "--broker",
        help="use this MQTT 5 broker (mqtt://host:port) instead of the embedded one (amqtt, "
        "MQTT 3.1.1 only: there a refused publication could not be detected)",
    )
    p.add_argument("--speed", type=float, default=1.0, help="speed factor (2 = twice as fast)")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the simulated devices and players (default: a random one, printed)",
    )
    p.add_argument("--bets", type=int, default=6, help="bets per round from the simulated players")
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


def _print_invalid(exc: ConfigInvalid) -> int:
    for e in exc.errors:
        print(f"{exc.source}: {e}", file=sys.stderr)
    return 2


def cmd_run(args: argparse.Namespace) -> int:
    from ..daemon import run_daemon

    setup_logging(args.log_level)
    try:
        cfg = load_config(args.config)
    except ConfigInvalid as exc:
        return _print_invalid(exc)

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
                player = asyncio.create_task(_play(played, args.interval), name="simulated")
            return await run_daemon(
                run_cfg,
                config_path=args.config,
                state_dir=args.state_dir,
                runtime_dir=args.runtime_dir,
                stop=asyncio.Event(),
            )
        finally:
            if player is not None:
                player.cancel()
                with contextlib.suppress(BaseException):
                    await player
            for served in played:
                with contextlib.suppress(Exception):
                    await served.close()

    try:
        return asyncio.run(main())
    except ConfigInvalid as exc:  # options never read, GPIO missing: refused at start-up
        return _print_invalid(exc)


async def simulated_table(path: str) -> tuple[Any, list[Any]]:
    """``--simulate``: the table file with every device that has a simulator served on a
    pseudo-terminal (its ``port`` replaced), the game's result device added when the
    file has none, and ``[daemon] simulated = true`` (mock GPIO pins)."""
    from drivers.registry import DEVICE_KINDS
    from drivers.simulators import SIMULATORS, serve_simulator

    doc: dict[str, Any] = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    cfg = validate_document(doc, path, require_version=True)
    devices: dict[str, Any] = dict(doc.get("devices") or {})
    kind = cfg.game.result_device
    kinds = {DEVICE_KINDS.get(str(d.get("driver"))) for d in devices.values()}
    if kind is not None and kind not in kinds and kind in SIM_DRIVERS:
        devices[kind] = {"driver": SIM_DRIVERS[kind]}
    served_all = []
    for name, dev in devices.items():
        driver = str(dev.get("driver"))
        if driver not in SIMULATORS or not dev.get("enabled", True):
            continue
        options: dict[str, Any] = {
            "shoe": {"decks": getattr(cfg.rules, "decks", 1)},
            "wheel": {"speed": 4.0},  # a game in about 15 s (the real wheel takes a minute)
        }.get(DEVICE_KINDS[driver], {})
        served = await serve_simulator(driver, options=options)
        served_all.append(served)
        devices[name] = {**dev, "port": served.where}
        log.info("simulated %s (%s) on %s", name, driver, served.where)
    doc["devices"] = devices
    doc["daemon"] = {**dict(doc.get("daemon") or {}), "simulated": True}
    if kind is not None and kind != "wheel" and kind in SIM_DRIVERS:
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
    from drivers.registry import DEVICE_KINDS

    wheels = [s for s in served if DEVICE_KINDS[s.name] == "wheel"]
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
