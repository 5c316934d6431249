"""``tablectl floor-ingest``: the reference floor ingest (``docs/floor.md``).

``run`` one worker (start several with different ``--worker`` names: they share the
load through one shared subscription), ``status`` of the records (per table last seq,
gaps open, anchors, open faults; from the database, no broker needed), ``anchors`` of
one table (its rounds as received, one JSON per line: what ``tablectl audit verify
--anchors`` takes), ``registry import|list`` (the tables the floor knows and their
keys), ``quarantine list|release`` (what was kept aside, and a person's acceptance of
a quarantined round after review), ``report`` (the shift report per table and per
pit, text or CSV: ``earnings.py``), ``days`` and ``archive`` (the rounds by day, and
the days before a date into files: ``flooringest.partitions``). Registered by
``firmware_host.cli`` like any
area's subcommands; the MQTT client and the database drivers are imported only when a
command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from firmware_host.cliargs import (
    BadValue,
    CliError,
    broker_url,
    count,
    db_url,
    existing_file,
    name_like,
    number,
    output_file,
    plain_words,
    redact_url,
    topic_prefix,
)

T = TypeVar("T")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "floor-ingest",
        help="the floor's records: every table's signed rounds into PostgreSQL or SQLite, "
        "exactly once",
        description="The reference floor ingest: every table's rounds, verified against the "
        "floor's registry of tables, into a database, exactly once; what fails quarantined "
        "and raised as a floor fault; gaps repaired with the tables' replay_rounds; the "
        "floor's signed record of each table published (docs/floor.md).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    db_help = "postgresql://user@host:port/db, or sqlite:///path (default floor.sqlite3)"
    existing_db = db_url(must_exist=True)
    new_db = db_url(must_exist=False)

    run = verbs.add_parser(
        "run",
        help="run one ingest worker until SIGTERM",
        description="Run one ingest worker until SIGTERM or Ctrl-C. Every option is checked "
        "before it starts. Its log (standard error) says what it connects to (the broker, "
        "the database), each outage of either (one line when it starts, one when it ends, "
        "with how long it lasted), what it quarantines, and every --progress seconds one "
        "line: broker and database connected or not, rounds received and stored, "
        "duplicates, quarantined, tables seen, whether it holds the duties.",
    )
    run.add_argument(
        "--broker",
        default="mqtt://127.0.0.1:1883",
        type=broker_url("mqtt", "tcp"),
        help="mqtt://[user:pass@]host[:port] (TLS: a local bridge)",
    )
    run.add_argument("--db", default="floor.sqlite3", type=new_db, help=db_help)
    run.add_argument(
        "--prefix", default="casino", type=topic_prefix, help="topic prefix (default casino)"
    )
    run.add_argument(
        "--group",
        default="floor-ingest",
        type=name_like("a group name"),
        help="the shared subscription's group",
    )
    run.add_argument(
        "--subscription",
        choices=("shared", "plain"),
        default="shared",
        help="the rounds through the group's shared subscription (several workers split "
        "them; default) or a plain one (one worker: a restarted broker keeps it and "
        "queues the rounds published before the worker is back; docs/floor.md)",
    )
    run.add_argument(
        "--worker",
        default="w1",
        type=name_like("a worker name"),
        help="this worker's name, kept across restarts",
    )
    run.add_argument(
        "--key",
        type=existing_file,
        help="the ingest principal's private key (signs replay_rounds)",
    )
    run.add_argument(
        "--principal",
        default="floor-ingest",
        type=name_like("a principal name"),
        help="the ingest's principal name",
    )
    run.add_argument(
        "--gap-grace",
        type=number(minimum=0),
        default=2.0,
        help="seconds before a gap is repaired",
    )
    run.add_argument(
        "--batch-max", type=count(1), default=200, help="rounds per transaction at most"
    )
    run.add_argument(
        "--no-live-lane",
        dest="live_lane",
        action="store_false",
        help="take the rounds only through the session (no second connection for the "
        "rounds published now, ahead of what the broker queued: docs/floor.md)",
    )
    run.add_argument(
        "--registry",
        type=existing_file,
        help="the registry of tables (TOML: [tables.<id>] game, keys, pit), imported "
        "into the database at start and whenever it changes",
    )
    run.add_argument(
        "--latency-log",
        type=output_file,
        help="append 'round_id<TAB>commit time' per stored round (benchmarks)",
    )
    run.add_argument(
        "--stats-file",
        type=output_file,
        help="rewrite this JSON file every second with the worker's counters",
    )
    run.add_argument(
        "--progress",
        type=number(minimum=0),
        default=60.0,
        metavar="S",
        help="seconds between two progress lines in the log (default 60; 0: none)",
    )
    run.set_defaults(func=cmd_run)

    st = verbs.add_parser(
        "status", help="how far behind: per table last seq, gaps open, open faults (exit 1)"
    )
    st.add_argument("--db", default="floor.sqlite3", type=existing_db, help=db_help)
    st.add_argument("--json", action="store_true", help="the lag document, as on the lag topic")
    st.set_defaults(func=cmd_status)

    reg = verbs.add_parser("registry", help="the tables the floor knows, and their keys")
    rverbs = reg.add_subparsers(dest="registry_verb", metavar="ACTION")
    rverbs.required = True
    ri = rverbs.add_parser("import", help="make the database's registry the file's")
    ri.add_argument("file", type=existing_file, help="the registry (TOML)")
    ri.add_argument("--db", default="floor.sqlite3", type=new_db, help=db_help)
    ri.set_defaults(func=cmd_registry_import)
    rl = rverbs.add_parser("list", help="the tables of the database's registry")
    rl.add_argument("--db", default="floor.sqlite3", type=existing_db, help=db_help)
    rl.add_argument("--json", action="store_true")
    rl.set_defaults(func=cmd_registry_list)

    qu = verbs.add_parser("quarantine", help="messages kept aside, and their release")
    qverbs = qu.add_subparsers(dest="quarantine_verb", metavar="ACTION")
    qverbs.required = True
    ql = qverbs.add_parser("list", help="quarantined messages (open ones unless --all)")
    ql.add_argument("--db", default="floor.sqlite3", type=existing_db, help=db_help)
    ql.add_argument("--all", action="store_true", help="released ones too")
    ql.add_argument("--table", help="one table's")
    ql.add_argument("--code", help="one code's (UNKNOWN_TABLE, BAD_SIGNATURE...)")
    ql.add_argument("--json", action="store_true", help="one JSON per line, payload included")
    ql.set_defaults(func=cmd_quarantine_list)
    qr = qverbs.add_parser(
        "release",
        help="accept a quarantined round after review: stored as the round if its "
        "signature verifies with the registry and its seq is free",
    )
    qr.add_argument("--db", default="floor.sqlite3", type=existing_db, help=db_help)
    qr.add_argument(
        "--sha256", required=True, type=_sha256, help="the quarantined message (its SHA-256)"
    )
    qr.add_argument("--by", required=True, help="who accepts it (recorded)")
    qr.add_argument("--reason", required=True, help="why (recorded)")
    qr.set_defaults(func=cmd_quarantine_release)

    an = verbs.add_parser("anchors", help="a table's rounds as received, one JSON per line")
    an.add_argument("--db", default="floor.sqlite3", type=existing_db, help=db_help)
    an.add_argument("--table", required=True, help="the table id")
    an.add_argument(
        "--output", "-o", type=output_file, help="file to write (default: standard output)"
    )
    an.set_defaults(func=cmd_anchors)

    rp = verbs.add_parser(
        "report",
        help="the shift report per table and per pit (closed shifts: opener, fills, "
        "credits, drop, closer, win, hold %%, rounds, theoretical win, variance)",
    )
    rp.add_argument("--db", default="floor.sqlite3", type=existing_db, help=db_help)
    rp.add_argument("--table", help="one table's shifts")
    rp.add_argument("--pit", help="one pit's tables (the registry's pit)")
    rp.add_argument("--since", type=_when_arg, help="shifts closed at or after (UTC, 2026-05-09)")
    rp.add_argument("--until", type=_when_arg, help="shifts closed before (UTC)")
    rp.add_argument("--format", choices=("text", "csv"), default="text")
    rp.add_argument(
        "--output", "-o", type=output_file, help="file to write (default: standard output)"
    )
    rp.set_defaults(func=cmd_report)

    dy = verbs.add_parser("days", help="the days of rounds held, per partition (issue 36)")
    dy.add_argument("--db", default="floor.sqlite3", type=existing_db, help=db_help)
    dy.add_argument("--json", action="store_true")
    dy.set_defaults(func=cmd_days)
    ar = verbs.add_parser(
        "archive",
        help="every day of rounds before a date into a file per day (payloads as received, "
        "by table and seq, with its SHA-256), then out of the database (its partition "
        "dropped); the rounds' keys stay",
    )
    ar.add_argument("--db", default="floor.sqlite3", type=existing_db, help=db_help)
    ar.add_argument("--before", required=True, type=_day, help="YYYY-MM-DD (UTC): days before it")
    ar.add_argument("--dir", required=True, help="the directory of the archive files")
    ar.set_defaults(func=cmd_archive)
    p.epilog = (
        "examples:\n"
        "  tablectl floor-ingest run --broker mqtt://floor-broker --db postgresql://ingest@db/floor "
        "--worker w1 --key /etc/tablectl/floor-ingest.key\n"
        "  tablectl floor-ingest status --db postgresql://ingest@db/floor\n"
        "  tablectl floor-ingest anchors --db floor.sqlite3 --table MO-R-07 -o MO-R-07.jsonl\n"
        "  tablectl floor-ingest report --db floor.sqlite3 --pit P1 --format csv -o shifts.csv\n"
        "  tablectl floor-ingest registry import tables.toml --db postgresql://ingest@db/floor\n"
        "  tablectl floor-ingest quarantine release --db floor.sqlite3 --sha256 SHA "
        "--by tech-4 --reason 'journal restored, reconciled (ticket 812)'"
    )


def _day(text: str) -> float:
    from datetime import UTC, datetime

    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise BadValue(f"{text!r} is not a day (YYYY-MM-DD)") from None


def cmd_days(args: argparse.Namespace) -> int:
    from .store import open_store

    async def run() -> list[dict[str, Any]]:
        store = await open_store(args.db)
        try:
            return await store.partitions.days()
        finally:
            await store.close()

    days = _db(args.db, run)
    if args.json:
        print(json.dumps(days))
        return 0
    print("DAY (UTC)   ROUNDS  PARTITION")
    for d in days:
        print(f"{d['day']}  {d['rounds']:>7}  {d['partition'] or '-'}")
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .store import open_store

    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        raise CliError(f"--dir {args.dir}: not a directory", code="NOT_A_DIRECTORY")

    async def run() -> list[dict[str, Any]]:
        store = await open_store(args.db)
        try:
            return await store.partitions.archive(args.before, target)
        finally:
            await store.close()

    try:
        done = _db(args.db, run)
    except OSError as exc:
        raise CliError(f"--dir {args.dir}: {exc.strerror or exc}", code="DIRECTORY_UNUSABLE") from None
    for d in done:
        print(f"{d['day']}: {d['rounds']} rounds -> {d['file']} (sha256 {d['sha256']})"
              + (f"; partition {d['partition']} dropped" if d["partition"] else ""))  # fmt: skip
    if not done:
        print("nothing before that day")
    return 0


def _sha256(text: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise BadValue(
            f"must be 64 lowercase hex digits (quarantine list shows them), got {text!r}"
        )
    return text


def _when_arg(text: str) -> str:
    """A UTC date or time as the shifts' ``closed_at`` write it (compared as text)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{3})?)?Z?)?", text):
        raise BadValue(f"must be a UTC date or time (2026-05-09, 2026-05-09T06:00Z), got {text!r}")
    return text.removesuffix("Z")


