"""``tablectl provision`` and ``tablectl rollout`` (``docs/install.md``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from firmware_host.cliargs import (
    CliError,
    broker_url,
    existing_dir,
    existing_file,
    topic_prefix,
    work_dir,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "provision",
        help="write every table's files and the floor's from the floor's inventory",
        description="Read the floor's inventory (CSV: table_id, game, pit, devices, "
        "dealers) and write, under OUT, each table's table file, identity and audit keys, "
        "MQTT password and principals' public keys (tables/<id>/), and the floor's registry "
        "of tables, broker password file and ACL (floor/). Idempotent: keys and passwords "
        "that exist are kept, other files rewritten only when they change; secrets mode 0600.",
    )
    p.add_argument("inventory", type=existing_file, help="the inventory (CSV)")
    p.add_argument("--floor", required=True, type=existing_file,
                   help="the floor's defaults (TOML): the sections every table shares, "
                   "[games.<game>] those of one game")  # fmt: skip
    p.add_argument("--keys", required=True, type=existing_dir,
                   help="the principals' public keys (NAME.pub of every principal named)")  # fmt: skip
    p.add_argument("--out", required=True, type=work_dir, help="where to write (created)")
    p.add_argument("--etc-dir", default=None,
                   help="where a table's files are installed, as its table file names them "
                   "(default: [provision] etc_dir of --floor, else /etc/tablectl; {table}: "
                   "the table's id)")  # fmt: skip
    p.set_defaults(func=cmd_provision)

    r = sub.add_parser(
        "rollout",
        help="a table's signed maintenance commands and state waits (the update playbook)",
        description="What a rolling update asks a table over MQTT: a signed command "
        "(maintenance, end_maintenance, status) and its answer, or a wait until the table's "
        "retained state is in maintenance and idle, ready with a version, or in play.",
    )
    verbs = r.add_subparsers(dest="rollout_command", metavar="ACTION")
    verbs.required = True
    c = verbs.add_parser("command", help="send one signed command, print the answer")
    w = verbs.add_parser("wait", help="wait until the table's state meets a condition")
    for q in (c, w):
        q.add_argument("--broker", required=True, type=broker_url("mqtt", "tcp"),
                       help="mqtt://[USER@]HOST[:PORT] of the floor's broker")  # fmt: skip
        q.add_argument("--password-file", type=existing_file,
                       help="the broker account's password (else the URL's)")  # fmt: skip
        q.add_argument("--prefix", default="casino", type=topic_prefix, help="[mqtt] prefix")
        q.add_argument("--table", required=True, help="the table's id")
        q.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
    c.add_argument("--key", required=True, type=existing_file, help="the principal's private key")
    c.add_argument("--principal", required=True, help="the principal's name")
    c.add_argument("name", choices=("maintenance", "end_maintenance", "status"))
    c.add_argument("--reason", help="the command's reason")
    c.set_defaults(func=cmd_rollout_command)
    w.add_argument("--until", required=True, choices=("maintenance-idle", "ready", "in-play"))
    w.add_argument("--version", help="ready: the software version the table must run")
    w.add_argument("--since", type=float,
                   help="ready: a connection made at or after this Unix time")  # fmt: skip
    w.set_defaults(func=cmd_rollout_wait)


def cmd_provision(args: argparse.Namespace) -> int:
    from .inventory import InventoryError, load
    from .provision import ProvisionError, load_floor, provision

    t0 = time.perf_counter()
    try:
        tables = load(args.inventory)
        floor = load_floor(args.floor)
        etc = args.etc_dir or str(floor.get("provision", {}).get("etc_dir", "/etc/tablectl"))
        summary = provision(tables, floor, Path(args.keys), Path(args.out), etc_dir=etc)
    except (InventoryError, ProvisionError) as exc:
        for line in exc.lines[:50]:
            print(line, file=sys.stderr)
        more = " (the first 50 above)" if len(exc.lines) > 50 else ""
        raise CliError(f"{len(exc.lines)} problem(s){more}; nothing written",
                       code="INVENTORY_INVALID") from None  # fmt: skip
    print(f"{args.out}: {summary.line()} in {time.perf_counter() - t0:.2f} s")
    return 0


def _broker(args: argparse.Namespace) -> object:
    from .rollout import Broker

    u = urlsplit(args.broker if "://" in args.broker else f"mqtt://{args.broker}")
    password = u.password
    if args.password_file:
        password = Path(args.password_file).read_text(encoding="utf-8").strip()
    return Broker(u.hostname or "127.0.0.1", u.port or 1883, u.username, password, args.prefix)


def cmd_rollout_command(args: argparse.Namespace) -> int:
    from firmware_host.auth import Signer

    from .rollout import Broker, command

    broker = _broker(args)
    assert isinstance(broker, Broker)
    signer = Signer(args.principal, args.key)
    cmd_args = {"reason": args.reason} if args.reason else {}
    try:
        answer = asyncio.run(command(broker, args.table, signer, args.name, cmd_args,
                                     timeout=args.timeout))  # fmt: skip
    except TimeoutError as exc:
        raise CliError(str(exc) or f"no answer within {args.timeout:g} s",
                       code="TIMEOUT") from None  # fmt: skip
    print(json.dumps(answer))
    if not isinstance(answer, dict) or answer.get("status") != "ok":
        code = answer.get("code") if isinstance(answer, dict) else None
        raise CliError(f"{args.name} refused by {args.table}: {code}: "
                       f"{answer.get('message') if isinstance(answer, dict) else answer}",
                       code="COMMAND_REFUSED")  # fmt: skip
    return 0


def cmd_rollout_wait(args: argparse.Namespace) -> int:
    from .rollout import Broker, wait

    broker = _broker(args)
    assert isinstance(broker, Broker)
    since = datetime.fromtimestamp(args.since).astimezone() if args.since is not None else None
    try:
        state = asyncio.run(wait(broker, args.table, args.until, version=args.version,
                                 since=since, timeout=args.timeout))  # fmt: skip
    except TimeoutError as exc:
        raise CliError(str(exc), code="TIMEOUT") from None
    print(json.dumps(state))
    return 0
