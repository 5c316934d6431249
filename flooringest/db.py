"""The floor's database, the same few calls on PostgreSQL (asyncpg) and SQLite: what
every part of the store (:mod:`flooringest.store`) reads and writes through.

The SQL is written once in the subset both speak (``?`` placeholders, rewritten to
``$n`` for PostgreSQL; ``ON CONFLICT``; ``RETURNING``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any


class StoreError(Exception):
    """The database cannot be reached or refused a statement (retried by the worker)."""


class Db:
    """The few calls the store makes, the same on both databases."""

    dialect = "?"

    async def execute(self, sql: str, *args: Any) -> int:
        raise NotImplementedError

    async def fetch(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """``sql`` once per row of arguments (PostgreSQL: pipelined, not a round trip
        per row: the duties update a row per table, a thousand tables every half
        second)."""
        raise NotImplementedError

    def transaction(self) -> contextlib.AbstractAsyncContextManager[None]:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class SqliteDb(Db):
    """SQLite in WAL mode, ``synchronous=FULL`` (a commit is on disk). Statements run on
    the event loop: a pit's load commits in milliseconds."""

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self._lock = asyncio.Lock()

    def _run(self, sql: str, args: Sequence[Any]) -> sqlite3.Cursor:
        try:
            return self.db.execute(sql, tuple(args))
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            raise StoreError(f"sqlite: {exc}") from exc

    async def execute(self, sql: str, *args: Any) -> int:
        return self._run(sql, args).rowcount

    async def fetch(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._run(sql, args).fetchall()]

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        try:
            self.db.executemany(sql, [tuple(r) for r in rows])
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            raise StoreError(f"sqlite: {exc}") from exc

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        async with self._lock:
            self._run("BEGIN IMMEDIATE", ())
            try:
                yield
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                raise
            self._run("COMMIT", ())

    async def script(self, sql: str) -> None:
        self.db.executescript(sql)

    async def close(self) -> None:
        self.db.close()


_QMARK = re.compile(r"\?")


def _dollars(sql: str) -> str:
    n = 0

    def sub(_m: re.Match[str]) -> str:
        nonlocal n
        n += 1
        return f"${n}"

    return _QMARK.sub(sub, sql)


class PostgresDb(Db):
    """PostgreSQL through one asyncpg connection (each worker has its own)."""

    dialect = "postgresql"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: Any = None
        self._lock = asyncio.Lock()
        self._tx: Any = None

    async def connect(self, timeout: float = 10.0) -> None:
        import asyncpg

        try:
            self.conn = await asyncpg.connect(self.dsn, timeout=timeout)
        except Exception as exc:  # refused, unreachable, starting up, timed out
            raise StoreError(f"postgresql: cannot connect: {exc}") from exc

    async def _ensure(self) -> Any:
        if self.conn is None or self.conn.is_closed():
            await self.connect()
        return self.conn

    @staticmethod
    def _error(exc: BaseException) -> StoreError:
        return StoreError(f"postgresql: {type(exc).__name__}: {exc}")

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """One statement at a time on the connection (inside a transaction, the
        transaction holds the lock already)."""
        if self._tx is not None:
            yield
        else:
            async with self._lock:
                yield

    async def execute(self, sql: str, *args: Any) -> int:

        try:
            async with self._turn():
                conn = await self._ensure()
                status = await conn.execute(_dollars(sql), *args)
        except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
            await self._drop()
            raise self._error(exc) from exc
        tail = str(status).rsplit(" ", 1)[-1]
        return int(tail) if tail.isdigit() else 0

    async def fetch(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:

        try:
            async with self._turn():
                conn = await self._ensure()
                rows = await conn.fetch(_dollars(sql), *args)
        except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
            await self._drop()
            raise self._error(exc) from exc
        return [tuple(r) for r in rows]

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        try:
            async with self._turn():
                conn = await self._ensure()
                await conn.executemany(_dollars(sql), rows)
        except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
            await self._drop()
            raise self._error(exc) from exc

    async def _drop(self) -> None:
        if self.conn is not None and self._tx is None:
            with contextlib.suppress(Exception):
                self.conn.terminate()
            self.conn = None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:

        async with self._lock:
            conn = await self._ensure()
            tx = conn.transaction()
            try:
                await tx.start()
            except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
                await self._drop()
                raise self._error(exc) from exc
            self._tx = tx
            try:
                yield
            except BaseException:
                self._tx = None
                with contextlib.suppress(Exception):
                    await tx.rollback()
                await self._drop()
                raise
            self._tx = None
            try:
                await tx.commit()
            except Exception as exc:  # asyncpg's errors, OSError, its internal state errors
                await self._drop()
                raise self._error(exc) from exc

    async def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await self.conn.close(timeout=5)
            self.conn = None


async def count(db: Db, name: str, n: int) -> None:
    """Add ``n`` to the counter ``name`` (``floor_counters``), in the open transaction."""
    await db.execute(
        "INSERT INTO floor_counters (name, value) VALUES (?, ?) "
        "ON CONFLICT (name) DO UPDATE SET value = floor_counters.value + excluded.value",
        name,
        n,
    )


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))
