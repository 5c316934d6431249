"""Software self-verification (issue 19, item 5; GLI-24 software authentication).

**The manifest** lists every file of the installed packages the daemon runs
(:data:`PACKAGES`: ``firmware_host`` and ``drivers``; compiled ``__pycache__`` left
out) with its SHA-256, by path relative to the directory holding them. It is written
and signed at build time (``tablectl software-manifest --key BUILD.key``) with the
vendor's Ed25519 build key, which never leaves the build machine; the table holds the
manifest, its signature (``<manifest>.sig``, 64 raw bytes base64) and the build's
public key (``[software]``, paths outside the package, installed read-only).

**Verification** (:func:`verify`): the signature over the manifest's exact bytes, then
every listed file hashed again; a file changed, missing, or present in a package but
not listed is a mismatch. It runs at start-up (a mismatch: the daemon refuses to start,
after latching ``SOFTWARE_MISMATCH`` in the journal), every ``interval_hours`` (a
mismatch latches the fault, which stops play, and raises the alert) and on demand
(``tablectl verify-software``, the console's ``verify-software``, the signed command
``verify_software``).

**The seeded answer** (G2S GAT style): the requester sends a seed, the table answers
``seeded_digest``: for each listed file in path order, the line
``HMAC-SHA256(key=seed as UTF-8, file bytes) in hex, two spaces, the path, newline``;
the answer is the SHA-256 of those lines. A lab reproduces it from its own copy of the
certified build with ``openssl dgst -sha256 -hmac SEED`` and ``sha256sum``
(``docs/integrity.md``), so a table cannot answer from a stored list: it must read
the files.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..auth import KeyFileError, load_public_key
from ..config import FieldSpec, register_section, validate_fields
from ..jsonio import JSON

#: The packages the daemon runs, as installed (the tools, tablesim and tableview, are
#: not part of the certified runtime).
PACKAGES = ("firmware_host", "drivers")
MANIFEST_FORMAT = 1
#: A requester's seed: printable ASCII without spaces or quotes, 8..128 characters.
SEED = re.compile(r"^[A-Za-z0-9_.:+/=-]{8,128}$")


def default_root() -> Path:
    """The directory holding the running packages (site-packages, or the checkout of
    an editable install)."""
    return Path(__file__).resolve().parents[2]


def installed_files(root: Path, packages: Iterable[str] = PACKAGES) -> list[str]:
    """Every file of ``packages`` under ``root``, as sorted POSIX paths relative to
    ``root`` (``__pycache__`` and ``*.pyc`` left out: Python writes them itself)."""
    out = []
    for pkg in packages:
        base = root / pkg
        for p in base.rglob("*"):
            if p.is_dir() or "__pycache__" in p.parts or p.suffix in (".pyc", ".pyo"):
                continue
            out.append(p.relative_to(root).as_posix())
    return sorted(out)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def build_manifest(root: Path, *, version: str, packages: Iterable[str] = PACKAGES) -> bytes:
    """The manifest of the packages under ``root``: canonical JSON bytes (sorted keys)."""
    pk = tuple(packages)
    files = {rel: file_sha256(root / rel) for rel in installed_files(root, pk)}
    body = {
        "format": MANIFEST_FORMAT,
        "software": "table-controller",
        "version": version,
        "algorithm": "sha256",
        "packages": list(pk),
        "files": files,
    }
    return (json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def sign_manifest(manifest: bytes, key: Ed25519PrivateKey) -> bytes:
    """The signature file's content: base64 of the Ed25519 signature, and a newline."""
    return base64.b64encode(key.sign(manifest)) + b"\n"


def seeded_digest(root: Path, paths: Iterable[str], seed: str) -> str:
    """The GAT-style answer over the files ``paths`` under ``root`` (module docstring)."""
    key = seed.encode("utf-8")
    lines = hashlib.sha256()
    for rel in sorted(paths):
        mac = hmac.new(key, digestmod=hashlib.sha256)
        try:
            with (root / rel).open("rb") as f:
                for chunk in iter(lambda f=f: f.read(1 << 16), b""):  # type: ignore[misc]
                    mac.update(chunk)
            line = f"{mac.hexdigest()}  {rel}\n"
        except OSError:
            line = f"{'-' * 64}  {rel}\n"  # missing: the answer cannot match the lab's
        lines.update(line.encode("utf-8"))
    return lines.hexdigest()


@dataclass(frozen=True)
class SoftwareSettings:
    """``[software]``: where the signed manifest and the build's public key are."""

    manifest: str = ""
    public_key: str = ""
    interval_hours: int = 24

    @property
    def configured(self) -> bool:
        return bool(self.manifest and self.public_key)


