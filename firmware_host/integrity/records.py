"""The installed distributions' own records (``RECORD``, read with ``importlib.metadata``):
which distribution a file belongs to, and the hash its installer wrote down.

At build time (``tablectl software-manifest``) every file of a distribution installed
in the virtual environment must still have the hash of its ``RECORD`` (a dependency
edited before the manifest was signed is refused), and every file of the environment's
site-packages must belong to a ``RECORD`` (bytecode compiled from a recorded source
counts as recorded); a file of no distribution is refused unless the builder accepts
it by name in the manifest (``unrecorded``). At verification each difference under a
site-packages directory is told with the distribution it belongs to, or ``in no
RECORD``.
"""

from __future__ import annotations

import base64
import binascii
import importlib.metadata as md
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .environment import within


@dataclass(frozen=True)
class Owner:
    """A distribution owning a file, and the file's SHA-256 as its RECORD says (hex;
    None: recorded without a hash, as bytecode and the RECORD itself are)."""

    name: str
    version: str
    sha256: str | None

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


def _record_sha256(value: md.FileHash | None) -> str | None:
    if value is None or value.mode != "sha256":
        return None
    try:
        return base64.urlsafe_b64decode(value.value + "=" * (-len(value.value) % 4)).hex()
    except (binascii.Error, ValueError):
        return "unreadable"


def site_dirs(import_path: Iterable[str], prefix: Path | None = None) -> list[str]:
    """The entries of an import path that hold installed distributions."""
    out = []
    for d in import_path:
        real = d if prefix is None else str(prefix) + d
        try:
            names = os.listdir(real)
        except OSError:
            continue
        if any(n.endswith(".dist-info") for n in names):
            out.append(d)
    return out


def owners(dirs: Iterable[str], prefix: Path | None = None) -> dict[str, Owner]:
    """Every file the distributions under ``dirs`` record, by its path as installed."""
    out: dict[str, Owner] = {}
    for d in dirs:
        real = d if prefix is None else str(prefix) + d
        for dist in md.distributions(path=[real]):
            name = dist.metadata["Name"] or "?"
            for f in dist.files or ():
                path = os.path.normpath(os.path.join(d, str(f)))
                out.setdefault(path, Owner(name, dist.version, _record_sha256(f.hash)))
    return out


def _bytecode_of_recorded(path: str, recorded: Mapping[str, Owner]) -> bool:
    """``.../__pycache__/mod.cpython-311[.opt-1].pyc`` of a recorded ``.../mod.py``."""
    head, name = os.path.split(path)
    if os.path.basename(head) != "__pycache__" or not name.endswith(".pyc"):
        return False
    source = os.path.join(os.path.dirname(head), name.split(".", 1)[0] + ".py")
    return source in recorded


def problems(
    files: Mapping[str, str],
    links: Mapping[str, str],
    recorded: Mapping[str, Owner],
    managed: Iterable[str],
) -> tuple[list[str], list[str]]:
    """At build time: ``(differ, unrecorded)``: the files whose hash is not the one
    their RECORD gives (or recorded but absent), and the files under the ``managed``
    site-packages (the environment's own) that no RECORD names."""
    differ = []
    for path, owner in sorted(recorded.items()):
        if owner.sha256 is None:
            continue
        if path in files:
            if files[path] != owner.sha256:
                differ.append(f"{path} (differs from the RECORD of {owner})")
        elif path not in links:
            differ.append(f"{path} (in the RECORD of {owner}, not installed)")
    roots = list(managed)
    unrecorded = [
        p
        for p in sorted((*files, *links))
        if any(within(p, r) for r in roots)
        and p not in recorded
        and not _bytecode_of_recorded(p, recorded)
    ]
    return differ, unrecorded


def owner_of(path: str, recorded: Mapping[str, Owner], dirs: Iterable[str]) -> str | None:
    """The distribution ``path`` belongs to (``paho-mqtt 2.1.0``, ``bytecode of ...``,
    ``in no RECORD``) when it lies in a site-packages; None elsewhere."""
    owner = recorded.get(path)
    if owner is not None:
        return str(owner)
    if _bytecode_of_recorded(path, recorded):
        head = os.path.dirname(os.path.dirname(path))
        name = os.path.basename(path).split(".", 1)[0] + ".py"
        return f"bytecode of {recorded[os.path.join(head, name)]}"
    if any(within(path, d) for d in dirs):
        return "in no RECORD"
    return None
