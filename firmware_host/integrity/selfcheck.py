"""The table's software checked against its signed manifest at start-up, every
``[software] interval_hours`` and on demand (``software.py`` says how).

Every check is an event of the journal's event log (``software_verified``: the trigger,
who asked, the result, the seed and the seeded answer). A mismatch latches the fault
``SOFTWARE_MISMATCH`` (it stops play until a technician clears it from the console,
after the install is put right) and raises the alert of the same code, whose condition
lasts until a check passes again. Raised again before it cleared, the alert keeps every
cause it was raised for (``evidence.causes``: each different reason with when it was
first and last seen, how many times, by which triggers), not only the last one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ..games.errors import CodedError
from ..journal import Event, Fault
from ..jsonio import JSON
from ..table.commands import PREPARED, CommandCall, Commands, Deferred
from ..table.reading import RequestError
from ..timefmt import iso_utc, utc_now
from .alerts import Alerts
from .environment import PACKAGES_SCOPE
from .software import SEED, SoftwareSettings, Verification, verify

log = logging.getLogger(__name__)

FAULT = "SOFTWARE_MISMATCH"
#: Paths kept per list in a journaled check or an alert's evidence (the count is whole).
MAX_PATHS = 50
#: Different causes an alert row keeps (the most recent).
MAX_CAUSES = 20


class SoftwareMismatch(CodedError, RuntimeError):
    """The installed software does not match its signed manifest: the daemon refuses
    to start."""

    code = FAULT


class CheckChain(Protocol):
    """Where a check is recorded (the journal's chain)."""

    def append_event(self, kind: str, data: JSON = ...) -> Event: ...


class CheckFaults(Protocol):
    """Where a mismatch is latched (the journal's faults)."""

    def set_fault(self, code: str, message: str, data: JSON = ...) -> tuple[Fault, bool]: ...


class SoftwareCheck:
    """Runs :func:`~.software.verify` and records what it found."""

    def __init__(
        self,
        settings: SoftwareSettings,
        chain: CheckChain,
        faults: CheckFaults,
        alerts: Alerts | None,
        *,
        prefix: Path | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self.chain = chain
        self.faults = faults
        self.alerts = alerts
        self.prefix = prefix
        self.clock = clock
        self.last: Verification | None = None

    @property
    def configured(self) -> bool:
        return self.settings.configured

    def check(
        self, trigger: str, *, by: str | None = None, seed: str | None = None
    ) -> Verification:
        """One check, recorded (``trigger``: ``start-up``, ``periodic``, ``console``,
        ``mqtt``)."""
        return self.record(self.verify(seed), trigger, by=by)

    def verify(self, seed: str | None = None) -> Verification:
        """One check, not recorded (it may run in a worker thread: :meth:`record` it on
        the loop)."""
        return verify(self.settings, prefix=self.prefix, seed=seed)

    def record(self, v: Verification, trigger: str, *, by: str | None = None) -> Verification:
        """Journal what a check found; on a mismatch latch the fault, raise the alert."""
        self.last = v
        data = _capped({"trigger": trigger, "by": by, **v.to_json()})
        self.chain.append_event("software_verified", data)
        if v.ok:
            log.info("%s (%s)", v.summary(), trigger)
            if self.alerts is not None:
                evidence: JSON = {"trigger": trigger, "manifest_sha256": v.manifest_sha256}
                self.alerts.end(FAULT, evidence=evidence)
        else:
            log.error("%s (%s)", v.summary(), trigger)
            for line in v.differences()[:20]:
                log.error("  %s", line)
            facts = _capped({"trigger": trigger, **v.to_json()})
            self.faults.set_fault(FAULT, v.reason, facts)
            if self.alerts is not None:
                causes = self._causes(v.reason, trigger)
                message = v.reason if len(causes) == 1 else (
                    f"{len(causes)} different causes (evidence.causes); the latest: {v.reason}"
                )  # fmt: skip
                self.alerts.raise_(FAULT, message, evidence={**facts, "causes": causes})
        return v

    def _causes(self, reason: str, trigger: str) -> list[JSON]:
        """The causes of the alert not yet cleared, with this one counted in."""
        assert self.alerts is not None
        now = iso_utc(self.clock())
        causes: list[JSON] = []
        for a in self.alerts.active():
            if a.code == FAULT and isinstance(a.evidence, dict):
                kept = a.evidence.get("causes")
                causes = [c for c in kept if isinstance(c, dict)] if isinstance(kept, list) else []
        for c in causes:
            if isinstance(c, dict) and c.get("cause") == reason:
                count = c.get("count")
                c["count"] = (count if isinstance(count, int) else 0) + 1
                c["last_seen"] = now
                triggers = c.get("triggers")
                if isinstance(triggers, list) and trigger not in triggers:
                    triggers.append(trigger)
                return causes
        causes.append({"cause": reason, "since": now, "last_seen": now, "count": 1,
                       "triggers": [trigger]})  # fmt: skip
        return causes[-MAX_CAUSES:]

    def at_start(self, then: Callable[[Verification | None], object] = lambda v: None) -> None:
        """The start-up check: a mismatch raises :class:`SoftwareMismatch` (recorded).
        ``then``: told what the check found (None: no manifest configured) before a
        mismatch raises (the download log, ``installs.py``)."""
        if not self.configured:
            log.warning("[software] not configured: the installed software is not verified")
            then(None)
            return
        v = self.check("start-up")
        then(v)
        if v.scope == PACKAGES_SCOPE:
            log.warning(
                "the software manifest covers the project's packages only (a demo's or a "
                "test's): a table's manifest covers its whole environment (docs/integrity.md)"
            )
        if not v.ok:
            raise SoftwareMismatch(v.reason)

    async def run(self) -> None:
        """Check every ``interval_hours`` until cancelled (in a worker thread: hashing
        the files must not hold up the event loop)."""
        if not self.configured:
            return
        while True:
            await asyncio.sleep(self.settings.interval_hours * 3600)
            v = await asyncio.to_thread(self.verify)
            self.record(v, "periodic")  # on the loop: the journal is not thread-safe

    def register_commands(self, commands: Commands) -> None:
        """The table's commands this answers (their specs: ``firmware_host/commands.py``)."""
        commands.register("verify_software", self.command)

    def command(self, call: CommandCall) -> JSON:
        """The command ``verify_software`` ``{"seed": "..."}`` (signed; or typed at the
        console, ``verify-software [SEED]``, where the seed is optional).

        Hashing the installed software (some 100 MB on a table) must neither hold up the
        event loop nor sit inside the request's journal transaction: the first pass defers
        (:class:`~firmware_host.table.commands.Deferred`), the floor (or the console) hashes
        in a worker thread, and the command's next pass records that check here, in the
        transaction that journals the answer (once; a retry of the request id gets that
        answer)."""
        seed = call.args.get("seed")
        if seed is None and call.console:
            pass  # a check without the seeded answer
        elif not isinstance(seed, str) or not SEED.match(seed):
            raise RequestError(
                "MALFORMED_REQUEST",
                "verify_software needs a 'seed': 8-128 characters of A-Z a-z 0-9 _ . : + / = -",
            )
        if not self.configured:
            raise RequestError("NOT_SUPPORTED", "no signed manifest configured ([software])")
        done = PREPARED.get()
        if not isinstance(done, Verification) or done.seed != seed:
            raise Deferred(lambda: self.verify(seed))
        return self.record(done, call.via, by=call.source).to_json()


def _capped(data: dict[str, JSON]) -> dict[str, JSON]:
    """A check's JSON with each list of paths cut to :data:`MAX_PATHS` (and the owners
    of the paths kept): a whole broken install must not make an event of megabytes."""
    kept: set[str] = set()
    for key in ("changed", "missing", "unlisted", "uncovered"):
        items = data.get(key)
        if isinstance(items, list):
            if len(items) > MAX_PATHS:
                data[key] = [*items[:MAX_PATHS], f"... {len(items) - MAX_PATHS} more"]
            kept.update(str(i) for i in items[:MAX_PATHS])
    owners = data.get("owners")
    if isinstance(owners, dict):
        data["owners"] = {k: v for k, v in owners.items() if k in kept}
    return data
