"""The board on the Pi's own screen (issue 33): the kiosk unit and the view's unit pass
``systemd-analyze verify``; the browser is restarted whenever it ends and reaches
nothing beyond loopback; the view serves on loopback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOARD = ROOT / "systemd" / "tablectl-board.service"
VIEW = ROOT / "systemd" / "tablectl-view.service"

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed"
)


def executables(text: str) -> list[str]:
    """The programs the unit's Exec*= lines run (the first word, without a prefix)."""
    out = []
    for m in re.finditer(r"^Exec\w+=([-@:+!]*)(\S+)", text, re.M):
        out.append(m.group(2))
    return out


def verify(tmp_path: Path) -> tuple[int, str, list[str]]:
    """``systemd-analyze verify`` of both units, as shipped where every program they run
    is installed; a program missing here (``cage``, the installed ``tablectl``) is
    replaced by ``/bin/true`` in a copy, and named, so that everything else is checked."""
    missing: list[str] = []
    paths = []
    for unit in (VIEW, BOARD):
        text = unit.read_text()
        for exe in executables(text):
            if not os.access(exe, os.X_OK):
                missing.append(exe)
                text = text.replace(exe, "/bin/true")
        path = tmp_path / unit.name
        path.write_text(text)
        paths.append(str(path))
    proc = subprocess.run(
        ["systemd-analyze", "verify", *paths], capture_output=True, text=True, timeout=60
    )
    return proc.returncode, proc.stdout + proc.stderr, missing


def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    rc, out, missing = verify(tmp_path)
    print(f"\n  missing here, replaced by /bin/true: {missing or 'none'}")
    assert set(missing) <= {"/usr/bin/cage", "/opt/tablectl/venv/bin/tablectl", "/usr/bin/chromium"}
    lines = [ln for ln in out.splitlines() if "tablectl" in ln]
    assert rc == 0 and not lines, out


def test_verify_refuses_a_broken_unit(tmp_path: Path) -> None:
    """The check can fail: a value systemd cannot parse is reported (it would be ignored
    at run time), a missing program refused."""
    bad = tmp_path / "broken.service"
    bad.write_text("[Service]\nExecStart=/bin/true --kiosk\nRestart=sometimes\n")
    proc = subprocess.run(["systemd-analyze", "verify", str(bad)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert "broken.service:3" in proc.stdout + proc.stderr
    bad.write_text("[Service]\nExecStart=/usr/bin/no-such-browser --kiosk\n")
    proc = subprocess.run(["systemd-analyze", "verify", str(bad)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.returncode != 0


def test_the_kiosk_restarts_the_browser_and_stays_on_loopback() -> None:
    text = BOARD.read_text()
    for line in (
        "Restart=always",
        "StartLimitIntervalSec=0",
        "TTYPath=/dev/tty1",
        "Conflicts=getty@tty1.service",
        "IPAddressDeny=any",
        "IPAddressAllow=localhost",
        "Wants=tablectl-view.service",
    ):
        assert line in text, line
    start = next(ln for ln in text.splitlines() if ln.startswith("ExecStart="))
    for flag in ("--kiosk", "--incognito", "--noerrdialogs", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "${BOARD_URL}"):  # fmt: skip
        assert flag in start, flag
    # the browser is watched (tableview/kiosk.py): its flags after the kiosk's "--"
    kiosk, _, browser = start.partition(" -- /usr/bin/chromium ")
    assert kiosk.endswith("/opt/tablectl/venv/bin/python -m tableview.kiosk ${BOARD_URL}"), start
    assert browser.startswith("--kiosk ")
    url = re.search(r"^Environment=BOARD_URL=(\S+)$", text, re.M)
    assert url and url.group(1).startswith("http://127.0.0.1:8080/board")
    view = VIEW.read_text()
    assert "--listen 127.0.0.1:8080" in view and "Restart=always" in view
    assert "tablectl view --config /etc/tablectl/table.toml" in view
