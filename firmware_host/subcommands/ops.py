"""Operations subcommands of tablectl: ``tablectl console`` and ``tablectl audit``.

(What the console sees of the running table is ``firmware_host/console_backend.py``.)"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import sys
from pathlib import Path

from ..console import hash_pin

DEFAULT_RUNTIME = "/run/tablectl"
DEFAULT_STATE = "/var/lib/tablectl"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("console", help="open the technician console of the running daemon")
    p.add_argument("--socket", help=f"console socket (default {DEFAULT_RUNTIME}/console.sock)")
    p.add_argument(
        "--hash-pin",
        action="store_true",
        help="print the hash of a PIN for [console.operators.NAME]",
    )
    p.set_defaults(func=cmd_console)

    p = sub.add_parser("audit", help="audit the journal: verify the event log's hash chain")
    asub = p.add_subparsers(dest="audit_command", metavar="ACTION")
    asub.required = True
    v = asub.add_parser("verify", help="check the hash chain; say where it breaks")
    v.add_argument("--journal", help=f"journal file (default {DEFAULT_STATE}/journal.sqlite3)")
    v.set_defaults(func=cmd_audit_verify)
    e = asub.add_parser("events", help="print the event log")
    e.add_argument("--journal", help=f"journal file (default {DEFAULT_STATE}/journal.sqlite3)")
    e.add_argument("-n", type=int, default=50, help="last N events")
    e.set_defaults(func=cmd_audit_events)


def _journal_path(arg: str | None) -> str:
    return arg or os.environ.get("TABLECTL_JOURNAL") or f"{DEFAULT_STATE}/journal.sqlite3"


def cmd_audit_verify(args: argparse.Namespace) -> int:
    from ..journal import Journal

    path = _journal_path(args.journal)
    if not Path(path).exists():
        print(f"error: no journal at {path}", file=sys.stderr)
        return 2
    with Journal(path, readonly=True) as j:
        report = j.verify_chain()
    print(report)
    return 0 if report.ok else 1


def cmd_audit_events(args: argparse.Namespace) -> int:
    from ..journal import Journal

    path = _journal_path(args.journal)
    if not Path(path).exists():
        print(f"error: no journal at {path}", file=sys.stderr)
        return 2
    with Journal(path, readonly=True) as j:
        for ev in j.events(args.n):
            print(json.dumps(ev.to_json(), ensure_ascii=False))
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    if args.hash_pin:
        pin = (
            getpass.getpass("PIN (4-12 digits): ")
            if sys.stdin.isatty()
            else sys.stdin.readline().strip()
        )
        try:
            print(hash_pin(pin))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    path = args.socket or os.environ.get("TABLECTL_CONSOLE") or f"{DEFAULT_RUNTIME}/console.sock"
    try:
        return asyncio.run(_console_client(path))
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        print(f"error: cannot reach the console at {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2


async def _console_client(path: str) -> int:
    """A plain line client: stdin lines to the socket, socket bytes to stdout."""
    reader, writer = await asyncio.open_unix_connection(path)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    async def pump_out() -> None:
        while True:
            data = await reader.read(4096)
            if not data:
                break
            sys.stdout.write(data.decode("ascii", "replace").replace("\r\n", "\n"))
            sys.stdout.flush()
        done.set()

    out_task = asyncio.create_task(pump_out())
    while not done.is_set():
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        writer.write(line.rstrip("\r\n").encode("ascii", "replace") + b"\r\n")
        await writer.drain()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(out_task, 1.0)
    writer.close()
    return 0
