"""Issue 37's acceptance: the daemon installed in a real (temporary) virtual environment,
its manifest built and signed by ``tablectl software-manifest`` in that environment;
each attack is caught by ``tablectl verify-software`` (naming the path, and the
distribution it belongs to) and refuses the daemon's start (exit 4):

- bytecode replaced beside an untouched source (``integrity/__pycache__/shoe...pyc``,
  its header still matching the source's time and size: Python would load it);
- a file of an installed dependency edited;
- a ``.pth`` file added to site-packages (Python runs it at every start);
- the entry script ``bin/tablectl`` edited;
- and: a module added to a package, a directory put on the import path (PYTHONPATH).

Every command runs as the service unit runs the daemon: the entry script, and the
bytecode under a prefix of its own (``software_env.py``). The project's own ``.venv``
is only read (its dependencies are copied from it)."""

from __future__ import annotations

import importlib.util
import marshal
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from software_env import PYVER, env, make_venv, site_packages, tablectl

from firmware_host.auth import generate
from firmware_host.journal import AuditKey, Journal

pytestmark = pytest.mark.slow

TABLE = """\
version = 1
[table]
id = "sw-1"
game = "fantan"
result_source = "manual"
[mqtt]
host = "127.0.0.1"
port = 1
[software]
manifest = "software.manifest"
public_key = "buildkey/build.pub"
"""


