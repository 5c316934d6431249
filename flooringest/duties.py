"""The duties, run by one worker at a time (the one holding the lease, ``floor_lease``):
sequence gaps found in the database (``floor_tables``, ``floor_gaps``), replays asked
for them, and the chain anchors checked (``floor_anchor_faults``). A part of the
:class:`~flooringest.store.Store` (``store.duties``)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import anchor
from . import messages as m
from .db import Db, count
from .tables import TableBook

#: A table is tracked from the first round stored of it. The duties look for tables
#: not tracked yet (issue 36: never by scanning every round ever stored) among the
#: rounds received in the ``NEW_TABLES_S`` seconds before the newest one (the keys'
#: index by ``received_at``), and for each table of the registry not tracked yet, its
#: first round (the keys' index by ``(table_id, seq)``): a table whose first rounds
#: were stored while no worker held the duties is found too.
NEW_TABLES_S = 120.0
#: ``(table_id, first seq stored)`` of the tables not tracked yet (one argument:
#: ``NEW_TABLES_S``).
NEW_TABLES = (
    "SELECT table_id, MIN(seq) AS s FROM ("
    "SELECT table_id, seq FROM floor_round_keys WHERE received_at > "
    "(SELECT MAX(received_at) FROM floor_round_keys) - ? "
    "AND table_id NOT IN (SELECT table_id FROM floor_tables) "
    "UNION ALL SELECT g.table_id, (SELECT MIN(k.seq) FROM floor_round_keys k "
    "WHERE k.table_id = g.table_id) FROM floor_registry g "
    "WHERE g.table_id NOT IN (SELECT table_id FROM floor_tables)"
    ") x WHERE seq IS NOT NULL GROUP BY table_id"
)


@dataclass(frozen=True, slots=True)
class Gap:
    """Rounds ``from_seq..to_seq`` of a table are missing. A *tail* gap (nothing after
    ``from_seq - 1`` arrived) ends at the newest round the table announced finished
    (``to_seq`` None only in a database of an earlier version)."""

    table_id: str
    from_seq: int
    to_seq: int | None
    found_at: float = field(default=0.0, compare=False)


class Duties:
    """The lease, the gap scan, the replays asked and the anchor step, on the store's
    database (``tables``: what the tables announced, which bounds the replays)."""

    def __init__(self, db: Db, tables: TableBook) -> None:
        self.db = db
        self.tables = tables

    async def take_lease(self, holder: str, seconds: float) -> bool:
        """Whether ``holder`` runs the duties for the next ``seconds`` (it held the
        lease, or the lease ran out)."""
        now = time.time()
        async with self.db.transaction():
            n = await self.db.execute(
                "UPDATE floor_lease SET holder = ?, until = ? "
                "WHERE name = 'duties' AND (holder = ? OR until < ?)",
                holder,
                now + seconds,
                holder,
                now,
            )
        return n == 1

    async def scan(
        self,
        grace_s: float,
        finished: dict[str, int] | None = None,
        paced: dict[str, int] | None = None,
    ) -> tuple[list[Gap], int]:
        """Bring ``floor_tables`` and ``floor_gaps`` up to date; return the gaps open
        longer than ``grace_s`` (a round in another worker's batch is not a gap yet)
        and the number of gaps filled since the last scan.

        ``finished``: per table, the newest round it announced finished, in a message
        it signed (its ``anchor``, its ``state``: :class:`flooringest.verify.
        Announcements`): when it is beyond the table's last stored seq, the rounds
        between are a *tail* gap (no later round will show it).

        ``paced``: per table, the newest round of the backlog it paces now (its signed
        ``state``'s ``backlog.to_seq``, issue 36): a gap across it is cut there. The
        part above was published live: missing, it was lost on the way, and is asked
        for after the grace like any gap; the part below is the backlog still to come,
        whose lower end moves with each round of it stored (a new gap each time: asked
        for only once it stops moving)."""
        now = time.time()
        async with self.db.transaction():
            # Tables seen for the first time: tracked from the first round seen.
            await self.db.execute(
                "INSERT INTO floor_tables (table_id, first_seq, contiguous_seq, last_seq, "
                "anchored_seq, updated_at) "
                f"SELECT n.table_id, n.s, n.s - 1, n.s - 1, n.s - 1, ? FROM ({NEW_TABLES}) n",
                now,
                NEW_TABLES_S,
            )
            rows = await self.db.fetch(
                "SELECT t.table_id, t.contiguous_seq, t.last_seq, r.seq FROM floor_tables t "
                "JOIN floor_round_keys r ON r.table_id = t.table_id AND r.seq > t.contiguous_seq "
                "ORDER BY t.table_id, r.seq"
            )
            above: dict[str, tuple[int, int, list[int]]] = {}
            for tid, contig, last, seq in rows:
                above.setdefault(tid, (int(contig), int(last), []))[2].append(int(seq))
            gaps_now: dict[tuple[str, int], int | None] = {}
            updates: list[tuple[int, int, float, str]] = []
            for tid, (contig, last, seqs) in above.items():
                c = contig
                for s in seqs:
                    if s == c + 1:
                        c = s
                    else:
                        break
                expected = c + 1
                for s in seqs:
                    if s <= c:
                        continue
                    if s > expected:
                        gaps_now[(tid, expected)] = s - 1
                    expected = s + 1
                updates.append((c, max(last, seqs[-1]), now, tid))
            await self.db.executemany(
                "UPDATE floor_tables SET contiguous_seq = ?, last_seq = ?, updated_at = ? "
                "WHERE table_id = ?",
                updates,
            )
            if finished:
                gaps_now.update(await self._tails(finished))
            for (tid, frm), to in list(gaps_now.items()):
                top = (paced or {}).get(tid, 0)
                if frm <= top and (to is None or to > top):
                    gaps_now[(tid, frm)], gaps_now[(tid, top + 1)] = top, to
            known = {
                (str(t), int(f)): (None if to is None else int(to), float(found), req, int(n))
                for t, f, to, found, req, n in await self.db.fetch(
                    "SELECT table_id, from_seq, to_seq, found_at, requested_at, requests "
                    "FROM floor_gaps"
                )
            }
            filled = 0
            for key, (to, _found, _req, _n) in known.items():
                if key not in gaps_now or gaps_now[key] != to:
                    await self.db.execute(
                        "DELETE FROM floor_gaps WHERE table_id = ? AND from_seq = ?", *key
                    )
                    if key not in gaps_now:
                        filled += 1
            for (tid, frm), to in gaps_now.items():
                if (tid, frm) not in known or known[(tid, frm)][0] != to:
                    await self.db.execute(
                        "INSERT INTO floor_gaps (table_id, from_seq, to_seq, found_at, "
                        "requested_at, requests) VALUES (?, ?, ?, ?, ?, ?)",
                        tid,
                        frm,
                        to,
                        known[(tid, frm)][1] if (tid, frm) in known else now,
                        known[(tid, frm)][2] if (tid, frm) in known else None,
                        known[(tid, frm)][3] if (tid, frm) in known else 0,
                    )
            if filled:
                await count(self.db, "gaps_repaired", filled)
            old = await self.db.fetch(
                "SELECT table_id, from_seq, to_seq, found_at FROM floor_gaps WHERE found_at <= ? "
                "ORDER BY table_id, from_seq",
                now - grace_s,
            )
        return [
            Gap(str(t), int(f), None if to is None else int(to), float(fa)) for t, f, to, fa in old
        ], filled

    async def _tails(self, finished: dict[str, int]) -> dict[tuple[str, int], int | None]:
        """Tail gaps: tables whose newest finished round announced is beyond the last
        stored one."""
        out: dict[tuple[str, int], int | None] = {}
        items = sorted((t, n) for t, n in finished.items() if n > 0)
        for i in range(0, len(items), 500):
            chunk = dict(items[i : i + 500])
            marks = ", ".join("?" for _ in chunk)
            for tid, last in await self.db.fetch(
                f"SELECT table_id, last_seq FROM floor_tables WHERE table_id IN ({marks})",
                *chunk,
            ):
                if chunk[str(tid)] > int(last):
                    out[(str(tid), int(last) + 1)] = chunk[str(tid)]
        return out

    async def claim_replays(
        self, gaps: Sequence[Gap], retry_s: float, announced: dict[str, int] | None = None
    ) -> list[Gap]:
        """The gaps to ask a replay for now (never asked, or asked ``retry_s`` ago),
        marked asked, each cut at the newest round its table announced (``announced``,
        with what ``floor_announced`` holds): nothing beyond it is ever asked, and a
        gap beyond the newest round the table answered it has (after the gap was
        found) is not asked again."""
        now = time.time()
        due: list[Gap] = []
        async with self.db.transaction():
            said = await self.tables.announced_all()
            for g in gaps:
                a, _f, answered, answered_at = said.get(g.table_id, (0, 0, None, None))
                newest = max(a, (announced or {}).get(g.table_id, 0))
                if (
                    answered is not None
                    and answered_at is not None
                    and answered_at >= g.found_at
                    and g.from_seq > answered
                ):
                    continue  # the table said it has nothing from there: asking is vain
                if g.from_seq > newest:
                    continue  # beyond anything the table announced: never asked
                to = newest if g.to_seq is None else min(g.to_seq, newest)
                held = await self.db.fetch(
                    "SELECT COUNT(DISTINCT seq) FROM floor_quarantine WHERE table_id = ? "
                    "AND released_at IS NULL AND complete = 1 AND topic = 'rounds' "
                    "AND code IN (?, ?) AND seq BETWEEN ? AND ?",
                    g.table_id,
                    m.SEQ_NOT_ANNOUNCED,
                    m.CHAIN_NOT_ADVANCING,
                    g.from_seq,
                    to,
                )
                if held and int(held[0][0]) == to - g.from_seq + 1:
                    continue  # the floor holds them, signed, awaiting a decision: not asked
                n = await self.db.execute(
                    "UPDATE floor_gaps SET requested_at = ?, requests = requests + 1 "
                    "WHERE table_id = ? AND from_seq = ? "
                    "AND (requested_at IS NULL OR requested_at <= ?)",
                    now,
                    g.table_id,
                    g.from_seq,
                    now - retry_s,
                )
                if n:
                    due.append(Gap(g.table_id, g.from_seq, to, g.found_at))
        return due

    async def verify_anchors(self, limit: int = 5000) -> int:
        """The anchor step (:mod:`flooringest.anchor`): check, in ``seq`` order, the
        rounds each table holds contiguously beyond the last one checked; record the
        faults; returns the rounds checked."""
        now = time.time()
        checked = 0
        async with self.db.transaction():
            # A round's anchor, when well formed, is in its own columns (parse() put it
            # there): its payload is read (and parsed again) only when it has none, to
            # tell a malformed anchor from an absent one. check() reads nothing else.
            rows = await self.db.fetch(
                "SELECT t.table_id, t.chain_seq, t.chain_head, r.seq, r.round_id, "
                "r.chain_seq, r.chain_head, CASE WHEN r.chain_seq IS NULL THEN (SELECT p.payload "
                "FROM floor_rounds p WHERE p.round_id = r.round_id AND p.received_at = "
                "r.received_at) END "
                "FROM floor_tables t JOIN floor_round_keys r ON r.table_id = t.table_id "
                "AND r.seq > t.anchored_seq AND r.seq <= t.contiguous_seq "
                "ORDER BY t.table_id, r.seq LIMIT ?",
                limit,
            )
            state: dict[str, tuple[anchor.ChainPoint | None, int, int]] = {}
            for tid, cseq, chead, seq, rid, rseq, rhead, payload in rows:
                prev, _last, without = state.get(
                    tid,
                    (anchor.ChainPoint(int(cseq), str(chead)) if cseq is not None else None, 0, 0),
                )
                doc: Any
                if rseq is not None:
                    doc = {"chain": {"seq": int(rseq), "head": str(rhead)}}
                else:
                    try:
                        doc = json.loads(payload)
                    except (TypeError, ValueError):  # stored rounds are JSON (parse() checked)
                        doc = None
                v = anchor.check(prev, doc)
                if v.fault:
                    await self.db.execute(
                        "INSERT INTO floor_anchor_faults (table_id, seq, round_id, code, message, "
                        "found_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        tid,
                        seq,
                        rid,
                        v.code,
                        v.message,
                        now,
                    )
                state[tid] = (
                    v.point if v.point is not None else prev,
                    int(seq),
                    without + (1 if v.code == anchor.ABSENT else 0),
                )
                checked += 1
            await self.db.executemany(
                "UPDATE floor_tables SET anchored_seq = ?, chain_seq = ?, chain_head = ?, "
                "without_chain = without_chain + ? WHERE table_id = ?",
                [
                    (last, point.seq if point else None, point.head if point else None, w, tid)
                    for tid, (point, last, w) in state.items()
                ],
            )
        return checked

    async def anchor_faults(self) -> list[dict[str, Any]]:
        return [
            {"table_id": t, "seq": int(s), "round_id": r, "code": c, "message": m}
            for t, s, r, c, m in await self.db.fetch(
                "SELECT table_id, seq, round_id, code, message FROM floor_anchor_faults "
                "ORDER BY table_id, seq"
            )
        ]
