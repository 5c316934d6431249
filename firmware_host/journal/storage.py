"""What the journal does when its storage fails: errors translated, faults latched calmly.

SQLite reports a full disk (``SQLITE_FULL``), an I/O error (``SQLITE_IOERR``, or
``SQLITE_READONLY`` when the filesystem was remounted read-only after errors) and a
damaged file (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, text that is not UTF-8) as
``sqlite3`` exceptions at whatever statement meets them. Two pieces turn that into
something the table can act on:

- :class:`GuardedConnection` (the journal's ``sqlite3`` connection class) translates
  those exceptions, wherever they happen (a write, a read, a row fetched later), into
  the journal's coded errors: :class:`~.errors.JournalFull` (``DISK_FULL``),
  :class:`~.errors.JournalIOError` (``JOURNAL_IO``), :class:`~.errors.JournalCorrupt`
  (``JOURNAL_CORRUPT``), each with a one-line reason (the raw SQLite text can carry
  the damaged bytes: they are left out). Any other ``sqlite3`` error (a constraint,
  a bug) passes through unchanged.
- :class:`StorageGuard` latches a storage fault on the first failure and clears it
  when the journal writes again: one log line when the fault is raised, one when it
  clears, never one per attempt. While it is latched the round engine refuses new
  bets and new rounds with its code (``DISK_FULL``/``JOURNAL_IO``), the retained
  ``state`` lists it, and at most one probe write per ``probe_interval`` finds out
  whether space has returned. A ``DISK_FULL`` fault clears only once the filesystem
  also has ``min_free_bytes`` free, so that a write that happened to fit into space
  the WAL already held does not make the fault flap.

A storage fault is not a broker fault: the MQTT link keeps its connection and its
backoff (``firmware_host/mqtt/``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..jsonio import JSON
from ..timefmt import iso_utc, utc_now
from .errors import JournalCorrupt, JournalError, JournalFull, JournalIOError, StorageError

log = logging.getLogger(__name__)

#: The codes of a storage fault (what a caller may skip quietly: the guard logged it).
STORAGE_CODES = frozenset({"DISK_FULL", "JOURNAL_IO"})
#: Free space a full disk must show again before ``DISK_FULL`` clears.
MIN_FREE_BYTES = 1024 * 1024
#: At most one probe write per this many seconds while a fault is latched.
PROBE_INTERVAL_S = 1.0

_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


def one_line(text: str, limit: int = 160) -> str:
    text = _UNPRINTABLE.sub("?", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def loads_or_none(text: str | None) -> JSON:
    """A stored JSON column (SQL NULL stays None). A value that is not JSON any more
    (damaged bytes that SQLite cannot see: it keeps no checksum of a value) raises
    :class:`~.errors.JournalCorrupt`, never a bare ``JSONDecodeError``."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise JournalCorrupt(
            f"damaged journal: a stored JSON value is not JSON any more ({one_line(str(exc))})"
        ) from None


def translate(exc: BaseException, path: str, *, readonly: bool = False) -> JournalError | None:
    """The journal's coded error for a ``sqlite3`` exception, or None (not a storage
    or damage error: a constraint, a bug; the caller re-raises the original)."""
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    name = getattr(exc, "sqlite_errorname", None) or "SQLITE_ERROR"
    text = str(exc)
    if primary == sqlite3.SQLITE_FULL:
        return JournalFull(f"{path}: the disk is full ({name}); nothing was written")
    if primary == sqlite3.SQLITE_IOERR:
        return JournalIOError(f"{path}: I/O error ({name}: {one_line(text)})")
    if primary == sqlite3.SQLITE_READONLY and not readonly:
        return JournalIOError(f"{path}: the journal cannot be written ({name}: {one_line(text)})")
    if primary == sqlite3.SQLITE_CANTOPEN:
        return JournalIOError(f"{path}: cannot open the journal ({name}: {one_line(text)})")
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return JournalCorrupt(f"{path}: damaged journal ({name}: {one_line(text)})")
    if text.startswith("Could not decode to UTF-8"):
        # Raised by the sqlite3 module itself (no SQLite code); its text quotes the
        # damaged bytes.
        col = re.search(r"column '([^']*)'", text)
        where = f"column {one_line(col.group(1), 40)!r}" if col else "a text column"
        return JournalCorrupt(f"{path}: damaged journal ({where} holds bytes that are not UTF-8)")
    return None


