"""What the tables earn, on the floor's side (issue 34 item 4): each table's closed shifts
(its retained ``shift``) and its players' sessions (``sessions``) stored exactly once,
and the shift report a casino's accounting department reads (``tablectl floor-ingest
report``, ``docs/floor.md``, "Shift report").

- Verified as rounds are: the table in the registry, the message signed by one of its
  keys in its one signed spelling (:func:`firmware_host.auth.evidence.open_sealed`);
  what fails is quarantined with its code (``floor_quarantine``, topic ``shift`` or
  ``sessions``), never stored.
- Exactly once: ``floor_shifts`` is keyed by ``(table_id, shift_id)`` and
  ``floor_sessions`` by ``(table_id, session_id)``; the same message again is a
  duplicate (counted, ``earnings_duplicates``), a different one under a stored key is
  refused and counted (``earnings_conflicts``): the first stays. Only a closed shift is
  stored (the retained ``shift`` of an open one says the shift so far).
- Each row is written in its own transaction, before the message's PUBACK.

The tables are created where missing by :func:`ensure_schema` (idempotent).
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import time
import weakref
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from firmware_host.auth.evidence import EvidenceError, open_sealed

from . import messages as m
from .db import Db, count
from .messages import Quarantined
from .verify import _evidence_code

log = logging.getLogger(__name__)

#: The topics below a table's root this module stores.
EARNINGS_TOPICS = ("shift", "sessions")

_DDL = """
CREATE TABLE IF NOT EXISTS floor_shifts (
    table_id TEXT NOT NULL,
    shift_id TEXT NOT NULL,
    currency TEXT NOT NULL,
    minor_digits INTEGER NOT NULL,
    opened_at TEXT NOT NULL,
    closed_at TEXT NOT NULL,
    opener BIGINT NOT NULL,
    fills BIGINT NOT NULL,
    credits BIGINT NOT NULL,
    drop_amount BIGINT NOT NULL,
    closer BIGINT NOT NULL,
    win BIGINT NOT NULL,
    rounds BIGINT NOT NULL,
    game_result BIGINT NOT NULL,
    theo_exact TEXT NOT NULL,
    theo BIGINT NOT NULL,
    variance BIGINT NOT NULL,
    difference BIGINT NOT NULL,
    payload TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    received_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (table_id, shift_id)
);
CREATE TABLE IF NOT EXISTS floor_sessions (
    table_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    player TEXT NOT NULL,
    seat INTEGER NOT NULL,
    currency TEXT NOT NULL,
    opened_at TEXT NOT NULL,
    closed_at TEXT NOT NULL,
    seconds BIGINT NOT NULL,
    rounds BIGINT NOT NULL,
    stakes BIGINT NOT NULL,
    average_stake BIGINT NOT NULL,
    player_net BIGINT NOT NULL,
    theo_exact TEXT NOT NULL,
    theo BIGINT NOT NULL,
    payload TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    received_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (table_id, session_id)
)
"""

_SHIFT_COLS = ("currency", "minor_digits", "opened_at", "closed_at", "opener", "fills_total",
               "credits_total", "drop", "closer", "win", "rounds", "game_result",
               "theo_exact", "theo", "variance", "difference")  # fmt: skip
_SESSION_COLS = ("player", "seat", "currency", "opened_at", "closed_at", "seconds", "rounds",
                 "stakes", "average_stake", "player_net", "theo_exact", "theo")  # fmt: skip
#: The connections the tables were made on (a new connection checks again).
_ready: weakref.WeakSet[Db] = weakref.WeakSet()


async def ensure_schema(db: Db) -> None:
    """Create ``floor_shifts`` and ``floor_sessions`` where missing (once per connection)."""
    if db in _ready:
        return
    async with db.transaction():
        for stmt in _DDL.split(";"):
            if stmt.strip():
                await db.execute(stmt)
    _ready.add(db)


def _values(doc: dict[str, Any], cols: Sequence[str]) -> list[Any] | None:
    """The columns of ``doc`` (None when one is missing or of the wrong kind)."""
    out = []
    for c in cols:
        v = doc.get(c)
        if v is None or isinstance(v, (bool, float, dict, list)):
            return None
        out.append(v)
    return out


async def keep(
    db: Db, keys: Any, table: str, topic: str, raw: bytes, worker: str
) -> tuple[str, Quarantined | None]:
    """Store one message of ``<table>/<topic>`` (:data:`EARNINGS_TOPICS`) once: returns
    ``stored``, ``duplicate``, ``conflict``, ``open`` (a shift not closed yet: not
    stored) or ``quarantined`` with what to quarantine (the caller keeps it with the
    store's quarantine)."""
    at = time.time()
    if keys is None:
        return "quarantined", Quarantined(
            topic,
            table,
            raw,
            m.UNKNOWN_TABLE,
            f"table {table!r} is not in the floor's registry",
            at,
        )
    try:
        doc, _ = open_sealed(raw, topic, keys)
    except EvidenceError as exc:
        return "quarantined", Quarantined(topic, table, raw, _evidence_code(exc), str(exc), at)
    shift = topic == "shift"
    key = doc.get("shift_id" if shift else "session_id")
    cols = _SHIFT_COLS if shift else _SESSION_COLS
    values = _values(doc, cols) if isinstance(key, str) else None
    if doc.get("table_id") != table or values is None:
        return "quarantined", Quarantined(
            topic, table, raw, m.MALFORMED, f"not a {topic} message of table {table}", at
        )
    if shift and doc.get("status") != "closed":
        return "open", None
    text = raw.decode("utf-8")
    digest = hashlib.sha256(raw).hexdigest()
    await ensure_schema(db)
    name = "floor_shifts" if shift else "floor_sessions"
    id_col = "shift_id" if shift else "session_id"
    columns = [_column(c) for c in cols]
    async with db.transaction():
        got = await db.fetch(
            f"SELECT sha256 FROM {name} WHERE table_id = ? AND {id_col} = ?", table, key
        )
        if got:
            outcome = "duplicate" if got[0][0] == digest else "conflict"
            await count(db, f"earnings_{outcome}s", 1)
            return outcome, None
        marks = ", ".join("?" for _ in range(len(columns) + 5))
        await db.execute(
            f"INSERT INTO {name} (table_id, {id_col}, {', '.join(columns)}, payload, sha256, "
            f"received_at) VALUES ({marks})",
            table, key, *values, text, digest, at,
        )  # fmt: skip
    return "stored", None


async def on_message(
    store: Any, keys: Any, table: str, topic: str, raw: bytes, worker: str
) -> bool:
    """A message of ``<table>/<topic>`` received by a worker: kept (:func:`keep`), or
    quarantined in the store's quarantine; True once committed (its PUBACK may go),
    False when the database refused (not acknowledged: the broker sends it again when
    the worker reconnects)."""
    try:
        outcome, bad = await keep(store.db, keys, table, topic, raw, worker)
        if bad is not None:
            await store.ingest([bad], worker=worker)
    except Exception as exc:  # StoreError, or anything a driver raises
        log.warning("floor-ingest %s: %s of %s not stored: %s", worker, topic, table, exc)
        return False
    if outcome == "conflict":
        log.warning("floor-ingest %s: %s of %s differs from the one stored: refused",
                    worker, topic, table)  # fmt: skip
    return True


def _column(c: str) -> str:
    return {"fills_total": "fills", "credits_total": "credits", "drop": "drop_amount"}.get(c, c)


# -- the shift report ------------------------------------------------------------------
#: The report's columns, as an accounting department names them.
HEADER = ("pit", "table", "shift", "closed", "currency", "opener", "fills", "credits", "drop",
          "closer", "win", "hold %", "rounds", "game result", "theo win", "variance",
          "difference")  # fmt: skip


async def shift_rows(
    db: Db, *, table: str | None = None, pit: str | None = None,
    since: str | None = None, until: str | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The closed shifts stored, with their table's pit (``floor_registry``), by pit,
    table and close."""
    await ensure_schema(db)
    sql = (
        "SELECT s.table_id, s.shift_id, s.closed_at, s.currency, s.minor_digits, s.opener, "
        "s.fills, s.credits, s.drop_amount, s.closer, s.win, s.rounds, s.game_result, "
        "s.theo_exact, s.theo, s.variance, s.difference, r.pit FROM floor_shifts s "
        "LEFT JOIN floor_registry r ON r.table_id = s.table_id WHERE 1 = 1"
    )
    args: list[Any] = []
    for cond, value in (("s.table_id = ?", table), ("r.pit = ?", pit),
                        ("s.closed_at >= ?", since), ("s.closed_at < ?", until)):  # fmt: skip
        if value is not None:
            sql += f" AND {cond}"
            args.append(value)
    keys = ("table", "shift", "closed", "currency", "digits", "opener", "fills", "credits",
            "drop", "closer", "win", "rounds", "game_result", "theo_exact", "theo",
            "variance", "difference", "pit")  # fmt: skip
    rows = [dict(zip(keys, r, strict=True)) for r in await db.fetch(sql, *args)]
    for r in rows:
        r["pit"] = r["pit"] or "-"
    rows.sort(key=lambda r: (r["pit"], r["table"], r["closed"], r["shift"]))
    return rows


def amount(minor: int, digits: int, *, grouped: bool = True) -> str:
    """Minor units as the currency writes them (``-1,234.50``): exact, no float."""
    sign = "-" if minor < 0 else ""
    whole, part = divmod(abs(int(minor)), 10**digits)
    text = f"{whole:,}" if grouped else str(whole)
    return f"{sign}{text}.{part:0{digits}d}" if digits else f"{sign}{text}"


def hold_pct(win: int, drop: int) -> str:
    """Win over drop as a percentage to two places, half to even; ``-`` without a drop."""
    if not drop:
        return "-"
    hundredths = round(Fraction(win, drop) * 10_000)
    whole, cents = divmod(abs(hundredths), 100)
    return f"{'-' if hundredths < 0 else ''}{whole}.{cents:02d}"


_SUMMED = ("opener", "fills", "credits", "drop", "closer", "win", "rounds", "game_result",
           "theo", "variance", "difference")  # fmt: skip


def _total(rows: list[dict[str, Any]], pit: str, label: str) -> dict[str, Any]:
    out: dict[str, Any] = {"pit": pit, "table": label, "shift": "", "closed": "",
                           "currency": rows[0]["currency"], "digits": rows[0]["digits"]}  # fmt: skip
    for k in _SUMMED:
        out[k] = sum(int(r[k]) for r in rows)
    # the theoretical win of a total: the exact sum, rounded once (half to even)
    out["theo"] = round(sum((Fraction(str(r["theo_exact"])) for r in rows), Fraction(0)))
    out["variance"] = out["win"] - out["theo"]
    return out


def with_totals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with a total line after each pit's tables and one for the floor, per
    currency."""
    out: list[dict[str, Any]] = []
    for currency in sorted({r["currency"] for r in rows}):
        mine = [r for r in rows if r["currency"] == currency]
        for pit in sorted({r["pit"] for r in mine}):
            in_pit = [r for r in mine if r["pit"] == pit]
            out += in_pit
            out.append(_total(in_pit, pit, f"pit {pit} total"))
        out.append(_total(mine, "", "all tables total"))
    return out


def _cells(r: dict[str, Any], *, grouped: bool) -> list[str]:
    d = int(r["digits"])

    def money(k: str) -> str:
        return amount(int(r[k]), d, grouped=grouped)

    return [r["pit"], r["table"], r["shift"], r["closed"], r["currency"], money("opener"),
            money("fills"), money("credits"), money("drop"), money("closer"), money("win"),
            hold_pct(int(r["win"]), int(r["drop"])), str(r["rounds"]), money("game_result"),
            money("theo"), money("variance"), money("difference")]  # fmt: skip


def report_text(rows: list[dict[str, Any]]) -> str:
    """The report as aligned text: a line per shift, a total per pit and for the floor."""
    if not rows:
        return "no closed shift stored\n"
    lines = [list(HEADER)] + [_cells(r, grouped=True) for r in with_totals(rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    text = []
    for line in lines:
        cells = [c.ljust(w) if i < 5 else c.rjust(w) for i, (c, w) in
                 enumerate(zip(line, widths, strict=True))]  # fmt: skip
        text.append("  ".join(cells).rstrip())
    return "\n".join(text) + "\n"


def report_csv(rows: list[dict[str, Any]]) -> str:
    """The report as CSV (RFC 4180): amounts in major units, no grouping."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(HEADER)
    for r in with_totals(rows):
        w.writerow(_cells(r, grouped=False))
    return buf.getvalue()


__all__ = [
    "EARNINGS_TOPICS",
    "ensure_schema",
    "keep",
    "on_message",
    "report_csv",
    "report_text",
    "shift_rows",
]
