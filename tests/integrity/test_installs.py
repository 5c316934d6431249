"""The download log (issue 35; 25 CFR 547.12(a)(5)): ``software_installed`` is journaled
at start-up exactly when the running software differs from the chain's last record of
it (version or signed manifest), with who and when from the installation record only
when that record names the running version."""

from __future__ import annotations

import json
from pathlib import Path

from firmware_host.integrity.installs import EVENT, RECORD, SoftwareInstalls
from firmware_host.integrity.software import Verification
from firmware_host.journal.settings import JournalSettings


def _ok(msha: str) -> Verification:
    return Verification(True, version="x", scope="environment", files=3, manifest_sha256=msha)


def test_each_installation_once_with_its_record(tmp_path: Path) -> None:
    j = JournalSettings(path=str(tmp_path / "journal.sqlite3")).open()
    record = tmp_path / RECORD
    try:
        def start(version: str, v: Verification | None) -> dict | None:
            return SoftwareInstalls(j.chain, "T1", record, version=version).at_start(v)

        first = start("0.1.0", _ok("a" * 64))
        assert first is not None and first["from_version"] is None
        assert first["installed_by"] is None and first["record"]["why"] == "no installation record"
        assert start("0.1.0", _ok("a" * 64)) is None  # a plain restart: nothing
        # An update, with its record (who, when) written by the package.
        record.write_text(json.dumps({"to_version": "0.2.0", "installed_by": "ansible:ops",
                                      "installed_at": "2026-05-09T07:00:00Z"}))  # fmt: skip
        upd = start("0.2.0", Verification(False, "1 file(s) changed (x)", manifest_sha256="b" * 64))
        assert upd is not None
        assert (upd["from_version"], upd["to_version"]) == ("0.1.0", "0.2.0")
        assert upd["installed_by"] == "ansible:ops"
        assert upd["verification"]["ok"] is False
        # A new manifest for the same version is an installation too; the old record
        # (it names 0.2.0) is still this version's.
        assert start("0.2.0", _ok("c" * 64)) is not None
        # A rollback: the record names 0.2.0, not the running 0.1.0: not used.
        back = start("0.1.0", _ok("a" * 64))
        assert back is not None and back["from_version"] == "0.2.0"
        assert back["installed_by"] is None and "0.2.0" in back["record"]["why"]
        # A damaged record is said so, never a traceback.
        record.write_text("{not json")
        bad = start("0.3.0", None)
        assert bad is not None and bad["record"]["why"].startswith("unreadable")
        assert bad["verification"] is None
        events = j.chain.events(50, kind=EVENT)
        assert [e.data["to_version"] for e in events] == ["0.1.0", "0.2.0", "0.2.0", "0.1.0", "0.3.0"]
        # Each is queued for the floor on ``events``, in the same transaction.
        published = [json.loads(e.payload) for e in j.outbox.pending(100)]
        assert [p["data"]["to_version"] for p in published if p.get("event") == EVENT] == [
            "0.1.0", "0.2.0", "0.2.0", "0.1.0", "0.3.0"
        ]  # fmt: skip
    finally:
        j.close()
