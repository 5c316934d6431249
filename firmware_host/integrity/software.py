"""Software self-verification (issue 19, item 5; issue 37; GLI-24 software authentication).

**The manifest** lists, by absolute path as installed, every file of a *scope* with its
SHA-256 and every symbolic link with its target (``environment.py`` says what a scope
holds, ``manifest.py`` how its trees are read). A table's manifest is of the
``environment`` scope: the virtual environment whole (the project, every dependency
with its metadata, the ``.pth`` files, the bytecode, the entry scripts), the
interpreter it points to and every other directory the interpreter imports from (the
standard library, ...). It is written and signed at build time (``tablectl
software-manifest``) with the vendor's Ed25519 build key, which never leaves the build
machine; the table holds the manifest, its signature (``<manifest>.sig``, 64 raw bytes
base64) and the build's public key (``[software]``, paths outside the verified trees,
installed read-only). At build time every dependency is also checked against its own
``RECORD`` (``records.py``).

**Verification** (:func:`verify`): the signature over the manifest's exact bytes, then
every tree read again: a file changed, missing, or present in a tree but not listed
(a module that could be imported, a ``.pth`` file, a ``.pyc``), a link pointing
elsewhere, an entry of the import path that has appeared, is a difference; so is, for
the running table, a directory of its import path, a loaded module or its interpreter
outside the manifest's trees (``uncovered``). It runs at start-up (a difference: the
daemon refuses to start, after latching ``SOFTWARE_MISMATCH`` in the journal), every
``interval_hours`` (a difference latches the fault, which stops play, and raises the
alert) and on demand (``tablectl verify-software``, the console's ``verify-software``,
the signed command ``verify_software``).

**The seeded answer** (G2S GAT style): the requester sends a seed, the table answers
``seeded_digest``: for each listed path in order, the line ``HMAC-SHA256(key=seed as
UTF-8, the file's bytes, or a link's target) in hex, two spaces, the path, newline``;
the answer is the SHA-256 of those lines. A lab reproduces it from its own copy of the
certified image with ``openssl dgst -sha256 -hmac SEED`` and ``sha256sum``
(``docs/integrity.md``), so a table cannot answer from a stored list: it must read
the files.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tablecommon.settings import FieldSpec, register_section, validate_fields

from ..auth import KeyFileError, load_public_key
from ..jsonio import JSON
from . import records
from .environment import (
    ENVIRONMENT,
    PACKAGES,
    Scope,
    environment_scope,
    packages_scope,
    uncovered,
    with_link_targets,
    within,
)
from .manifest import Found, compare, seeded_lines, walk

__all__ = [
    "MANIFEST_FORMAT",
    "PACKAGES",
    "SEED",
    "ManifestRefused",
    "SoftwareSettings",
    "Verification",
    "build_manifest",
    "default_root",
    "environment_scope",
    "make_manifest",
    "packages_scope",
    "sign_manifest",
    "verify",
]

MANIFEST_FORMAT = 2
#: A requester's seed: printable ASCII without spaces or quotes, 8..128 characters.
SEED = re.compile(r"^[A-Za-z0-9_.:+/=-]{8,128}$")


def default_root() -> Path:
    """The directory holding the running packages (site-packages, or the checkout of
    an editable install)."""
    return Path(__file__).resolve().parents[2]


class ManifestRefused(ValueError):
    """The environment cannot be signed as it is (``problems``: one line each)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} problem(s): " + "; ".join(problems[:5]))
        self.problems = problems


