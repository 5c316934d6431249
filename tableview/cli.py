"""``tablectl view``: serve the read-only web page of one table or a pit of tables.

Registered by ``firmware_host.cli`` like any area's subcommands; the web server
(aiohttp) is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys


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
        help="a table id to follow (repeatable; default: the table file's, else every table)",
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

    from .server import ViewServer, serve

    tables = list(args.table)
    settings = MqttSettings()
    try:
        if args.config:
            cfg = load_config(args.config)
            settings = cfg.section("mqtt") or settings
            tables = tables or [cfg.table_id]
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
    view = ViewServer(settings, tables=tables, host=host, port=port)

    async def main() -> int:
        stop = asyncio.Event()
        task = asyncio.create_task(serve(view, stop))
        await asyncio.sleep(0.2)
        if task.done():
            await task  # the port was taken: raises
        which = ", ".join(tables) if tables else "every table"
        print(
            f"tablectl view: {view.url} (following {which} on "
            f"{settings.host}:{settings.port}, prefix {settings.prefix})",
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
