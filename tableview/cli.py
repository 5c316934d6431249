"""``tablectl view``: serve the read-only web page of one table or a pit of tables.

Registered by ``firmware_host.cli`` like any area's subcommands; the web server
(aiohttp) is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from firmware_host.cliargs import (
    CliError,
    broker_url,
    count,
    existing_file,
    listen_address,
    number,
    topic_prefix,
)

from .caps import Caps


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "view",
        help="a read-only web page of a table or a pit, live from MQTT (roads, board, rounds)",
        description="Serve a read-only web page of one table or a pit of tables, live from "
        "the broker (docs/view.md). Every option is checked before anything starts. Prints "
        "the page's address on standard output; its log (standard error) names the broker "
        "it connects to, each outage of the broker (one line when it is lost or cannot be "
        "reached, none while it lasts, one when it answers again), and every --progress "
        "seconds one line: broker connected or not, tables shown, messages received and "
        "ignored, pages open.",
    )
    p.add_argument(
        "--broker",
        type=broker_url(),
        help="broker URL, mqtt://[user:pass@]host[:port] or mqtts://... "
        "(default: [mqtt] of --config, else mqtt://127.0.0.1:1883)",
    )
    p.add_argument(
        "--config",
        type=existing_file,
        help="a table file: its [mqtt] broker and prefix, and its table",
    )
    p.add_argument(
        "--prefix", type=topic_prefix, help="topic prefix (default: the table file's, else casino)"
    )
    p.add_argument(
        "--table",
        action="append",
        default=[],
        help="a table id to follow, or a prefix ending in '-', '_', '.' or '*' (repeatable; "
        "default: the table file's, else the registry's tables, else every table)",
    )
    p.add_argument("--tables", default="", help="tables to follow, comma-separated (as --table)")
    p.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="[TABLE=]FILE",
        help="a table's identity public key (identity.pub): its messages are verified "
        "(repeatable; a bare FILE: the key of the one table followed)",
    )
    p.add_argument(
        "--registry",
        type=existing_file,
        help="the floor's registry of tables ([tables.<id>] keys = [...]): their messages "
        "are verified with those keys",
    )
    caps = Caps()
    p.add_argument(
        "--max-tables",
        type=count(1),
        default=caps.tables,
        help=f"tables shown (default {caps.tables})",
    )
    p.add_argument(
        "--history",
        type=count(1),
        default=caps.history,
        help=f"rounds, and events, kept per table (default {caps.history})",
    )
    p.add_argument(
        "--max-message-bytes",
        type=count(1),
        default=caps.message_bytes,
        help=f"a larger message is ignored (default {caps.message_bytes})",
    )
    p.add_argument(
        "--max-table-bytes",
        type=count(1),
        default=caps.table_bytes,
        help=f"bytes kept per table (default {caps.table_bytes})",
    )
    p.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        type=listen_address,
        help="address of the page, HOST:PORT (default 127.0.0.1:8080; port 0: any free one)",
    )
    p.add_argument(
        "--progress",
        type=number(minimum=0),
        default=60.0,
        metavar="S",
        help="seconds between two progress lines in the log (default 60; 0: none)",
    )
    p.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from firmware_host.config import load_config
    from firmware_host.logsetup import setup_logging
    from firmware_host.mqtt import MqttSettings

    from .model import Selection
    from .server import ViewServer, serve
    from .trust import Keys, identity_public_key, key_options, registry_keys

    tables = [*args.table, *(t for t in args.tables.split(",") if t.strip())]
    settings = MqttSettings()
    keys: Keys | None = None
    own_key = None
    if args.config:
        cfg = load_config(args.config)
        settings = cfg.section("mqtt") or settings
        tables = tables or [cfg.table_id]
        journal = cfg.section("journal")
        if journal is not None and not (args.key or args.registry):
            own_key = identity_public_key(journal.identity_path)
    if args.registry:
        try:
            keys = registry_keys(args.registry)
        except ValueError as exc:
            raise CliError(f"--registry {exc}", code="REGISTRY_INVALID") from None
        tables = tables or sorted(keys)
        if not keys:
            raise CliError(f"--registry {args.registry}: the registry has no table",
                           code="REGISTRY_INVALID")  # fmt: skip
    try:
        Selection(tables)  # a bad id or prefix is refused here, in one line
    except ValueError as exc:
        raise CliError(f"--table: {exc}", code="INVALID_VALUE") from None
    try:
        if args.key:
            keys = {**(keys or {}), **key_options(args.key, tables)}
        elif own_key is not None:
            keys = key_options([str(own_key)], tables)
    except ValueError as exc:
        raise CliError(str(exc), code="KEY_INVALID") from None
    caps = Caps(
        tables=args.max_tables,
        history=args.history,
        message_bytes=args.max_message_bytes,
        table_bytes=args.max_table_bytes,
    )
    if args.broker:
        settings = MqttSettings.from_url(args.broker, prefix=settings.prefix)
    if args.prefix:
        settings = replace(settings, prefix=args.prefix)
    host, port = args.listen
    setup_logging("INFO")
    view = ViewServer(
        settings, tables=tables, host=host, port=port, caps=caps, keys=keys,
        progress_s=args.progress,
    )  # fmt: skip

    async def main() -> int:
        stop = asyncio.Event()
        task = asyncio.create_task(serve(view, stop))
        await asyncio.sleep(0.2)
        if task.done():
            await task  # the port was taken: raises
        which = view.selection.describe()
        verified = (
            f"signatures verified with the keys of {len(keys)} table(s)"
            if keys is not None
            else "signatures not verified (no --key, --registry)"
        )
        print(
            f"tablectl view: {view.url} (following {which} on "
            f"{settings.host}:{settings.port}, prefix {settings.prefix}; {verified}; "
            f"at most {caps.tables} tables)",
            flush=True,
        )
        if view.selection.every:
            print(
                "tablectl view: following every table: any client that may publish under "
                f"{settings.prefix}/tables/ can put a table on the page (up to "
                f"{caps.tables}); name the tables with --table",
                file=sys.stderr,
                flush=True,
            )
        await task
        return 0

    try:
        return asyncio.run(main())
    except OSError as exc:
        raise CliError(
            f"--listen {host}:{port}: cannot serve the page: {exc.strerror or exc}",
            code="LISTEN_FAILED",
        ) from None
