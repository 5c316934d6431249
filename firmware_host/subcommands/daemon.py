"""``tablectl run`` (the daemon) and ``tablectl demo`` (a whole simulated table, from
the ``tablesim`` package, imported by the command function alone)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from ..config import ConfigInvalid, load_config


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run the table daemon (what the systemd unit starts)")
    p.add_argument("--config", required=True, help="table configuration file")
    p.add_argument("--state-dir", help="directory of the journal (overrides [journal] path)")
    p.add_argument("--runtime-dir", help="directory of the console socket")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "demo",
        help="a whole table on embedded defaults: simulated devices, embedded broker, simulated players",
    )
    p.add_argument("--game", default="roulette", help="game id (default roulette)")
    p.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="exit 0 after N settled rounds (default: run until ^C)",
    )
    p.add_argument("--broker", help="use this broker (mqtt://host:port) instead of an embedded one")
    p.add_argument("--speed", type=float, default=1.0, help="speed factor (2 = twice as fast)")
    p.add_argument("--seed", type=int, default=1, help="seed of the simulated devices and players")
    p.add_argument("--bets", type=int, default=6, help="bets per round from the simulated players")
    p.add_argument("--quiet", action="store_true", help="print one line per round")
    p.set_defaults(func=cmd_demo)


def _logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def cmd_run(args: argparse.Namespace) -> int:
    from ..daemon import run_daemon

    _logging(args.log_level)
    try:
        cfg = load_config(args.config)
    except ConfigInvalid as exc:
        for e in exc.errors:
            print(f"{exc.source}: {e}", file=sys.stderr)
        return 2

    async def main() -> int:
        return await run_daemon(
            cfg,
            config_path=args.config,
            state_dir=args.state_dir,
            runtime_dir=args.runtime_dir,
            stop=asyncio.Event(),
        )

    from ..journal import JournalError

    try:
        return asyncio.run(main())
    except ConfigInvalid as exc:  # options never read, GPIO missing: refused at start-up
        for e in exc.errors:
            print(f"{exc.source}: {e}", file=sys.stderr)
        return 2
    except JournalError as exc:  # a damaged journal, its audit key missing or not its own
        print(f"error: {exc}", file=sys.stderr)
        return 2


def cmd_demo(args: argparse.Namespace) -> int:
    # The demo lives in the tablesim package, which the runtime never imports at module
    # level (tests/test_tablesim_boundary.py): imported here, only when a demo is asked
    # for, so that ``tablectl run`` on a production table loads none of it.
    from tablesim.demo import run_demo

    _logging("ERROR")  # the demo prints what matters; faults show as events
    return asyncio.run(
        run_demo(
            game=args.game,
            rounds=args.rounds,
            broker=args.broker,
            speed=args.speed,
            seed=args.seed,
            bets=args.bets,
            quiet=args.quiet,
        )
    )
