"""``tablectl``: the one command-line entry point.

Subcommands live in small modules that each expose ``register(subparsers)``; this
file only assembles them, so each area of the tree owns its own subcommands.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from . import __version__
from .journal.errors import JournalError

#: Modules contributing subcommands, in the order ``tablectl --help`` lists them.
SUBCOMMAND_MODULES = (
    "firmware_host.subcommands.rules",  # check-config, settle, math, score
    "firmware_host.subcommands.daemon",  # run, demo
    "firmware_host.subcommands.ops",  # console, audit
    "firmware_host.subcommands.keys",  # keys generate/id/sign
    "drivers.cli",  # sim, decode
    "tableview.cli",  # view (its web server is imported only when it runs)
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tablectl",
        description="Casino table controller: rules core, devices, daemon.",
    )
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc = args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except JournalError as exc:  # a damaged journal, a full disk: one line, its code
        print(f"tablectl: {exc}", file=sys.stderr)
        return 3
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
