"""The journal's one SQLite connection, shared by every part: pragmas, migrations, the
one transaction at a time and its hooks, the storage guard, ``meta`` and the clock.

Storage choices and why:

- WAL mode with ``synchronous=FULL``: a commit returns only after the write-ahead
  log is on disk, and readers (``tablectl audit``, the console) never block the
  writer. Writes whose loss cannot hurt (raw device frames, "published" marks on
  the outbox, retention) commit with ``synchronous=NORMAL`` (no fsync of their own);
  the next FULL commit makes them durable too, because the WAL is written in order.
  So the frames that led to a settled round are on disk once that round is; the
  frame that carried a device result (the wheel's winning number) is written by the
  settlement's own transaction (``settle_round(raw_frames=...)``).
- Each public operation is one short ``BEGIN IMMEDIATE`` transaction on the caller's
  thread (the daemon's event loop): no thread pool, no interleaving. Operations may be
  grouped into one transaction (:meth:`Database.transaction`): inside it each
  operation is a SAVEPOINT, undone alone if it fails, and everything commits together
  or not at all. The floor's requests use it so that the answer to a request is
  journaled in the transaction of the change it answers (``requests.py``).
- The schema is versioned with ``PRAGMA user_version`` and upgraded by
  :data:`~.schema.DB_MIGRATIONS` when an older file is opened; a newer file is refused.

Every other part of the journal (outbox, audit chain, jackpot, rounds...) is an object
of its own that takes the one :class:`Database` and writes only inside
:meth:`Database.tx`; a part whose transaction spans others calls their ``*_in_tx``
writers with the open transaction (``store.py``).

Storage faults (``storage.py``): every statement and fetch raises the journal's coded
errors for a full disk (``DISK_FULL``), an I/O error (``JOURNAL_IO``) or a damaged
file (``JOURNAL_CORRUPT``), never a raw ``sqlite3`` exception; the first two latch
:attr:`Database.storage` until a write commits again. A file that cannot be opened,
checked or migrated is refused with :class:`~.errors.JournalCorrupt` and a one-line
reason.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

from ..jsonio import JSON
from ..latency import Latency
from ..timefmt import iso_utc, utc_now
from .errors import JournalCorrupt, JournalError
from .lock import StateLock
from .schema import DB_MIGRATIONS, DB_SCHEMA_VERSION
from .storage import StorageGuard, connect, one_line

log = logging.getLogger(__name__)


class Database:
    """The SQLite file, opened, checked and migrated; one transaction at a time.

    The one unit every part of the journal shares (``store.py``): :attr:`sql` (the
    connection), :meth:`tx` (a transaction, or a savepoint of the open one), the hooks
    run after a commit or a rollback, the storage guard, ``meta`` and the clock."""

    def __init__(
        self,
        path: str | Path,
        *,
        integrity_check: str = "quick",
        clock: Callable[[], datetime] = utc_now,
        readonly: bool = False,
        defer: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        self.path = str(path)
        self.readonly = readonly
        self._clock = clock
        self._latency: dict[str, Latency] = {}
        #: Run once after the current transaction commits (dropped on rollback).
        self._after_commit: list[Callable[[], None]] = []
        #: The latched storage fault (disk full, I/O error) and its listeners.
        self.storage = StorageGuard(self.path, probe=self._storage_probe)
        #: Run once if the current transaction rolls back (dropped on commit).
        self._on_rollback: list[Callable[[], None]] = []
        #: How deep the open transaction is nested (0: none open).
        self._depth = 0
        #: Name under which the open outermost transaction's commit time is recorded.
        self._tx_op = ""
        #: Schedules work that can wait until what is due now is done: the daemon gives
        #: the floor link's ``AfterPublication.queue``, so that the publisher writes a
        #: settled round to the broker before retention prunes and the extensions' hooks
        #: run. None: such work runs at once.
        self.defer = defer
        if not readonly:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        #: Told once after a write cleared a storage fault (the journal records it).
        self._recovered: list[Callable[[dict[str, JSON]], None]] = []
        self._closed = False
        #: The state directory's lock, held while the journal is open to be written
        #: (``lock.py``; given by ``JournalSettings.open``).
        self._lock: StateLock | None = None
        #: The SQLite connection (a :class:`~.storage.GuardedConnection`): the parts
        #: read through it and write only inside :meth:`tx`.
        self.sql = connect(self.path, readonly=readonly)
        self.sql.on_storage_error = self.storage.failed
        try:
            self._setup(integrity_check)
        except JournalError:
            self.sql.close()
            raise
        except sqlite3.Error as exc:  # anything else SQLite says about the file: damaged
            self.sql.close()
            raise JournalCorrupt(
                f"{self.path}: cannot be opened as a journal ({one_line(str(exc))})"
            ) from None
        except BaseException:
            self.sql.close()
            raise

    # -- lifecycle -------------------------------------------------------------
    def _setup(self, integrity_check: str) -> None:
        db = self.sql
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA busy_timeout = 5000")
        if not self.readonly:
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise JournalCorrupt(f"{self.path}: cannot switch to WAL mode (got {mode})")
            db.execute("PRAGMA synchronous = FULL")
        if integrity_check != "none":
            pragma = "quick_check" if integrity_check == "quick" else "integrity_check"
            rows = [str(r[0]) for r in db.execute(f"PRAGMA {pragma}(5)")]
            if rows != ["ok"]:
                raise JournalCorrupt(
                    f"{self.path}: integrity check failed: {one_line('; '.join(rows))}"
                )
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > DB_SCHEMA_VERSION:
            raise JournalCorrupt(
                f"{self.path}: journal schema version {version} is newer than this software "
                f"understands (up to {DB_SCHEMA_VERSION})",
                code="JOURNAL_TOO_NEW",
            )
        if version < DB_SCHEMA_VERSION:
            if self.readonly:
                raise JournalCorrupt(
                    f"{self.path}: journal schema version {version} needs an upgrade; "
                    "open it read-write once (start the daemon)",
                    code="JOURNAL_NEEDS_UPGRADE",
                )
            self._migrate(version)

    def _migrate(self, version: int) -> None:
        while version < DB_SCHEMA_VERSION:
            script = DB_MIGRATIONS[version]
            version += 1
            try:
                self.sql.executescript(
                    f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {version};\nCOMMIT;"
                )
            except BaseException:
                if self.sql.in_transaction:
                    self.sql.execute("ROLLBACK")
                raise
            log.info("journal %s: schema upgraded to version %d", self.path, version)

    def close(self) -> None:
        self._closed = True
        self.sql.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (deferred work then does nothing)."""
        return self._closed

    def hold(self, lock: StateLock) -> None:
        """Keep ``lock`` (the state directory's) until the journal is closed."""
        self._lock = lock

    def later(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` through :attr:`defer` (at once when none is set)."""
        if self.defer is None:
            callback()
        else:
            self.defer(callback)

    @property
    def schema_version(self) -> int:
        """The file's SQLite schema level (``PRAGMA user_version``)."""
        return int(self.sql.execute("PRAGMA user_version").fetchone()[0])

    def meta(self, key: str) -> str | None:
        """The value of ``key`` in ``meta`` (the journal's own facts), or None."""
        row = self.sql.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # -- the clock -----------------------------------------------------------------
    def clock(self) -> datetime:
        """Now, by the journal's clock (a test's own, or UTC)."""
        return self._clock()

    def now(self, at: datetime | None = None) -> str:
        """``at`` (by default now) as the journal stores a time (ISO, UTC)."""
        return iso_utc(at if at is not None else self._clock())

    # -- transactions ------------------------------------------------------------
    @contextlib.contextmanager
    def tx(self, op: str, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` transaction; rolled back on any exception.

        ``durable=False`` commits without its own fsync (``synchronous=NORMAL``): for
        writes whose loss on power failure is harmless (see the module docstring).
        The commit time is recorded under ``op`` (:meth:`commit_latency`); the
        callbacks queued in ``_after_commit`` run after the commit, never on rollback.

        Inside an open transaction (:meth:`transaction`) it is a SAVEPOINT instead:
        undone alone when it raises, committed only with the outermost transaction
        (whose durability wins; its commit time is recorded under the first ``op``
        inside it).
        """
        if self.readonly:
            raise JournalError("the journal is open read-only", code="JOURNAL_READONLY")
        db = self.sql
        if self._depth:
            if self._depth == 1 and not self._tx_op:
                self._tx_op = op
            name = f"sp{self._depth}"
            db.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield db
            except BaseException:
                db.execute(f"ROLLBACK TO {name}")
                db.execute(f"RELEASE {name}")
                raise
            else:
                db.execute(f"RELEASE {name}")
            finally:
                self._depth -= 1
            return
        if not durable:
            db.execute("PRAGMA synchronous = NORMAL")
        t0 = time.perf_counter()
        self._after_commit.clear()
        self._on_rollback.clear()
        self._tx_op = op
        try:
            db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    # SQLite may have rolled back already after a full disk or an I/O
                    # error; a failing ROLLBACK must not hide the error that matters.
                    with contextlib.suppress(sqlite3.Error, JournalError):
                        db.execute("ROLLBACK")
                self._after_commit.clear()
                undo, self._on_rollback = self._on_rollback, []
                for cb in undo:
                    try:
                        cb()
                    except Exception:  # pragma: no cover - a rollback hook must not mask the error
                        log.exception("rollback hook failed")
                raise
        finally:
            self._depth = 0
            if not durable:
                with contextlib.suppress(sqlite3.Error, JournalError):
                    db.execute("PRAGMA synchronous = FULL")
        self._latency.setdefault(self._tx_op or op or "transaction", Latency()).add(
            time.perf_counter() - t0
        )
        self._on_rollback.clear()
        cleared = self.storage.succeeded() if self.storage.fault is not None else None
        callbacks, self._after_commit = self._after_commit, []
        for cb in callbacks:
            cb()
        if cleared is not None:
            for recovered in list(self._recovered):
                recovered(cleared.to_json())

    def _storage_probe(self) -> None:
        """A small durable write (the header's user_version, unchanged) while a storage
        fault is latched: its commit clears the fault."""
        with self.tx("storage_probe") as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            db.execute(f"PRAGMA user_version = {version}")

    def on_storage_recovered(self, callback: Callable[[dict[str, JSON]], None]) -> None:
        """Call ``callback(fault)`` once after each write that cleared a storage fault
        (the journal records the episode in its chain)."""
        self._recovered.append(callback)

    @contextlib.contextmanager
    def transaction(self, op: str = "") -> Iterator[sqlite3.Connection]:
        """Group several operations into ONE transaction: each public write method
        called inside is a savepoint of it, and all commit together (or none, if the
        block raises). ``op`` names its commit time; by default the first operation's
        name. Nested calls join the open transaction."""
        with self.tx(op) as db:
            yield db

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (a write now commits only with it)."""
        return self._depth > 0

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` once the open transaction commits (never if it rolls
        back); at once when no transaction is open."""
        if self._depth:
            self._after_commit.append(callback)
        else:
            callback()

    def once_after_commit(self, callback: Callable[[], None]) -> None:
        """Inside a transaction: run ``callback()`` once after it commits, however often
        it is asked for (the outbox wakes its publishers once a commit)."""
        if callback not in self._after_commit:
            self._after_commit.append(callback)

    def on_rollback(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` if the open transaction rolls back (to put state kept
        beside the journal back as the journal has it); nothing when none is open."""
        if self._depth:
            self._on_rollback.append(callback)

    def commit_latency(self) -> dict[str, dict[str, float | int]]:
        """Per operation: count, p50/p99/max commit time in ms (transaction begin to commit)."""
        return {op: lat.summary() for op, lat in sorted(self._latency.items())}
