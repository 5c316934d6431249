"""Fixtures of the floor ingest's tests.

- ``postgres``: a :class:`~tablesim.postgres.PostgresProcess` (Debian's server
  package, a temporary cluster on a free loopback port) for the whole session;
  skipped when PostgreSQL is not installed, FAILED when ``TABLECTL_REQUIRE_POSTGRES=1``
  (``.ci/run`` sets it).
- ``db_url``: parametrized over ``sqlite`` (a file in the test's directory) and
  ``postgresql`` (a fresh database in the session's cluster).
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablesim.postgres import PostgresProcess, find_postgres_bin

REQUIRE_POSTGRES = os.environ.get("TABLECTL_REQUIRE_POSTGRES") == "1"
_n = itertools.count(1)


def need_postgres() -> None:
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        msg = "asyncpg is not installed (pip install -e '.[floor]'; ./dev setup does)"
        if REQUIRE_POSTGRES:
            pytest.fail(f"{msg}, and TABLECTL_REQUIRE_POSTGRES=1 makes it mandatory")
        pytest.skip(msg)
    if find_postgres_bin() is None:
        msg = "PostgreSQL is not installed (/usr/lib/postgresql/*/bin: apt-get install postgresql)"
        if REQUIRE_POSTGRES:
            pytest.fail(f"{msg}, and TABLECTL_REQUIRE_POSTGRES=1 makes it mandatory")
        pytest.skip(msg)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresProcess]:
    need_postgres()
    pg = PostgresProcess()
    pg.start()
    try:
        yield pg
    finally:
        pg.close()


def new_database(pg: PostgresProcess) -> str:
    import asyncpg

    name = f"floor_{os.getpid()}_{next(_n)}"

    async def create() -> None:
        conn = await asyncpg.connect(pg.dsn)
        try:
            await conn.execute(f"CREATE DATABASE {name}")
        finally:
            await conn.close()

    asyncio.run(create())
    return f"postgresql://postgres@{pg.host}:{pg.port}/{name}"


@pytest.fixture
def postgres(postgres_cluster: PostgresProcess) -> PostgresProcess:
    if not postgres_cluster.running:
        postgres_cluster.start()
    return postgres_cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'floor.sqlite3'}"
    pg = request.getfixturevalue("postgres")
    return new_database(pg)
