"""Reading a scope's trees (``environment.py``) into what a manifest lists, and comparing.

:func:`walk` visits every tree of a scope, under an optional ``prefix`` (a lab's copy
of the image mounted elsewhere: the manifest's path ``/opt/tablectl/venv/bin/tablectl``
is read at ``PREFIX/opt/tablectl/venv/bin/tablectl``), without following symbolic
links: a regular file is hashed (SHA-256, and with a seed the HMAC of the seeded
answer, in the same read); a symbolic link is listed by its target (``bin/python ->
/usr/bin/python3``: pointing it elsewhere is a change); anything else (a FIFO, a
device, a name that is not UTF-8 or holds a control character) cannot be listed and
is a difference wherever it appears.

:func:`compare` gives what differs from the manifest: ``changed`` (another content,
another link target, a file become a link), ``missing``, ``unlisted`` (present in a
tree but not in the manifest, or present at an import-path entry that was absent).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .environment import Scope

_CHUNK = 1 << 17
#: The line of a file that could not be read, in the seeded answer.
UNREAD = "-" * 64


def _nameable(path: str) -> bool:
    """A path a manifest can list: valid UTF-8, no control character."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return path.isprintable()


@dataclass
class Found:
    """What :func:`walk` found in the trees (keys: the paths as installed)."""

    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    #: present but not listable (not a regular file or a link, or an unnameable name)
    others: list[str] = field(default_factory=list)
    #: regular files that could not be read (permissions): never a match
    unreadable: list[str] = field(default_factory=list)
    #: files and directories other users cannot read (the daemon runs as its own user:
    #: it could not verify them; the build refuses them)
    private: list[str] = field(default_factory=list)
    #: the HMAC of each file's content, or of each link's target (with a seed)
    macs: dict[str, str] = field(default_factory=dict)
    size: int = 0


def _real(path: str, prefix: Path | None) -> str:
    return path if prefix is None else str(prefix) + path


def _hash_file(real: str, key: bytes | None, buf: bytearray) -> tuple[str, str | None, int]:
    h = hashlib.sha256()
    mac = hmac.new(key, digestmod=hashlib.sha256) if key is not None else None
    view = memoryview(buf)
    n = 0
    with open(real, "rb", buffering=0) as f:
        while True:
            got = f.readinto(buf)
            if not got:
                break
            n += got
            h.update(view[:got])
            if mac is not None:
                mac.update(view[:got])
    return h.hexdigest(), mac.hexdigest() if mac is not None else None, n


def walk(scope: Scope, *, prefix: Path | None = None, seed: str | None = None) -> Found:
    """Every file and link of ``scope``'s trees (module docstring)."""
    key = seed.encode("utf-8") if seed is not None else None
    out = Found()
    buf = bytearray(_CHUNK)
    skipped = set(scope.skipped)

    def entry(path: str, st: os.stat_result) -> None:
        real = _real(path, prefix)
        if not _nameable(path):
            out.others.append(ascii(path))
        elif stat.S_ISLNK(st.st_mode):
            target = os.readlink(real)
            out.links[path] = target
            if key is not None:
                out.macs[path] = hmac.new(key, os.fsencode(target), hashlib.sha256).hexdigest()
        elif stat.S_ISREG(st.st_mode):
            if not st.st_mode & stat.S_IROTH:
                out.private.append(path)
            try:
                digest, mac, n = _hash_file(real, key, buf)
            except OSError:
                out.unreadable.append(path)
                return
            out.files[path] = digest
            out.size += n
            if mac is not None:
                out.macs[path] = mac
        else:
            out.others.append(path)

    for root, kind in sorted(scope.trees.items()):
        try:
            st = os.lstat(_real(root, prefix))
        except OSError:
            continue  # its files are missing
        if kind == "file" or not stat.S_ISDIR(st.st_mode):
            entry(root, st)
            continue
        stack = [root]
        while stack:
            d = stack.pop()
            try:
                items = list(os.scandir(_real(d, prefix)))
            except OSError:
                out.unreadable.append(d)
                continue
            for it in items:
                path = f"{d.rstrip('/')}/{it.name}"
                if not scope.bytecode and (
                    it.name == "__pycache__" or it.name.endswith((".pyc", ".pyo"))
                ):
                    continue
                try:
                    st = it.stat(follow_symlinks=False)
                except OSError:
                    out.unreadable.append(path)
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if path not in skipped:
                        stack.append(path)
                        if st.st_mode & (stat.S_IROTH | stat.S_IXOTH) != (
                            stat.S_IROTH | stat.S_IXOTH
                        ):
                            out.private.append(path)
                else:
                    entry(path, st)
    return out


@dataclass(frozen=True)
class Differences:
    changed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unlisted: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changed or self.missing or self.unlisted)


def compare(
    files: Mapping[str, str],
    links: Mapping[str, str],
    absent: Iterable[str],
    found: Found,
    *,
    prefix: Path | None = None,
) -> Differences:
    """What differs between the manifest (``files``, ``links``, ``absent``) and
    ``found``."""
    changed, missing = [], []
    for path, digest in files.items():
        if path in found.files:
            if found.files[path] != digest:
                changed.append(path)
        elif path in found.links or path in found.others or path in found.unreadable:
            changed.append(path)
        else:
            missing.append(path)
    for path, target in links.items():
        if path in found.links:
            if found.links[path] != target:
                changed.append(path)
        elif path in found.files or path in found.others or path in found.unreadable:
            changed.append(path)
        else:
            missing.append(path)
    listed = files.keys() | links.keys()
    unlisted = [p for p in (*found.files, *found.links, *found.unreadable) if p not in listed]
    unlisted += [p for p in found.others if p not in listed]
    unlisted += [p for p in absent if os.path.lexists(_real(p, prefix))]
    return Differences(tuple(sorted(changed)), tuple(sorted(missing)), tuple(sorted(set(unlisted))))


def seeded_lines(paths: Iterable[str], found: Found) -> str:
    """The GAT-style answer over ``paths`` (the manifest's files and links) from the
    HMACs :func:`walk` computed: for each path in order, ``HMAC  path`` and a newline
    (a path not found: 64 dashes); the SHA-256 of those lines."""
    lines = hashlib.sha256()
    for path in sorted(paths):
        lines.update(f"{found.macs.get(path, UNREAD)}  {path}\n".encode())
    return lines.hexdigest()
