"""The table's software checked against its signed manifest at start-up, every
``[software] interval_hours`` and on demand (``software.py`` says how).

Every check is an event of the journal's event log (``software_verified``: the trigger,
who asked, the result, the seed and the seeded answer). A mismatch latches the fault
``SOFTWARE_MISMATCH`` (it stops play until a technician clears it from the console,
after the install is put right) and raises the alert of the same code, whose condition
lasts until a check passes again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from ..auth import Principal
from ..games.errors import CodedError
from ..journal import Event, Fault
from ..jsonio import JSON
from ..table.floor import PREPARED, Deferred, RequestError
from .alerts import Alerts
from .software import SEED, SoftwareSettings, Verification, verify

log = logging.getLogger(__name__)

FAULT = "SOFTWARE_MISMATCH"


class SoftwareMismatch(CodedError, RuntimeError):
    """The installed software does not match its signed manifest: the daemon refuses
    to start."""

    code = FAULT


class CheckJournal(Protocol):
    def append_event(self, kind: str, data: JSON = ...) -> Event: ...
    def set_fault(self, code: str, message: str, data: JSON = ...) -> tuple[Fault, bool]: ...


class SoftwareCheck:
    """Runs :func:`~.software.verify` and records what it found."""

    def __init__(
        self,
        settings: SoftwareSettings,
        journal: CheckJournal,
        alerts: Alerts | None,
        *,
        root: Path | None = None,
        faults_changed: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.journal = journal
        self.alerts = alerts
        self.root = root
        self.faults_changed = faults_changed
        self.last: Verification | None = None

    @property
    def configured(self) -> bool:
        return self.settings.configured

    def check(self, trigger: str, *, by: str | None = None, seed: str | None = None) -> Verification:
        """One check, recorded (``trigger``: ``start-up``, ``periodic``, ``console``,
        ``mqtt``)."""
        return self.record(verify(self.settings, root=self.root, seed=seed), trigger, by=by)

    def record(self, v: Verification, trigger: str, *, by: str | None = None) -> Verification:
        """Journal what a check found; on a mismatch latch the fault, raise the alert."""
        self.last = v
        data: dict[str, JSON] = {"trigger": trigger, "by": by, **v.to_json()}
        for key in ("changed", "missing", "unlisted"):
            items = data[key]
            if isinstance(items, list) and len(items) > 50:
                data[key] = [*items[:50], f"... {len(items) - 50} more"]
        self.journal.append_event("software_verified", data)
        if v.ok:
            log.info("%s (%s)", v.summary(), trigger)
            if self.alerts is not None:
                evidence: JSON = {"trigger": trigger, "manifest_sha256": v.manifest_sha256}
                self.alerts.end(FAULT, evidence=evidence)
        else:
            log.error("%s (%s)", v.summary(), trigger)
            _, new = self.journal.set_fault(FAULT, v.reason, {"trigger": trigger, **v.to_json()})
            if self.alerts is not None:
                self.alerts.raise_(FAULT, v.reason, evidence={"trigger": trigger, **v.to_json()})
            if new:
                self.faults_changed()
        return v

    def at_start(self) -> None:
        """The start-up check: a mismatch raises :class:`SoftwareMismatch` (recorded)."""
        if not self.configured:
            log.warning("[software] not configured: the installed software is not verified")
            return
        v = self.check("start-up")
        if not v.ok:
            raise SoftwareMismatch(v.reason)

    async def run(self) -> None:
        """Check every ``interval_hours`` until cancelled (in a worker thread: hashing
        the files must not hold up the event loop)."""
        if not self.configured:
            return
        while True:
            await asyncio.sleep(self.settings.interval_hours * 3600)
            v = await asyncio.to_thread(verify, self.settings, root=self.root)
            self.record(v, "periodic")  # on the loop: the journal is not thread-safe

    def command(self, args: Mapping[str, JSON], who: Principal) -> JSON:
        """The signed command ``verify_software`` ``{"seed": "..."}``.

        Hashing the installed files (about 2 MB) must neither hold up the event loop nor
        sit inside the request's journal transaction: the first pass defers
        (:class:`~firmware_host.table.floor.Deferred`), the floor hashes in a worker
        thread, and the request's next pass records that check here, in the transaction
        that journals the answer (once; a retry of the request id gets that answer)."""
        seed = args.get("seed")
        if not isinstance(seed, str) or not SEED.match(seed):
            raise RequestError(
                "MALFORMED_REQUEST",
                "verify_software needs a 'seed': 8-128 characters of A-Z a-z 0-9 _ . : + / = -",
            )
        if not self.configured:
            raise RequestError("NOT_SUPPORTED", "no signed manifest configured ([software])")
        done = PREPARED.get()
        if not isinstance(done, Verification) or done.seed != seed:
            raise Deferred(lambda: verify(self.settings, root=self.root, seed=seed))
        return self.record(done, "mqtt", by=f"mqtt:{who.audit}").to_json()
