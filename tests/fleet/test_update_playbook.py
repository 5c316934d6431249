"""The update playbook (deploy/ansible/update.yml, issue 35) run by ansible-playbook on this
machine against two tables (local connection), each a real daemon (``tablectl run``) on
a real mosquitto:

- table ut-a is mid-round when the update is asked: the round finishes (the test closes
  it and gives the result while the playbook waits), settled with its bets; nothing is
  installed before; then the new package, verified, the restart, READY, back in play;
- table ut-b's new package does not match its signed manifest (a file changed after the
  manifest was signed): ``tablectl verify-software`` fails, the playbook installs the
  previous package, verifies it, restarts, and the table is in play on it; the run fails
  for ut-b and says so;
- one table at a time (serial 1): ut-b leaves play only after ut-a is back;
- each table's download log (``software-installs.jsonl``) has every installation and
  verification, and the restarted daemon journals and publishes them
  (``software_installed`` on ``events``).

What stands in for a Debian table here (tests/fleet/standin_table.py): the installation
(a tarball unpacked where the package's files go, and postinst's line in the log), the
restart (SIGTERM and ``tablectl run`` again) and the version query. The package's own
``apt-get install``/``systemctl`` path is CI's ``packaging/deb/check``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from firmware_host import __version__
from tablesim.floor_client import FloorClient
from tablesim.principals import make_principals
from tablesim.tables import to_toml
from tests.daemon._mqtt_support import Collector

pytestmark = pytest.mark.mosquitto

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "deploy" / "ansible" / "update.yml"
STANDIN = Path(__file__).with_name("standin_table.py")
ANSIBLE = Path(sys.executable).with_name("ansible-playbook")
TABLES = ("ut-a", "ut-b")
BET = {"bet_id": "b1", "seat": 1, "bet_type": "fan", "selection": 3, "stake": 2500}


def _table_file(tid: str, d: Path, broker: Any, auth: dict[str, Any]) -> str:
    return (
        f'version = 1\n[table]\nid = "{tid}"\ngame = "fantan"\npayable_unit = 100\n'
        'result_source = "manual"\n[limits]\nmin_stake = 1000\n'
        f'[mqtt]\nhost = "{broker.host}"\nport = {broker.port}\nreconnect_min_ms = 50\n'
        f'[software]\nmanifest = "{d / "share" / "software.manifest"}"\n'
        f'public_key = "{d / "share" / "build.pub"}"\n' + to_toml({"auth": auth})
    )


def _tablectl(*args: str, cwd: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "firmware_host.cli", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def _package(d: Path, pkgs: Path, version: str, build: Path, *, corrupt: bool = False) -> Path:
    """A release for the table at ``d``: ``lib/`` (a copy of tablecommon and a release
    marker) with its manifest signed by the build key, as a tarball. ``corrupt``: a file
    of ``lib/`` changed after the manifest was signed (a damaged package)."""
    for sub in ("lib", "share"):
        shutil.rmtree(d / sub, ignore_errors=True)
    lib = d / "lib"
    shutil.copytree(ROOT / "tablecommon", lib / "tablecommon",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (lib / "tablecommon" / "release.txt").write_text(version + "\n")
    share = d / "share"
    share.mkdir()
    (share / "version").write_text(version)
    shutil.copy(build / "build.pub", share / "build.pub")
    _tablectl("software-manifest", "--scope", "packages", "--root", str(lib),
              "--out", str(share / "software.manifest"), "--key", str(build / "build.key"),
              cwd=d)  # fmt: skip
    if corrupt:
        (lib / "tablecommon" / "release.txt").write_text(version + " (damaged)\n")
    pkg = pkgs / f"table-controller_{version}_{d.name}.tar.gz"
    with tarfile.open(pkg, "w:gz") as tar:
        tar.add(lib, "lib")
        tar.add(share, "share")
    return pkg


def _log(d: Path) -> list[dict[str, Any]]:
    text = (d / "state" / "software-installs.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _events(c: Collector, tid: str, kind: str) -> list[dict[str, Any]]:
    out = []
    for m in c.messages:
        if m.topic == f"casino/tables/{tid}/events":
            body = m.json()
            if body.get("event") == kind:
                out.append(body)
    return out


def _floor(
    tmp_path: Path, broker: Any, tables: tuple[str, ...], *, corrupt: str = "", round_timeout: int = 120
) -> tuple[Any, dict[str, Path], Path]:
    """The tables' directories (each with its two releases, 0.1.0 installed), the
    principals, and the playbook's inventory (``corrupt``: the table whose 0.2.0 package
    fails its verification)."""
    principals = make_principals(tmp_path / "keys")
    build = tmp_path / "build"
    _tablectl("keys", "generate", "build", "--dir", str(build), cwd=tmp_path)
    pkgs = tmp_path / "packages"
    pkgs.mkdir()
    dirs = {tid: tmp_path / tid for tid in tables}
    py = sys.executable
    hosts = []
    for tid, d in dirs.items():
        for sub in ("state", "run"):
            (d / sub).mkdir(parents=True)
        new = _package(d, pkgs, "0.2.0", build, corrupt=tid == corrupt)
        old = _package(d, pkgs, "0.1.0", build)  # installed now
        (d / "table.toml").write_text(_table_file(tid, d, broker, principals.auth_section()))
        (d / "state" / "software-installs.jsonl").write_text(json.dumps({
            "action": "installed", "by": "root", "from_version": None, "to_version": "0.1.0",
            "at": "2026-05-01T08:00:00Z",
        }) + "\n")  # fmt: skip
        hosts.append(
            f"{tid} tablectl_package={new} tablectl_previous_package={old} "
            f"tablectl_package_dir={d / 'packages'} "
            f"tablectl_cmd_version='{py} {STANDIN} version {d}' "
            f"tablectl_cmd_install='{py} {STANDIN} install {d}' "
            f"tablectl_cmd_restart='{py} {STANDIN} restart {d}' "
            f"tablectl_cmd_verify='{py} -m firmware_host.cli verify-software "
            f"--config {d / 'table.toml'} --record {d / 'state' / 'software-installs.jsonl'}'"
        )
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(
        "[tables]\n" + "\n".join(hosts) + "\n\n[tables:vars]\n"
        f"ansible_connection=local\nansible_python_interpreter={py}\n"
        f"tablectl_controller_command='{py} -m firmware_host.cli'\n"
        f"tablectl_broker=mqtt://{broker.host}:{broker.port}\n"
        f"tablectl_updater=pit\ntablectl_updater_key={principals.directory / 'pit.key'}\n"
        "tablectl_version=0.2.0\ntablectl_previous_version=0.1.0\n"
        f"tablectl_software_version={__version__}\n"
        f"tablectl_previous_software_version={__version__}\n"
        f"tablectl_round_timeout={round_timeout}\ntablectl_ready_timeout=60\n"
        "tablectl_operator=ansible:tester\n"
    )
    for d in dirs.values():
        subprocess.run([py, str(STANDIN), "restart", str(d)], check=True)
    return principals, dirs, inventory


async def _playbook(inventory: Path, tmp_path: Path) -> Any:
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "at"),
           "ANSIBLE_HOME": str(tmp_path / "ah"), "ANSIBLE_STDOUT_CALLBACK": "default"}  # fmt: skip
    return await asyncio.create_subprocess_exec(
        str(ANSIBLE), "-i", str(inventory), str(PLAYBOOK), cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip


@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core is not installed (pip: dev extra)")
async def test_the_playbook_updates_between_rounds_and_rolls_back_a_failed_verification(
    mosquitto_broker: Any, tmp_path: Path
) -> None:
    principals, dirs, inventory = _floor(tmp_path, mosquitto_broker, TABLES, corrupt="ut-b")
    events = await Collector(
        mosquitto_broker.host, mosquitto_broker.port, "casino/tables/+/events"
    ).start()
    py = sys.executable
    proc = None
    try:
        async with FloorClient(
            mosquitto_broker.host, mosquitto_broker.port, "ut-a", signers=principals
        ) as floor:
            await floor.until(lambda: (floor.state or {}).get("availability") == "online",
                              timeout=60, what="ut-a online")  # fmt: skip
            assert (await floor.command("open_betting"))["status"] == "ok"
            rid = floor.round_in_progress
            assert (await floor.place(BET))["status"] == "accepted"

            proc = await _playbook(inventory, tmp_path)
            run = asyncio.ensure_future(proc.communicate())
            # The update asked maintenance: the round in progress goes on, nothing installed.
            await floor.until(lambda: (floor.state or {}).get("maintenance") is not None,
                              timeout=120, what="ut-a in maintenance")  # fmt: skip
            assert floor.state["phase"] == "open" and floor.state["round_id"] == rid
            await asyncio.sleep(3)  # the playbook is waiting for the round
            assert not run.done()
            assert [e["to_version"] for e in _log(dirs["ut-a"]) if e["action"] == "installed"] == [
                "0.1.0"
            ]
            assert (await floor.place({**BET, "bet_id": "b2", "seat": 2}))["status"] == "accepted"
            assert (await floor.command("close_betting"))["status"] == "ok"
            assert (await floor.command("result", outcome={"number": 3}))["status"] == "ok"
            rnd = await floor.next_round()
            settled_at = time.time()
            assert rnd["round_id"] == rid and rnd["status"] == "settled" and len(rnd["bets"]) == 2
            out, _ = await asyncio.wait_for(run, 400)
        text = out.decode(errors="replace")
        assert proc.returncode != 0, text  # ut-b failed its update
        recap = text[text.rindex("PLAY RECAP"):]
        assert "ut-a" in recap and "failed=0" in recap.split("ut-b")[0], text
        assert "failed=1" in recap.split("ut-b")[1], text
        assert "ut-b: the update to 0.2.0 failed" in text and "rolled back to 0.1.0" in text, text

        a, b = _log(dirs["ut-a"]), _log(dirs["ut-b"])
        # ut-a: installed after its round settled, verified, running 0.2.0.
        assert [(e["action"], e.get("to_version"), e.get("ok")) for e in a] == [
            ("installed", "0.1.0", None), ("installed", "0.2.0", None), ("verified", None, True),
        ], a
        assert a[1]["by"] == "ansible:tester" and a[1]["from_version"] == "0.1.0"
        installed_at = datetime.strptime(a[1]["at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert installed_at.timestamp() >= int(settled_at)  # whole seconds in the log
        # ut-b: the damaged package refused, the previous one back and verified.
        assert [(e["action"], e.get("to_version"), e.get("ok")) for e in b] == [
            ("installed", "0.1.0", None), ("installed", "0.2.0", None),
            ("verified", None, False), ("installed", "0.1.0", None), ("verified", None, True),
        ], b  # fmt: skip
        assert "changed" in b[2]["reason"] and b[3]["by"] == "ansible:tester (rollback)"
        for tid, want in (("ut-a", "0.2.0"), ("ut-b", "0.1.0")):
            assert (dirs[tid] / "share" / "version").read_text() == want

        # Both back in play, each restarted once, the download log journaled and published.
        for tid in TABLES:
            async with FloorClient(mosquitto_broker.host, mosquitto_broker.port, tid,
                                   signers=principals, client_id=f"after-{tid}") as floor:  # fmt: skip
                await floor.until(lambda f=floor: (f.state or {}).get("availability") == "online"
                                  and (f.state or {}).get("maintenance") is None, timeout=30,
                                  what=f"{tid} in play")  # fmt: skip
                assert (await floor.command("open_betting"))["status"] == "ok"
        installs_a = _events(events, "ut-a", "software_installed")
        assert installs_a and [ln["action"] for ln in installs_a[-1]["data"]["log"]] == [
            "installed", "verified"
        ], installs_a
        assert installs_a[-1]["data"]["verification"]["ok"] is True
        installs_b = _events(events, "ut-b", "software_installed")
        assert [ln["action"] for ln in installs_b[-1]["data"]["log"]] == [
            "installed", "verified", "installed", "verified"
        ], installs_b
        # One table at a time: ut-b left play after ut-a was back.
        maint = [
            (m.topic.split("/")[2], m.json()["data"]["active"])
            for m in events.messages
            if m.json().get("event") == "maintenance"
        ]
        assert maint == [("ut-a", True), ("ut-a", False), ("ut-b", True), ("ut-b", False)], maint
    finally:
        if proc is not None and proc.returncode is None:
            proc.kill()
        for d in dirs.values():
            subprocess.run([py, str(STANDIN), "stop", str(d)], check=False)
        await events.stop()


@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core is not installed (pip: dev extra)")
async def test_a_round_that_does_not_finish_in_time_leaves_the_table_untouched_and_in_play(
    mosquitto_broker: Any, tmp_path: Path
) -> None:
    """tablectl_round_timeout passes with the round still open: nothing is installed, the
    table is not restarted, the maintenance this run asked is ended, the round goes on."""
    principals, dirs, inventory = _floor(tmp_path, mosquitto_broker, ("ut-c",), round_timeout=4)
    d = dirs["ut-c"]
    pid = (d / "pid").read_text()
    py = sys.executable
    try:
        async with FloorClient(
            mosquitto_broker.host, mosquitto_broker.port, "ut-c", signers=principals
        ) as floor:
            await floor.until(lambda: (floor.state or {}).get("availability") == "online",
                              timeout=60, what="ut-c online")  # fmt: skip
            assert (await floor.command("open_betting"))["status"] == "ok"
            rid = floor.round_in_progress
            assert (await floor.place(BET))["status"] == "accepted"
            proc = await _playbook(inventory, tmp_path)
            out, _ = await asyncio.wait_for(proc.communicate(), 300)
            text = out.decode(errors="replace")
            assert proc.returncode != 0, text
            assert "ut-c: the update to 0.2.0 failed" in text, text
            assert "nothing installed, in play again" in text, text
            assert "TASK [Install the package]" not in text, text
            await floor.until(lambda: (floor.state or {}).get("maintenance") is None,
                              timeout=30, what="out of maintenance")  # fmt: skip
            assert floor.state["phase"] == "open" and floor.state["round_id"] == rid
            assert (await floor.command("close_betting"))["status"] == "ok"
            assert (await floor.command("result", outcome={"number": 3}))["status"] == "ok"
            rnd = await floor.next_round()
            assert rnd["round_id"] == rid and rnd["status"] == "settled"
        assert [e["action"] for e in _log(d)] == ["installed"]  # nothing installed
        assert (d / "share" / "version").read_text() == "0.1.0"
        assert (d / "pid").read_text() == pid  # never restarted
    finally:
        subprocess.run([py, str(STANDIN), "stop", str(d)], check=False)


def _ansible(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp / "at"),
           "ANSIBLE_HOME": str(tmp / "ah")}  # fmt: skip
    return subprocess.run([str(ANSIBLE), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip


@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core is not installed (pip: dev extra)")
def test_the_playbook_uses_builtin_modules_only_and_parses(tmp_path: Path) -> None:
    import yaml  # ansible-core's dependency

    (play,) = yaml.safe_load(PLAYBOOK.read_text(encoding="utf-8"))

    def modules(tasks: list[dict[str, Any]]) -> set[str]:
        out: set[str] = set()
        for t in tasks:
            for key in ("block", "rescue", "always"):
                out |= modules(t.get(key, []))
            out |= {k for k in t if "." in k}
        return out

    used = modules(play["tasks"])
    assert used and all(m.startswith("ansible.builtin.") for m in used), used
    r = _ansible(["-i", "localhost,", "--syntax-check", str(PLAYBOOK)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core is not installed (pip: dev extra)")
@pytest.mark.parametrize(("running", "outcome"), [("0.2.0", "skipped"), ("0.0.9", "refused")])
def test_a_table_on_the_new_version_is_skipped_and_one_on_another_is_left_alone(
    tmp_path: Path, running: str, outcome: str
) -> None:
    # No broker at all: neither case may reach the table's maintenance.
    py = sys.executable
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(
        f"[tables]\nut-c tablectl_cmd_version='echo {running}' "
        f"tablectl_cmd_install=false tablectl_cmd_restart=false\n\n[tables:vars]\n"
        f"ansible_connection=local\nansible_python_interpreter={py}\n"
        "tablectl_controller_command=false\ntablectl_broker=mqtt://127.0.0.1:1\n"
        "tablectl_updater=pit\ntablectl_updater_key=/nonexistent\n"
        f"tablectl_package={tmp_path / 'new.deb'}\ntablectl_version=0.2.0\n"
        f"tablectl_previous_package={tmp_path / 'old.deb'}\ntablectl_previous_version=0.1.0\n"
    )
    r = _ansible(["-i", str(inventory), str(PLAYBOOK)], tmp_path)
    text = r.stdout + r.stderr
    if outcome == "skipped":
        assert r.returncode == 0, text
        recap = text[text.rindex("PLAY RECAP"):]
        assert "changed=0" in recap and "failed=0" in recap, text
        asked = text[text.index("TASK [Ask maintenance"):].split("TASK [", 2)[1]
        assert "skipping: [ut-c]" in asked and "changed: [ut-c]" not in asked, text
    else:
        assert r.returncode != 0, text
        assert "TASK [Ask maintenance" not in text, text
        assert "ut-c runs 0.0.9, neither 0.1.0" in text and "not touched" in text, text
