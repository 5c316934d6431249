"""The download log (issue 35; 25 CFR 547.12(a)(5)): ``software_installed`` is journaled
at start-up when the installation log has lines the chain has not recorded, or when the
running software differs from the chain's last record of it (version or signed
manifest); each line once; who installed the running version from its last
``installed`` line."""

from __future__ import annotations

import json
from pathlib import Path

from firmware_host.integrity.installs import EVENT, RECORD, SoftwareInstalls, append_log
from firmware_host.integrity.software import Verification
from firmware_host.journal.settings import JournalSettings


def _ok(msha: str) -> Verification:
    return Verification(True, version="x", scope="environment", files=3, manifest_sha256=msha)


def _installed(log: Path, frm: str | None, to: str, by: str) -> None:
    append_log(log, {"action": "installed", "from_version": frm, "to_version": to, "by": by,
                     "package": f"table-controller_{to}_arm64.deb"})  # fmt: skip


def test_each_installation_once_with_who_and_the_checks(tmp_path: Path) -> None:
    j = JournalSettings(path=str(tmp_path / "journal.sqlite3")).open()
    log = tmp_path / RECORD
    try:

        def start(version: str, v: Verification | None) -> dict | None:
            return SoftwareInstalls(j.chain, "T1", log, version=version).at_start(v)

        _installed(log, None, "0.1.0", "root")
        first = start("0.1.0", _ok("a" * 64))
        assert first is not None and first["from_version"] is None
        assert first["installed_by"] == "root" and first["log_lines"] == 1
        assert start("0.1.0", _ok("a" * 64)) is None  # a plain restart: nothing
        # An update refused by its check and rolled back: both in the log, the daemon
        # never ran 0.2.0; its next start journals both lines.
        _installed(log, "0.1.0", "0.2.0", "ansible:ops")
        append_log(log, {"action": "verified", "ok": False, "reason": "1 file(s) changed",
                         "version": "0.2.0"})  # fmt: skip
        _installed(log, "0.2.0", "0.1.0", "ansible:ops")
        append_log(log, {"action": "verified", "ok": True, "version": "0.1.0"})
        back = start("0.1.0", _ok("a" * 64))
        assert back is not None and back["log_lines"] == 5
        assert [(ln["action"], ln.get("to_version"), ln.get("ok")) for ln in back["log"]] == [
            ("installed", "0.2.0", None), ("verified", None, False),
            ("installed", "0.1.0", None), ("verified", None, True),
        ]  # fmt: skip
        assert back["installed_by"] == "ansible:ops" and back["from_version"] == "0.1.0"
        # The update that succeeds: from the chain's version, the start-up check kept.
        _installed(log, "0.1.0", "0.2.0", "ansible:ops")
        upd = start("0.2.0", Verification(False, "1 file(s) changed (x)", manifest_sha256="b" * 64))
        assert upd is not None and (upd["from_version"], upd["to_version"]) == ("0.1.0", "0.2.0")
        assert upd["verification"]["ok"] is False and len(upd["log"]) == 1
        # A new manifest of the same version, with no new line: an entry all the same.
        again = start("0.2.0", _ok("c" * 64))
        assert again is not None and again["log"] == [] and again["installed_by"] == "ansible:ops"
        # A line that is not JSON is kept as text, never a traceback.
        with open(log, "a") as f:
            f.write("{not json\n")
        bad = start("0.2.0", _ok("c" * 64))
        assert bad is not None and bad["log"] == [{"unreadable": "{not json"}]
        events = j.chain.events(50, kind=EVENT)
        assert [e.data["log_lines"] for e in events] == [1, 5, 6, 6, 7]
        # Each is queued for the floor on ``events``, in the same transaction.
        published = [json.loads(e.payload) for e in j.outbox.pending(100)]
        assert [p["data"]["log_lines"] for p in published if p.get("event") == EVENT] == [
            1, 5, 6, 6, 7
        ]  # fmt: skip
    finally:
        j.close()
