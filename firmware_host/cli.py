"""``tablectl``: the one command-line entry point.

Subcommands live in small modules that each expose ``register(subparsers)``; this
file only assembles them, so each area of the tree owns its own subcommands. It also
owns what every subcommand shares: the man-style help (a synopsis and an example per
subcommand, :data:`EXAMPLES`), and the one place where an error becomes a line for
the user (:func:`describe_error`, :func:`report`): ``tablectl COMMAND: error: CODE:
message`` naming the flag, file, device or broker at fault, exit status 2, and the
traceback too with ``--debug``. Each option is checked as the command line is read
(``firmware_host.cliargs``), before any work starts.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sqlite3
import sys
import textwrap
import traceback
from collections.abc import Sequence

from . import __version__
from .cliargs import Parser, plain_words

#: Modules contributing subcommands, in the order ``tablectl --help`` lists them.
SUBCOMMAND_MODULES = (
    "firmware_host.subcommands.rules",  # check-config, settle, math, score
    "firmware_host.subcommands.daemon",  # run, demo
    "firmware_host.subcommands.ops",  # console, status, audit, completion
    "firmware_host.subcommands.keys",  # keys generate/id/sign
    "firmware_host.subcommands.integrity",  # verify-software, software-manifest
    "drivers.cli",  # sim, decode
    "tableview.cli",  # view (its web server is imported only when it runs)
    "flooringest.cli",  # floor-ingest (the floor's side; MQTT and databases when it runs)
    "tablefleet.cli",  # provision, rollout (the floor's fleet tooling, issue 35)
)

#: Exit status of a command that failed on its input or its environment.
EXIT_ERROR = 2

#: Examples shown at the end of each subcommand's ``--help`` (as in a man page's
#: EXAMPLES section). ``tests/test_cli_help.py`` checks every subcommand has some.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "check-config": (
        "tablectl check-config config/roulette.toml",
        "tablectl check-config -q config/*.toml",
    ),
    "settle": (
        "tablectl settle roulette --outcome '{\"number\": 17}' "
        '--bets \'[{"bet_type": "straight", "selection": [17], "stake": 2500}]\'',
        "tablectl settle baccarat --outcome @outcome.json --bets @bets.json --config config/baccarat.toml",
    ),
    "math": (
        "tablectl math baccarat --decks 8",
        "tablectl math sicbo --config config/sicbo.toml --json",
    ),
    "score": ("tablectl score mahjong --hand @examples/mahjong-hand.json",),
    "run": (
        "tablectl run --config /etc/tablectl/table.toml   # what the systemd unit starts",
        "tablectl run --config config/roulette.toml --state-dir /tmp/t --runtime-dir /tmp/t --simulate",
    ),
    "demo": (
        "tablectl demo --game baccarat --rounds 5",
        "tablectl demo --seed 1234            # replay the rounds a demo printed with seed 1234",
    ),
    "console": ("tablectl console --socket /tmp/t/console.sock", "tablectl console --hash-pin"),
    "status": ("tablectl status --socket /tmp/t/console.sock", "tablectl status --json"),
    "audit": (
        "tablectl audit verify --config /etc/tablectl/table.toml",
        "tablectl audit verify --journal journal.sqlite3 --key audit.key --anchor SEQ:HASH",
        "tablectl audit verify --journal journal.sqlite3 --key audit.key --anchors rounds.jsonl",
        "tablectl audit init-key --key /etc/tablectl/audit.key",
    ),
    "completion": (
        "tablectl completion bash > ~/.local/share/bash-completion/completions/tablectl",
        "source <(tablectl completion bash)",
    ),
    "verify-software": (
        "tablectl verify-software --config /etc/tablectl/table.toml",
        "tablectl verify-software --config /etc/tablectl/table.toml --seed 5f2a9c01d4e7",
    ),
    "software-manifest": (
        "tablectl software-manifest --out software.manifest            # on the reference install",
        "tablectl software-manifest --sign software.manifest --key build.key   # release machine",
    ),
    "sim": ("tablectl sim cammegh-ss2 --interval 10", "tablectl sim shoe-ref --tcp 0 -o decks=8"),
    "decode": ("tablectl decode cammegh-ss2 capture.log",),
    "keys": (
        "tablectl keys generate dealer-01 --dir /etc/tablectl/keys",
        "tablectl keys id /etc/tablectl/keys/dealer-01.pub",
        "tablectl keys sign --key dealer-01.key --principal dealer-01 --table roulette-01 @req.json",
        "tablectl keys identity --key /var/lib/tablectl/identity.key   # the table's own key",
        "tablectl keys seal --key identity.key --topic rounds @round.json",
    ),
    "view": (
        "tablectl view --config config/roulette.toml --listen 127.0.0.1:8080",
        "tablectl view --broker mqtt://127.0.0.1:1883 --table roulette-01 --table baccarat-01",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="tablectl",
        description="Casino table controller: rules core, devices, daemon.",
        epilog="'tablectl COMMAND --help' shows a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        default=bool(os.environ.get("TABLECTL_DEBUG")),
        help="show the traceback of an error (also TABLECTL_DEBUG=1)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    for name, p in sub.choices.items():
        _man_style(name, p)
    _name_commands(parser)
    # ``tablectl completion`` reads the whole parser it was parsed by (a subcommand's
    # module never imports this one: it is loaded by name from SUBCOMMAND_MODULES)
    parser.set_defaults(root_parser=parser)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Each (sub)parser records its own name (``tablectl audit verify``) in the
    namespace as ``prog_name``: the innermost parser's wins, and an error names it."""
    parser.set_defaults(prog_name=parser.prog)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for p in action.choices.values():
                _name_commands(p)