def make_manifest(
    scope: Scope, *, version: str, accept_unrecorded: bool = False
) -> tuple[bytes, Found]:
    """The manifest of ``scope`` as it is now: canonical JSON bytes (sorted keys), and
    what was read. Refused (:class:`ManifestRefused`) when a tree holds what cannot be
    listed or read, when a dependency differs from its RECORD, or (unless
    ``accept_unrecorded``: then they are named in the manifest) when the environment's
    site-packages hold a file of no distribution."""
    found = walk(scope)
    for _ in range(8):  # a link's target may hold links of its own
        wider = with_link_targets(scope, found.links)
        if wider is None:
            break
        scope, found = wider, walk(wider)
    refused = [f"{p} (not a regular file or link, or its name cannot be listed)"
               for p in found.others]  # fmt: skip
    refused += [f"{p} (unreadable)" for p in found.unreadable]
    refused += [f"{p} (not readable by every user: the daemon could not verify it)"
                for p in found.private]  # fmt: skip
    distributions: list[str] = []
    unrecorded: list[str] = []
    if scope.kind == ENVIRONMENT:
        dirs = records.site_dirs(_import_path(scope))
        recorded = records.owners(dirs)
        distributions = sorted({str(o) for o in recorded.values()})
        prefix = str(scope.python.get("prefix", ""))
        managed = [d for d in dirs if prefix and within(d, prefix)]
        differ, unrecorded = records.problems(found.files, found.links, recorded, managed)
        refused += differ
        if unrecorded and not accept_unrecorded:
            refused += [f"{p} (in no distribution's RECORD)" for p in unrecorded]
    if refused:
        raise ManifestRefused(refused)
    body: dict[str, JSON] = {
        "format": MANIFEST_FORMAT,
        "software": "table-controller",
        "version": version,
        "algorithm": "sha256",
        **scope.to_json(),
        "files": dict(found.files),
        "links": dict(found.links),
        "distributions": list(distributions),
        "unrecorded": unrecorded,
    }
    return (json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n").encode(), found


def build_manifest(root: Path | None = None, *, version: str, scope: Scope | None = None) -> bytes:
    """The manifest of ``scope``; by default the ``packages`` scope under ``root`` (the
    demo's and the tests' throwaway manifests; a table's is built by ``tablectl
    software-manifest`` over its environment)."""
    return make_manifest(scope or packages_scope(root), version=version)[0]


def sign_manifest(manifest: bytes, key: Ed25519PrivateKey) -> bytes:
    """The signature file's content: base64 of the Ed25519 signature, and a newline."""
    return base64.b64encode(key.sign(manifest)) + b"\n"


def _import_path(scope: Scope) -> list[str]:
    path = scope.python.get("import_path")
    return [str(p) for p in path] if isinstance(path, list) else []


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
    #: The manifest's scope (``environment``: a table's; ``packages``: a demo's).
    scope: str | None = None
    #: How many paths the manifest lists (files and links).
    files: int = 0
    #: Bytes read, and the seconds the check took.
    size: int = 0
    elapsed_s: float = 0.0
    manifest_sha256: str | None = None
    changed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unlisted: tuple[str, ...] = ()
    #: What the running process imports from or has loaded outside the manifest's trees.
    uncovered: tuple[str, ...] = ()
    #: The distribution each differing path belongs to (``paho-mqtt 2.1.0``, ``in no
    #: RECORD``), for the paths in a site-packages.
    owners: Mapping[str, str] = field(default_factory=dict)
    seed: str | None = None
    seeded_digest: str | None = None
    #: Where the manifest's paths were read: ``/`` (the running table) or a lab's prefix.
    root: str = "/"
    #: Where this process reads and writes its bytecode (``PYTHONPYCACHEPREFIX``; None:
    #: beside the sources, which the manifest lists).
    pycache_prefix: str | None = None

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "ok": self.ok,
            "reason": self.reason,
            "version": self.version,
            "scope": self.scope,
            "files": self.files,
            "size": self.size,
            "elapsed_s": self.elapsed_s,
            "manifest_sha256": self.manifest_sha256,
            "changed": list(self.changed),
            "missing": list(self.missing),
            "unlisted": list(self.unlisted),
            "uncovered": list(self.uncovered),
            "owners": dict(self.owners),
            "root": self.root,
            "pycache_prefix": self.pycache_prefix,
        }
        if self.seed is not None:
            out["seed"] = self.seed
            out["seeded_digest"] = self.seeded_digest
        return out

    def differences(self) -> list[str]:
        """One line per difference: ``changed: PATH (paho-mqtt 2.1.0)``."""
        out = []
        for key in ("changed", "missing", "unlisted"):
            for p in getattr(self, key):
                out.append(f"{key}: {p}" + (f" ({self.owners[p]})" if p in self.owners else ""))
        out += [f"uncovered: {p}" for p in self.uncovered]
        return out

    def summary(self) -> str:
        if self.ok:
            return (
                f"software verified: {self.files} file(s) of version {self.version} "
                f"({self.scope} scope, {self.size / 1e6:.1f} MB read in {self.elapsed_s:.2f} s) "
                f"match the signed manifest (sha256 {self.manifest_sha256})"
            )
        return f"SOFTWARE MISMATCH: {self.reason}"


