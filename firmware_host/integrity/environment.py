"""What the table's interpreter runs: the places a manifest must cover (``software.py``).

A **scope** is the set of *trees* a manifest lists, each by its absolute path as
installed: a directory (every file under it, recursively) or a single file. Two scopes:

- ``environment`` (:func:`environment_scope`, what a certified table's manifest covers):
  everything the interpreter of this process executes or could import from:

  - the virtual environment (``sys.prefix``), whole: its entry scripts (``bin/tablectl``)
    and interpreter links, ``pyvenv.cfg``, and the site-packages with every installed
    distribution, its metadata (``RECORD``), its bytecode and every ``.pth`` file;
  - the interpreter the environment points to (the binary, and ``libpython`` when the
    interpreter is built shared);
  - every other directory on the import path, whole: the standard library (with
    ``lib-dynload``), the system's site-packages when the environment includes them,
    a directory a ``.pth`` file adds, and the project's packages wherever an (editable)
    install maps them;
  - the entries of the import path that do not exist (``absent``: a ``python311.zip``
    placed there later would be imported from first);
  - what a symbolic link of these trees points to outside them (Debian's
    ``sitecustomize.py`` in ``/etc``), as a tree of its own.

  Inside the standard library's directory, a subdirectory whose name no ``import``
  statement can spell (not an identifier) and which is not itself on the import path
  is ``skipped`` and named in the manifest: the base interpreter's own
  ``site-packages`` (a virtual environment without system packages never imports
  from it) and its build configuration (``config-3.11-...``: a static library and a
  Makefile). Should such a directory come onto the import path, it is ``uncovered``.

- ``packages`` (:func:`packages_scope`): the project's packages only, bytecode left
  out; for the demo and the tests, which run from a development checkout. A table's
  manifest is never of this scope (``docs/integrity.md``).

:func:`uncovered` checks the running process against a scope: every directory on its
import path, every module it has loaded and its interpreter must lie in a tree.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import site
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..jsonio import JSON

#: The project's packages (all of them are installed; ``tablesim`` is what ``tablectl
#: run --simulate`` and the demo run).
PACKAGES = (
    "firmware_host", "drivers", "tablecommon", "tablesim", "tableview", "flooringest", "tablefleet"
)
ENVIRONMENT = "environment"
PACKAGES_SCOPE = "packages"
SCOPES = (ENVIRONMENT, PACKAGES_SCOPE)


@dataclass(frozen=True)
class Scope:
    """The trees a manifest lists (absolute paths as installed)."""

    kind: str
    #: tree root -> ``dir`` or ``file``
    trees: Mapping[str, str]
    #: directories inside a tree that are not walked (not on the import path)
    skipped: tuple[str, ...] = ()
    #: entries of the import path that did not exist when the manifest was built
    absent: tuple[str, ...] = ()
    #: the interpreter's version and paths (recorded for the reader of the manifest)
    python: Mapping[str, JSON] = field(default_factory=dict)

    @property
    def bytecode(self) -> bool:
        """Bytecode (``__pycache__``, ``*.pyc``) is listed like every file (environment),
        or left out (packages: a checkout's bytecode comes and goes)."""
        return self.kind == ENVIRONMENT

    def to_json(self) -> dict[str, JSON]:
        return {
            "scope": self.kind,
            "trees": dict(sorted(self.trees.items())),
            "skipped": sorted(self.skipped),
            "absent": sorted(self.absent),
            "python": dict(self.python),
        }

    @staticmethod
    def from_json(body: Mapping[str, JSON]) -> Scope:
        kind = body["scope"]
        trees = body["trees"]
        if kind not in SCOPES or not isinstance(trees, dict):
            raise ValueError(f"scope {kind!r}")
        if any(v not in ("dir", "file") or not k.startswith("/") for k, v in trees.items()):
            raise ValueError("trees must map absolute paths to 'dir' or 'file'")
        python = body.get("python")
        return Scope(
            str(kind),
            {str(k): str(v) for k, v in trees.items()},
            tuple(str(p) for p in _strings(body.get("skipped"))),
            tuple(str(p) for p in _strings(body.get("absent"))),
            dict(python) if isinstance(python, dict) else {},
        )


def _strings(value: JSON) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of paths")
    return [str(v) for v in value]


def within(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (plain strings: absolute, normalised)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _norm(p: str | Path) -> str:
    return os.path.normpath(os.path.abspath(p))


def _add(trees: dict[str, str], path: str, kind: str) -> None:
    """Add a tree unless a directory tree holds it already; drop the trees it holds."""
    if any(k == "dir" and within(path, r) for r, k in trees.items()):
        return
    if kind == "dir":
        for r in [r for r in trees if within(r, path)]:
            del trees[r]
    trees[path] = kind


def import_path() -> list[str]:
    """This process's import path as the daemon's would be: ``sys.path`` without its
    first entry when that is the script's directory or the current directory (a
    console script's ``bin``, inside the environment), without the user's own
    site-packages (the service sets ``PYTHONNOUSERSITE``), normalised; path hooks that
    are not paths (an editable install's finder) left out."""
    entries = list(sys.path)
    if entries and not sys.flags.safe_path:
        entries = entries[1:]
    user = _norm(site.getusersitepackages())  # the daemon runs without (PYTHONNOUSERSITE)
    return [
        _norm(e) for e in entries if e and not e.startswith("__editable__") and _norm(e) != user
    ]


def _libpython() -> str | None:
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return None
    libdir = sysconfig.get_config_var("LIBDIR")
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
    if not libdir or not name:
        return None
    p = Path(libdir) / str(name)
    return _norm(os.path.realpath(p)) if p.exists() else None


def package_dirs(packages: Iterable[str] = PACKAGES) -> list[str]:
    """Where the interpreter finds the project's packages (a checkout, for an editable
    install)."""
    out = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            out += [_norm(p) for p in spec.submodule_search_locations]
    return out


def environment_scope(packages: Iterable[str] = PACKAGES) -> Scope:
    """The ``environment`` scope of the running interpreter (module docstring)."""
    trees: dict[str, str] = {}
    if sys.prefix != sys.base_prefix:
        _add(trees, _norm(sys.prefix), "dir")
    exe = _norm(os.path.realpath(sys.executable))
    _add(trees, exe, "file")
    lib = _libpython()
    if lib is not None:
        _add(trees, lib, "file")
    path = import_path()
    absent = []
    for entry in path:
        if os.path.isdir(entry):
            _add(trees, entry, "dir")
        elif os.path.exists(entry):
            _add(trees, entry, "file")
        else:
            absent.append(entry)
    for d in package_dirs(packages):
        _add(trees, d, "dir")
    stdlib = _norm(sysconfig.get_path("stdlib"))
    skipped = []
    if os.path.isdir(stdlib) and trees.get(stdlib) == "dir":
        for child in sorted(os.scandir(stdlib), key=lambda e: e.name):
            p = _norm(child.path)
            if (
                child.is_dir(follow_symlinks=False)
                and not child.name.isidentifier()
                and not any(within(e, p) for e in path)
            ):
                skipped.append(p)
    python: dict[str, JSON] = {
        "implementation": sys.implementation.name,
        "version": platform.python_version(),
        "cache_tag": sys.implementation.cache_tag,
        "executable": exe,
        "prefix": _norm(sys.prefix),
        "base_prefix": _norm(sys.base_prefix),
        "import_path": list(path),
    }
    return Scope(ENVIRONMENT, trees, tuple(skipped), tuple(absent), python)


def packages_scope(root: Path | None = None, packages: Iterable[str] = PACKAGES) -> Scope:
    """The ``packages`` scope: the project's packages under ``root`` (by default where
    the interpreter finds them)."""
    if root is None:
        dirs = package_dirs(packages)
    else:
        dirs = [_norm(root / p) for p in packages if (root / p).is_dir()]
    return Scope(PACKAGES_SCOPE, {d: "dir" for d in dirs})


def with_link_targets(scope: Scope, links: Mapping[str, str]) -> Scope | None:
    """``scope`` with the targets of ``links`` that lie outside its trees as trees of
    their own (Debian's ``/usr/lib/python3.11/sitecustomize.py`` links to
    ``/etc/python3.11/sitecustomize.py``: the interpreter runs what the link points to,
    so that is verified too); None when every target is inside already."""
    trees = dict(scope.trees)
    for link in links:
        target = os.path.realpath(link)
        if not os.path.exists(target) or _covered(scope, target):
            continue
        _add(trees, target, "dir" if os.path.isdir(target) else "file")
    if trees == dict(scope.trees):
        return None
    return Scope(scope.kind, trees, scope.skipped, scope.absent, scope.python)


def _covered(scope: Scope, path: str) -> bool:
    return any(within(path, r) for r in scope.trees) and not any(
        within(path, s) for s in scope.skipped
    )


def uncovered(scope: Scope) -> list[str]:
    """What the running process imports from, or has loaded, outside the scope's trees:
    a directory of its import path (``PYTHONPATH``, a ``.pth`` added after the build, the
    current directory of ``python -m``), a loaded module's file, its interpreter."""
    out: dict[str, str] = {}
    trees = {os.path.realpath(r): k for r, k in scope.trees.items()}
    real = Scope(scope.kind, trees, tuple(os.path.realpath(s) for s in scope.skipped))
    for entry in sys.path:
        if entry.startswith("__editable__"):  # an editable install's finder: its mapping
            continue  # shows in the modules it loaded
        p = entry or os.getcwd()
        if os.path.exists(p) and not _covered(real, os.path.realpath(p)):
            out[_norm(p)] = "on the import path"
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if isinstance(f, str) and not _covered(real, os.path.realpath(f)):
            out[_norm(f)] = f"module {name}"
    exe = os.path.realpath(sys.executable)
    if not _covered(real, exe):
        out[_norm(exe)] = "the interpreter"
    return [f"{p} ({why})" for p, why in sorted(out.items())]