SOFTWARE_SPECS: dict[str, FieldSpec] = {
    "manifest": FieldSpec(
        "str", "", doc="the signed manifest of the installed files (its signature: <manifest>.sig)"
    ),
    "public_key": FieldSpec("str", "", doc="the build's Ed25519 public key (PEM)"),
    "interval_hours": FieldSpec(
        "int", 24, range=(1, 24), doc="hours between two checks while running (GLI-24: daily)"
    ),
}


def _validate(data: Any, path: str, errors: list[str]) -> SoftwareSettings:
    n = len(errors)
    vals = validate_fields(SOFTWARE_SPECS, data, path, errors)
    if len(errors) > n:
        return SoftwareSettings()
    if bool(vals.get("manifest")) != bool(vals.get("public_key")):
        errors.append(f"{path}: manifest and public_key go together")
        return SoftwareSettings()
    return SoftwareSettings(**vals)


register_section("software", _validate)


@dataclass(frozen=True)
class Verification:
    """What one check found."""

    ok: bool
    #: Why not, one line (empty when ok).
    reason: str = ""
    version: str | None = None
    files: int = 0
    manifest_sha256: str | None = None
    changed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unlisted: tuple[str, ...] = ()
    seed: str | None = None
    seeded_digest: str | None = None
    root: str = ""
    extra: Mapping[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "ok": self.ok,
            "reason": self.reason,
            "version": self.version,
            "files": self.files,
            "manifest_sha256": self.manifest_sha256,
            "changed": list(self.changed),
            "missing": list(self.missing),
            "unlisted": list(self.unlisted),
            "root": self.root,
        }
        if self.seed is not None:
            out["seed"] = self.seed
            out["seeded_digest"] = self.seeded_digest
        return out

    def summary(self) -> str:
        if self.ok:
            return (
                f"software verified: {self.files} file(s) of version {self.version} match the "
                f"signed manifest (sha256 {self.manifest_sha256})"
            )
        return f"SOFTWARE MISMATCH: {self.reason}"


def verify(
    settings: SoftwareSettings, *, root: Path | None = None, seed: str | None = None
) -> Verification:
    """Check the installed files against the signed manifest (module docstring).
    Never raises for what it finds: a problem is a failed :class:`Verification`."""
    root = root or default_root()
    where = str(root)
    mpath = Path(settings.manifest)
    try:
        manifest = mpath.read_bytes()
        sig_text = Path(str(mpath) + ".sig").read_bytes()
    except OSError as exc:
        return Verification(False, f"cannot read the manifest or its signature: {exc}", root=where)
    msha = hashlib.sha256(manifest).hexdigest()
    try:
        public = load_public_key(settings.public_key)
        public.verify(base64.b64decode(sig_text.strip(), validate=True), manifest)
    except KeyFileError as exc:
        return Verification(False, str(exc), manifest_sha256=msha, root=where)
    except (InvalidSignature, binascii.Error, ValueError):
        return Verification(
            False, "the manifest's signature is not the build key's", manifest_sha256=msha,
            root=where,
        )  # fmt: skip
    try:
        body = json.loads(manifest)
        files: dict[str, str] = dict(body["files"])
        packages = tuple(body["packages"])
        version = str(body["version"])
        if body.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"format {body.get('format')!r}")
    except (ValueError, KeyError, TypeError) as exc:
        return Verification(False, f"the manifest is not readable: {exc}", manifest_sha256=msha,
                            root=where)  # fmt: skip
    changed, missing = [], []
    for rel, digest in sorted(files.items()):
        p = root / rel
        try:
            if file_sha256(p) != digest:
                changed.append(rel)
        except OSError:
            missing.append(rel)
    unlisted = [rel for rel in installed_files(root, packages) if rel not in files]
    ok = not (changed or missing or unlisted)
    why = []
    if changed:
        why.append(f"{len(changed)} file(s) changed ({', '.join(changed[:5])})")
    if missing:
        why.append(f"{len(missing)} file(s) missing ({', '.join(missing[:5])})")
    if unlisted:
        why.append(f"{len(unlisted)} file(s) not in the manifest ({', '.join(unlisted[:5])})")
    return Verification(
        ok,
        "; ".join(why),
        version=version,
        files=len(files),
        manifest_sha256=msha,
        changed=tuple(changed),
        missing=tuple(missing),
        unlisted=tuple(unlisted),
        seed=seed,
        seeded_digest=seeded_digest(root, files, seed) if seed is not None else None,
        root=where,
    )
