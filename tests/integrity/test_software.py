"""Software self-verification (issue 19, item 5): the signed manifest, the check, the
seeded answer a lab reproduces with openssl, `tablectl verify-software`, and the daemon
refusing to start on a modified install (acceptance item 2).

The "install" is a copy of the daemon's packages in a temporary directory, signed with
a throwaway build key; the daemon and `tablectl` run from that copy (PYTHONPATH), so
what they verify is the code that runs."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import generate
from firmware_host.integrity.software import (
    PACKAGES,
    SoftwareSettings,
    build_manifest,
    default_root,
    sign_manifest,
    verify,
)
from firmware_host.journal import AuditKey, Journal

ROOT = Path(__file__).resolve().parents[2]


def install(tmp: Path) -> Path:
    """A copy of the running packages (what an installed table holds)."""
    site = tmp / "site"
    for pkg in PACKAGES:
        shutil.copytree(default_root() / pkg, site / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    return site


def signed(tmp: Path, site: Path) -> SoftwareSettings:
    """A manifest of ``site`` signed with a throwaway build key (as tests and the demo do)."""
    priv, pub = generate("build", tmp / "buildkey")
    from firmware_host.auth import load_private_key

    manifest = build_manifest(site, version="test")
    (tmp / "software.manifest").write_bytes(manifest)
    (tmp / "software.manifest.sig").write_bytes(sign_manifest(manifest, load_private_key(priv)))
    return SoftwareSettings(str(tmp / "software.manifest"), str(pub))


def test_untouched_install_passes_and_every_kind_of_change_fails(tmp_path: Path) -> None:
    site = install(tmp_path)
    sw = signed(tmp_path, site)
    ok = verify(sw, root=site)
    assert ok.ok and ok.files == len(json.loads(Path(sw.manifest).read_bytes())["files"]) > 100
    # one byte changed in an installed module
    target = site / "firmware_host" / "games" / "roulette" / "game.py"
    original = target.read_bytes()
    target.write_bytes(original.replace(b"35", b"36", 1))
    bad = verify(sw, root=site)
    assert not bad.ok and bad.changed == ("firmware_host/games/roulette/game.py",)
    target.write_bytes(original)
    # a module added to a package (it could be imported) and one removed
    (site / "drivers" / "extra.py").write_text("x = 1\n")
    (site / "firmware_host" / "textsafe.py").unlink()
    bad = verify(sw, root=site)
    assert bad.unlisted == ("drivers/extra.py",) and bad.missing == ("firmware_host/textsafe.py",)
    # compiled files are Python's own business
    (site / "drivers" / "extra.py").unlink()
    shutil.copy(ROOT / "firmware_host" / "textsafe.py", site / "firmware_host" / "textsafe.py")
    (site / "firmware_host" / "__pycache__").mkdir(exist_ok=True)
    (site / "firmware_host" / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"\0")
    assert verify(sw, root=site).ok


def test_manifest_signed_by_another_key_or_edited_fails(tmp_path: Path) -> None:
    site = install(tmp_path)
    sw = signed(tmp_path, site)
    manifest = Path(sw.manifest).read_bytes()
    other = Ed25519PrivateKey.generate()
    Path(sw.manifest + ".sig").write_bytes(sign_manifest(manifest, other))
    v = verify(sw, root=site)
    assert not v.ok and "signature" in v.reason
    # a manifest edited to bless a modified file: its signature no longer holds
    body = json.loads(manifest)
    body["files"]["firmware_host/daemon.py"] = "0" * 64
    Path(sw.manifest).write_text(json.dumps(body))
    assert "signature" in verify(sw, root=site).reason
    Path(sw.manifest + ".sig").unlink()
    assert "cannot read" in verify(sw, root=site).reason


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs openssl")
def test_seeded_answer_is_what_a_lab_computes_with_openssl(tmp_path: Path) -> None:
    # docs/integrity.md: the lab's procedure, with openssl and sha256sum (independent tools)
    site = install(tmp_path)
    sw = signed(tmp_path, site)
    seed = "5f2a9c01d4e7-lab"
    v = verify(sw, root=site, seed=seed)
    files = sorted(json.loads(Path(sw.manifest).read_bytes())["files"])
    script = (
        f'cd "{site}" && while read -r f; do '
        f'printf "%s  %s\\n" "$(openssl dgst -sha256 -hmac "{seed}" -r < "$f" | cut -d" " -f1)" "$f"; '
        "done | sha256sum | cut -d' ' -f1"
    )
    out = subprocess.run(["bash", "-c", script], input="\n".join(files) + "\n", text=True,
                         capture_output=True, check=True)  # fmt: skip
    assert v.seeded_digest == out.stdout.strip()
    # another seed, another answer; a changed file, another answer
    assert verify(sw, root=site, seed=seed + "x").seeded_digest != v.seeded_digest
    (site / "drivers" / "registry.py").write_text("# changed\n")
    assert verify(sw, root=site, seed=seed).seeded_digest != v.seeded_digest
    # the manifest's own SHA-256 is what sha256sum says of the file
    sums = subprocess.run(["sha256sum", sw.manifest], capture_output=True, text=True, check=True)
    assert v.manifest_sha256 == sums.stdout.split()[0]


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


def _env(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(site)
    env.pop("TABLECTL_DEBUG", None)
    return env


def _tablectl(site: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "firmware_host", *args], env=_env(site),
                          capture_output=True, text=True, timeout=timeout, cwd=site.parent)  # fmt: skip


def _run_until_ready(site: Path, table: Path, state: Path, timeout: float = 60) -> str:
    """`tablectl run` until it says ready, then SIGTERM; its log."""
    logfile = state / "run.log"
    with logfile.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "firmware_host", "run", "--config", str(table),
             "--state-dir", str(state), "--runtime-dir", str(state)],
            env=_env(site), stdout=out, stderr=subprocess.STDOUT, cwd=site.parent,
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


@pytest.mark.slow
def test_tablectl_verify_software_and_the_daemon_refusing_to_start(tmp_path: Path) -> None:
    site = install(tmp_path)
    signed(tmp_path, site)
    from tablesim.principals import make_principals
    from tablesim.tables import to_toml

    table = tmp_path / "table.toml"
    auth = make_principals(tmp_path / "keys").auth_section()
    table.write_text(TABLE + to_toml({"auth": auth}))
    state = tmp_path / "state"
    state.mkdir()
    # the untouched install passes: verify-software exits 0, the daemon starts
    r = _tablectl(site, "verify-software", "--config", str(table), "--seed", "abcdef0123")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "software verified" in r.stdout and "seeded answer (abcdef0123)" in r.stdout
    log = _run_until_ready(site, table, state)
    assert "software verified" in log and "ready" in log, log
    # one installed file modified: verify-software fails, naming it; the daemon refuses
    target = site / "firmware_host" / "games" / "fantan" / "game.py"
    target.write_bytes(target.read_bytes() + b"\n# tampered\n")
    r = _tablectl(site, "verify-software", "--config", str(table))
    assert r.returncode == 1 and "SOFTWARE MISMATCH" in r.stdout, r.stdout + r.stderr
    assert "changed: firmware_host/games/fantan/game.py" in r.stdout
    run = _tablectl(site, "run", "--config", str(table), "--state-dir", str(state),
                    "--runtime-dir", str(state))  # fmt: skip
    assert run.returncode == 4, run.stdout + run.stderr
    assert "refuses to start" in run.stderr and "SOFTWARE_MISMATCH" in run.stderr
    assert "Traceback" not in run.stderr
    # recorded: the failed check and the latched fault, in the chained event log
    key = AuditKey.load(state / "audit.key")  # the table's own, made at its first start
    with Journal(state / "journal.sqlite3", audit_key=key) as j:
        checks = [e for e in j.events(100) if e.kind == "software_verified"]
        assert [e.data["ok"] for e in checks] == [True, False]
        assert checks[-1].data["changed"] == ["firmware_host/games/fantan/game.py"]
        # (no broker here: the start-up floor check latched JOURNAL_UNCHECKED too)
        assert "SOFTWARE_MISMATCH" in [f.code for f in j.active_faults()]
        assert [a.code for a in j.active_alerts()] == ["SOFTWARE_MISMATCH"]
        assert j.verify_chain().ok


def test_signature_file_is_base64_of_64_bytes(tmp_path: Path) -> None:
    site = install(tmp_path)
    sw = signed(tmp_path, site)
    raw = base64.b64decode(Path(sw.manifest + ".sig").read_bytes().strip(), validate=True)
    assert len(raw) == 64


def test_a_mismatch_while_running_stops_play_until_cleared(tmp_path: Path) -> None:
    from firmware_host.integrity.alerts import Alerts
    from firmware_host.integrity.selfcheck import SoftwareCheck
    from firmware_host.table.state import LatchedFaults

    site = install(tmp_path)
    sw = signed(tmp_path, site)
    j = Journal(tmp_path / "j.sqlite3")
    alerts = Alerts(j)
    check = SoftwareCheck(sw, j, alerts, root=site)
    faults = LatchedFaults(j)
    check.at_start()
    assert faults.play_stop() is None
    (site / "drivers" / "base.py").write_text("# replaced\n")
    v = check.check("periodic")
    assert not v.ok and v.changed == ("drivers/base.py",)
    assert "SOFTWARE_MISMATCH" in (faults.play_stop() or "")
    (alert,) = alerts.active()
    assert alert.code == "SOFTWARE_MISMATCH" and alert.condition
    # the install put right: the next check passes, the alert's condition is over; it
    # clears once acknowledged; the fault stays until a technician clears it
    shutil.copy(ROOT / "drivers" / "base.py", site / "drivers" / "base.py")
    assert check.check("console", by="console:tech1").ok
    assert alerts.active()[0].condition is False
    alerts.acknowledge(alert.id, by="console:tech1", reason="reinstalled from the signed image")
    assert alerts.active() == [] and faults.play_stop() is not None
    j.clear_fault("SOFTWARE_MISMATCH", by="tech1", reason="reinstalled, verified")
    assert faults.play_stop() is None
    kinds = [e.kind for e in j.events(50)]
    assert kinds.count("software_verified") == 3 and "fault_latched" in kinds
    assert j.verify_chain().ok