class ManFormatter(argparse.HelpFormatter):
    """Help as a short man page: paragraphs wrapped to the terminal, indented lines
    (the examples) kept as written, and no line broken at a hyphen (``fish-prawn-crab``,
    ``--state-dir`` stay whole)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for line in text.splitlines():
            if line.startswith(" ") or not line.strip():
                out.append(indent + line)
            else:
                out += textwrap.wrap(
                    line, width, initial_indent=indent, subsequent_indent=indent,
                    break_on_hyphens=False,
                )  # fmt: skip
        return "\n".join(out)

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def _man_style(name: str, p: argparse.ArgumentParser) -> None:
    """A subcommand's help as a short man page: what it does, its options, examples."""
    p.formatter_class = ManFormatter
    examples = EXAMPLES.get(name)
    if examples and not p.epilog:
        p.epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples)


def describe_error(exc: BaseException) -> str:
    """One line for an error that reached the command line: ``CODE: message``,
    naming the file, key, device or address at fault when the error knows it."""
    from .auth.keys import KeyFileError
    from .config import ConfigInvalid
    from .games.errors import CodedError

    if isinstance(exc, ConfigInvalid):
        first = exc.errors[0] if exc.errors else "invalid"
        more = (
            f" (and {len(exc.errors) - 1} more: tablectl check-config {exc.source} lists them)"
            if len(exc.errors) > 1
            else ""
        )
        return f"CONFIG_INVALID: {exc.source}: {first}{more}"
    if isinstance(exc, CodedError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, UnicodeDecodeError):
        return (
            f"NOT_UTF8: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        )
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else ""
        what = exc.strerror or str(exc)
        return f"OS_ERROR: {where}: {what}" if where else f"OS_ERROR: {what}"
    if isinstance(exc, sqlite3.Error):
        return f"JOURNAL_ERROR: the journal: {exc}"
    if isinstance(exc, RecursionError):
        return "INPUT_TOO_DEEP: the input is nested too deeply"
    if isinstance(exc, KeyFileError):
        return f"KEY_INVALID: {exc}"
    if isinstance(exc, ValueError):  # a value from the command line a parser refused
        return f"INVALID_VALUE: {plain_words(str(exc))}"
    if isinstance(exc, MemoryError):
        return "INPUT_TOO_LARGE: out of memory reading the input"
    return (
        f"INTERNAL_ERROR: a bug: {type(exc).__name__}: {exc} (tablectl --debug shows the "
        "traceback; please report it)"
    )


def one_line(text: str) -> str:
    """``text`` on one line: line breaks as spaces, no control character."""
    from .textsafe import printable

    return printable(" ".join(text.split("\n")).replace("\r", " "))


def report(exc: BaseException, prog: str, *, debug: bool = False) -> int:
    """Print an error as tablectl's one line (after its traceback with ``--debug``) and
    return the exit status, :data:`EXIT_ERROR`."""
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"{prog}: error: {one_line(describe_error(exc))}", file=sys.stderr)
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    debug = bool(os.environ.get("TABLECTL_DEBUG")) or "--debug" in argv
    prog = "tablectl"
    try:
        args = parser.parse_args(argv)
        prog, debug = args.prog_name, args.debug
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        return report(exc, getattr(exc, "prog", None) or prog, debug=debug)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
