"""The table's doors, lids, boxes and tamper loops as significant events
(``docs/integrity.md``, "Significant events").

Each switch of ``[switches.<name>]`` (read by ``drivers/switches``) reports its state
when the table starts and every opening and closing; :class:`TableSwitches` journals
each in the audit chain and publishes it on ``events`` in the same transaction
(``switch_opened``, ``switch_closed``, with the lab's name of the event, ``gli``). An
opening raises an alert held until acknowledged, in that transaction:

- ``SWITCH_OPENED_IN_ROUND`` when a round is in flight (betting open or closed) and the
  switch does not allow it (``open_in_round = false``, the default);
- ``SWITCH_OPENED_UNATTENDED`` between rounds when no technician is logged in at the
  console and the switch asks for one (``technician = true``, the default).

A switch whose state is unknown (a changeover switch's contacts alike, chatter beyond
contact bounce, a pin that cannot be read) is a device fault: ``switch_fault`` journaled
and published, the switch's ``devices/<name>`` in ``fault``, and the lasting alert
``SWITCH_FAULT`` (its condition ends with ``switch_recovered``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from drivers.registry import DeviceConfig
from drivers.switches.bank import GpioSwitch, SwitchBank
from drivers.switches.events import SwitchChanged, SwitchEvent, SwitchFault, SwitchRecovered
from drivers.switches.settings import SwitchConfig

from ..journal import STORAGE_CODES, AuditLog, Database
from ..jsonio import JSON
from .alerts import Alerts
from .events import table_event
from .significant import SIGNIFICANT_EVENTS, switch_event_name

log = logging.getLogger(__name__)

__all__ = ["TableSwitches", "switch_problems"]

#: Kinds whose opening is a security matter in itself: their alerts are critical.
CRITICAL_KINDS = frozenset({"tamper", "tilt", "drop_box", "cash_box", "logic"})


class TableSwitches:
    """Journal, publish and alert on the switches' events (see the module docstring).

    ``round_in_flight()``: the id of the round whose betting is open or closed, or None;
    ``present()``: the technicians logged in at the console now
    (:class:`~firmware_host.console.presence.OperatorPresence`); ``health``: the floor
    link's ``set_device`` (each switch's ``devices/<name>``), or None."""

    def __init__(
        self,
        bank: SwitchBank,
        *,
        chain: AuditLog,
        db: Database,
        alerts: Alerts,
        table_id: str,
        round_in_flight: Callable[[], str | None],
        present: Callable[[], list[str]],
        health: Callable[[str, Mapping[str, JSON]], None] | None = None,
    ) -> None:
        self.bank = bank
        self._chain = chain
        self._db = db
        self._alerts = alerts
        self._table_id = table_id
        self._round_in_flight = round_in_flight
        self._present = present
        self._health = health
        #: Events the journal could not take (a full disk...): counted and logged.
        self.unjournaled = 0

    def start(self) -> None:
        """Read every switch (its state at start is journaled) and follow them."""
        self.bank.start(self.on_event)

    def stop(self) -> None:
        self.bank.stop()

    def states(self) -> dict[str, str]:
        """Each switch's state now: ``open``, ``closed`` or ``unknown``."""
        return {sw.name: sw.state for sw in self.bank}

    def on_event(self, event: SwitchEvent) -> None:
        sw = self.bank.get(event.device)
        if sw is None:
            return
        try:
            match event:
                case SwitchChanged():
                    self._changed(sw, event)
                case SwitchFault():
                    self._fault(sw, event)
                case SwitchRecovered():
                    self._recovered(sw, event)
        except Exception as exc:
            if getattr(exc, "code", None) not in STORAGE_CODES:
                raise
            # the journal cannot write (its storage guard latched the fault that stops
            # play): the event is lost to the chain, and said so here
            self.unjournaled += 1
            log.error("switch %s: %s not journaled: %s", sw.name, event.to_json(), exc)
        if self._health is not None:
            self._health(sw.name, {**sw.health.to_json(), "kind": "switch"})

    # -- what each event does ------------------------------------------------------------
    def _changed(self, sw: GpioSwitch, event: SwitchChanged) -> None:
        opened = event.state == "open"
        if event.initial and not opened:
            # the table started with it closed: on record, no event on the floor
            self._chain.append_event(
                "switch_state", {"switch": sw.name, "kind": sw.cfg.kind, "state": "closed"}
            )
            return
        rid = self._round_in_flight()
        present = self._present()
        data: dict[str, JSON] = {
            "switch": sw.name,
            "kind": sw.cfg.kind,
            "gli": switch_event_name(sw.cfg.kind, opened),
            "state": event.state,
            "technicians": list(present),
            "initial": event.initial,
            "after_fault": event.after_fault,
            "bounces": event.bounces,
        }
        alert: tuple[str, str] | None = None
        if opened:
            alert = self._opening_alert(sw, rid, present)
            data["alert"] = alert[0] if alert else None
        kind = "switch_opened" if opened else "switch_closed"
        with self._db.transaction(kind):
            table_event(self._chain, self._table_id, kind, data, at=_at(event), round_id=rid)
            if alert is not None:
                code, why = alert
                self._alerts.raise_(
                    code,
                    f"{sw.cfg.kind} switch {sw.name!r} opened {why}",
                    subject=sw.name,
                    evidence={**data, "round_id": rid},
                    severity="critical" if sw.cfg.kind in CRITICAL_KINDS else None,
                )

    @staticmethod
    def _opening_alert(
        sw: GpioSwitch, round_id: str | None, present: list[str]
    ) -> tuple[str, str] | None:
        """The alert an opening raises (its code and why), or None: expected."""
        if round_id is not None:
            if not sw.cfg.open_in_round:
                return "SWITCH_OPENED_IN_ROUND", f"during round {round_id}"
            return None
        if sw.cfg.technician and not present:
            return "SWITCH_OPENED_UNATTENDED", "with no technician logged in at the console"
        return None

    def _fault(self, sw: GpioSwitch, event: SwitchFault) -> None:
        data: dict[str, JSON] = {
            "switch": sw.name,
            "kind": sw.cfg.kind,
            "gli": SIGNIFICANT_EVENTS["switch_fault"],
            "code": event.code,
            "message": event.message,
            "raw_changes": sw.tracker.raw_changes,
        }
        with self._db.transaction("switch_fault"):
            table_event(self._chain, self._table_id, "switch_fault", data, at=_at(event))
            self._alerts.raise_(
                "SWITCH_FAULT",
                f"{sw.cfg.kind} switch {sw.name!r}: {event.code}: {event.message}",
                subject=sw.name,
                evidence=data,
                severity="critical" if sw.cfg.kind in ("tamper", "tilt") else None,
            )

    def _recovered(self, sw: GpioSwitch, event: SwitchRecovered) -> None:
        data: dict[str, JSON] = {
            "switch": sw.name,
            "kind": sw.cfg.kind,
            "gli": SIGNIFICANT_EVENTS["switch_recovered"],
            "code": event.code,
        }
        with self._db.transaction("switch_recovered"):
            table_event(self._chain, self._table_id, "switch_recovered", data, at=_at(event))
            self._alerts.end("SWITCH_FAULT", sw.name, evidence=data)


