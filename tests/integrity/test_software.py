"""Software self-verification (issue 19, item 5; issue 37): the signed manifest of an
environment (every file and link of its trees, bytecode included, by absolute path),
the check and what it names, the build's RECORD checks, a lab's copy under a prefix,
the seeded answer a lab reproduces with openssl, the alert's causes, and the packages
scope of the demo.

The environments here are small ones made in a temporary directory (a virtual
environment with a distribution and its RECORD, a "standard library" with a directory
it skips): fast. ``test_software_env.py`` does the same on a real virtual environment
with the daemon installed, through ``tablectl``."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import py_compile
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import generate, load_private_key
from firmware_host.integrity.environment import PACKAGES, Scope
from firmware_host.integrity.software import (
    ManifestRefused,
    SoftwareSettings,
    build_manifest,
    default_root,
    make_manifest,
    sign_manifest,
    verify,
)
from firmware_host.journal import Journal

ROOT = Path(__file__).resolve().parents[2]


# -- a small environment ---------------------------------------------------------------
def _record(site: Path, paths: list[Path]) -> list[str]:
    """RECORD lines as pip writes them (bytecode without a hash)."""
    out = []
    for p in paths:
        rel = os.path.relpath(p, site)
        if p.suffix == ".pyc":
            out.append(f"{rel},,")
            continue
        d = base64.urlsafe_b64encode(hashlib.sha256(p.read_bytes()).digest()).rstrip(b"=")
        out.append(f"{rel},sha256={d.decode()},{p.stat().st_size}")
    return out


def environment(tmp: Path) -> Scope:
    """A virtual environment (``venv``: an entry script, the interpreter's link, a
    distribution ``demo-pkg`` with its bytecode and RECORD) and a standard library
    (``stdlib``: a module, ``lib-dynload``, a ``config-3.11-x`` it skips, an absent
    zip on the import path), as :func:`environment_scope` would give them."""
    venv, stdlib = tmp / "venv", tmp / "stdlib"
    site = venv / "lib" / "python3.11" / "site-packages"
    pkg = site / "demo_pkg"
    pkg.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to("../../python3.11")  # the interpreter it points to
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (pkg / "__init__.py").write_text("QUEENS_OF_HEARTS_PER_DECK = 1\n")
    pyc = Path(py_compile.compile(str(pkg / "__init__.py"), doraise=True))
    script = venv / "bin" / "demo"
    script.write_text("#!/usr/bin/python3\nfrom demo_pkg import main\n")
    info = site / "demo_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n")
    lines = _record(site, [pkg / "__init__.py", info / "METADATA", script, pyc])
    (info / "RECORD").write_text("\n".join([*lines, "demo_pkg-1.0.dist-info/RECORD,,"]) + "\n")
    (stdlib / "lib-dynload").mkdir(parents=True)
    (stdlib / "os.py").write_text("sep = '/'\n")
    (stdlib / "lib-dynload" / "_x.so").write_bytes(b"\x7fELF")
    (stdlib / "config-3.11-x").mkdir()
    (stdlib / "config-3.11-x" / "Makefile").write_text("CC=cc\n")
    (tmp / "python3.11").write_bytes(b"\x7fELF interpreter")
    path = [str(tmp / "python311.zip"), str(stdlib), str(stdlib / "lib-dynload"), str(site)]
    return Scope(
        "environment",
        {str(venv): "dir", str(stdlib): "dir", str(tmp / "python3.11"): "file"},
        skipped=(str(stdlib / "config-3.11-x"),),
        absent=(str(tmp / "python311.zip"),),
        python={"prefix": str(venv), "import_path": path},
    )


def signed(tmp: Path, site: Path | None = None, scope: Scope | None = None) -> SoftwareSettings:
    """A manifest (of ``scope``, or the packages under ``site``) signed with a throwaway
    build key."""
    priv, pub = generate("build", tmp / "buildkey")
    if scope is not None:
        manifest = make_manifest(scope, version="test")[0]
    else:
        manifest = build_manifest(site, version="test")
    (tmp / "software.manifest").write_bytes(manifest)
    (tmp / "software.manifest.sig").write_bytes(sign_manifest(manifest, load_private_key(priv)))
    return SoftwareSettings(str(tmp / "software.manifest"), str(pub))


def install(tmp: Path) -> Path:
    """A copy of the project's packages (the demo's scope)."""
    site = tmp / "site"
    for pkg in PACKAGES:
        shutil.copytree(default_root() / pkg, site / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    return site


def check(sw: SoftwareSettings, **kw: object) -> dict[str, object]:
    v = verify(sw, running=False, **kw)  # type: ignore[arg-type]
    return {"ok": v.ok, "changed": v.changed, "missing": v.missing, "unlisted": v.unlisted,
            "owners": dict(v.owners)}  # fmt: skip


# -- the environment scope ---------------------------------------------------------------
def test_every_file_and_link_of_the_environment_is_listed(tmp_path: Path) -> None:
    scope = environment(tmp_path)
    sw = signed(tmp_path, scope=scope)
    body = json.loads(Path(sw.manifest).read_bytes())
    venv, site = tmp_path / "venv", tmp_path / "venv/lib/python3.11/site-packages"
    assert body["format"] == 2 and body["scope"] == "environment"
    assert body["links"] == {f"{venv}/bin/python": "../../python3.11"}
    for p in (f"{site}/demo_pkg/__pycache__/__init__.cpython-311.pyc", f"{venv}/bin/demo",
              f"{venv}/pyvenv.cfg", f"{site}/demo_pkg-1.0.dist-info/RECORD",
              f"{tmp_path}/stdlib/lib-dynload/_x.so", f"{tmp_path}/python3.11"):  # fmt: skip
        assert p in body["files"], p
    assert not any("config-3.11-x" in p for p in body["files"])  # skipped, and said so
    assert body["skipped"] == [f"{tmp_path}/stdlib/config-3.11-x"]
    assert body["distributions"] == ["demo-pkg 1.0"] and body["unrecorded"] == []
    v = verify(sw, running=False)
    assert v.ok and v.files == len(body["files"]) + 1 and v.scope == "environment", v.reason


def test_bytecode_replaced_beside_an_untouched_source_is_a_difference(tmp_path: Path) -> None:
    # issue 37: a .pyc whose header still matches the source's time and size
    sw = signed(tmp_path, scope=environment(tmp_path))
    site = tmp_path / "venv/lib/python3.11/site-packages"
    pyc = site / "demo_pkg/__pycache__/__init__.cpython-311.pyc"
    original = pyc.read_bytes()
    other = tmp_path / "evil.py"
    other.write_text("QUEENS_OF_HEARTS_PER_DECK = 12\n")
    forged = Path(py_compile.compile(str(other), cfile=str(tmp_path / "evil.pyc")))
    pyc.write_bytes(original[:16] + forged.read_bytes()[16:])  # the source's header kept
    assert check(sw) == {"ok": False, "changed": (str(pyc),), "missing": (), "unlisted": (),
                         "owners": {str(pyc): "demo-pkg 1.0"}}  # fmt: skip
    pyc.write_bytes(original)
    # bytecode planted for a module that has none, and a sourceless module
    planted = site / "demo_pkg/__pycache__/extra.cpython-311.pyc"
    planted.write_bytes(original)
    (site / "sourceless.pyc").write_bytes(original)
    r = check(sw)
    assert r["unlisted"] == (str(planted), str(site / "sourceless.pyc")), r
    assert r["owners"] == {
        str(planted): "in no RECORD",
        str(site / "sourceless.pyc"): "in no RECORD",
    }


def test_dependencies_pth_files_entry_scripts_links_and_the_stdlib(tmp_path: Path) -> None:
    sw = signed(tmp_path, scope=environment(tmp_path))
    venv, stdlib = tmp_path / "venv", tmp_path / "stdlib"
    site = venv / "lib/python3.11/site-packages"
    module = site / "demo_pkg/__init__.py"
    module.write_text("QUEENS_OF_HEARTS_PER_DECK = 12\n")
    (site / "zz-hook.pth").write_text("import os; os.system('true')\n")
    (venv / "bin/demo").write_text("#!/usr/bin/python3\nimport evil\n")
    (venv / "bin/python").unlink()
    (venv / "bin/python").symlink_to("/usr/bin/python3")
    (stdlib / "sitecustomize.py").write_text("import evil\n")
    (stdlib / "config-3.11-x" / "notes.txt").write_text("skipped: not on the import path\n")
    (tmp_path / "python311.zip").write_bytes(b"PK")  # an absent entry of the import path
    r = check(sw)
    assert r["changed"] == (str(venv / "bin/demo"), str(venv / "bin/python"), str(module))
    assert r["unlisted"] == (str(tmp_path / "python311.zip"), str(stdlib / "sitecustomize.py"),
                             str(site / "zz-hook.pth"))  # fmt: skip
    assert r["owners"] == {str(module): "demo-pkg 1.0", str(venv / "bin/demo"): "demo-pkg 1.0",
                           str(site / "zz-hook.pth"): "in no RECORD"}  # fmt: skip
    # removed, and a file become a link
    (stdlib / "os.py").unlink()
    (stdlib / "lib-dynload/_x.so").unlink()
    (stdlib / "lib-dynload/_x.so").symlink_to("/tmp/x.so")
    r = check(sw)
    assert r["missing"] == (str(stdlib / "os.py"),)
    assert str(stdlib / "lib-dynload/_x.so") in r["changed"]  # type: ignore[operator]


def test_what_a_link_points_to_outside_the_trees_is_verified_too(tmp_path: Path) -> None:
    # Debian: /usr/lib/python3.11/sitecustomize.py -> /etc/python3.11/sitecustomize.py,
    # imported at every start
    scope = environment(tmp_path / "t")
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "sitecustomize.py").write_text("# site-wide customisation\n")
    link = tmp_path / "t/stdlib/sitecustomize.py"
    link.symlink_to(etc / "sitecustomize.py")
    sw = signed(tmp_path, scope=scope)
    body = json.loads(Path(sw.manifest).read_bytes())
    assert body["trees"][str(etc / "sitecustomize.py")] == "file"
    assert body["links"][str(link)] == str(etc / "sitecustomize.py")
    assert verify(sw, running=False).ok
    (etc / "sitecustomize.py").write_text("import evil\n")
    assert check(sw)["changed"] == (str(etc / "sitecustomize.py"),)


def test_what_the_running_interpreter_uses_outside_the_manifest(tmp_path: Path) -> None:
    # this test's process runs from none of these trees: its interpreter, its modules and
    # its import path are all outside
    sw = signed(tmp_path, scope=environment(tmp_path))
    v = verify(sw, running=True)
    assert not v.ok and "the interpreter uses outside the manifest" in v.reason
    assert any(u.endswith("(the interpreter)") for u in v.uncovered)
    assert any("(module firmware_host.integrity.software)" in u for u in v.uncovered)
    assert not verify(sw).ok  # the default for an environment checked in place
    assert verify(sw, prefix=Path("/")).ok  # a copy under a prefix: not what runs here


def test_the_build_checks_every_distribution_against_its_record(tmp_path: Path) -> None:
    scope = environment(tmp_path)
    site = tmp_path / "venv/lib/python3.11/site-packages"
    module = site / "demo_pkg/__init__.py"
    module.write_text("QUEENS_OF_HEARTS_PER_DECK = 12\n")  # edited before the build
    (site / "stray.py").write_text("x = 1\n")  # in no distribution
    with pytest.raises(ManifestRefused) as exc:
        make_manifest(scope, version="t")
    assert exc.value.problems == [
        f"{module} (differs from the RECORD of demo-pkg 1.0)",
        f"{site / 'stray.py'} (in no distribution's RECORD)",
    ]
    module.write_text("QUEENS_OF_HEARTS_PER_DECK = 1\n")
    manifest, _ = make_manifest(scope, version="t", accept_unrecorded=True)
    assert json.loads(manifest)["unrecorded"] == [str(site / "stray.py")]  # named, for the lab
    os.mkfifo(site / "fifo")
    with pytest.raises(ManifestRefused, match="not a regular file"):
        make_manifest(scope, version="t", accept_unrecorded=True)
    (site / "fifo").unlink()
    # the daemon runs as its own user: what it could not read, it could not verify
    module.chmod(0o600)
    with pytest.raises(ManifestRefused) as exc:
        make_manifest(scope, version="t", accept_unrecorded=True)
    assert exc.value.problems == [f"{module} (not readable by every user: the daemon could "
                                  "not verify it)"]  # fmt: skip


def test_a_lab_verifies_its_copy_of_the_image_under_a_prefix(tmp_path: Path) -> None:
    here = tmp_path / "table"
    scope = environment(here)
    sw = signed(tmp_path, scope=scope)
    image = tmp_path / "image"
    shutil.copytree(here, image / str(here).lstrip("/"), symlinks=True)
    seed = "lab-0042-seed"
    at_table = verify(sw, seed=seed, running=False)
    at_lab = verify(sw, prefix=image, seed=seed)
    assert at_lab.ok and at_lab.root == str(image)
    assert at_lab.seeded_digest == at_table.seeded_digest
    (image / str(here).lstrip("/") / "stdlib/os.py").write_text("sep = '\\\\'\n")
    lab = verify(sw, prefix=image, seed=seed)
    assert lab.changed == (f"{here}/stdlib/os.py",) and lab.seeded_digest != at_table.seeded_digest


LAB = r"""
cd "$IMAGE"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print("\n".join(sorted([*m["files"], *m["links"]])))' \
    "$MANIFEST" > "$WORK/paths.txt"
