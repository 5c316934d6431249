"""Ed25519 keys of the floor's principals, in PEM files (``cryptography``).

Each principal (a dealer terminal, a pit supervisor, the floor system that places
bets) holds its private key; the table holds only public keys, named by
``[auth.principals.<name>] keys = [...]``. ``tablectl keys generate NAME --dir DIR``
writes ``NAME.key`` (PKCS#8, mode 0600, for the principal alone) and ``NAME.pub``
(SubjectPublicKeyInfo, for the table). Rotation: list the new public key beside the
old one, move the principal to the new private key, then remove the old public key
(``docs/security.md``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey


class KeyFileError(ValueError):
    """A key file that cannot be read or is not an Ed25519 key of the right kind."""


def key_id(public: Ed25519PublicKey) -> str:
    """A short, stable name of a public key (``ed25519:`` + 16 hex digits of the
    SHA-256 of its raw 32 bytes): what the audit records as the key that signed."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the key file: {exc.strerror or exc}") from None
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise KeyFileError(f"{path}: not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path}: not an Ed25519 public key ({type(key).__name__})")
    return key


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the key file: {exc.strerror or exc}") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise KeyFileError(f"{path}: not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path}: not an Ed25519 private key ({type(key).__name__})")
    return key


def private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def generate(name: str, directory: str | Path, *, overwrite: bool = False) -> tuple[Path, Path]:
    """A new key pair for principal ``name`` in ``directory``: ``(NAME.key, NAME.pub)``.
    The private key file is created with mode 0600 and never overwritten unless
    ``overwrite``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    priv_path, pub_path = d / f"{name}.key", d / f"{name}.pub"
    if not overwrite:
        for p in (priv_path, pub_path):
            if p.exists():
                raise FileExistsError(f"{p} exists; rotate with a new name or pass --overwrite")
    key = Ed25519PrivateKey.generate()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(priv_path, flags, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(private_pem(key))
    os.chmod(priv_path, 0o600)
    pub_path.write_bytes(public_pem(key.public_key()))
    return priv_path, pub_path
