"""What a Debian table does for the update playbook, for a table living in one directory
of the test machine (tests/fleet/test_update_playbook.py): the playbook's commands
``tablectl_cmd_version``, ``tablectl_cmd_install`` and ``tablectl_cmd_restart`` point here;
its verification is the real ``tablectl verify-software``.

    python standin_table.py version DIR        # the installed release's version
    python standin_table.py install DIR PKG    # like apt-get install + postinst
    python standin_table.py restart DIR        # like systemctl restart tablectl
    python standin_table.py stop DIR

A "package" is a tar.gz of ``lib/`` (the files its signed manifest covers) and
``share/`` (``version``, ``software.manifest``, ``.sig``, ``build.pub``), unpacked into
DIR as the package's files are installed; ``install`` appends the line the package's
postinst appends to the download log (``packaging/deb/postinst``), with
``TABLECTL_INSTALLED_BY``. ``restart`` stops the daemon (SIGTERM, as systemd does) and
starts ``tablectl run`` again, detached, its pid in DIR/pid.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path


def version(d: Path) -> str:
    return (d / "share" / "version").read_text(encoding="utf-8").strip()


def install(d: Path, pkg: Path) -> None:
    before = version(d) if (d / "share" / "version").exists() else None
    for sub in ("lib", "share"):
        shutil.rmtree(d / sub, ignore_errors=True)
    with tarfile.open(pkg) as tar:
        tar.extractall(d, filter="data")
    entry = {
        "action": "installed",
        "by": os.environ.get("TABLECTL_INSTALLED_BY", "root"),
        "from_version": before,
        "to_version": version(d),
        "package": pkg.name,
        "at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    with open(d / "state" / "software-installs.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")


def stop(d: Path) -> None:
    pidfile = d / "pid"
    if not pidfile.exists():
        return
    pid = int(pidfile.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pidfile.unlink()
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                break
        except ChildProcessError:  # not our child: poll it
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
    pidfile.unlink()


def restart(d: Path) -> None:
    stop(d)
    log = open(d / "daemon.log", "a", encoding="utf-8")  # noqa: SIM115 (the child keeps it)
    cmd = [
        sys.executable, "-m", "firmware_host.cli", "run", "--config", str(d / "table.toml"),
        "--state-dir", str(d / "state"), "--runtime-dir", str(d / "run"),
    ]  # fmt: skip
    p = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
    )
    (d / "pid").write_text(str(p.pid))


def main(argv: list[str]) -> int:
    action, d = argv[0], Path(argv[1])
    if action == "version":
        print(version(d), end="")
    elif action == "install":
        install(d, Path(argv[2]))
    elif action == "restart":
        restart(d)
    elif action == "stop":
        stop(d)
    else:
        print(f"unknown action {action}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