@dataclass(frozen=True)
class Install:
    dir: Path
    venv: Path
    table: Path

    @property
    def site(self) -> Path:
        return site_packages(self.venv)

    def verify(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return tablectl(self.venv, "verify-software", "--config", str(self.table), *args, **extra)

    def run(self, state: Path, **extra: str) -> subprocess.CompletedProcess[str]:
        state.mkdir(exist_ok=True)
        return tablectl(self.venv, "run", "--config", str(self.table), "--state-dir", str(state),
                        "--runtime-dir", str(state), **extra)  # fmt: skip


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    from tablesim.principals import make_principals
    from tablesim.tables import to_toml

    d = tmp_path_factory.mktemp("table")
    venv = make_venv(d / "venv")
    priv, _ = generate("build", d / "buildkey")
    r = tablectl(venv, "software-manifest", "--out", str(d / "software.manifest"),
                 "--key", str(priv))  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "scope environment" in r.stdout and "signed" in r.stdout, r.stdout
    table = d / "table.toml"
    auth = make_principals(d / "keys").auth_section()
    table.write_text(TABLE + to_toml({"auth": auth}))
    return Install(d, venv, table)


@contextmanager
def tampered(*paths: Path) -> Iterator[None]:
    """Put each of ``paths`` back as it was (or remove it) afterwards."""
    saved = {p: p.read_bytes() if p.exists() else None for p in paths}
    modes = {p: p.stat().st_mode for p in paths if p.exists()}
    try:
        yield
    finally:
        for p, data in saved.items():
            if data is None:
                p.unlink(missing_ok=True)
            else:
                p.write_bytes(data)
                p.chmod(modes[p])


def refused(install: Install, state: Path, *lines: str, **extra: str) -> str:
    """verify-software names each of ``lines``; the daemon refuses to start."""
    r = install.verify(**extra)
    assert r.returncode == 1 and "SOFTWARE MISMATCH" in r.stdout, r.stdout + r.stderr
    for line in lines:
        assert line in r.stdout, r.stdout
    run = install.run(state, **extra)
    assert run.returncode == 4, run.stdout + run.stderr
    assert "refuses to start" in run.stderr and "SOFTWARE_MISMATCH" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    return r.stdout


def _run_until_ready(install: Install, state: Path, timeout: float = 60) -> str:
    """`tablectl run` until it says ready, then SIGTERM; its log."""
    state.mkdir(exist_ok=True)
    logfile = state / "run.log"
    with logfile.open("w") as out:
        proc = subprocess.Popen(
            [str(install.venv / "bin" / "tablectl"), "run", "--config", str(install.table),
             "--state-dir", str(state), "--runtime-dir", str(state)],
            env=env(install.venv), stdout=out, stderr=subprocess.STDOUT, cwd=install.dir,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        try:
            while (
                " ready" not in logfile.read_text()
                and proc.poll() is None
                and time.monotonic() < deadline
            ):
                time.sleep(0.1)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return logfile.read_text()


def test_the_untouched_install_is_verified_and_starts(install: Install, tmp_path: Path) -> None:
    r = install.verify("--seed", "abcdef0123")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "software verified" in r.stdout and "environment scope" in r.stdout
    assert "seeded answer (abcdef0123)" in r.stdout
    log = _run_until_ready(install, tmp_path / "state")
    assert "software verified" in log and "ready" in log, log


def _forged_pyc(source: Path, pyc: Path) -> bytes:
    """Bytecode of another source, under the header of ``pyc`` (the untouched source's
    time and size): what Python loads without a second look."""
    evil = source.read_text() + "\nTAMPERED = True\n"
    code = compile(evil, str(source), "exec")
    return pyc.read_bytes()[:16] + marshal.dumps(code)


def test_bytecode_replaced_beside_an_untouched_source(install: Install, tmp_path: Path) -> None:
    source = install.site / "firmware_host" / "integrity" / "shoe.py"
    pyc = Path(importlib.util.cache_from_source(str(source)))
    assert pyc.is_file()  # listed in the manifest like every file of the environment
    probe = ["-c", "import firmware_host.integrity.shoe as s; print(getattr(s, 'TAMPERED', 0))"]
    python = str(install.venv / "bin" / "python")
    with tampered(pyc):
        pyc.write_bytes(_forged_pyc(source, pyc))
        # the attack is real: an interpreter reading bytecode beside the sources runs it
        plain = {k: v for k, v in env(install.venv).items() if k != "PYTHONPYCACHEPREFIX"}
        out = subprocess.run([python, *probe], env=plain, capture_output=True, text=True,
                             cwd=install.dir)  # fmt: skip
        assert out.stdout.strip() == "True", out.stderr
        # ...the service's never does (its bytecode: compiled at its start, from the sources)
        out = subprocess.run([python, *probe], env=env(install.venv), capture_output=True,
                             text=True, cwd=install.dir)  # fmt: skip
        assert out.stdout.strip() == "0", out.stderr
        state = tmp_path / "state"
        refused(install, state, f"changed: {pyc} (bytecode of table-controller ")
    # recorded: the failed check and the latched fault, in the chained event log
    key = AuditKey.load(state / "audit.key")  # the table's own, made at its first start
    with Journal(state / "journal.sqlite3", audit_key=key) as j:
        checks = [e for e in j.chain.events(100) if e.kind == "software_verified"]
        assert [(e.data["ok"], e.data["changed"]) for e in checks] == [(False, [str(pyc)])]
        assert checks[0].data["owners"] == {str(pyc): "bytecode of table-controller 0.1.0"}
        assert "SOFTWARE_MISMATCH" in [f.code for f in j.faults.active()]
        assert [a.code for a in j.alerts.active()] == ["SOFTWARE_MISMATCH"]
        assert j.chain.verify().ok
    assert install.verify().returncode == 0  # put back: verified again


def test_an_edited_dependency(install: Install, tmp_path: Path) -> None:
    target = install.site / "paho" / "mqtt" / "client.py"
    with tampered(target):
        target.write_bytes(target.read_bytes() + b"\n# tampered\n")
        refused(install, tmp_path / "state", f"changed: {target} (paho-mqtt ")
    assert install.verify().returncode == 0


def test_an_added_pth_file(install: Install, tmp_path: Path) -> None:
    pth = install.site / "zz-hook.pth"
    with tampered(pth):
        pth.write_text("import sys; sys.stderr.write('hook ran\\n')\n")
        r = install.verify()
        assert "hook ran" in r.stderr  # Python runs it at every start of the interpreter
        refused(install, tmp_path / "state", f"unlisted: {pth} (in no RECORD)")
    assert install.verify().returncode == 0


def test_an_edited_entry_script(install: Install, tmp_path: Path) -> None:
    script = install.venv / "bin" / "tablectl"
    with tampered(script):
        script.write_bytes(script.read_bytes() + b"# tampered\n")
        refused(install, tmp_path / "state", f"changed: {script} (table-controller ")
    assert install.verify().returncode == 0


def test_a_module_added_and_a_directory_on_the_import_path(
    install: Install, tmp_path: Path
) -> None:
    added = install.site / "drivers" / "backdoor.py"
    with tampered(added):
        added.write_text("x = 1\n")
        refused(install, tmp_path / "s1", f"unlisted: {added} (in no RECORD)")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused(install, tmp_path / "s2", f"uncovered: {elsewhere} (on the import path)",
            PYTHONPATH=str(elsewhere))  # fmt: skip
    assert install.verify().returncode == 0


def test_the_interpreters_standard_library_is_covered(install: Install) -> None:
    import json

    body = json.loads((install.dir / "software.manifest").read_bytes())
    stdlib = Path(shutil.__file__).parent
    assert str(stdlib) in body["trees"] and f"{stdlib}/shutil.py" in body["files"]
    assert f"{install.venv}/bin/tablectl" in body["files"]
    assert f"{install.venv}/bin/python" in body["links"]
    assert f"{install.site}/tablesim/demo.py" in body["files"]
    assert any(p.startswith(f"{install.site}/cryptography/") for p in body["files"])
    assert any(d.startswith("cryptography ") for d in body["distributions"])
    assert body["python"]["cache_tag"] and PYVER in body["python"]["import_path"][-1]


def test_a_directory_a_pth_file_adds_is_a_tree(install: Install, tmp_path: Path) -> None:
    # a .pth line naming a directory puts it on the import path: the manifest built with
    # it lists that directory whole (the .pth itself is of no distribution: accepted)
    extra = tmp_path / "plugins"
    extra.mkdir()
    (extra / "plugin.py").write_text("x = 1\n")
    pth = install.site / "plugins.pth"
    manifest = tmp_path / "m2"
    with tampered(pth):
        pth.write_text(f"{extra}\n")
        r = tablectl(install.venv, "software-manifest", "--out", str(manifest), "--key",
                     str(install.dir / "buildkey" / "build.key"))  # fmt: skip
        assert r.returncode == 1 and f"{pth} (in no distribution's RECORD)" in r.stderr
        r = tablectl(install.venv, "software-manifest", "--out", str(manifest), "--key",
                     str(install.dir / "buildkey" / "build.key"), "--accept-unrecorded")  # fmt: skip
        assert r.returncode == 0 and str(extra) in r.stdout, r.stdout + r.stderr
        assert f"accepted, in no RECORD: {pth}" in r.stdout
        args = ("--manifest", str(manifest), "--public-key",
                str(install.dir / "buildkey" / "build.pub"))  # fmt: skip
        assert tablectl(install.venv, "verify-software", *args).returncode == 0
        (extra / "json.py").write_text("raise SystemExit\n")
        r = tablectl(install.venv, "verify-software", *args)
        assert r.returncode == 1 and f"unlisted: {extra}/json.py" in r.stdout, r.stdout
