"""``tablectl floor-ingest``: the reference floor ingest (``docs/floor.md``).

``run`` one worker (start several with different ``--worker`` names: they share the
load through one shared subscription), ``status`` of the records (per table last seq,
gaps open, anchors; from the database, no broker needed), ``anchors`` of one table
(its rounds as received, one JSON per line: what ``tablectl audit verify --anchors``
takes). Registered by ``firmware_host.cli`` like any area's subcommands; the MQTT
client and the database drivers are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time
from typing import Any


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "floor-ingest",
        help="the floor's records: every table's rounds into PostgreSQL or SQLite, exactly once",
        description="The reference floor ingest: every table's rounds into a database, "
        "exactly once, gaps repaired with the tables' replay_rounds (docs/floor.md).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    db_help = "postgresql://user@host:port/db, or sqlite:///path (default floor.sqlite3)"

    run = verbs.add_parser("run", help="run one ingest worker until SIGTERM")
    run.add_argument(
        "--broker", default="mqtt://127.0.0.1:1883", help="mqtt://[user:pass@]host[:port]"
    )
    run.add_argument("--db", default="floor.sqlite3", help=db_help)
    run.add_argument("--prefix", default="casino", help="topic prefix (default casino)")
    run.add_argument("--group", default="floor-ingest", help="the shared subscription's group")
    run.add_argument("--worker", default="w1", help="this worker's name, kept across restarts")
    run.add_argument("--key", help="the ingest principal's private key (signs replay_rounds)")
    run.add_argument("--principal", default="floor-ingest", help="the ingest's principal name")
    run.add_argument(
        "--gap-grace", type=float, default=2.0, help="seconds before a gap is repaired"
    )
    run.add_argument("--batch-max", type=int, default=200, help="rounds per transaction at most")
    run.add_argument(
        "--latency-log", help="append 'round_id<TAB>commit time' per stored round (benchmarks)"
    )
    run.set_defaults(func=cmd_run)

    st = verbs.add_parser("status", help="how far behind: per table last seq, gaps open")
    st.add_argument("--db", default="floor.sqlite3", help=db_help)
    st.add_argument("--json", action="store_true", help="the lag document, as on the lag topic")
    st.set_defaults(func=cmd_status)

    an = verbs.add_parser("anchors", help="a table's rounds as received, one JSON per line")
    an.add_argument("--db", default="floor.sqlite3", help=db_help)
    an.add_argument("--table", required=True, help="the table id")
    an.add_argument("--output", "-o", help="file to write (default: standard output)")
    an.set_defaults(func=cmd_anchors)
    p.epilog = (
        "examples:\n"
        "  tablectl floor-ingest run --broker mqtt://floor-broker --db postgresql://ingest@db/floor "
        "--worker w1 --key /etc/tablectl/floor-ingest.key\n"
        "  tablectl floor-ingest status --db postgresql://ingest@db/floor\n"
        "  tablectl floor-ingest anchors --db floor.sqlite3 --table MO-R-07 -o MO-R-07.jsonl"
    )


def _broker(url: str) -> tuple[str, int, str | None, str | None]:
    from urllib.parse import urlsplit

    u = urlsplit(url if "://" in url else f"mqtt://{url}")
    if u.scheme not in ("mqtt", "tcp"):
        raise ValueError(
            f"--broker must be mqtt://host[:port] (TLS: put the ingest behind "
            f"a local bridge), got {url!r}"
        )
    return u.hostname or "127.0.0.1", u.port or 1883, u.username, u.password


def cmd_run(args: argparse.Namespace) -> int:
    from .worker import IngestSettings, IngestWorker

    host, port, user, password = _broker(args.broker)
    signer = None
    if args.key:
        from firmware_host.auth import Signer

        signer = Signer(args.principal, args.key)
    settings = IngestSettings(
        host=host,
        port=port,
        username=user,
        password=password,
        prefix=args.prefix,
        group=args.group,
        worker=args.worker,
        db=args.db,
        signer=signer,
        gap_grace_s=args.gap_grace,
        batch_max=args.batch_max,
        latency_log=args.latency_log,
    )
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    if signer is None:
        logging.warning(
            "floor-ingest: no --key: replay requests go unsigned (only a table with "
            "[auth] signatures = false answers them)"
        )

    async def main() -> None:
        worker = IngestWorker(settings)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stop)
        print(
            f"floor-ingest {settings.worker}: {settings.subscription} on {host}:{port} "
            f"-> {args.db}",
            flush=True,
        )
        await worker.run()

    asyncio.run(main())
    return 0


async def _lag(db: str) -> dict[str, Any]:
    from .store import open_store

    store = await open_store(db)
    try:
        return await store.lag()
    finally:
        await store.close()


def cmd_status(args: argparse.Namespace) -> int:
    lag = asyncio.run(_lag(args.db))
    if args.json:
        print(json.dumps(lag, indent=2))
        return 0
    print(
        f"rounds {lag['rounds']} from {len(lag['tables'])} tables; gaps open {lag['gaps_open']}, "
        f"repaired {lag['gaps_repaired']}; duplicates {lag['duplicates']}; conflicts "
        f"{lag['conflicts']}; rejected {lag['rejects']}; anchor faults {lag['anchor_faults']}"
    )
    duties = lag.get("duties") or {}
    if duties.get("holder"):
        left = duties["until"] - time.time()
        print(
            f"duties: {duties['holder']} ({'lease ' + format(left, '.1f') + ' s' if left > 0 else 'lease expired'})"
        )
    print(f"{'table':<24} {'last seq':>9} {'contiguous':>10} {'gaps':>5}  anchor")
    for tid, t in lag["tables"].items():
        gaps = " ".join(f"{g['from_seq']}-{g['to_seq'] or 'tail'}" for g in t["gaps"]) or "0"
        anchor = t["anchor"] or f"none ({t['without_chain']} rounds without chain)"
        print(f"{tid:<24} {t['last_seq']:>9} {t['contiguous_seq']:>10} {gaps:>5}  {anchor}")
    return 1 if lag["gaps_open"] or lag["conflicts"] or lag["anchor_faults"] else 0


def cmd_anchors(args: argparse.Namespace) -> int:
    from .store import open_store

    async def rows() -> list[tuple[int, str]]:
        store = await open_store(args.db)
        try:
            return await store.rounds_of(args.table)
        finally:
            await store.close()

    found = asyncio.run(rows())
    if not found:
        print(f"error: no rounds of table {args.table!r} in {args.db}", file=sys.stderr)
        return 2
    text = "".join(p + "\n" for _, p in found)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0