class GuardedCursor(sqlite3.Cursor):
    """A cursor whose fetches raise the journal's coded errors (see :func:`translate`)."""

    def _fail(self, exc: sqlite3.Error) -> JournalError | None:
        conn = self.connection
        if isinstance(conn, GuardedConnection):
            return conn.storage_error(exc)
        return None

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            err = self._fail(exc)
            if err is None:
                raise
            raise err from None

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            err = self._fail(exc)
            if err is None:
                raise
            raise err from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            err = self._fail(exc)
            if err is None:
                raise
            raise err from None

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size)
        except sqlite3.Error as exc:
            err = self._fail(exc)
            if err is None:
                raise
            raise err from None


class GuardedConnection(sqlite3.Connection):
    """The journal's SQLite connection: statements and fetches raise the journal's
    coded errors for a full disk, an I/O error or a damaged file, and tell
    :attr:`on_storage_error` (the journal's :class:`StorageGuard`) of the first two."""

    journal_path: str = ""
    journal_readonly: bool = False
    on_storage_error: Callable[[StorageError], None] | None = None

    def storage_error(self, exc: sqlite3.Error) -> JournalError | None:
        err = translate(exc, self.journal_path, readonly=self.journal_readonly)
        if isinstance(err, StorageError) and self.on_storage_error is not None:
            self.on_storage_error(err)
        return err

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        cur = self.cursor(GuardedCursor)
        try:
            return cur.execute(sql, parameters)
        except sqlite3.Error as exc:
            err = self.storage_error(exc)
            if err is None:
                raise
            raise err from None

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        cur = self.cursor(GuardedCursor)
        try:
            return cur.executemany(sql, parameters)
        except sqlite3.Error as exc:
            err = self.storage_error(exc)
            if err is None:
                raise
            raise err from None

    def executescript(self, sql_script: str, /) -> sqlite3.Cursor:
        try:
            return super().executescript(sql_script)
        except sqlite3.Error as exc:
            err = self.storage_error(exc)
            if err is None:
                raise
            raise err from None


def connect(path: str, *, readonly: bool) -> GuardedConnection:
    """Open the journal's file (autocommit: the journal's ``_tx`` issues BEGIN/COMMIT)."""
    from pathlib import Path

    target = Path(path).resolve().as_uri() + "?mode=ro" if readonly else path
    try:
        db = sqlite3.connect(
            target,
            uri=readonly,
            isolation_level=None,
            timeout=5.0,
            factory=GuardedConnection,
        )
    except sqlite3.Error as exc:
        err = translate(exc, path, readonly=readonly)
        if err is None:
            raise
        raise err from None
    assert isinstance(db, GuardedConnection)
    db.journal_path = path
    db.journal_readonly = readonly
    return db


@dataclass(frozen=True, slots=True)
class StorageFault:
    """A latched storage fault: its code, the first failure's reason, since when."""

    code: str
    message: str
    since: str
    failures: int = 1

    def to_json(self) -> dict[str, JSON]:
        return {
            "code": self.code,
            "message": self.message,
            "since": self.since,
            "failures": self.failures,
        }


