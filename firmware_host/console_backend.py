"""What the technician console sees of the running table (``console.ConsoleBackend``).

The backend gets the pieces it shows and acts on through its constructor (the round
engine, the journal, the floor link, the devices, the jackpot, the state snapshot, the
table's commands), never the daemon. A command typed at the console (``open``,
``void``, ``ack``...) runs the very handler the floor's does (:meth:`command`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .auth import Principal
from .console import local_time
from .games.money import MoneyRules
from .integrity.alerts import Alerts
from .integrity.pace import DealerRoster, PaceMonitor
from .journal import AuditLog, FaultStore, RecalledRound
from .jsonio import JSON
from .mqtt import FloorLink
from .table.commands import CommandCall, Commands
from .table.engine import RoundEngine
from .table.jackpot import JackpotController
from .table.reading import RequestError


class ConsoleJournal(Protocol):
    """What the console shows of the journal and writes to it (``Journal`` is one): its
    status and game recall (read across its parts), its chain (events, privileged
    actions) and its latched faults."""

    @property
    def chain(self) -> AuditLog: ...

    @property
    def faults(self) -> FaultStore: ...

    def get_status(self) -> dict[str, JSON]: ...

    def recall(self, n: int = 10) -> list[RecalledRound]: ...


@dataclass
class TableConsoleBackend:
    """The console's view of one table (implements ``console.ConsoleBackend``)."""

    name: str
    engine: RoundEngine
    journal: ConsoleJournal
    link: FloorLink | None
    #: Device name -> driver.
    drivers: Mapping[str, Any]
    jackpot_controller: JackpotController | None
    #: The event loop's lag, seconds (the daemon measures it).
    loop_lag: Callable[[], float]
    config_path: Path | None = None
    #: The table's commands (``table/commands.py``); None: none can be typed.
    commands: Commands | None = None
    #: Integrity alerts (``docs/integrity.md``); None: a table without them.
    alerts_board: Alerts | None = None
    #: The dealer on duty and the shift's pace (``docs/integrity.md``).
    dealers: DealerRoster | None = None
    pace: PaceMonitor | None = None

    def money(self) -> MoneyRules:
        return self.engine.cfg.money

    def status(self) -> JSON:
        return {
            **self.engine.get_status(),
            "name": self.name,
            "journal": self.journal.get_status(),
            "mqtt": self.link.get_status() if self.link else None,
            "loop_lag_ms": round(self.loop_lag() * 1000, 1),
            "faults": [f.code for f in self.journal.faults.active()],
            "dealer": self.dealers.current() if self.dealers else None,
            "alerts": [
                f"{a.id} {a.code}{f' {a.subject}' if a.subject else ''} ({a.severity}, {a.state})"
                for a in (self.alerts_board.active() if self.alerts_board else [])
            ],
        }

    def devices(self) -> JSON:
        return {name: drv.get_status() for name, drv in self.drivers.items()} or {
            "devices": "none configured"
        }

    async def self_test(self, device: str) -> JSON:
        drv = self.drivers.get(device)
        if drv is None:
            return {"error": f"no device {device!r}; devices: {', '.join(self.drivers) or 'none'}"}
        test = getattr(drv, "self_test", None)
        if test is None:
            return {"device": device, "self_test": "not supported by this device"}
        self.journal.chain.append_event("device_self_test", {"device": device})
        result = await test()
        return {
            "device": device,
            "result": result if isinstance(result, (dict, list, str, int)) else str(result),
        }

    async def lamp_test(self) -> JSON:
        out: dict[str, JSON] = {}
        for name, drv in self.drivers.items():
            lamp = getattr(drv, "lamp_test", None)
            if lamp is not None:
                out[name] = str(await lamp())
        return out or {"lamp_test": "no board or sign configured"}

    def recall(self, n: int) -> JSON:
        return [r.to_json() for r in self.journal.recall(n)]

    def round_info(self) -> JSON:
        e = self.engine
        cur = e.current
        if cur is None:
            return {"phase": "idle", "round": "no round in progress"}
        return {
            "round_id": cur.round_id,
            "seq": cur.seq,
            "phase": cur.phase,
            "timestamps": dict(cur.timestamps),
            "bets": [b.to_json() for b in e.desk.bets()],
        }

    def jackpot(self) -> JSON:
        if self.jackpot_controller is None:
            return {"jackpot": "this table has no progressive jackpot"}
        return self.jackpot_controller.get_status()

    def events(self, n: int) -> JSON:
        return [
            f"{e.id} {local_time(e.at) or e.at} {e.kind} {json.dumps(e.data, ensure_ascii=True)}"
            for e in self.journal.chain.events(n)
        ]

    def faults(self) -> JSON:
        return [f.to_json() for f in self.journal.faults.active()] or ["no latched fault"]

    async def command(
        self,
        name: str,
        args: Mapping[str, JSON],
        *,
        round_id: str | None = None,
        after_round_id: str | None = None,
        operator: str | None = None,
    ) -> JSON:
        """Run the command ``name`` typed by ``operator`` (None: nobody logged in), as the
        floor's would run (its round checked, its handler), shown for the console."""
        if self.commands is None:
            raise RequestError("NOT_SUPPORTED", f"{name} is not available on this table")
        call = CommandCall(
            self.commands.spec(name),
            dict(args),
            via="console",
            who=Principal(operator, True) if operator else None,
            round_id=round_id,
            after_round_id=after_round_id,
        )
        data = await self.commands.run_async(call)
        view = CONSOLE_VIEWS.get(name)
        return view(data) if view is not None else data

    def check_config(self) -> JSON:
        from .assembly import assembly_problems
        from .config import ConfigInvalid, load_config

        if self.config_path is None:
            return {"config": "no file (built-in configuration)"}
        try:
            cfg = load_config(self.config_path)
        except ConfigInvalid as exc:
            return {"config": str(self.config_path), "ok": False, "errors": exc.errors}
        problems = assembly_problems(cfg)
        if problems:
            return {"config": str(self.config_path), "ok": False, "errors": problems}
        return {
            "config": str(self.config_path),
            "ok": True,
            "table": cfg.table_id,
            "game": cfg.game_id,
        }

    def audit_event(self, kind: str, data: Mapping[str, JSON]) -> None:
        self.journal.chain.append_event(kind, dict(data))

    def _privileged(self, action: str, who: str, why: str, **data: JSON) -> None:
        self.journal.chain.append_event(
            "privileged_action", {"action": action, "operator": who, "why": why, **data}
        )

    def _jackpot(self) -> JackpotController:
        if self.jackpot_controller is None:
            raise RuntimeError("this table has no progressive jackpot")
        return self.jackpot_controller

    def jackpot_adjust(self, amount: int, reason: str, who: str) -> JSON:
        jp = self._jackpot()
        self._privileged("jackpot_adjust", who, reason, amount=amount)
        return jp.adjust(amount, reason=reason, who=who)

    def jackpot_reset(self, reason: str, who: str) -> JSON:
        jp = self._jackpot()
        self._privileged("jackpot_reset", who, reason)
        return jp.reset(reason=reason, who=who)

    def jackpot_params(self, key: str, value: str, reason: str, who: str) -> JSON:
        jp = self._jackpot()
        self._privileged("jackpot_param", who, reason, key=key, value=value)
        return jp.set_param(key, value, reason=reason, who=who)

    def alerts(self) -> JSON:
        if self.alerts_board is None:
            return ["no integrity alerts on this table"]
        alerts: list[JSON] = [_alert_view(a.to_json()) for a in self.alerts_board.active()]
        return alerts or ["no active alert"]

    def pace_report(self) -> JSON:
        if self.pace is None:
            return {"pace": "not kept on this table"}
        return {"dealer": self.dealers.current() if self.dealers else None,
                **self.pace.current()}  # fmt: skip

    def clear_fault(self, code: str, reason: str, who: str) -> JSON:
        self._privileged("clear_fault", who, reason, code=code)
        fault = self.journal.faults.clear_fault(code, by=who, reason=reason)
        return fault.to_json()  # the retained state follows the faults (their listener)


#: An alert's times (ISO-8601 UTC with ``Z`` in the journal and on MQTT, as every time).
ALERT_TIMES = ("first_seen", "last_seen", "acknowledged_at", "cleared_at")


def _alert_view(alert: dict[str, JSON]) -> dict[str, JSON]:
    """An alert as the console shows it: every one of its times in the console's one
    form, local time with its offset (``docs/console.md``), not some of them only."""
    for key in ALERT_TIMES:
        value = alert.get(key)
        if isinstance(value, str):
            alert[key] = local_time(value) or value
    return alert


def _acknowledged(data: JSON) -> JSON:
    alert = data.get("alert") if isinstance(data, dict) else None
    return _alert_view(alert) if isinstance(alert, dict) else data


#: How the console shows a command's answer, where not as the floor's data: the
#: alert acknowledged, in local times.
CONSOLE_VIEWS: dict[str, Callable[[JSON], JSON]] = {"ack_alert": _acknowledged}
