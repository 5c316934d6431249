"""The table's alerts: raised by the detectors, held until an operator acknowledges
them with a reason (the console's ``ack`` or the signed ``ack_alert`` command), and
published on the retained ``alerts`` topic (``alerts.json``).

The journal keeps them (``journal/alerts.py``): raising, acknowledging and clearing
are events of the audit chain, committed with the change. The snapshot is published
after the commit (never for a change that rolled back).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from ..journal import AlertRecord, AlertStore, Database, JournalError
from ..jsonio import JSON
from ..table.commands import CommandCall, Commands
from ..table.reading import MAX_REASON, RequestError
from .codes import ALERT_CODES

log = logging.getLogger(__name__)


class Alerts:
    """Raise, acknowledge and end alerts; publish the retained snapshot after each.

    ``store``: the journal's alerts; ``db``: its database (the snapshot is published
    once the change commits); ``publish``: the retained ``alerts`` topic's setter (the
    floor link's ``set_snapshot`` bound to ``alerts``), or None (tests, tools)."""

    def __init__(
        self,
        store: AlertStore,
        db: Database,
        *,
        publish: Callable[[Mapping[str, JSON]], None] | None = None,
    ) -> None:
        self.store = store
        self._db = db
        self._publish = publish
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, callback: Callable[[], None]) -> None:
        """``callback()`` after every committed change (the retained ``state``...)."""
        self._listeners.append(callback)

    def raise_(
        self,
        code: str,
        message: str,
        *,
        subject: str = "",
        evidence: JSON = None,
        severity: str | None = None,
    ) -> AlertRecord:
        """Raise ``code`` (a code of :data:`~.codes.ALERT_CODES`: its severity and whether
        it lasts come from there unless ``severity`` says otherwise)."""
        spec = ALERT_CODES[code]
        rec, new = self.store.raise_alert(
            code,
            message,
            severity=severity or spec.severity,
            subject=subject,
            evidence=evidence,
            momentary=not spec.condition,
        )
        if new:
            log.warning("alert %s raised%s: %s", code, f" ({subject})" if subject else "", message)
        self._changed()
        return rec

    def acknowledge(self, alert_id: int, *, by: str, reason: str) -> AlertRecord:
        rec = self.store.acknowledge_alert(alert_id, by=by, reason=reason)
        log.info("alert %d (%s) acknowledged by %s: %s", alert_id, rec.code, by, reason)
        self._changed()
        return rec

    def end(self, code: str, subject: str = "", *, evidence: JSON = None) -> AlertRecord | None:
        """The condition behind ``code`` is over (it clears once acknowledged)."""
        rec = self.store.end_condition(code, subject, evidence=evidence)
        if rec is not None:
            self._changed()
        return rec

    def register_commands(self, commands: Commands) -> None:
        """The table's commands this answers (their specs: ``firmware_host/commands.py``)."""
        commands.register("ack_alert", self.ack_command)

    def ack_command(self, call: CommandCall) -> JSON:
        """The command ``ack_alert`` ``{"alert_id": N, "reason": "..."}`` (signed, or
        typed at the console: ``ack``)."""
        args = call.args
        alert_id = args.get("alert_id")
        if not isinstance(alert_id, int) or isinstance(alert_id, bool) or alert_id < 1:
            raise RequestError("MALFORMED_REQUEST", "ack_alert's 'alert_id' must be an alert's id")
        reason = args.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise RequestError("MALFORMED_REQUEST", "ack_alert needs a 'reason'")
        if len(reason) > MAX_REASON or not reason.isprintable():
            raise RequestError(
                "MALFORMED_REQUEST",
                f"ack_alert's 'reason' must be at most {MAX_REASON} printable characters",
            )
        rec = self.acknowledge(alert_id, by=call.source, reason=reason)
        return {"alert": rec.to_json()}

    def active(self) -> list[AlertRecord]:
        return self.store.active()

    def codes(self) -> list[str]:
        """The codes of the active alerts (``state``, ``tablectl status``)."""
        return [a.code for a in self.active()]

    def snapshot(self) -> dict[str, JSON]:
        """The body of the retained ``alerts`` topic (before the link's common head)."""
        alerts = [a.to_json() for a in self.active()]
        return {"alerts": alerts, "unacknowledged": sum(a["state"] == "raised" for a in alerts)}

    def publish(self) -> None:
        """Publish the snapshot now (at start-up)."""
        if self._publish is not None:
            try:
                self._publish(self.snapshot())
            except JournalError as exc:  # the journal cannot be read now: next change
                log.error("alerts: snapshot not published: %s", exc)

    def _changed(self) -> None:
        def after() -> None:
            self.publish()
            for cb in list(self._listeners):
                try:
                    cb()
                except Exception:  # a display must never stop an alert
                    log.exception("alerts: listener failed")

        self._db.after_commit(after)
