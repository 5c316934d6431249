"""A small runner of procedure scenarios (``tests/table/scenarios/*.txt``), after
Klipper's scripted test files: inputs in (device events, bets, floor commands), expected
events, phases, answers and rounds out.

A scenario is plain text, one step a line (``#`` starts a comment)::

    game roulette                         the table's game (defaults of config/)
    device wheel wheel                    a device: its name and kind (a recording fake)
    latch CODE message...                 a latched fault (stops play)
    event wheel GameStateChanged state=2 spin=7
                                          a device event: the class is looked up among
                                          the events of the device's kind, fields
                                          ``key=value`` (JSON values; lists become tuples)
    bet {"bet_id": "a", ...}              a bet that must be accepted
    command open_betting {...}            a floor command (``commands/request``), args JSON
    expect phase open                     the engine's phase
    expect event misdeal code=X           a fault or lifecycle event published on
                                          ``events`` since the last ``expect event``
                                          (its ``data`` holds each key=value)
    expect no-event result                none of that kind since the last ``expect event``
    expect answer ok | error CODE         the last command's answer
    expect round settled key.path=value   the last round published on ``rounds``
    expect called wheel restart           the fake device was asked to
    expect bets N                         bets in play in the round in flight

A scenario whose first line is ``# must fail: <text>`` must fail with a message
containing ``<text>``: it shows the runner can fail.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from drivers.base import DeviceEvent
from firmware_host.auth import Authenticator, AuthSettings, PrincipalSpec, Signer
from firmware_host.config import validate_document
from firmware_host.games import get_game
from firmware_host.journal import Journal
from firmware_host.table.engine import RoundEngine
from firmware_host.table.extension import TableExtensions
from firmware_host.table.floor import FloorRequests
from firmware_host.table.procedures import Device, Procedure, ProcedureContext, make_procedure
from firmware_host.table.state import LatchedFaults

#: The package of every device kind's events (``tablecommon.events.<kind>``).
EVENTS = "tablecommon.events"

#: Fields a scenario may leave out, per event class.
DEFAULTS: dict[str, dict[str, Any]] = {
    "GameStateChanged": {"state_name": "", "speed": 300, "direction": "clockwise"},
    "WinningNumber": {"direction": "clockwise", "speed": 300, "confirmed_by": "status"},
    "GameVoided": {"source": "vendor", "message": "", "restart_required": False},
}


class ScenarioFailed(AssertionError):
    pass


class FakeDevice:
    """A device that records what the procedure asks of it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def restart(self) -> None:
        self.calls.append("restart")

    async def request_shake(self) -> None:
        self.calls.append("request_shake")

    async def read_dice(self) -> None:
        self.calls.append("read_dice")


def _value(text: str) -> Any:
    try:
        v = json.loads(text)
    except json.JSONDecodeError:
        return text
    return tuple(v) if isinstance(v, list) else v


def _fields(tokens: list[str]) -> dict[str, Any]:
    out = {}
    for t in tokens:
        key, sep, value = t.partition("=")
        if not sep:
            raise ScenarioFailed(f"expected key=value, got {t!r}")
        out[key] = _value(value)
    return out


