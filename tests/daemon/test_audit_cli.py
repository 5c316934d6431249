"""`tablectl audit verify`: the hash-chained event log, checked end to end; tampering
with one row makes it fail and name the row."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from firmware_host.journal import Journal


def verify(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "firmware_host", "audit", "verify", "--journal", str(path)],
        capture_output=True,
        text=True,
    )


def test_verify_passes_then_names_the_tampered_row(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with Journal(path) as j:
        for i in range(10):
            j.append_event(
                "privileged_action",
                {"action": "jackpot_adjust", "amount": 100 * i, "operator": "tech1"},
            )
        target = j.events(10)[4].id
    ok = verify(path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # An attacker with the file: drop the append-only triggers and change one amount.
    db = sqlite3.connect(path)
    for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
    ):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("UPDATE events SET data = replace(data, '400', '40000') WHERE id = ?", (target,))
    db.commit()
    db.close()
    bad = verify(path)
    assert bad.returncode == 1
    assert str(target) in bad.stdout, bad.stdout
