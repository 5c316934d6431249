"""The download log: every installation of the table's software, in its audit chain.

25 CFR 547.12(a)(5) asks for a log of the software downloaded to a gaming device: who
installed which software, when, from which version to which, and whether it was
verified before play. The table keeps it itself (issue 35).

**The installation log** (``software-installs.jsonl`` beside the journal, one JSON object
a line, appended, never rewritten) is written where the table's software is installed:

- the package's ``postinst`` appends ``{"action": "installed", "at", "by",
  "from_version", "to_version", "package"}`` at every installation, upgrade or
  downgrade (``by``: ``TABLECTL_INSTALLED_BY``, which the update playbook sets to who
  ran it, else the user behind ``sudo``, else ``root``);
- ``tablectl verify-software --record LOG`` appends ``{"action": "verified", "at", "ok",
  "reason", "version", "manifest_sha256", "files"}``: the playbook's check of the
  installed files against the signed manifest, before the restart.

**At every start**, once its own check against the signed manifest has run
(``selfcheck.py``), the daemon journals one ``software_installed`` event, published on
``events`` in the same transaction (so the floor holds the log too), when the log has
lines its chain has not recorded yet (an update, a refused update rolled back: both
are in the log) or when the software that runs differs from the chain's last record of
it (its version, its manifest's SHA-256). The event carries the new lines (``log``, at
most :data:`MAX_LINES`, ``log_lines`` the log's length), who installed the running
version and when (the last ``installed`` line naming it), the version recorded before
(the chain's own), and the start-up check's result (``verification``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from .. import __version__
from ..journal import AuditLog
from ..jsonio import JSON
from ..timefmt import iso_utc, utc_now
from .events import table_event
from .software import Verification

log = logging.getLogger(__name__)

EVENT = "software_installed"
#: The installation log's name, beside the journal.
RECORD = "software-installs.jsonl"
#: New lines of the log carried by one event (the count is whole).
MAX_LINES = 50
#: The longest line kept (a line longer is kept cut, and said so).
MAX_LINE = 2000


def read_log(path: Path) -> tuple[list[JSON], str | None]:
    """The log's lines (a line that is not a JSON object is kept as ``{"unreadable":
    TEXT}``), and why it could not be read at all (None: it was, or it is absent)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        return [], f"{path}: {exc.strerror or exc}"
    out: list[JSON] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            body = json.loads(line[:MAX_LINE])
        except ValueError:
            body = None
        out.append(body if isinstance(body, dict) else {"unreadable": line[:200]})
    return out, None


def append_log(path: Path, entry: dict[str, JSON]) -> None:
    """Append one line to the log (``tablectl verify-software --record``)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"at": iso_utc(utc_now()), **entry}, sort_keys=True) + "\n")


class SoftwareInstalls:
    """Journals the installations at start-up (module docstring)."""

    def __init__(
        self,
        chain: AuditLog,
        table_id: str,
        record: Path,
        *,
        version: str = __version__,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``record``: the installation log (``<state dir>/software-installs.jsonl``)."""
        self.chain = chain
        self.table_id = table_id
        self.record = record
        self.version = version
        self.clock = clock
        #: The event journaled at this start (None: nothing new).
        self.journaled: dict[str, JSON] | None = None

    def at_start(self, verified: Verification | None) -> dict[str, JSON] | None:
        """After the start-up check (``verified``; None: no manifest configured)."""
        msha = verified.manifest_sha256 if verified is not None else None
        last = self.chain.events(1, kind=EVENT)
        before = last[-1].data if last and isinstance(last[-1].data, dict) else {}
        lines, unreadable = read_log(self.record)
        done = before.get("log_lines")
        done = done if isinstance(done, int) and 0 <= done <= len(lines) else 0
        new = lines[done:]
        same = before.get("to_version") == self.version and before.get("manifest_sha256") == msha
        if before and same and not new and unreadable is None:
            return None
        installed = [
            ln for ln in lines
            if isinstance(ln, dict) and ln.get("action") == "installed"
            and ln.get("to_version") == self.version
        ]  # fmt: skip
        by = installed[-1] if installed and isinstance(installed[-1], dict) else {}
        data: dict[str, JSON] = {
            "from_version": before.get("to_version"),
            "to_version": self.version,
            "manifest_sha256": msha,
            "installed_by": by.get("by"),
            "installed_at": by.get("at"),
            "package": by.get("package"),
            "verification": _verification(verified),
            "log": new[-MAX_LINES:],
            "log_lines": len(lines),
        }
        if len(new) > MAX_LINES:
            data["log_omitted"] = len(new) - MAX_LINES
        if unreadable is not None:
            data["log_unreadable"] = unreadable
        table_event(self.chain, self.table_id, EVENT, data, at=self.clock())
        log.info(
            "software: %s -> %s installed by %s; %d new line(s) of the installation log; "
            "verified at start: %s",
            data["from_version"], self.version, data["installed_by"] or "unknown", len(new),
            "not configured" if verified is None else ("ok" if verified.ok else "MISMATCH"),
        )  # fmt: skip
        self.journaled = data
        return data


def _verification(v: Verification | None) -> JSON:
    if v is None:
        return None
    return {
        "ok": v.ok, "reason": v.reason, "scope": v.scope, "files": v.files,
        "version": v.version, "manifest_sha256": v.manifest_sha256,
    }  # fmt: skip