def _failed(reason: str, where: str, t0: float, msha: str | None = None) -> Verification:
    return Verification(False, reason, manifest_sha256=msha, root=where,
                        elapsed_s=round(time.perf_counter() - t0, 3))  # fmt: skip


def _read_manifest(body: Any) -> tuple[Scope, dict[str, str], dict[str, str], str]:
    if not isinstance(body, dict) or body.get("format") != MANIFEST_FORMAT:
        fmt = body.get("format") if isinstance(body, dict) else None
        raise ValueError(f"format {fmt!r} (this software reads format {MANIFEST_FORMAT})")
    files, links = body["files"], body["links"]
    if not isinstance(files, dict) or not isinstance(links, dict):
        raise ValueError("files and links must be objects")
    return (
        Scope.from_json(body),
        {str(k): str(v) for k, v in files.items()},
        {str(k): str(v) for k, v in links.items()},
        str(body["version"]),
    )


def verify(
    settings: SoftwareSettings,
    *,
    prefix: Path | None = None,
    seed: str | None = None,
    running: bool | None = None,
) -> Verification:
    """Check the installed software against the signed manifest (module docstring).
    ``prefix``: where a copy of the image is mounted (None: the running table);
    ``running``: also check that this process imports only from the manifest's trees
    (by default: for an environment manifest checked in place). Never raises for what
    it finds: a problem is a failed :class:`Verification`."""
    t0 = time.perf_counter()
    where = "/" if prefix is None else str(prefix)
    mpath = Path(settings.manifest)
    try:
        manifest = mpath.read_bytes()
        sig_text = Path(str(mpath) + ".sig").read_bytes()
    except OSError as exc:
        return _failed(f"cannot read the manifest or its signature: {exc}", where, t0)
    msha = hashlib.sha256(manifest).hexdigest()
    try:
        public = load_public_key(settings.public_key)
        public.verify(base64.b64decode(sig_text.strip(), validate=True), manifest)
    except KeyFileError as exc:
        return _failed(str(exc), where, t0, msha)
    except (InvalidSignature, binascii.Error, ValueError):
        return _failed("the manifest's signature is not the build key's", where, t0, msha)
    try:
        scope, files, links, version = _read_manifest(json.loads(manifest))
    except (ValueError, KeyError, TypeError) as exc:
        return _failed(f"the manifest is not readable: {exc}", where, t0, msha)
    found = walk(scope, prefix=prefix, seed=seed)
    diff = compare(files, links, scope.absent, found, prefix=prefix)
    if running is None:
        running = prefix is None and scope.kind == ENVIRONMENT
    outside = tuple(uncovered(scope)) if running else ()
    owners: dict[str, str] = {}
    if diff and scope.kind == ENVIRONMENT:
        dirs = records.site_dirs(_import_path(scope), prefix)
        recorded = records.owners(dirs, prefix)
        for p in (*diff.changed, *diff.missing, *diff.unlisted):
            owner = records.owner_of(p, recorded, dirs)
            if owner is not None:
                owners[p] = owner
    why = []
    for name, items in (("changed", diff.changed), ("missing", diff.missing),
                        ("not in the manifest", diff.unlisted)):  # fmt: skip
        if items:
            why.append(f"{len(items)} file(s) {name} ({', '.join(items[:5])})")
    if outside:
        why.append(
            f"{len(outside)} path(s) the interpreter uses outside the manifest "
            f"({', '.join(outside[:3])})"
        )
    listed = files.keys() | links.keys()
    return Verification(
        not (diff or outside),
        "; ".join(why),
        version=version,
        scope=scope.kind,
        files=len(listed),
        size=found.size,
        elapsed_s=round(time.perf_counter() - t0, 3),
        manifest_sha256=msha,
        changed=diff.changed,
        missing=diff.missing,
        unlisted=diff.unlisted,
        uncovered=outside,
        owners=owners,
        seed=seed,
        seeded_digest=seeded_lines(listed, found) if seed is not None else None,
        root=where,
        pycache_prefix=sys.pycache_prefix,
    )
