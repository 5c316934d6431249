"""``tablectl view``: serve the read-only web page of one table or a pit of tables.

Registered by ``firmware_host.cli`` like any area's subcommands; the web server
(aiohttp) is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from .caps import Caps


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "view",
        help="a read-only web page of a table or a pit, live from MQTT (roads, board, rounds)",
    )
    p.add_argument(
        "--broker",
        help="broker URL, mqtt://[user:pass@]host[:port] or mqtts://... "
        "(default: [mqtt] of --config, else mqtt://127.0.0.1:1883)",
    )
    p.add_argument("--config", help="a table file: its [mqtt] broker and prefix, and its table")
    p.add_argument("--prefix", help="topic prefix (default: the table file's, else casino)")
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
        help="the floor's registry of tables ([tables.<id>] keys = [...]): their messages "
        "are verified with those keys",
    )
    caps = Caps()
    p.add_argument(
        "--max-tables", type=int, default=caps.tables, help=f"tables shown (default {caps.tables})"
    )
    p.add_argument(
        "--history",
        type=int,
        default=caps.history,
        help=f"rounds, and events, kept per table (default {caps.history})",
    )
    p.add_argument(
        "--max-message-bytes",
        type=int,
        default=caps.message_bytes,
        help=f"a larger message is ignored (default {caps.message_bytes})",
    )
    p.add_argument(
        "--max-table-bytes",
        type=int,
        default=caps.table_bytes,
        help=f"bytes kept per table (default {caps.table_bytes})",
    )
    p.add_argument(
        "--listen", default="127.0.0.1:8080", help="address of the page (default 127.0.0.1:8080)"
    )
    p.set_defaults(func=cmd_view)


def _listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen must be HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def cmd_view(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from firmware_host.config import ConfigInvalid, load_config
    from firmware_host.mqtt import MqttSettings

    from .model import Selection
    from .server import ViewServer, serve
    from .trust import Keys, identity_public_key, key_options, registry_keys

    tables = [*args.table, *(t for t in args.tables.split(",") if t.strip())]
    settings = MqttSettings()
    keys: Keys | None = None
    try:
        own_key = None
        if args.config:
            cfg = load_config(args.config)
            settings = cfg.section("mqtt") or settings
            tables = tables or [cfg.table_id]
            journal = cfg.section("journal")
            if journal is not None and not (args.key or args.registry):
                own_key = identity_public_key(journal.identity_path)
        if args.registry:
            keys = registry_keys(args.registry)
            tables = tables or sorted(keys)
            if not keys:
                raise ValueError(f"{args.registry}: the registry has no table")
        if args.key:
            keys = {**(keys or {}), **key_options(args.key, tables)}
        elif own_key is not None:
            keys = key_options([str(own_key)], tables)
        Selection(tables)  # a bad id or prefix is refused here, in one line
        for option, value in (
            ("--max-tables", args.max_tables),
            ("--history", args.history),
            ("--max-message-bytes", args.max_message_bytes),
            ("--max-table-bytes", args.max_table_bytes),
        ):
            if value < 1:
                raise ValueError(f"{option} must be at least 1, got {value}")
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
        host, port = _listen(args.listen)
    except ConfigInvalid as exc:
        for e in exc.errors:
            print(f"{exc.source}: {e}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    view = ViewServer(settings, tables=tables, host=host, port=port, caps=caps, keys=keys)

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
        print(f"error: cannot serve the page on {args.listen}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
