"""The table's identity: its own Ed25519 key, which signs what it says to the floor.

Separate from the audit key (the HMAC secret that keys the journal's chain, which never
leaves the table): the identity's *public* key goes to the floor's registry of tables
(``docs/floor.md``), and every message the table publishes is signed with the private
key (:mod:`.evidence`), so the floor verifies it with no trust in the broker.

Handled like the audit key: a file of its own (``[journal] identity_key``, default
``identity.key`` beside the journal), PKCS#8 PEM, mode 0600; created at install by
``tablectl keys identity --key FILE`` (which prints the public key for the floor), or
at the first start of a new table (no journal yet). The daemon refuses to start when
the file is missing beside an existing journal (``TABLE_IDENTITY_MISSING``: the floor
knows the old key), open to other users (``TABLE_IDENTITY_EXPOSED``) or not an
Ed25519 private key (``TABLE_IDENTITY_INVALID``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..games.errors import CodedError
from .evidence import seal, seal_text
from .keys import KeyFileError, key_id, load_private_key, private_pem, public_pem


class IdentityKeyError(CodedError, RuntimeError):
    """The identity key is missing, unreadable, malformed or exposed; ``code`` says which."""

    code = "TABLE_IDENTITY_ERROR"


class TableIdentity:
    """A loaded identity key. Its ``repr`` never shows the secret."""

    __slots__ = ("_key", "key_id", "path")

    def __init__(self, key: Ed25519PrivateKey, *, path: str | None = None) -> None:
        self._key = key
        self.path = path
        #: ``ed25519:`` + 16 hex digits, as the audit and the floor's registry name it.
        self.key_id = key_id(key.public_key())

    def __repr__(self) -> str:
        return f"TableIdentity(id={self.key_id}, path={self.path!r})"

    def public_pem(self) -> bytes:
        return public_pem(self._key.public_key())

    def seal(self, topic: str, payload: Mapping[str, Any], *, float_free: bool = False) -> bytes:
        """``payload`` signed for ``topic`` (below the table's root), as published."""
        return seal(self._key, topic, payload, float_free=float_free)

    def seal_text(self, topic: str, text: str) -> bytes:
        """The published message of a payload whose canonical JSON ``text`` is known."""
        return seal_text(self._key, topic, text)

    @staticmethod
    def generate() -> TableIdentity:
        """A new identity held in memory only (tests, emulated tables)."""
        return TableIdentity(Ed25519PrivateKey.generate())

    @staticmethod
    def load(path: str | Path) -> TableIdentity:
        """Read the key file; refuses one that others may read or write."""
        p = Path(path)
        try:
            st = p.stat()
        except FileNotFoundError:
            raise IdentityKeyError(
                f"no identity key at {p}; create it at install with "
                f"`tablectl keys identity --key {p}` (mode 0600) and give its public key "
                "to the floor's registry",
                code="TABLE_IDENTITY_MISSING",
            ) from None
        except OSError as exc:
            raise IdentityKeyError(
                f"cannot read the identity key {p}: {exc.strerror or exc}",
                code="TABLE_IDENTITY_UNREADABLE",
            ) from None
        if st.st_mode & stat.S_IRWXO:
            raise IdentityKeyError(
                f"the identity key {p} is open to other users (mode "
                f"{stat.S_IMODE(st.st_mode):04o}): anyone who read it can sign as this "
                f"table; make a new one for the floor, or if it was never exposed, chmod 0600 {p}",
                code="TABLE_IDENTITY_EXPOSED",
            )
        try:
            key = load_private_key(p)
        except KeyFileError as exc:
            code = (
                "TABLE_IDENTITY_UNREADABLE"
                if "cannot read" in str(exc)
                else "TABLE_IDENTITY_INVALID"
            )
            raise IdentityKeyError(str(exc), code=code) from None
        return TableIdentity(key, path=str(p))

    @staticmethod
    def create(path: str | Path) -> TableIdentity:
        """Create a new key file with mode 0600 (and the public key beside it, as
        ``<name>.pub``); never overwrites (``TABLE_IDENTITY_EXISTS``)."""
        p = Path(path)
        key = Ed25519PrivateKey.generate()
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise IdentityKeyError(
                f"{p} already exists: an identity key is never replaced in place (the floor "
                "verifies the table with it); rotate it as docs/security.md says",
                code="TABLE_IDENTITY_EXISTS",
            ) from None
        except OSError as exc:
            raise IdentityKeyError(
                f"cannot create the identity key {p}: {exc.strerror or exc}",
                code="TABLE_IDENTITY_UNWRITABLE",
            ) from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(private_pem(key))
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                p.unlink()
            raise
        os.chmod(p, 0o600)  # whatever the umask
        identity = TableIdentity(key, path=str(p))
        with contextlib.suppress(OSError):
            public_path(p).write_bytes(identity.public_pem())
        return identity


def public_path(key_path: str | Path) -> Path:
    """Where the public half of an identity key is written: ``<name>.pub`` beside it."""
    p = Path(key_path)
    return p.with_suffix(".pub") if p.suffix == ".key" else p.with_name(p.name + ".pub")


__all__ = ["IdentityKeyError", "TableIdentity", "public_path"]