def _at(event: SwitchEvent) -> datetime:
    """The wall time of the contact's change the event stems from (its monotonic time,
    before the bounce time that confirmed it), for the ``events`` payload's ``at``."""
    return datetime.now(UTC) - timedelta(seconds=max(0.0, time.monotonic() - event.monotonic))


def switch_problems(
    switches: Mapping[str, SwitchConfig],
    devices: Sequence[DeviceConfig],
    *,
    simulated: bool,
    injected: bool = False,
) -> list[str]:
    """What keeps the table's switches from running here, one line each: a pin a
    ``[devices]`` section uses too, a switch named like a device (both are published
    on ``devices/<name>``), GPIO pins missing on this machine (unless the table is
    simulated, or the caller brings its pins: ``injected``)."""
    from drivers.gpio import gpio_unavailable
    from drivers.registry import driver_class

    problems: list[str] = []
    owners: dict[int, str] = {}
    names = {d.name for d in devices}
    for d in devices:
        used = getattr(driver_class(d.driver), "used_pins", None)
        if d.enabled and callable(used):
            for label, pin in used(d.settings):
                owners.setdefault(int(pin), f"devices.{d.name}.{label}")
    enabled = [s for s in switches.values() if s.enabled]
    for sw in enabled:
        if sw.name in names:
            problems.append(
                f"switches.{sw.name}: a device has this name too (both are published on "
                f"devices/{sw.name}): name the switch otherwise"
            )
        for label, pin in sw.used_pins():
            if pin in owners:
                problems.append(
                    f"switches.{sw.name}.{label}: GPIO{pin} is already used by {owners[pin]}"
                )
    why = gpio_unavailable() if enabled and not (simulated or injected) else None
    if why is not None:
        problems.append(
            f"switches: {len(enabled)} switch(es) need GPIO pins, and this machine has none "
            f"({why}); only a simulated table ([daemon] simulated = true) runs on mock pins"
        )
    return problems
