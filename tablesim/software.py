"""A manifest of the running packages signed with a throwaway build key, for the demo
and the tests (a real table's manifest covers its whole environment and is signed at
build time with the vendor's key, which never leaves the release machine:
``docs/integrity.md``)."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth.keys import public_pem
from firmware_host.integrity.software import build_manifest, sign_manifest


def throwaway_manifest(directory: str | Path, root: Path | None = None) -> dict[str, str]:
    """Sign the project's packages under ``root`` (default: where the interpreter finds
    them; the ``packages`` scope: a demo runs from a development checkout, whose
    environment is no table's) with a key made now and forgotten; the ``[software]``
    section naming the files written in ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    manifest = build_manifest(root, version="demo")
    (d / "software.manifest").write_bytes(manifest)
    (d / "software.manifest.sig").write_bytes(sign_manifest(manifest, key))
    (d / "build.pub").write_bytes(public_pem(key.public_key()))
    return {"manifest": str(d / "software.manifest"), "public_key": str(d / "build.pub")}
