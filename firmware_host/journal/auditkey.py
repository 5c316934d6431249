"""The table's audit key: the per-table secret that keys the journal's hash chain.

The chain (``chain.py``) is an HMAC-SHA256 chain: without this key, nobody who can
write the journal file can recompute it after an edit. The key lives in a file of its
own, named by ``[journal] audit_key`` (default: ``audit.key`` beside the journal),
never in the journal. The file holds 32 random bytes as 64 hex digits and is created
with mode 0600 by ``tablectl audit init-key`` at install (or by the daemon's first
start, when neither the journal nor the key exists yet: a new table). Keep a copy
somewhere safe: without it the journal can no longer be verified.

The journal records the key's *id* (:attr:`AuditKey.key_id`, an HMAC of a fixed label,
which says nothing about the key) in its first keyed chain entry, so a journal opened
with another key is refused (``AUDIT_KEY_MISMATCH``) instead of growing a chain nobody
can verify.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from .errors import JournalError

#: Bytes of secret in a key file.
KEY_BYTES = 32
_KEY_ID_LABEL = b"tablectl audit key id"


class AuditKeyError(JournalError):
    """The audit key is missing, unreadable, malformed or exposed; ``code`` says which."""

    code = "AUDIT_KEY_ERROR"


class AuditKey:
    """A loaded audit key. Its ``repr`` never shows the secret."""

    __slots__ = ("_secret", "key_id", "path")

    def __init__(self, secret: bytes, *, path: str | None = None) -> None:
        if len(secret) < KEY_BYTES:
            raise AuditKeyError(
                f"an audit key needs at least {KEY_BYTES} bytes, got {len(secret)}",
                code="AUDIT_KEY_INVALID",
            )
        self._secret = bytes(secret)
        self.path = path
        #: Names the key without revealing it (recorded in the chain, shown by verify).
        self.key_id = hmac.new(self._secret, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"AuditKey(id={self.key_id}, path={self.path!r})"

    def mac(self, message: bytes) -> str:
        """HMAC-SHA256 of ``message`` under this key, as 64 hex digits."""
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    @staticmethod
    def load(path: str | Path) -> AuditKey:
        """Read a key file; refuses a file others may read or write (``AUDIT_KEY_EXPOSED``)."""
        p = Path(path)
        try:
            st = p.stat()
            text = p.read_text(encoding="ascii")
        except FileNotFoundError:
            raise AuditKeyError(
                f"no audit key at {p}; create it at install with "
                f"`tablectl audit init-key --key {p}` (mode 0600), and keep a copy",
                code="AUDIT_KEY_MISSING",
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise AuditKeyError(
                f"cannot read the audit key {p}: {getattr(exc, 'strerror', None) or exc}",
                code="AUDIT_KEY_UNREADABLE",
            ) from None
        if st.st_mode & (stat.S_IRWXO):
            raise AuditKeyError(
                f"the audit key {p} is open to other users (mode {stat.S_IMODE(st.st_mode):04o});"
                f" chmod 0600 {p}",
                code="AUDIT_KEY_EXPOSED",
            )
        digits = text.strip()
        try:
            secret = bytes.fromhex(digits)
        except ValueError:
            secret = b""
        if len(secret) < KEY_BYTES:
            raise AuditKeyError(
                f"the audit key {p} is not {KEY_BYTES * 2} hex digits",
                code="AUDIT_KEY_INVALID",
            )
        return AuditKey(secret, path=str(p))

    @staticmethod
    def create(path: str | Path) -> AuditKey:
        """Create a new key file with mode 0600; never overwrites (``AUDIT_KEY_EXISTS``)."""
        p = Path(path)
        secret = secrets.token_bytes(KEY_BYTES)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise AuditKeyError(
                f"{p} already exists: an audit key is never replaced (the journal chained "
                "with it could no longer be verified)",
                code="AUDIT_KEY_EXISTS",
            ) from None
        except OSError as exc:
            raise AuditKeyError(
                f"cannot create the audit key {p}: {exc.strerror or exc}; create it at install "
                f"with `tablectl audit init-key --key {p}`",
                code="AUDIT_KEY_UNWRITABLE",
            ) from None
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(secret.hex() + "\n")
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                p.unlink()
            raise
        os.chmod(p, 0o600)  # whatever the umask
        return AuditKey(secret, path=str(p))
