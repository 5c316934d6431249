"""A table's installation in a temporary virtual environment, for the tests of the
software verification (never the project's own ``.venv``, which is only read).

:func:`make_venv` creates a virtual environment with the base interpreter of the one
running the tests, installs the project into it as pip would (the packages in
site-packages, a ``table_controller-*.dist-info`` with its ``RECORD``, the entry script
``bin/tablectl``) and the daemon's dependencies (their distributions copied file by
file from the running environment, by their own ``RECORD``s: the same files pip wrote),
then compiles the bytecode as pip does. Commands run in it with
``PYTHONPYCACHEPREFIX`` (as the service unit runs the daemon): they never write
bytecode into the environment or the shared standard library."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import os
import shutil
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement

from firmware_host import __version__
from firmware_host.integrity.environment import PACKAGES
from firmware_host.integrity.software import default_root

PROJECT = "table-controller"
PYVER = f"python{sys.version_info.major}.{sys.version_info.minor}"
ENTRY = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from firmware_host.cli import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


def site_packages(venv: Path) -> Path:
    return venv / "lib" / PYVER / "site-packages"


def _closure() -> list[md.Distribution]:
    """The distributions the project needs at run time (no extras), itself left out."""
    seen: dict[str, md.Distribution] = {}
    todo = [PROJECT]
    while todo:
        dist = md.distribution(todo.pop())
        name = str(dist.metadata["Name"]).lower().replace("_", "-")
        if name in seen:
            continue
        seen[name] = dist
        for r in dist.requires or ():
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return [d for n, d in seen.items() if n != PROJECT]


def _copy_distribution(dist: md.Distribution, venv: Path) -> None:
    site = site_packages(venv)
    for f in dist.files or ():
        src = Path(str(dist.locate_file(f)))
        dst = Path(os.path.normpath(site / str(f)))
        if not src.is_file() or not dst.is_relative_to(venv):
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def _record_line(site: Path, path: Path) -> str:
    data = path.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{os.path.relpath(path, site)},sha256={digest},{len(data)}"


def _install_project(venv: Path) -> None:
    site = site_packages(venv)
    for pkg in PACKAGES:
        shutil.copytree(default_root() / pkg, site / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    info = site / f"table_controller-{__version__}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {PROJECT}\nVersion: {__version__}\n"
    )
    (info / "INSTALLER").write_text("tests\n")
    (info / "entry_points.txt").write_text("[console_scripts]\ntablectl = firmware_host.cli:main\n")
    script = venv / "bin" / "tablectl"
    script.write_text(ENTRY.format(python=venv / "bin" / "python"))
    script.chmod(0o755)
    files = [p for pkg in PACKAGES for p in sorted((site / pkg).rglob("*")) if p.is_file()]
    files += [info / "METADATA", info / "INSTALLER", info / "entry_points.txt", script]
    lines = [_record_line(site, p) for p in files]
    lines.append(f"{os.path.relpath(info / 'RECORD', site)},,")
    (info / "RECORD").write_text("\n".join(lines) + "\n")


def make_venv(venv: Path) -> Path:
    """A table's installation at ``venv`` (module docstring)."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    for dist in _closure():
        _copy_distribution(dist, venv)
    _install_project(venv)
    # the bytecode beside the sources, as pip writes it (no prefix here)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "compileall", "-q", str(site_packages(venv))],
        check=True,
        env={k: v for k, v in env(venv).items() if k != "PYTHONPYCACHEPREFIX"},
        capture_output=True,
    )
    return venv


def env(venv: Path, **extra: str) -> dict[str, str]:
    """The environment of a command run in ``venv``: bytecode only under a prefix of
    its own, as the service unit sets it."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    out.pop("TABLECTL_DEBUG", None)
    out["PYTHONPYCACHEPREFIX"] = str(venv.parent / "pycache")
    out.update(extra)
    return out


def tablectl(
    venv: Path, *args: str, timeout: float = 120, cwd: Path | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``bin/tablectl ARGS`` of ``venv`` (its entry script, as the service runs it)."""
    return subprocess.run(
        [str(venv / "bin" / "tablectl"), *args], env=env(venv, **extra), capture_output=True,
        text=True, timeout=timeout, cwd=cwd or venv.parent,
    )  # fmt: skip