class StorageGuard:
    """The journal's storage fault, latched on the first failure, cleared by the next
    successful write (see the module docstring).

    ``probe()`` is a small durable write (the journal's); ``free_bytes()`` the free
    space of the journal's filesystem. Listeners (:meth:`add_listener`) hear every
    change, raised or cleared: the retained ``state`` and the MQTT link follow it."""

    def __init__(
        self,
        path: str,
        *,
        probe: Callable[[], None],
        free_bytes: Callable[[], int] | None = None,
        min_free_bytes: int = MIN_FREE_BYTES,
        probe_interval: float = PROBE_INTERVAL_S,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], Any] = utc_now,
    ) -> None:
        self.path = path
        self._probe = probe
        self._free_bytes = free_bytes or (lambda: _free_bytes(path))
        self.min_free_bytes = min_free_bytes
        self.probe_interval = probe_interval
        self._monotonic = monotonic
        self._wall = wall
        self.fault: StorageFault | None = None
        self._fault_error: StorageError | None = None
        self._since_mono = 0.0
        self._last_probe = -1e18
        self._listeners: list[Callable[[], None]] = []
        #: Every fault raised and cleared: (code, since, cleared_at, failures).
        self.episodes: list[tuple[str, str, str, int]] = []
        self.changes = 0

    def add_listener(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def _changed(self) -> None:
        self.changes += 1
        for cb in list(self._listeners):
            try:
                cb()
            except Exception:  # a listener must never turn a storage fault into a crash
                log.exception("storage fault listener failed")

    # -- what the journal tells it ---------------------------------------------------
    def failed(self, err: StorageError) -> None:
        """A read or write failed (every attempt: counted, logged only on a change)."""
        cur = self.fault
        if cur is not None and cur.code == err.code:
            self.fault = replace(cur, failures=cur.failures + 1)
            return
        self.fault = StorageFault(err.code, err.message, iso_utc(self._wall()))
        self._fault_error = err
        self._since_mono = self._monotonic()
        self._last_probe = self._monotonic()
        log.error(
            "journal storage fault %s: %s; new bets and rounds are refused until the "
            "journal writes again",
            err.code,
            err.message,
        )
        self._changed()

    def succeeded(self) -> StorageFault | None:
        """A write committed. Clears the fault (returned, for the record) unless the
        disk is still nearly full."""
        cur = self.fault
        if cur is None:
            return None
        if cur.code == "DISK_FULL" and self._free() < self.min_free_bytes:
            return None
        self.fault = None
        self._fault_error = None
        seconds = self._monotonic() - self._since_mono
        cleared_at = iso_utc(self._wall())
        self.episodes.append((cur.code, cur.since, cleared_at, cur.failures))
        log.warning(
            "journal storage fault %s cleared: the journal writes again (%d failed "
            "attempt(s) over %.1f s); bets and rounds resume",
            cur.code,
            cur.failures,
            seconds,
        )
        self._changed()
        return cur

    # -- what the table asks -----------------------------------------------------------
    def blocked(self) -> StorageError | None:
        """The latched fault as an error to refuse a new bet or round with, or None.

        While latched, at most one probe write per ``probe_interval`` (and, for a full
        disk, only once ``min_free_bytes`` are free) finds out whether it has cleared."""
        if self.fault is None:
            return None
        now = self._monotonic()
        if now - self._last_probe >= self.probe_interval:
            self._last_probe = now
            if self.fault.code != "DISK_FULL" or self._free() >= self.min_free_bytes:
                # Success clears the fault (the journal calls succeeded()); a failure is
                # counted by failed() and the fault stays.
                with contextlib.suppress(JournalError):
                    self._probe()
        if self.fault is None:
            return None
        err = self._fault_error
        assert err is not None
        return type(err)(
            f"{err.message} (since {self.fault.since}); bets and rounds resume when the "
            "journal writes again"
        )

    def _free(self) -> int:
        try:
            return self._free_bytes()
        except OSError:
            return 0

    def get_status(self) -> dict[str, JSON]:
        return {
            "fault": self.fault.to_json() if self.fault else None,
            "episodes": [
                {"code": c, "since": s, "cleared": e, "failures": n}
                for c, s, e, n in self.episodes[-10:]
            ],
        }


def _free_bytes(path: str) -> int:
    st = os.statvfs(os.path.dirname(os.path.abspath(path)) or ".")
    return st.f_bavail * st.f_frsize
