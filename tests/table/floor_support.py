"""A table's floor requests on a temporary journal, with signing principals: what the
trust tests drive (no MQTT; ``tests/e2e/test_floor_attacks.py`` does it over mosquitto)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import Authenticator, AuthSettings, PrincipalSpec, Signer, TableIdentity
from firmware_host.config import validate_document
from firmware_host.journal import Journal
from firmware_host.table.engine import BetCaps, RoundEngine
from firmware_host.table.floor import FloorRequests
from firmware_host.table.procedures import Device, ProcedureContext, make_procedure
from firmware_host.table.replay import ReplayBudgets

ROLES = {
    "dealer": ("dealer",),
    "pit": ("pit_supervisor",),
    "pit2": ("pit_supervisor",),
    "pos": ("floor_system",),
    "pos2": ("floor_system",),
    "ingest": ("floor_ingest",),
    "watcher": ("observer",),
}


@dataclass
class Clock:
    now: datetime = datetime(2026, 5, 9, 7, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Table:
    """One table and its principals; :meth:`cmd` and :meth:`bet` send signed requests."""

    engine: RoundEngine
    floor: FloorRequests
    clock: Clock
    keys: dict[str, Ed25519PrivateKey]
    journal: Journal
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)
    _n: int = 0

    def signer(self, who: str) -> Signer:
        return Signer(who, self.keys[who], clock=self.clock)

    def new_id(self) -> str:
        self._n += 1
        return f"req-{self._n}"

    def build(
        self,
        topic: str,
        who: str,
        body: dict[str, Any],
        rid: str | None = None,
        at: datetime | None = None,
    ) -> dict:
        req = {"request_id": rid or self.new_id(), **body}
        return self.signer(who).sign(topic, self.engine.cfg.table_id, req, at=at)

    def send(self, topic: str, request: dict[str, Any]) -> dict[str, Any]:
        return self.floor.answer(topic, json.dumps(request).encode())

    def cmd(self, who: str, command: str, rid: str | None = None, **fields: Any) -> dict:
        body: dict[str, Any] = {"command": command}
        args = fields.pop("args", None)
        if command == "open_betting":
            body["after_round_id"] = fields.pop("after", self.engine.last_round_id())
        elif command != "status":
            cur = self.engine.current
            body["round_id"] = fields.pop("round_id", cur.round_id if cur else None)
        if args is not None:
            body["args"] = args
        body.update(fields)
        req = self.build("commands/request", who, body, rid)
        self.sent[req["request_id"]] = req
        return self.send("commands/request", req)

    def bet(
        self, who: str, bet: dict[str, Any], rid: str | None = None, round_id: str | None = None
    ) -> dict:
        cur = self.engine.current
        body = {
            "action": "place",
            "round_id": round_id or (cur.round_id if cur else "none"),
            "bet": bet,
        }
        req = self.build("bets/request", who, body, rid)
        self.sent[req["request_id"]] = req
        return self.send("bets/request", req)

    def cancel(self, who: str, bet_id: str, rid: str | None = None, round_id: str | None = None):
        cur = self.engine.current
        body = {
            "action": "cancel",
            "round_id": round_id or (cur.round_id if cur else "none"),
            "bet_id": bet_id,
        }
        req = self.build("bets/request", who, body, rid)
        self.sent[req["request_id"]] = req
        return self.send("bets/request", req)

    def retry(self, rid: str) -> dict[str, Any]:
        """The request ``rid`` sent again as its sender retries: signed again, now."""
        old = self.sent[rid]
        topic = "bets/request" if "action" in old else "commands/request"
        body = {k: v for k, v in old.items() if k not in ("signature", "timestamp")}
        return self.send(topic, self.signer(old["principal"]).sign(topic, old["table_id"], body))

    def replay(self, rid: str) -> dict[str, Any]:
        """The request ``rid`` sent again byte for byte (a replayer, a re-delivery)."""
        old = self.sent[rid]
        return self.send("bets/request" if "action" in old else "commands/request", old)


def make_table(
    tmp_path: Path,
    *,
    game: str = "roulette",
    doc: dict[str, Any] | None = None,
    caps: BetCaps | None = None,
    signatures: bool = True,
    journal: Journal | None = None,
    devices: tuple[Device, ...] = (),
    keys: dict[str, Ed25519PrivateKey] | None = None,
    dealers: dict[str, str] | None = None,
) -> Table:
    """``dealers``: principal -> the dealer it is bound to (``[auth.principals] dealer``)."""
    clock = Clock()
    cfg = validate_document(
        doc
        or {
            "table": {"id": "T1", "game": game, "result_source": "manual"},
            "limits": {"min_stake": 100, "max_stake": 1_000_000},
        }
    )
    keys = keys or {n: Ed25519PrivateKey.generate() for n in ROLES}
    settings = AuthSettings(
        signatures=signatures,
        max_age_s=30,
        principals={n: PrincipalSpec(n, (), r, (dealers or {}).get(n)) for n, r in ROLES.items()},
    )
    j = journal or Journal(
        tmp_path / "journal.sqlite3", identity=TableIdentity.generate(), clock=clock
    )
    engine = RoundEngine(cfg, j, caps=caps, clock=clock)
    procedure = make_procedure(ProcedureContext(engine, devices=devices, clock=clock))
    auth = Authenticator(
        settings, cfg.table_id, keys={n: (k.public_key(),) for n, k in keys.items()}, clock=clock
    )
    replay = ReplayBudgets(clock=lambda: clock.now.timestamp())
    return Table(
        engine,
        FloorRequests(engine, procedure, j, auth=auth, replay_budgets=replay),
        clock,
        keys,
        j,
    )


def red(bet_id: str, stake: int = 1000, seat: int = 1) -> dict[str, Any]:
    return {"bet_id": bet_id, "seat": seat, "bet_type": "red", "stake": stake}
