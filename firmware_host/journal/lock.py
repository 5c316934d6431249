"""One daemon per journal: an exclusive lock on the state directory.

A second daemon started on the same state directory (a technician starting the service
by hand while systemd runs it) would "resume" the first daemon's open round, void it,
take its MQTT client id and leave the first daemon failing. So whatever writes the
journal takes :class:`StateLock` first, before it reads or creates anything there: an
``fcntl.flock`` on ``tablectl.lock`` in the journal's directory, held for the life of
the process and released by the kernel when it ends, however it ends (a SIGKILL, a
power cut: no stale lock to clean up). The file says who holds it (pid, table, since),
for the refusal's message. Read-only tools (``tablectl status``, ``audit verify``,
``audit events``, the console's ``recall``) never take it and work beside the daemon.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from ..timefmt import iso_utc, utc_now
from .errors import JournalError

#: The lock file, in the journal's directory (the state directory).
LOCK_NAME = "tablectl.lock"


class StateLocked(JournalError):
    """The state directory is held by another process (``STATE_DIR_LOCKED``)."""

    code = "STATE_DIR_LOCKED"


class StateLock:
    """An exclusive lock on a state directory, held until :meth:`release`."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @staticmethod
    def acquire(directory: str | Path, **about: Any) -> StateLock:
        """Lock ``directory`` (created if missing) for this process; ``about`` (the table
        id...) is written in the lock file with the pid. Raises :class:`StateLocked`
        naming the holder's pid and the path when another process holds it, or a
        :class:`JournalError` (``STATE_DIR_UNUSABLE``) when the file cannot be made."""
        d = Path(directory)
        path = d / LOCK_NAME
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise JournalError(
                f"cannot create the lock {path}: {exc.strerror or exc}",
                code="STATE_DIR_UNUSABLE",
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            who = (
                f"pid {holder['pid']}"
                + (f", table {holder['table_id']}" if holder.get("table_id") else "")
                + (f", since {holder['since']}" if holder.get("since") else "")
                if holder.get("pid")
                else "another process"
            )
            raise StateLocked(
                f"the state directory {d} is in use by another daemon ({who}; lock {path}): "
                "one table has one daemon; stop it first (systemctl stop tablectl) or give "
                "this one its own --state-dir",
            ) from None
        record = {"pid": os.getpid(), "since": iso_utc(utc_now()), **about}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
        return StateLock(path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the lock up (the file stays: it is the lock, not a flag)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __repr__(self) -> str:
        return f"StateLock({str(self.path)!r}, held={self.held})"


def _holder(fd: int) -> dict[str, Any]:
    """What the lock file says of its holder ({} when unreadable)."""
    try:
        data = os.pread(fd, 4096, 0)
        doc = json.loads(data.decode("utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


__all__ = ["LOCK_NAME", "StateLock", "StateLocked"]
