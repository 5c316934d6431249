"""The download log: every installation of the table's software, in its audit chain.

25 CFR 547.12(a)(5) asks for a log of the software downloaded to a gaming device: who
installed which software, when, from which version to which, and whether it was
verified before play. The table keeps it itself (issue 35): at every start, once its
software has been checked against the signed manifest (``selfcheck.py``), it compares
what runs (its version and the manifest's SHA-256) with the last ``software_installed``
event of its chain; when they differ (a first start, an update, a rollback, a new
manifest) it journals a ``software_installed`` event and publishes it on ``events`` in
the same transaction, so the floor holds the log too.

Who installed it and when come from the **installation record**, a small JSON file the
package's ``postinst`` writes beside the journal (``software-install.json``:
``installed_by``, ``installed_at``, ``from_version``, ``to_version``, ``package``): the
playbook passes who asked (``TABLECTL_INSTALLED_BY``). A record that does not name the
running version is not this installation's and is not used (``installed_by`` null,
``record`` says why). The version installed before is the chain's own (the last event's
``to_version``), not the record's.
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
from ..timefmt import utc_now
from .events import table_event
from .software import Verification

log = logging.getLogger(__name__)

EVENT = "software_installed"
#: The installation record's name, beside the journal (the package's postinst writes it).
RECORD = "software-install.json"
#: The record's members that are copied into the event.
_FROM_RECORD = ("installed_by", "installed_at", "package", "package_sha256")


class SoftwareInstalls:
    """Journals an installation at start-up when the software changed (module docstring)."""

    def __init__(
        self,
        chain: AuditLog,
        table_id: str,
        record: Path,
        *,
        version: str = __version__,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``record``: the installation record's path (``<state dir>/software-install.json``)."""
        self.chain = chain
        self.table_id = table_id
        self.record = record
        self.version = version
        self.clock = clock
        #: The event journaled at this start (None: the software had not changed).
        self.journaled: dict[str, JSON] | None = None

    def at_start(self, verified: Verification | None) -> dict[str, JSON] | None:
        """After the start-up check (``verified``; None: no manifest configured)."""
        msha = verified.manifest_sha256 if verified is not None else None
        last = self.chain.events(1, kind=EVENT)
        before = last[-1].data if last and isinstance(last[-1].data, dict) else None
        if (
            before is not None
            and before.get("to_version") == self.version
            and before.get("manifest_sha256") == msha
        ):
            return None
        data: dict[str, JSON] = {
            "from_version": before.get("to_version") if before is not None else None,
            "to_version": self.version,
            "manifest_sha256": msha,
            **dict.fromkeys(_FROM_RECORD),
            "record": self._read_record(),
            "verification": _verification(verified),
        }
        rec = data["record"]
        if isinstance(rec, dict) and rec.get("used") is True:
            for key in _FROM_RECORD:
                data[key] = rec.get(key)
        table_event(self.chain, self.table_id, EVENT, data, at=self.clock())
        log.info(
            "software installed: %s -> %s by %s (verified: %s)",
            data["from_version"], self.version, data["installed_by"] or "unknown",
            "not configured" if verified is None else ("ok" if verified.ok else "MISMATCH"),
        )  # fmt: skip
        self.journaled = data
        return data

    def _read_record(self) -> dict[str, JSON]:
        """The installation record as found: ``used`` and, if not, why."""
        path = str(self.record)
        try:
            body = json.loads(self.record.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"path": path, "used": False, "why": "no installation record"}
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return {"path": path, "used": False, "why": f"unreadable: {exc}"[:200]}
        if not isinstance(body, dict):
            return {"path": path, "used": False, "why": "not a JSON object"}
        if body.get("to_version") != self.version:
            return {
                "path": path, "used": False,
                "why": f"it records version {body.get('to_version')!r}, not {self.version}",
            }  # fmt: skip
        kept: dict[str, JSON] = {"path": path, "used": True}
        for key in (*_FROM_RECORD, "from_version", "to_version"):
            value = body.get(key)
            kept[key] = str(value)[:200] if value is not None else None
        return kept


def _verification(v: Verification | None) -> JSON:
    if v is None:
        return None
    return {
        "ok": v.ok, "reason": v.reason, "scope": v.scope, "files": v.files,
        "version": v.version, "manifest_sha256": v.manifest_sha256,
    }  # fmt: skip