def _broker(url: str) -> tuple[str, int, str | None, str | None]:
    from urllib.parse import urlsplit

    u = urlsplit(url if "://" in url else f"mqtt://{url}")
    return u.hostname or "127.0.0.1", u.port or 1883, u.username, u.password


def _registry_error(flag: str, lines: list[str]) -> CliError:
    """A registry file's problems in one line: the first ones, and how many more."""
    shown = "; ".join(lines[:3])
    more = f" (and {len(lines) - 3} more)" if len(lines) > 3 else ""
    return CliError(f"{flag}{shown}{more}", code="REGISTRY_INVALID")


def _db(url: str, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``work`` (which opens the database); a database that cannot be reached or
    refuses is one line naming it."""
    from .store import StoreError

    try:
        return asyncio.run(work())
    except StoreError as exc:
        raise CliError(
            f"--db {redact_url(url)}: {plain_words(str(exc))}", code="DATABASE_ERROR"
        ) from None


def cmd_run(args: argparse.Namespace) -> int:
    from firmware_host.logsetup import setup_logging

    from .settings import IngestSettings
    from .worker import IngestWorker

    host, port, user, password = _broker(args.broker)
    signer = None
    if args.key:
        from firmware_host.auth import Signer

        signer = Signer(args.principal, args.key)
    if args.registry:
        from .registry import RegistryError, load_file

        try:
            load_file(args.registry)  # every problem now, before connecting
        except RegistryError as exc:
            raise _registry_error("--registry ", exc.lines) from None
    settings = IngestSettings(
        host=host,
        port=port,
        username=user,
        password=password,
        prefix=args.prefix,
        group=args.group,
        shared=args.subscription == "shared",
        worker=args.worker,
        db=args.db,
        signer=signer,
        gap_grace_s=args.gap_grace,
        batch_max=args.batch_max,
        live_lane=args.live_lane,
        latency_log=args.latency_log,
        registry_file=args.registry,
        stats_file=args.stats_file,
        progress_s=args.progress,
    )
    setup_logging("INFO")
    if signer is None:
        logging.getLogger("flooringest").warning(
            "floor-ingest: no --key: replay requests go unsigned (only a table with "
            "[auth] signatures = false answers them), and NO floor record is published "
            "(the tables cannot check their journal against what the floor holds)"
        )

    async def main() -> None:
        worker = IngestWorker(settings)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stop)
        print(
            f"floor-ingest {settings.worker}: {settings.subscription} on {host}:{port} "
            f"-> {redact_url(args.db)}",
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
    lag = _db(args.db, lambda: _lag(args.db))
    bad = bool(lag["gaps_open"] or lag["conflicts"] or lag["anchor_faults"] or lag["faults_open"])
    if args.json:
        print(json.dumps(lag, indent=2))
        return 1 if bad else 0
    quarantined = sum(lag["quarantined"].values())
    print(
        f"rounds {lag['rounds']} from {len(lag['tables'])} tables; gaps open {lag['gaps_open']}, "
        f"repaired {lag['gaps_repaired']}; duplicates {lag['duplicates']}; conflicts "
        f"{lag['conflicts']}; quarantined {quarantined} (open {lag['quarantine_open']}); "
        f"anchor faults {lag['anchor_faults']}; registry {lag['registry_tables']} tables"
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
    if lag["faults"]:
        shown = len(lag["faults"])
        more = f", the first {shown} shown" if shown < lag["faults_open"] else ""
        print(f"FAULTS OPEN ({lag['faults_open']}{more}):")
        print(f"  {'table':<24} {'code':<22} {'count':>6}  first seen -> last seen")
        for f in lag["faults"]:
            print(
                f"  {f['table_id']:<24} {f['code']:<22} {f['count']:>6}  "
                f"{_when(f['first_seen'])} -> {_when(f['last_seen'])}"
            )
    return 1 if bad else 0


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + "Z"


def cmd_anchors(args: argparse.Namespace) -> int:
    from .store import open_store

    async def rows() -> list[tuple[int, str]]:
        store = await open_store(args.db)
        try:
            return await store.rounds_of(args.table)
        finally:
            await store.close()

    found = _db(args.db, rows)
    if not found:
        raise CliError(
            f"--table {args.table}: no rounds of this table in {redact_url(args.db)}",
            code="NOT_FOUND",
        )
    text = "".join(p + "\n" for _, p in found)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .earnings import report_csv, report_text, shift_rows
    from .store import open_store

    async def run() -> list[dict[str, Any]]:
        store = await open_store(args.db)
        try:
            return await shift_rows(store.db, table=args.table, pit=args.pit,
                                    since=args.since, until=args.until)  # fmt: skip
        finally:
            await store.close()

    rows = _db(args.db, run)
    text = report_csv(rows) if args.format == "csv" else report_text(rows)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_registry_import(args: argparse.Namespace) -> int:
    from .registry import RegistryError, load_file
    from .store import open_store

    try:
        reg = load_file(args.file)
    except RegistryError as exc:
        raise _registry_error("", exc.lines) from None

    async def run() -> dict[str, int]:
        store = await open_store(args.db)
        try:
            return await store.tables.import_registry(reg)
        finally:
            await store.close()

    c = _db(args.db, run)
    print(
        f"registry {args.file}: {c['tables']} tables ({c['added']} added, {c['changed']} "
        f"changed, {c['removed']} removed); the workers read it within seconds"
    )
    return 0


def cmd_registry_list(args: argparse.Namespace) -> int:
    from .store import open_store

    async def run() -> list[dict[str, Any]]:
        store = await open_store(args.db)
        try:
            return await store.tables.registry_rows()
        finally:
            await store.close()

    rows = _db(args.db, run)
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    if not rows:
        print("the registry is empty: every table is unknown (its rounds are quarantined)")
        return 0
    print(f"{'table':<24} {'game':<14} {'pit':<10} keys")
    for r in rows:
        print(f"{r['table_id']:<24} {r['game']:<14} {r['pit'] or '-':<10} {' '.join(r['key_ids'])}")
    return 0


def cmd_quarantine_list(args: argparse.Namespace) -> int:
    from .store import open_store

    async def run() -> list[dict[str, Any]]:
        store = await open_store(args.db)
        try:
            return await store.quarantine.messages(
                open_only=not args.all, table=args.table, code=args.code, limit=100000
            )
        finally:
            await store.close()

    rows = _db(args.db, run)
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    if not rows:
        print("nothing quarantined" + ("" if args.all else " and open"))
        return 0
    for r in rows:
        state = (
            f"released {_when(r['released_at'])} by {r['released_by']}: {r['release_reason']}"
            if r["released_at"] is not None
            else "OPEN"
        )
        print(
            f"{r['sha256']}  {_when(r['received_at'])}  {r['table_id']}/{r['topic']}  "
            f"seq {r['seq'] if r['seq'] is not None else '-'}  {r['code']}  x{r['seen']}  {state}"
        )
        print(f"    {r['message']}")
    return 0


def cmd_quarantine_release(args: argparse.Namespace) -> int:
    from .messages import Incoming, Round
    from .store import open_store
    from .verify import Announcements, Verifier

    async def run() -> str | None:
        store = await open_store(args.db)
        try:
            rows = await store.quarantine.messages(open_only=False, sha256=args.sha256, limit=1)
            if not rows:
                return f"no quarantined message {args.sha256}"
            q = rows[0]
            if q["released_at"] is not None:
                return f"{args.sha256} was released already ({q['released_by']})"
            if q["topic"] != "rounds":
                return f"{args.sha256} is not a round (it came on {q['topic']})"
            if not q["complete"]:
                return (
                    f"{args.sha256}: only the head of the message was kept; it cannot be released"
                )
            registry = await store.tables.load_registry()
            if q["table_id"] not in registry:
                return f"table {q['table_id']!r} is not in the registry: import it first"
            said = Announcements()
            said.raise_to(q["table_id"], 2**62, 0)  # a person accepts the seq
            r = Verifier(registry, said).round(
                Incoming(q["table_id"], q["payload"].encode("utf-8"), float(q["received_at"]))
            )
            if not isinstance(r, Round):
                return f"refused: {r.code}: {r.message}"
            return await store.quarantine.release_round(r, args.sha256, args.by, args.reason)
        finally:
            await store.close()

    why = _db(args.db, run)
    if why is not None:
        raise CliError(why, code="RELEASE_REFUSED")
    print(f"released {args.sha256}: stored as the round, by {args.by} ({args.reason})")
    return 0
