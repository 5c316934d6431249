"""The audit: every row that moves money checked against the keyed chain, and the
chain against the floor's anchors (``tablectl audit verify``).

:func:`audit_journal` walks the chain once (``chain.walk_chain``: every link and every
HMAC), building what each money row must hold from the entries that describe it, then
reads every row and compares:

- ``rounds``: the opening (table, seq, game, rules, opened at) against
  ``round_opened``; a finished round's status, outcome as read, void reason,
  timestamps, finish time and totals summary against ``round_settled`` /
  ``round_void``; sequence numbers rise in chain order;
- ``bets``: seat, bet type, selection, stake and time against ``bet_placed``; a
  cancellation against ``bet_cancelled``;
- ``settlements`` (the published payloads) and the ``rounds`` outbox entries: the
  SHA-256 the round's closing entry recorded, and the ``chain`` position they carry;
- ``jackpot`` (meters and parameters) against the last ``jackpot_saved``;
  ``jackpot_hits`` against ``jackpot_hit`` and ``jackpot_paid``;
- ``faults`` against ``fault_latched`` / ``fault_cleared``;
- ``requests`` (the answers to floor requests) against ``request_answered``, unless
  retention dropped them (``requests_pruned``); ``bets.principal`` against
  ``bet_placed``;
- a row the chain describes but the journal lacks is named as deleted, unless
  retention dropped it (``rounds_pruned``); a row the chain does not describe is named
  as written behind the journal's back, unless it predates the chain covering rows
  (journals upgraded from schema version 1: the first keyed entry says where those
  end);
- each table against its indexes (SQLite's integrity check of the table): the checks
  above scan a table, the journal finds a row by its key through an index, and a
  power cut can leave an index page older than its table's; a row its index lacks is
  named (the journal cannot find it: a round's payload reads as missing).

Then each anchor (``SEQ:HASH``, or floor payloads: rounds, the ``anchor`` topic,
``state``) must be in the chain with the same hash, and each round the floor holds
must be in the journal with the same payload: so deleting the journal's tail, which
the chain alone cannot see, is caught by the floor's copy.

The report names the first problem in chain order (the row and why); an untouched
journal has none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..jsonio import JSON
from .anchor import Anchor, check_anchor
from .auditkey import AuditKey
from .chain import Event, walk_chain
from .requests import answer_digest
from .rounds import payload_digest, rules_digest
from .verify_model import (
    NOWHERE,
    AuditReport,
    Problem,
    _c,
    _cmp,
    _Expected,
    _loads,
    _loads_lenient,
    _select,
    _short,
    _uncovered,
)


def audit_journal(
    journal: Any,
    key: AuditKey | None,
    *,
    anchors: Sequence[Anchor] = (),
    floor_rounds: Iterable[tuple[str, Mapping[str, JSON]]] = (),
    since: int = 1,
) -> AuditReport:
    """Check every money row of ``journal`` against its chain, keyed with ``key``, and
    the journal against the floor's ``anchors`` and copies of rounds (``floor_rounds``:
    ``(where it came from, payload)``). ``key=None`` checks an unkeyed journal (library
    use); a keyed chain checked without its key fails at its first keyed entry.

    ``since`` > 1 checks only the chain from that entry on and the rows those entries
    describe (their content, and that none is missing): the start-up check that a
    journal still holds what it recently wrote (:meth:`Journal.check_recent`)."""
    db = journal.db.sql
    # A damaged page may hold bytes that are not UTF-8: read them as they are, so the row
    # is named as differing instead of the audit stopping on it.
    text_factory = db.text_factory
    db.text_factory = _lenient_text
    try:
        return _audit(journal, db, key, anchors, floor_rounds, since)
    finally:
        db.text_factory = text_factory


def _lenient_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _audit(
    journal: Any,
    db: Any,
    key: AuditKey | None,
    anchors: Sequence[Anchor],
    floor_rounds: Iterable[tuple[str, Mapping[str, JSON]]],
    since: int,
) -> AuditReport:
    exp = _Expected()
    walk = walk_chain(db, key, exp.visit, since=since)
    window = since > 1
    if window:
        exp.scope_rounds = sorted(
            {
                *exp.opened,
                *exp.finished,
                *(k[0] for k in exp.placed),
                *(k[0] for k in exp.cancelled),
            }
        )
        exp.scope_hits = sorted({*exp.hits, *exp.paid})
    report = AuditReport(walk.report, key_id=journal.chain.key_id)
    problems = report.problems
    chain = walk.report
    if not chain.ok:
        assert chain.first_bad_id is not None
        kind = db.execute("SELECT kind FROM events WHERE id = ?", (chain.first_bad_id,)).fetchone()
        label = f"event log row {chain.first_bad_id}" + (f" ({kind[0]})" if kind else "")
        problems.append(Problem(chain.first_bad_id, label, chain.reason))
    elif key is not None and chain.keyed_from is None and chain.head_id and not window:
        problems.append(
            Problem(
                1,
                "event log",
                "the chain is not keyed: anyone with the file can rewrite it and recompute "
                "its hashes (a table's journal is always keyed; was it replaced?)",
            )
        )
    problems.extend(exp.problems)
    uncovered = _uncovered(journal, exp)
    report.uncovered = {
        t: 0 for t in ("rounds", "bets", "jackpot_hits", "faults", "jackpot", "requests")
    }
    _check_rounds(db, exp, uncovered, report)
    _check_bets(db, exp, uncovered, report)
    _check_payloads(db, exp, report)
    _check_jackpot(db, exp, uncovered, report)
    _check_requests(db, exp, uncovered, report, window=window)
    _check_indexes(db, exp, report, window=window)
    if window:  # rows the window does not describe are not its business
        report.problems[:] = [p for p in problems if not p.unchained]
    else:
        _check_faults(db, exp, uncovered, report)
    report.pruned_rounds = len(exp.pruned)
    for anchor in anchors:
        _check_anchor(journal, anchor, report)
    for source, payload in floor_rounds:
        _check_floor_round(db, exp, source, payload, report)
    if not chain.ok:
        # Past a broken entry the chain proves nothing: rows described there, and rows
        # that lack an entry (it may be past the break), are noise next to the break.
        assert chain.first_bad_id is not None
        report.unchecked_after = chain.first_bad_id
        report.problems[:] = [
            p for p in problems if p.position <= chain.first_bad_id and not p.unchained
        ]
    return report


#: The tables the audit reads, and how a row of each is named (by its rowid).
_NAMED_BY_ROWID: dict[str, tuple[str, str]] = {
    "rounds": ("SELECT round_id, seq FROM rounds WHERE id = ?", "rounds row {0} (seq {1})"),
    "bets": ("SELECT round_id, bet_id FROM bets WHERE id = ?", "bets row {r} (round {0}, bet {1})"),
    "settlements": ("SELECT round_id FROM settlements WHERE rowid = ?", "settlement of round {0}"),
    "outbox_entries": (
        "SELECT topic, round_id FROM outbox_entries WHERE id = ?",
        "outbox entry {r} ({0} {1})",
    ),
    "outbox_published": (
        "SELECT published_at FROM outbox_published WHERE id = ?",
        "the published mark of outbox entry {r}",
    ),
    "jackpot": ("SELECT name FROM jackpot WHERE rowid = ?", "jackpot row {0!r}"),
    "jackpot_hits": (
        "SELECT hit_id FROM jackpot_hits WHERE id = ?",
        "jackpot_hits row {r} (hit {0})",
    ),
    "faults": ("SELECT code FROM faults WHERE id = ?", "faults row {r} ({0})"),
    "requests": (
        "SELECT principal, request_id FROM requests WHERE id = ?",
        "requests row {r} ({0} {1})",
    ),
    "events": ("SELECT kind FROM events WHERE id = ?", "event log row {r} ({0})"),
}
#: Those that retention keeps bounded (or that stay small): checked in a window too.
_BOUNDED = (
    "bets",
    "settlements",
    "outbox_entries",
    "outbox_published",
    "jackpot",
    "jackpot_hits",
    "faults",
    "requests",
)
_MISSING_FROM_INDEX = re.compile(r"row (\d+) missing from index (\S+)")


def _check_indexes(db: Any, exp: _Expected, report: AuditReport, *, window: bool) -> None:
    """Each table against its indexes (SQLite's integrity check of the table). The row
    checks read a table by scanning it, the journal finds a row by its key through an
    index: a power cut on storage that lied about a flush can leave an index page older
    than its table's (the open's quick check does not compare them), and a row the scan
    sees and the journal cannot find (a round's payload reads as missing, its key can be
    inserted again). Such a row is named; an index entry without its row too (by the
    index: the journal would meet it as a damaged page). In a window only the tables
    retention keeps small are checked (the window reads its rows by key anyway)."""
    for table in _BOUNDED if window else tuple(_NAMED_BY_ROWID):
        for (msg,) in db.execute(f"PRAGMA integrity_check({table})").fetchall():
            if msg == "ok":
                continue
            m = _MISSING_FROM_INDEX.fullmatch(str(msg))
            if m is None:
                report.problems.append(
                    Problem(NOWHERE, f"table {table}", f"SQLite's integrity check: {msg}")
                )
                continue
            rowid, index = int(m[1]), m[2]
            sql, label = _NAMED_BY_ROWID[table]
            key = db.execute(sql, (rowid,)).fetchone() or ()
            name = label.format(*key, r=rowid) if key else f"{table} row {rowid}"
            report.problems.append(
                Problem(
                    _position(exp, table, key),
                    name,
                    f"in the table (row {rowid}) but missing from its index {index}: the "
                    "journal cannot find it by its key (an index page older than the "
                    "table's: a checkpoint partly lost?)",
                )
            )


def _position(exp: _Expected, table: str, key: tuple[Any, ...]) -> float:
    """The chain entry that describes a row named by ``key`` (for the report's order)."""
    ev: Event | None = None
    if table == "rounds" and key:
        ev = exp.opened.get(key[0])
    elif table == "settlements" and key:
        ev = exp.finished.get(key[0])
    elif table == "bets" and len(key) == 2:
        ev = exp.placed.get((key[0], key[1]))
    elif table == "jackpot_hits" and key:
        ev = exp.hits.get(key[0])
    elif table == "requests" and len(key) == 2:
        ev = exp.answered.get((key[0], key[1]))
    return NOWHERE if ev is None else ev.id


def _unrecorded(report: AuditReport, table: str, legacy: bool, name: str, reason: str) -> None:
    """A row of ``table`` no chain entry records: counted as written before the chain
    covered rows (``legacy``), else a problem (slipped in behind the journal's back)."""
    if legacy:
        report.uncovered[table] += 1
    else:
        report.problems.append(Problem(NOWHERE, name, reason, unchained=True))


def _check_rounds(
    db: Any, exp: _Expected, uncovered: Mapping[str, Any], report: AuditReport
) -> None:
    problems = report.problems
    legacy_id = int(uncovered.get("rounds") or 0)
    seen: set[str] = set()
    n = 0
    for (
        row_id,
        rid,
        table_id,
        seq,
        game,
        rules,
        status,
        void_reason,
        outcome,
        stamps,
        opened_at,
        finished_at,
        summary,
    ) in _select(
        db,
        "SELECT id, round_id, table_id, seq, game, rules, status, void_reason, outcome, "
        "timestamps, opened_at, finished_at, summary FROM rounds",
        "round_id",
        exp.scope_rounds,
        "id",
    ):
        seen.add(rid)
        name = f"rounds row {rid} (seq {seq})"
        opened, fin = exp.opened.get(rid), exp.finished.get(rid)
        legacy = row_id <= legacy_id
        if opened is None and fin is None:
            if legacy:
                report.uncovered["rounds"] += 1
                continue
            problems.append(
                Problem(
                    NOWHERE,
                    name,
                    "not in the chain: a round no entry records (written behind the "
                    "journal's back?)",
                    unchained=True,
                )
            )
            continue
        n += 1
        if opened is not None:
            o = opened.data
            _cmp(problems, opened, name, "table_id", table_id, o.get("table_id"))
            _cmp(problems, opened, name, "seq", seq, o.get("seq"))
            _cmp(problems, opened, name, "game", game, o.get("game"))
            _cmp(problems, opened, name, "rules (SHA-256)", rules_digest(_loads(rules)),
                 o.get("rules_sha256"))  # fmt: skip
            _cmp(problems, opened, name, "opened_at", opened_at, opened.at)
        elif not legacy:
            problems.append(
                Problem(fin.id if fin else NOWHERE, name, "its opening is not in the chain", True)
            )
        if status is None:
            if fin is not None:
                problems.append(
                    Problem(
                        fin.id,
                        name,
                        f"in flight in the table, {fin.data.get('status')} in the chain "
                        f"(entry {fin.id})",
                    )
                )
            continue
        if fin is None:
            if not legacy:
                anchor = opened.id if opened is not None else NOWHERE
                problems.append(
                    Problem(
                        anchor,
                        name,
                        f"{status} in the table, but the chain records no settlement or void "
                        "for it",
                        unchained=True,
                    )
                )
            continue
        f = fin.data
        _cmp(problems, fin, name, "status", status, f.get("status"))
        _cmp(problems, fin, name, "outcome", _loads(outcome), f.get("outcome"))
        if status == "void" or f.get("status") == "void":
            _cmp(problems, fin, name, "void_reason", void_reason, f.get("reason"))
        else:
            _cmp(problems, fin, name, "void_reason", void_reason, None)
        _cmp(problems, fin, name, "timestamps", _loads(stamps), f.get("timestamps"))
        _cmp(problems, fin, name, "finished_at", finished_at, fin.at)
        _cmp(problems, fin, name, "summary (totals)", _loads(summary), f.get("summary"))
    report.checked["rounds"] = n
    for rid, ev in exp.opened.items():
        if rid not in seen:
            fin = exp.finished.get(rid)
            problems.append(
                Problem(
                    ev.id,
                    f"round {rid} (seq {ev.data.get('seq')})",
                    f"in the chain (opened at entry {ev.id}"
                    + (f", {fin.data.get('status')} at entry {fin.id}" if fin else "")
                    + ") but missing from the journal (deleted?)",
                )
            )


def _check_bets(db: Any, exp: _Expected, uncovered: Mapping[str, Any], report: AuditReport) -> None:
    problems = report.problems
    legacy_id = int(uncovered.get("bets") or 0)
    seen: set[tuple[str, str]] = set()
    n = 0
    for (
        row_id,
        rid,
        bet_id,
        seat,
        bet_type,
        selection,
        stake,
        status,
        placed_at,
        cancelled_at,
        principal,
    ) in _select(
        db,
        "SELECT id, round_id, bet_id, seat, bet_type, selection, stake, status, placed_at, "
        "cancelled_at, principal FROM bets",
        "round_id",
        exp.scope_rounds,
        "id",
    ):
        k = (rid, bet_id)
        seen.add(k)
        name = f"bets row {row_id} (round {rid}, bet {bet_id})"
        placed = exp.placed.get(k)
        if placed is None:
            _unrecorded(
                report, "bets", row_id <= legacy_id, name,
                "not in the chain: a bet no entry records (slipped in behind the journal's back?)",
            )  # fmt: skip
            continue
        n += 1
        p = placed.data
        _cmp(problems, placed, name, "stake", stake, p.get("stake"))
        _cmp(problems, placed, name, "seat", seat, p.get("seat"))
        _cmp(problems, placed, name, "bet_type", bet_type, p.get("bet_type"))
        _cmp(problems, placed, name, "selection", _loads(selection), p.get("selection"))
        _cmp(problems, placed, name, "placed_at", placed_at, placed.at)
        if "principal" in p:  # entries written before bets named who placed them lack it
            _cmp(problems, placed, name, "principal", principal, p.get("principal"))
        cancel = exp.cancelled.get(k)
        if cancel is None:
            _cmp(problems, placed, name, "status", status, "placed")
        else:
            _cmp(problems, cancel, name, "status", status, "cancelled")
            _cmp(problems, cancel, name, "cancelled_at", cancelled_at, cancel.at)
    report.checked["bets"] = n
    for k, ev in exp.placed.items():
        if k not in seen and k[0] not in exp.pruned:
            problems.append(
                Problem(
                    ev.id,
                    f"bet {k[1]} of round {k[0]}",
                    f"placed in the chain (entry {ev.id}, stake {ev.data.get('stake')}) but "
                    "missing from the journal (deleted?)",
                )
            )


def _check_payloads(db: Any, exp: _Expected, report: AuditReport) -> None:
    """The published payloads (``settlements``) and their ``rounds`` outbox entries."""
    problems = report.problems
    n = 0
    have: set[str] = set()
    for rid, status, text, created_at in _select(
        db,
        "SELECT round_id, status, payload, created_at FROM settlements",
        "round_id",
        exp.scope_rounds,
        "rowid",
    ):
        have.add(rid)
        fin = exp.finished.get(rid)
        name = f"settlement of round {rid}"
        if fin is None:
            if rid in exp.opened:  # a payload for a round the chain has not finished
                problems.append(
                    Problem(NOWHERE, name, "a payload for a round the chain never finished", True)
                )
            continue  # a round from before the chain covered rows
        n += 1
        _cmp(problems, fin, name, "status", status, fin.data.get("status"))
        _cmp(problems, fin, name, "created_at", created_at, fin.at)
        _check_payload(problems, fin, name, text)
    report.checked["settlements"] = n
    for rid, fin in exp.finished.items():
        if rid not in have and rid not in exp.pruned:
            problems.append(
                Problem(
                    fin.id,
                    f"settlement of round {rid} (seq {fin.data.get('seq')})",
                    f"the payload the chain recorded (entry {fin.id}) is missing from the "
                    "journal (deleted?)",
                )
            )
    m = 0
    for oid, rid, raw in _select(
        db,
        "SELECT id, round_id, payload FROM outbox_entries WHERE topic = 'rounds'",
        "round_id",
        exp.scope_rounds,
        "id",
    ):
        fin = exp.finished.get(rid)
        if fin is None:
            continue
        m += 1
        _check_payload(
            problems,
            fin,
            f"outbox entry {oid} (the round {rid} to publish)",
            bytes(raw).decode("utf-8", "replace"),
        )
    report.checked["outbox rounds"] = m


def _check_payload(problems: list[Problem], fin: Event, name: str, text: str) -> None:
    try:
        payload = json.loads(text)
    except ValueError:
        problems.append(Problem(fin.id, name, "the payload is not JSON (edited?)"))
        return
    if not isinstance(payload, dict):
        problems.append(Problem(fin.id, name, "the payload is not a JSON object (edited?)"))
        return
    if payload_digest(payload) != fin.data.get("payload_sha256"):
        problems.append(
            Problem(
                fin.id,
                name,
                "the payload does not match the SHA-256 its chain entry recorded "
                f"(entry {fin.id}, {fin.kind}): edited after the round was "
                + ("voided" if fin.kind == "round_void" else "settled")
                + _totals_hint(payload, fin),
            )
        )
    _cmp(problems, fin, name, "its chain position", payload.get("chain"),
         {"seq": fin.id, "head": fin.hash})  # fmt: skip


def _totals_hint(payload: Mapping[str, Any], fin: Event) -> str:
    got = payload.get("totals")
    want = (fin.data.get("summary") or {}).get("totals")
    if isinstance(got, dict) and isinstance(want, dict):
        keys = [*got, *(k for k in want if k not in got)]  # the payload's own order
        diff = [k for k in keys if _c(got.get(k)) != _c(want.get(k))]
        if diff:
            shown = ", ".join(
                f"totals.{k} is {_short(got.get(k))}, the chain recorded {_short(want.get(k))}"
                for k in diff[:3]
            )
            return f" ({shown})"
    return ""


def _check_jackpot(
    db: Any, exp: _Expected, uncovered: Mapping[str, Any], report: AuditReport
) -> None:
    problems = report.problems
    legacy_names = set(uncovered.get("jackpot") or ())
    n = 0
    seen: set[str] = set()
    for name_, state, rid, updated_at in db.execute(
        "SELECT name, state, round_id, updated_at FROM jackpot ORDER BY name"
    ):
        seen.add(name_)
        ev = exp.jackpot.get(name_)
        name = f"jackpot row {name_!r}"
        if ev is None:
            if name_ in legacy_names:
                report.uncovered["jackpot"] += 1
            else:
                problems.append(
                    Problem(
                        NOWHERE, name, "not in the chain (written behind the journal's back?)", True
                    )
                )
            continue
        n += 1
        _cmp(problems, ev, name, "state (meters, parameters)", _loads(state), ev.data.get("state"))
        _cmp(problems, ev, name, "round_id", rid, ev.data.get("round_id"))
        _cmp(problems, ev, name, "updated_at", updated_at, ev.at)
    for name_, ev in exp.jackpot.items():
        if name_ not in seen:
            problems.append(
                Problem(
                    ev.id, f"jackpot row {name_!r}", "saved in the chain but missing (deleted?)"
                )
            )
    report.checked["jackpot"] = n
    legacy_id = int(uncovered.get("jackpot_hits") or 0)
    m = 0
    seen_hits: set[str] = set()
    for row_id, hit_id, jname, rid, amount, details, recorded_at, paid_at, payment in _select(
        db,
        "SELECT id, hit_id, name, round_id, amount, details, recorded_at, paid_at, payment "
        "FROM jackpot_hits",
        "hit_id",
        exp.scope_hits,
        "id",
    ):
        seen_hits.add(hit_id)
        hit = exp.hits.get(hit_id)
        name = f"jackpot_hits row {row_id} (hit {hit_id})"
        if hit is None:
            _unrecorded(
                report, "jackpot_hits", row_id <= legacy_id, name,
                "not in the chain (written behind the journal's back?)",
            )  # fmt: skip
            continue
        m += 1
        h = hit.data
        _cmp(problems, hit, name, "amount", amount, h.get("amount"))
        _cmp(problems, hit, name, "name", jname, h.get("name"))
        _cmp(problems, hit, name, "round_id", rid, h.get("round_id"))
        if "details" in h:
            _cmp(problems, hit, name, "details", _loads(details), h.get("details"))
        _cmp(problems, hit, name, "recorded_at", recorded_at, hit.at)
        paid = exp.paid.get(hit_id)
        if paid is None:
            _cmp(problems, hit, name, "paid_at", paid_at, None)
        else:
            _cmp(problems, paid, name, "paid_at", paid_at, paid.at)
            _cmp(problems, paid, name, "payment", _loads(payment), paid.data.get("payment"))
    for hit_id, ev in exp.hits.items():
        if hit_id not in seen_hits:
            problems.append(
                Problem(
                    ev.id,
                    f"jackpot hit {hit_id}",
                    f"recorded in the chain (amount {ev.data.get('amount')}) but missing "
                    "(deleted?)",
                )
            )
    report.checked["jackpot_hits"] = m


def _check_faults(
    db: Any, exp: _Expected, uncovered: Mapping[str, Any], report: AuditReport
) -> None:
    problems = report.problems
    legacy_id = int(uncovered.get("faults") or 0)
    rows = db.execute(
        "SELECT id, code, message, data, set_at, cleared_at, cleared_by, clear_reason "
        "FROM faults WHERE id > ? ORDER BY id",
        (legacy_id,),
    ).fetchall()
    report.uncovered["faults"] = int(
        db.execute("SELECT COUNT(*) FROM faults WHERE id <= ?", (legacy_id,)).fetchone()[0]
    )
    for i, (row_id, code, message, data, set_at, cleared_at, by, reason) in enumerate(rows):
        name = f"faults row {row_id} ({code})"
        if i >= len(exp.faults):
            problems.append(
                Problem(
                    NOWHERE, name, "not in the chain (latched behind the journal's back?)", True
                )
            )
            continue
        latched, cleared = exp.faults[i]
        assert latched is not None
        d = latched.data
        _cmp(problems, latched, name, "code", code, d.get("code"))
        _cmp(problems, latched, name, "message", message, d.get("message"))
        _cmp(problems, latched, name, "data", _loads(data), d.get("data"))
        _cmp(problems, latched, name, "set_at", set_at, latched.at)
        if cleared is None:
            _cmp(problems, latched, name, "cleared_at", cleared_at, None)
        else:
            _cmp(problems, cleared, name, "cleared_at", cleared_at, cleared.at)
            _cmp(problems, cleared, name, "cleared_by", by, cleared.data.get("by"))
            _cmp(problems, cleared, name, "clear_reason", reason, cleared.data.get("reason"))
    for latched, _ in exp.faults[len(rows) :]:
        assert latched is not None
        problems.append(
            Problem(
                latched.id,
                f"fault {latched.data.get('code')}",
                f"latched in the chain (entry {latched.id}) but missing from the journal "
                "(deleted? it would no longer stop play)",
            )
        )
    report.checked["faults"] = min(len(rows), len(exp.faults))


def _check_requests(
    db: Any, exp: _Expected, uncovered: Mapping[str, Any], report: AuditReport, *, window: bool
) -> None:
    """Each journaled answer against its ``request_answered`` entry; an entry whose row
    is gone, unless retention dropped it. In a window (``since`` > 1) only the answers
    the window's entries describe."""
    problems = report.problems
    legacy_id = int(uncovered.get("requests") or 0)
    cols = "SELECT id, principal, request_id, topic, digest, round_id, verified, answer, at"
    if window:
        keys = [[p, r] for p, r in exp.answered]
        rows = db.execute(
            f"{cols} FROM requests WHERE (principal, request_id) IN "
            "(SELECT value ->> 0, value ->> 1 FROM json_each(?)) ORDER BY id",
            (json.dumps(keys),),
        ).fetchall()
    else:
        rows = db.execute(f"{cols} FROM requests ORDER BY id").fetchall()
    seen: set[tuple[str, str]] = set()
    n = 0
    for row_id, principal, request_id, topic, digest, rid, verified, answer, at in rows:
        k = (principal, request_id)
        seen.add(k)
        name = f"requests row {row_id} ({principal} {request_id})"
        ev = exp.answered.get(k)
        if ev is None:
            _unrecorded(
                report, "requests", row_id <= legacy_id, name,
                "not in the chain: an answer no entry records (slipped in behind the "
                "journal's back?)",
            )  # fmt: skip
            continue
        n += 1
        d = ev.data if isinstance(ev.data, dict) else {}
        _cmp(problems, ev, name, "topic", topic, d.get("topic"))
        _cmp(problems, ev, name, "digest", digest, d.get("digest"))
        _cmp(problems, ev, name, "round_id", rid, d.get("round_id"))
        _cmp(problems, ev, name, "verified", bool(verified), d.get("verified"))
        _cmp(problems, ev, name, "at", at, ev.at)
        if answer_digest(str(answer)) != d.get("answer_sha256"):
            problems.append(
                Problem(
                    ev.id,
                    name,
                    f"the answer {_short(_loads_lenient(answer))} is not the one the chain "
                    f"recorded (entry {ev.id}, {ev.kind}: its SHA-256 differs)",
                )
            )
    report.checked["requests"] = n
    for k, ev in exp.answered.items():
        if k not in seen and k not in exp.answers_pruned:
            problems.append(
                Problem(
                    ev.id,
                    f"answer to request {k[1]} of {k[0]}",
                    f"answered in the chain (entry {ev.id}) but missing from the journal "
                    "(deleted? a retry would act again)",
                )
            )


def _check_anchor(journal: Any, anchor: Anchor, report: AuditReport) -> None:
    finding = check_anchor(journal.chain, journal.rounds, anchor)
    report.anchors += 1
    if finding.ok:
        return
    head_id, _ = journal.chain.head()
    position = head_id + 1 if finding.kind == "missing" else anchor.chain_seq
    row = (
        f"chain entries after {head_id}"
        if finding.kind == "missing"
        else f"chain entry {anchor.chain_seq}"
    )
    report.problems.append(Problem(position, row, finding.reason))
    report.anchors -= 1


def _check_floor_round(
    db: Any, exp: _Expected, source: str, payload: Mapping[str, JSON], report: AuditReport
) -> None:
    """A round the floor holds must be in the journal with the same payload."""
    rid = payload.get("round_id")
    seq = payload.get("seq")
    raw_chain = payload.get("chain")
    chain: dict[str, Any] = raw_chain if isinstance(raw_chain, dict) else {}
    position: float = chain["seq"] if isinstance(chain.get("seq"), int) else NOWHERE
    name = f"round {rid} (seq {seq}, {source})"
    fin = exp.finished.get(rid) if isinstance(rid, str) else None
    if fin is None:
        problems = report.problems
        if isinstance(rid, str) and rid in exp.opened:
            problems.append(
                Problem(
                    position, name, "the floor holds it finished; the journal never finished it"
                )
            )
        else:
            problems.append(
                Problem(
                    position, name, "the floor holds this round; the journal does not (deleted?)"
                )
            )
        return
    before = len(report.problems)
    if payload_digest(payload) != fin.data.get("payload_sha256"):
        row = db.execute("SELECT payload FROM settlements WHERE round_id = ?", (rid,)).fetchone()
        hint = ""
        if row is not None:
            mine = json.loads(row[0])
            diff = [
                k for k in sorted(set(mine) | set(payload)) if _c(mine.get(k)) != _c(payload.get(k))
            ]
            hint = f" (first difference: {diff[0]})" if diff else ""
        report.problems.append(
            Problem(
                fin.id,
                name,
                f"the floor's copy differs from the round the journal's chain recorded "
                f"(entry {fin.id}){hint}",
            )
        )
    if _c(chain) != _c({"seq": fin.id, "head": fin.hash}):
        report.problems.append(
            Problem(
                fin.id,
                name,
                f"the floor's copy carries chain position {_short(chain)}, the journal's chain "
                f"closed the round at entry {fin.id}",
            )
        )
    if len(report.problems) == before:
        report.floor_rounds += 1
