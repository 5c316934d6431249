"""Requests answered exactly once: the answer to every floor request, by request id.

The floor re-sends a request it got no answer to, with the same ``request_id``
(``docs/mqtt.md``). The table must then answer what it answered the first time and do
nothing again. So the answer to a request is written here **in the transaction of the
change it answers** (:meth:`~.database.Database.transaction`): a crash before the
commit leaves neither the change nor the answer (the retry acts, once), a crash after
it leaves both (the retry gets the answer, and acts nothing).

Answers are kept by ``(principal, request_id)``: each principal has its own request
ids, and one principal can never take (or spoil) another's. ``digest`` is the hash of
the request's content (without its signature and timestamp, so a retry signed again
is the same request): a request id used again for different content is a conflict.

Retention (``retention.py``): an answer is kept at least ``request_keep_hours`` (24
hours or more) and as long as the round it names keeps its bets in the journal
(``full_rounds``).

``approvals`` holds the first confirmations of what needs two different principals
(a jackpot payment, GLI's two-person rule), until the second one comes.

Every answer is evidence (what the table told the floor, to whom): writing it appends a
``request_answered`` entry to the audit chain in the same transaction (``chain.py``:
principal, request id, topic, digest, round, verified, the SHA-256 of the answer as
stored), and retention's deletions append ``requests_pruned``; ``tablectl audit verify``
checks every row against them. ``approvals`` are not chained: they are working state
(deleted when the action completes); each approval arrived as a request whose answer
is chained, and the action itself (``jackpot_paid``) is chained too.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from datetime import datetime

from ..jsonio import JSON, dumps, loads_or_none
from .chain import AuditLog
from .database import Database
from .errors import JournalError


class RequestIdTaken(JournalError):
    """The principal already used this request id (its answer is journaled)."""

    code = "REQUEST_ID_TAKEN"


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """A journaled answer to one request."""

    principal: str
    request_id: str
    #: The request topic, relative to the table's root (``bets/request``...).
    topic: str
    #: sha256 (hex) of the request's canonical content without signature and timestamp.
    digest: str
    #: The round the request named or acted on, if any (keeps the answer in retention).
    round_id: str | None
    #: Whether the principal was verified by its signature (False: signatures off).
    verified: bool
    #: The response as published.
    answer: JSON
    at: str

    def to_json(self) -> dict[str, JSON]:
        return {
            "principal": self.principal,
            "request_id": self.request_id,
            "topic": self.topic,
            "digest": self.digest,
            "round_id": self.round_id,
            "verified": self.verified,
            "answer": self.answer,
            "at": self.at,
        }


_REQ_COLS = "principal, request_id, topic, digest, round_id, verified, answer, at"


def answer_digest(text: str) -> str:
    """SHA-256 (hex) of an answer as stored (``requests.answer``): what its
    ``request_answered`` chain entry records."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _request(row: sqlite3.Row) -> RequestRecord:
    return RequestRecord(
        row[0], row[1], row[2], row[3], row[4], bool(row[5]), loads_or_none(row[6]), row[7]
    )


class RequestStore:
    """Journaled answers by request id; approvals of two-person actions."""

    def __init__(self, db: Database, chain: AuditLog) -> None:
        self._db = db
        self._chain = chain

    def answered(self, principal: str, request_id: str) -> RequestRecord | None:
        """The journaled answer to ``principal``'s request ``request_id``, if any."""
        row = self._db.sql.execute(
            f"SELECT {_REQ_COLS} FROM requests WHERE principal = ? AND request_id = ?",
            (principal, request_id),
        ).fetchone()
        return None if row is None else _request(row)

    def record_answer(
        self,
        principal: str,
        request_id: str,
        *,
        topic: str,
        digest: str,
        answer: JSON,
        round_id: str | None = None,
        verified: bool = True,
        at: datetime | None = None,
    ) -> RequestRecord:
        """Journal the answer to a request: inside the open transaction (the change it
        answers), or in one of its own. :class:`RequestIdTaken` if the principal already
        used ``request_id``."""
        now = self._db.now(at)
        text = dumps(answer)
        with self._db.tx("record_answer") as db:
            try:
                db.execute(
                    f"INSERT INTO requests ({_REQ_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (principal, request_id, topic, digest, round_id, int(verified), text, now),
                )
            except sqlite3.IntegrityError as exc:
                raise RequestIdTaken(
                    f"request id {request_id!r} of {principal!r} is already answered"
                ) from exc
            self._chain.append_in_tx(
                db,
                "request_answered",
                {
                    "principal": principal,
                    "request_id": request_id,
                    "topic": topic,
                    "digest": digest,
                    "round_id": round_id,
                    "verified": verified,
                    "answer_sha256": answer_digest(text),
                },
                now,
            )
        return RequestRecord(principal, request_id, topic, digest, round_id, verified, answer, now)

    def recent(self, limit: int = 50) -> list[RequestRecord]:
        """The last ``limit`` journaled answers, newest first (console, tests)."""
        return [
            _request(r)
            for r in self._db.sql.execute(
                f"SELECT {_REQ_COLS} FROM requests ORDER BY id DESC LIMIT ?", (limit,)
            )
        ]

    # -- two-person actions -----------------------------------------------------------
    def approve(
        self,
        action: str,
        subject: str,
        principal: str,
        request_id: str,
        *,
        at: datetime | None = None,
    ) -> list[str]:
        """Record ``principal``'s approval of ``action`` on ``subject`` (idempotent);
        return every principal who approved it so far, first first."""
        now = self._db.now(at)
        with self._db.tx("approve") as db:
            db.execute(
                "INSERT OR IGNORE INTO approvals (action, subject, principal, request_id, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (action, subject, principal, request_id, now),
            )
        return self.approvals(action, subject)

    def approvals(self, action: str, subject: str) -> list[str]:
        return [
            r[0]
            for r in self._db.sql.execute(
                "SELECT principal FROM approvals WHERE action = ? AND subject = ? "
                "ORDER BY at, rowid",
                (action, subject),
            )
        ]

    def clear_approvals(self, action: str, subject: str) -> None:
        """Forget the approvals of a finished action (in the transaction that finishes it)."""
        with self._db.tx("clear_approvals") as db:
            db.execute("DELETE FROM approvals WHERE action = ? AND subject = ?", (action, subject))