def _dig(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


class Scenario:
    def __init__(self, path: Path, workdir: Path) -> None:
        self.path = path
        self.workdir = workdir
        self.doc: dict[str, Any] = {}
        self.devices: dict[str, tuple[str, FakeDevice]] = {}
        self.latched: list[tuple[str, str]] = []
        self.engine: RoundEngine | None = None
        self.procedure: Procedure | None = None
        self.floor: FloorRequests | None = None
        self.journal: Journal | None = None
        self.answer: dict[str, Any] | None = None
        self.seen_outbox = 0
        self.events: list[dict[str, Any]] = []
        self.key = Ed25519PrivateKey.generate()
        self.requests = 0

    # -- set-up ----------------------------------------------------------------------
    def _build(self) -> None:
        doc = self.doc or {"table": {"id": "sc-1", "game": "roulette"}}
        kind = get_game(doc["table"]["game"]).result_device
        if kind is not None and all(k != kind for k, _ in self.devices.values()):
            # no device reads the results: the scenario's commands enter them, as the
            # table must then say (no silent manual table)
            doc["table"]["result_source"] = "manual"
        cfg = validate_document(doc)
        self.journal = j = Journal(self.workdir / "journal.sqlite3")
        for code, message in self.latched:
            j.faults.set_fault(code, message)
        ext = TableExtensions()
        self.engine = RoundEngine(cfg, j, play_stop=LatchedFaults(j.faults).play_stop, extensions=ext)
        devices = tuple(Device(n, k, d) for n, (k, d) in self.devices.items())
        self.procedure = make_procedure(
            ProcedureContext(
                self.engine, devices=devices, report_fault=self.engine.report_fault, extensions=ext
            )
        )
        # Commands are signed by one principal who holds every role (a scenario is not a
        # floor's separation of duties: it drives the table).
        settings = AuthSettings(
            principals={
                "scenario": PrincipalSpec(
                    "scenario",
                    (),
                    ("dealer", "pit_supervisor", "floor_system", "jackpot_attendant"),
                )
            }
        )
        auth = Authenticator(settings, cfg.table_id, keys={"scenario": (self.key.public_key(),)})
        self.floor = FloorRequests(self.engine, self.procedure, j, auth=auth)

    def _ready(self) -> RoundEngine:
        if self.engine is None:
            self._build()
        assert self.engine is not None
        return self.engine

    # -- running -----------------------------------------------------------------------
    async def run(self) -> None:
        for n, raw in enumerate(self.path.read_text().splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                await self.step(line)
            except ScenarioFailed as exc:
                raise ScenarioFailed(f"{self.path.name}:{n}: {line}\n  {exc}") from None
        if self.journal is not None:
            self.journal.close()

    async def step(self, line: str) -> None:
        verb, _, rest = line.partition(" ")
        if verb == "game":
            gid, *opts = rest.split()
            self.doc = {"table": {"id": "sc-1", "game": gid}}
            for o in opts:
                section, _, kv = o.partition(":")
                key, _, value = kv.partition("=")
                self.doc.setdefault(section, {}).setdefault(gid, {})[key] = _value(value)
        elif verb == "device":
            name, kind = rest.split()
            self.devices[name] = (kind, FakeDevice())
        elif verb == "latch":
            code, _, message = rest.partition(" ")
            self.latched.append((code, message))
        elif verb == "event":
            await self._event(shlex.split(rest))
        elif verb == "bet":
            answer = self._ready().desk.place(json.loads(rest))
            if not answer.accepted:
                raise ScenarioFailed(f"bet refused: {answer.code} {answer.message}")
        elif verb == "command":
            self._command(rest)
        elif verb == "expect":
            self._expect(shlex.split(rest))
        else:
            raise ScenarioFailed(f"unknown step {verb!r}")
        for _ in range(5):  # let tasks the step started run (the dice procedure's)
            await asyncio.sleep(0)

    async def _event(self, tokens: list[str]) -> None:
        self._ready()
        assert self.procedure is not None
        device, cls_name, *kv = tokens
        kind = self.devices[device][0]
        module = importlib.import_module(f"{EVENTS}.{kind}")
        cls = getattr(module, cls_name, None)
        if not (isinstance(cls, type) and issubclass(cls, DeviceEvent)):
            raise ScenarioFailed(f"no event {cls_name} among the {kind} events")
        values = {**DEFAULTS.get(cls_name, {}), **_fields(kv)}
        if cls_name == "DiceRead" and "flags" not in values:  # every die flat
            values["flags"] = ("flat",) * len(values.get("dice", ()))
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in values.items() if k in names}
        if "raw" in values and isinstance(values["raw"], str):
            values["raw"] = values["raw"].encode()
        await self.procedure.on_device_event(device, cls(device=device, **values))

    def _command(self, rest: str) -> None:
        self._ready()
        assert self.floor is not None
        assert self.engine is not None
        name, _, args = rest.partition(" ")
        self.requests += 1
        request: dict[str, Any] = {"request_id": f"sc-{self.requests}", "command": name}
        if name == "open_betting":  # commands name their round, as the floor sees it
            request["after_round_id"] = self.engine.last_round_id()
        elif name != "status":
            cur = self.engine.current
            request["round_id"] = cur.round_id if cur else "none"
        if args.strip():
            request["args"] = json.loads(args)
        signed = Signer("scenario", self.key).sign(
            "commands/request", self.engine.cfg.table_id, request
        )
        self.answer = self.floor.handle_command_request(json.dumps(signed).encode())

    def _outbox(self) -> list[tuple[str, dict[str, Any]]]:
        assert self.journal is not None
        return [(e.topic, json.loads(e.payload)) for e in self.journal.outbox.pending(10_000)]

    def _expect(self, tokens: list[str]) -> None:
        engine = self._ready()
        what, *args = tokens
        if what == "phase":
            if engine.phase.value != args[0]:
                raise ScenarioFailed(f"expected phase {args[0]}, got {engine.phase.value}")
        elif what in ("event", "no-event"):
            kind, want = args[0], _fields(args[1:])
            messages = [p for t, p in self._outbox() if t == "events"]
            fresh = messages[self.seen_outbox :]
            for i, p in enumerate(fresh):
                if p["event"] == kind and _holds(p.get("data", {}), want):
                    if what == "no-event":
                        raise ScenarioFailed(f"unexpected event {kind}: {p.get('data')}")
                    self.seen_outbox += i + 1
                    return
            if what == "event":
                got = [(p["event"], p.get("data")) for p in fresh]
                raise ScenarioFailed(f"no event {kind} {want or ''} among {got}")
        elif what == "answer":
            a = self.answer or {}
            if a.get("status") != args[0] or (args[1:] and a.get("code") != args[1]):
                raise ScenarioFailed(f"expected answer {' '.join(args)}, got {a}")
        elif what == "round":
            rounds = [p for t, p in self._outbox() if t == "rounds"]
            if not rounds:
                raise ScenarioFailed("no round published")
            last = rounds[-1]
            if last["status"] != args[0]:
                raise ScenarioFailed(f"expected a {args[0]} round, got {last['status']}")
            for path, value in _fields(args[1:]).items():
                got = _dig(last, path)
                got = tuple(got) if isinstance(got, list) else got
                if got != value:
                    raise ScenarioFailed(f"round {path}: expected {value!r}, got {got!r}")
        elif what == "called":
            calls = self.devices[args[0]][1].calls
            if args[1] not in calls:
                raise ScenarioFailed(f"{args[0]} was not asked to {args[1]} (calls: {calls})")
        elif what == "bets":
            if (n := len(engine.desk.bets())) != int(args[0]):
                raise ScenarioFailed(f"expected {args[0]} bets in play, got {n}")
        else:
            raise ScenarioFailed(f"unknown expectation {what!r}")


def _holds(data: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    for key, value in want.items():
        got = data.get(key)
        got = tuple(got) if isinstance(got, list) else got
        if got != value:
            return False
    return True


def must_fail(path: Path) -> str | None:
    first = path.read_text().splitlines()[0]
    prefix = "# must fail:"
    return first[len(prefix) :].strip() if first.startswith(prefix) else None