while IFS= read -r f; do
  if [ -L ".$f" ]; then
    mac=$(printf '%s' "$(readlink ".$f")" | openssl dgst -sha256 -hmac "$SEED" -r | cut -d' ' -f1)
  else
    mac=$(openssl dgst -sha256 -hmac "$SEED" -r < ".$f" | cut -d' ' -f1)
  fi
  printf '%s  %s\n' "$mac" "$f"
done < "$WORK/paths.txt" | sha256sum | cut -d' ' -f1
"""


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs openssl")
def test_seeded_answer_is_what_a_lab_computes_with_openssl(tmp_path: Path) -> None:
    # docs/integrity.md: the lab's procedure, with openssl and sha256sum (independent
    # tools), links included (their target is what is keyed)
    sw = signed(tmp_path, scope=environment(tmp_path / "t"))
    seed = "5f2a9c01d4e7-lab"
    v = verify(sw, seed=seed, running=False)
    env = {"IMAGE": "/", "MANIFEST": sw.manifest, "SEED": seed, "WORK": str(tmp_path),
           "PATH": "/usr/bin:/bin"}  # fmt: skip
    out = subprocess.run(["bash", "-c", LAB], env=env, text=True, capture_output=True, check=True)
    assert v.seeded_digest == out.stdout.strip()
    assert verify(sw, seed=seed + "x", running=False).seeded_digest != v.seeded_digest
    (tmp_path / "t/venv/bin/python").unlink()
    (tmp_path / "t/venv/bin/python").symlink_to("/usr/bin/python3")
    assert verify(sw, seed=seed, running=False).seeded_digest != v.seeded_digest
    # the manifest's own SHA-256 is what sha256sum says of the file
    sums = subprocess.run(["sha256sum", sw.manifest], capture_output=True, text=True, check=True)
    assert v.manifest_sha256 == sums.stdout.split()[0]


def test_manifest_signed_by_another_key_edited_or_old_fails(tmp_path: Path) -> None:
    sw = signed(tmp_path, scope=environment(tmp_path / "t"))
    manifest = Path(sw.manifest).read_bytes()
    Path(sw.manifest + ".sig").write_bytes(sign_manifest(manifest, Ed25519PrivateKey.generate()))
    v = verify(sw)
    assert not v.ok and "signature" in v.reason
    # a manifest edited to bless a modified file: its signature no longer holds
    body = json.loads(manifest)
    body["files"][f"{tmp_path}/t/stdlib/os.py"] = "0" * 64
    Path(sw.manifest).write_text(json.dumps(body))
    assert "signature" in verify(sw).reason
    # a manifest of the first format (no scope, relative paths): rebuilt, never guessed at
    priv = load_private_key(tmp_path / "buildkey" / "build.key")
    old = json.dumps({"format": 1, "files": {}, "packages": [], "version": "x"}).encode()
    Path(sw.manifest).write_bytes(old)
    Path(sw.manifest + ".sig").write_bytes(sign_manifest(old, priv))
    assert "format 1 (this software reads format 2)" in verify(sw).reason
    Path(sw.manifest + ".sig").unlink()
    assert "cannot read" in verify(sw).reason


def test_signature_file_is_base64_of_64_bytes(tmp_path: Path) -> None:
    sw = signed(tmp_path, scope=environment(tmp_path / "t"))
    raw = base64.b64decode(Path(sw.manifest + ".sig").read_bytes().strip(), validate=True)
    assert len(raw) == 64


# -- the packages scope (the demo's) -------------------------------------------------------
def test_the_packages_scope_lists_the_projects_packages_without_bytecode(tmp_path: Path) -> None:
    site = install(tmp_path)
    sw = signed(tmp_path, site)
    body = json.loads(Path(sw.manifest).read_bytes())
    assert body["scope"] == "packages" and sorted(body["trees"]) == [
        str(site / p) for p in sorted(PACKAGES)
    ]
    assert f"{site}/tablesim/demo.py" in body["files"]  # what --simulate and the demo run
    ok = verify(sw)
    assert ok.ok and ok.files == len(body["files"]) > 100 and ok.scope == "packages"
    target = site / "firmware_host" / "games" / "roulette" / "game.py"
    original = target.read_bytes()
    target.write_bytes(original.replace(b"35", b"36", 1))
    assert verify(sw).changed == (str(target),)
    target.write_bytes(original)
    (site / "drivers" / "extra.py").write_text("x = 1\n")
    (site / "firmware_host" / "textsafe.py").unlink()
    bad = verify(sw)
    assert bad.unlisted == (f"{site}/drivers/extra.py",)
    assert bad.missing == (f"{site}/firmware_host/textsafe.py",)
    # a checkout's bytecode comes and goes: the packages scope leaves it out (never a
    # table's manifest: that lists it)
    (site / "drivers" / "extra.py").unlink()
    shutil.copy(ROOT / "firmware_host" / "textsafe.py", site / "firmware_host" / "textsafe.py")
    (site / "firmware_host" / "__pycache__").mkdir(exist_ok=True)
    (site / "firmware_host" / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"\0")
    assert verify(sw).ok


# -- recorded, latched, alerted -----------------------------------------------------------
def test_a_mismatch_while_running_stops_play_until_cleared(tmp_path: Path) -> None:
    from firmware_host.integrity.alerts import Alerts
    from firmware_host.integrity.selfcheck import SoftwareCheck
    from firmware_host.table.state import LatchedFaults

    site = install(tmp_path)
    sw = signed(tmp_path, site)
    j = Journal(tmp_path / "j.sqlite3")
    alerts = Alerts(j.alerts, j.db)
    check = SoftwareCheck(sw, j.chain, j.faults, alerts)
    faults = LatchedFaults(j.faults)
    check.at_start()
    assert faults.play_stop() is None
    (site / "drivers" / "base.py").write_text("# replaced\n")
    v = check.check("periodic")
    assert not v.ok and v.changed == (f"{site}/drivers/base.py",)
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
    j.faults.clear_fault("SOFTWARE_MISMATCH", by="tech1", reason="reinstalled, verified")
    assert faults.play_stop() is None
    kinds = [e.kind for e in j.chain.events(50)]
    assert kinds.count("software_verified") == 3 and "fault_latched" in kinds
    assert j.chain.verify().ok


def test_every_cause_of_a_repeated_mismatch_stays_visible(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from firmware_host.integrity.alerts import Alerts
    from firmware_host.integrity.selfcheck import SoftwareCheck

    site = install(tmp_path)
    sw = signed(tmp_path, site)
    j = Journal(tmp_path / "j.sqlite3")
    alerts = Alerts(j.alerts, j.db)
    now = [datetime(2026, 5, 9, 7, 0, tzinfo=UTC)]
    check = SoftwareCheck(sw, j.chain, j.faults, alerts, clock=lambda: now[0])
    (site / "drivers" / "base.py").write_text("# replaced\n")
    first = check.check("start-up")
    now[0] += timedelta(hours=24)
    (site / "drivers" / "evil.py").write_text("x = 1\n")
    second = check.check("periodic")
    now[0] += timedelta(hours=1)
    check.check("console", by="console:tech1")  # the same cause again: counted
    (alert,) = alerts.active()  # one row, every cause on it
    assert alert.count == 3 and alert.message.startswith("2 different causes")
    assert isinstance(alert.evidence, dict)
    assert alert.evidence["causes"] == [
        {"cause": first.reason, "since": "2026-05-09T07:00:00.000Z",
         "last_seen": "2026-05-09T07:00:00.000Z", "count": 1, "triggers": ["start-up"]},
        {"cause": second.reason, "since": "2026-05-10T07:00:00.000Z",
         "last_seen": "2026-05-10T08:00:00.000Z", "count": 2, "triggers": ["periodic", "console"]},
    ]  # fmt: skip
    assert alert.first_seen.endswith("Z") and alert.last_seen.endswith("Z")
    # the journal's events keep each occurrence with its own cause
    raised = [e.data for e in j.chain.events(50) if e.kind == "alert_raised"]
    evil = f"{site}/drivers/evil.py"
    assert [r["evidence"]["unlisted"] for r in raised] == [[], [evil], [evil]]


def test_the_cli_builds_signs_apart_and_refuses_a_meddled_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from firmware_host.cli import main

    site = install(tmp_path)
    out = tmp_path / "software.manifest"
    # built where the software is (no key there), signed on the release machine
    assert main(["software-manifest", "--scope", "packages", "--root", str(site),
                 "--out", str(out)]) == 0  # fmt: skip
    assert "unsigned" in capsys.readouterr().out and not Path(f"{out}.sig").exists()
    priv, pub = generate("build", tmp_path / "buildkey")
    assert main(["software-manifest", "--sign", str(out), "--key", str(priv)]) == 0
    assert main(["verify-software", "--manifest", str(out), "--public-key", str(pub)]) == 0
    assert "software verified" in capsys.readouterr().out
    # the environment scope is of the environment the service runs: no PYTHONPATH
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert main(["software-manifest", "--out", str(tmp_path / "m2")]) == 2
    assert "ENVIRONMENT_NOT_CLEAN: PYTHONPATH set" in capsys.readouterr().err
    assert main(["software-manifest", "--root", str(site), "--out", str(tmp_path / "m3")]) == 2
