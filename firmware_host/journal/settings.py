"""The ``[journal]`` section of a table's configuration and :class:`JournalSettings`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

from ..auth.identity import TableIdentity, public_path
from ..timefmt import utc_now
from .auditkey import AuditKey
from .lock import StateLock
from .store import Journal, TableOwner

log = logging.getLogger(__name__)

JOURNAL_SPECS: dict[str, FieldSpec] = {
    "path": FieldSpec("str", "/var/lib/tablectl/journal.sqlite3", doc="journal file (SQLite)"),
    "raw_frame_rounds": FieldSpec(
        "int",
        100,
        doc="finished rounds whose raw device frames are kept (at least 10)",
        range=(10, 10**7),
        cite="GLI-11 game recall: last 10 games",
    ),
    "full_rounds": FieldSpec(
        "int",
        10000,
        doc="finished rounds whose bets and settlement payload are kept in full",
        range=(10, 10**9),
    ),
    "published_outbox_keep": FieldSpec(
        "int", 1000, doc="published outbox entries kept after publication", range=(0, 10**9)
    ),
    "request_keep_hours": FieldSpec(
        "int",
        24,
        doc="hours the answer to a floor request is kept at least (a retry within them is "
        "answered as the first time, and acts nothing); kept longer while its round keeps "
        "its bets (full_rounds)",
        range=(24, 24 * 366),
    ),
    "integrity_check": FieldSpec(
        "str",
        "quick",
        doc="SQLite check when the journal is opened",
        choices=("quick", "full", "none"),
    ),
    "audit_key": FieldSpec(
        "str",
        "",
        doc="file of the table's audit key, the secret that keys the journal's hash chain "
        "(never in the journal; create it with `tablectl audit init-key`, mode 0600). "
        "Default: audit.key beside the journal. Keep it off the journal's disk and back it up",
    ),
    "identity_key": FieldSpec(
        "str",
        "",
        doc="file of the table's identity key (Ed25519, PKCS#8 PEM, mode 0600), which signs "
        "every message the table publishes; its public key goes to the floor's registry "
        "(create it with `tablectl keys identity --key FILE`). Default: identity.key beside "
        "the journal",
    ),
}


@dataclass(frozen=True, slots=True)
class JournalSettings:
    path: str = "/var/lib/tablectl/journal.sqlite3"
    raw_frame_rounds: int = 100
    full_rounds: int = 10000
    published_outbox_keep: int = 1000
    request_keep_hours: int = 24
    integrity_check: str = "quick"
    audit_key: str = ""
    identity_key: str = ""

    @property
    def key_path(self) -> Path:
        """The audit key's file: ``audit_key``, or ``audit.key`` beside the journal."""
        return Path(self.audit_key) if self.audit_key else Path(self.path).parent / "audit.key"

    def load_key(self) -> AuditKey:
        """The table's audit key. A new table (no journal file yet) without a key gets
        one (mode 0600): that first start is its install. An existing journal whose key
        is missing is refused (``AUDIT_KEY_MISSING``): a new key could not verify it."""
        path = self.key_path
        if not Path(self.path).exists() and not path.exists():
            key = AuditKey.create(path)
            log.warning(
                "journal %s is new: created its audit key %s (id %s); keep a copy of it "
                "somewhere safe, the journal cannot be verified without it",
                self.path,
                path,
                key.key_id,
            )
            return key
        return AuditKey.load(path)

    @property
    def identity_path(self) -> Path:
        """The identity key's file: ``identity_key``, or ``identity.key`` beside the journal."""
        if self.identity_key:
            return Path(self.identity_key)
        return Path(self.path).parent / "identity.key"

    def load_identity(self) -> TableIdentity:
        """The table's identity key (``auth/identity.py``). A new table (no journal file
        yet) without one gets one (mode 0600, its public key beside it, for the floor's
        registry): that first start is its install. Beside an existing journal a missing
        key is refused (``TABLE_IDENTITY_MISSING``): the floor knows the table by its
        key, and a new one must be given to the floor on purpose (docs/security.md)."""
        path = self.identity_path
        if not Path(self.path).exists() and not path.exists():
            identity = TableIdentity.create(path)
            log.warning(
                "journal %s is new: created the table's identity key %s (%s); give its "
                "public key %s to the floor's registry of tables",
                self.path,
                path,
                identity.key_id,
                public_path(path),
            )
            return identity
        return TableIdentity.load(path)

    def open(
        self,
        *,
        clock: Callable[[], datetime] = utc_now,
        owner: TableOwner | None = None,
        defer: Callable[[Callable[[], None]], object] | None = None,
    ) -> Journal:
        """Open the journal to write it, as the daemon does: first the state directory's
        lock (``lock.py``: one daemon per journal, ``STATE_DIR_LOCKED`` naming the
        holder), then the table's audit key (:meth:`load_key`) and identity
        (:meth:`load_identity`), then the file; ``owner``: the table that opens it
        (``Journal.claim``: a journal of another table or game is refused,
        ``JOURNAL_OTHER_TABLE``); ``defer``: where work that can wait after a commit goes
        (``Database.defer``). The journal holds the lock until it is closed."""
        lock = StateLock.acquire(Path(self.path).parent, table_id=owner.table_id if owner else None)
        try:
            journal = self._open(clock, defer)
        except BaseException:
            lock.release()
            raise
        journal.db.hold(lock)
        if owner is not None:
            try:
                journal.claim(owner)
            except BaseException:
                journal.close()
                raise
        return journal

    def _open(
        self, clock: Callable[[], datetime], defer: Callable[[Callable[[], None]], object] | None
    ) -> Journal:
        key = self.load_key()
        identity = self.load_identity()
        return Journal(
            self.path,
            raw_frame_rounds=self.raw_frame_rounds,
            full_rounds=self.full_rounds,
            published_outbox_keep=self.published_outbox_keep,
            request_keep_hours=self.request_keep_hours,
            integrity_check=self.integrity_check,
            clock=clock,
            audit_key=key,
            identity=identity,
            defer=defer,
        )


def _validate_section(data: Any, path: str, errors: list[str]) -> JournalSettings | None:
    n = len(errors)
    vals = validate_fields(JOURNAL_SPECS, data, path, errors)
    if len(errors) > n:
        return None
    if vals["full_rounds"] < vals["raw_frame_rounds"]:
        errors.append(
            f"{path}.full_rounds: {vals['full_rounds']} is below raw_frame_rounds "
            f"{vals['raw_frame_rounds']} (a round kept with its frames must keep its bets)"
        )
        return None
    if not vals["path"]:
        errors.append(f"{path}.path: must not be empty")
        return None
    return JournalSettings(**vals)


register_section("journal", _validate_section)
