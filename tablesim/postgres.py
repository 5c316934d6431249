"""A throw-away PostgreSQL cluster for the floor ingest's tests and benchmarks.

Debian's server package (``/usr/lib/postgresql/<version>/bin``: initdb, postgres,
pg_ctl) in a temporary directory, listening on a free loopback port only (no Unix
socket), trust authentication for its one superuser ``postgres``. PostgreSQL refuses
to run as root: as root the cluster belongs to ``nobody`` (the child drops to it, so
the postmaster stays our child and is reaped after a kill). Killable
(SIGKILL: crash recovery at the next start) and restartable on the same port.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .broker import LOOPBACK, free_port, port_open, wait_port

#: Who runs the cluster when we are root.
RUN_AS = os.environ.get("TABLECTL_POSTGRES_USER", "nobody")


def find_postgres_bin() -> Path | None:
    """The newest installed ``/usr/lib/postgresql/<v>/bin`` holding initdb, or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    return Path(found[-1]).parent if found else None


class PostgresProcess:
    """One cluster in ``workdir`` (a new temporary directory by default)."""

    def __init__(self, workdir: str | Path | None = None, port: int | None = None) -> None:
        bindir = find_postgres_bin()
        if bindir is None:
            raise FileNotFoundError("PostgreSQL is not installed (/usr/lib/postgresql/*/bin)")
        self.bindir = bindir
        # Not under pytest's root-only tmp_path: the cluster's owner must reach it.
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="tablectl-pg-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data = self.workdir / "data"
        self.host = LOOPBACK
        self.port = port or free_port(self.host)
        self.proc: subprocess.Popen[bytes] | None = None
        self.user = RUN_AS if os.geteuid() == 0 else None
        self.restarts = 0
        self.kills = 0

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    def _uid_gid(self) -> tuple[int | None, int | None]:
        if not self.user:
            return None, None
        pw = pwd.getpwnam(self.user)
        return pw.pw_uid, pw.pw_gid

    def init(self) -> None:
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chmod(self.workdir, 0o755)
            os.chown(self.workdir, pw.pw_uid, pw.pw_gid)
        subprocess.run(
            (
                [
                    str(self.bindir / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=120,
            cwd=self.workdir,
            user=self._uid_gid()[0],
            group=self._uid_gid()[1],
            extra_groups=[] if self.user else None,
        )

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30.0) -> str:
        """Start (or restart) on the same port; returns the DSN once it accepts."""
        if not (self.data / "PG_VERSION").exists():
            self.init()
        if self.running:
            return self.dsn
        wait_port(self.host, self.port, up=False, timeout=timeout)
        log = open(self.workdir / "postgres.log", "ab")  # noqa: SIM115 - owned by the child
        try:
            self.proc = subprocess.Popen(
                (
                    [
                        str(self.bindir / "postgres"),
                        "-D",
                        str(self.data),
                        "-h",
                        self.host,
                        "-p",
                        str(self.port),
                        "-k",
                        "",
                        "-c",
                        "max_connections=50",
                        "-c",
                        "shared_buffers=64MB",
                    ]
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.workdir,
                user=self._uid_gid()[0],
                group=self._uid_gid()[1],
                extra_groups=[] if self.user else None,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while not port_open(self.host, self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited; log:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"postgres did not listen; log:\n{self.log_tail()}")
            time.sleep(0.05)
        # Listening is not accepting: crash recovery runs first.
        while (
            subprocess.run(
                [str(self.bindir / "pg_isready"), "-q", "-h", self.host, "-p", str(self.port)],
                check=False,
                timeout=30,
            ).returncode
            != 0
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"postgres did not accept connections; log:\n{self.log_tail()}")
            time.sleep(0.05)
        return self.dsn

    def _signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            # The postmaster and its backends: the whole session.
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def kill(self) -> None:
        """SIGKILL the postmaster and its backends: crash recovery at the next start."""
        self._signal(signal.SIGKILL)
        self.kills += 1

    def stop(self) -> None:
        """Fast shutdown (SIGINT): active transactions rolled back, clients cut."""
        self._signal(signal.SIGINT)

    def restart(self, *, hard: bool = False, down_for: float = 0.0) -> str:
        self.kill() if hard else self.stop()
        if down_for:
            time.sleep(down_for)
        self.restarts += 1
        return self.start()

    def log_tail(self, n: int = 30) -> str:
        try:
            text = (self.workdir / "postgres.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-n:])

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> PostgresProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["PostgresProcess", "find_postgres_bin", "port_open"]
