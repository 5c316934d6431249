"""Each command declared once (issue 31): the specs of ``firmware_host/commands.py`` and
what comes from them.

- the built-in roles, the duties and ``two_person`` derived from the specs are the
  policy as it was (issue 29's ``dealer_sign_in_others``, a supervisor who does not deal);
- ``docs/mqtt.md``'s command table and ``command_request.json``'s command rules are the
  ones the specs make (``tests/regen_commands.py`` writes them), and the schema's rules
  say what the floor reads; ``docs/security.md``'s roles and ``docs/console.md``'s verbs
  follow the specs;
- in an assembled daemon, each command is answered by the class its spec names;
- a command declared here, in the test (``pause_table``), with its handler and nothing
  else, reaches the policy, the floor's dispatch, the console and those checks: adding
  a command takes the files ``docs/architecture.md`` lists ("Adding a command").
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from firmware_host import commands as specs
from firmware_host.auth import Authenticator
from firmware_host.auth.policy import (
    BUILTIN_ROLES,
    COMMAND_PERMISSIONS,
    PERMISSIONS,
    PLAY_PERMISSIONS,
    SUPERVISION_PERMISSIONS,
    TWO_PERSON,
    builtin_roles,
)
from firmware_host.commands import CATALOGUE, CommandSpec, ConsoleVerb, Param
from firmware_host.console import ConsoleSession, ConsoleSettings, Lockout, hash_pin
from firmware_host.console.verbs import VERBS, console_commands
from firmware_host.console_backend import TableConsoleBackend
from firmware_host.jsonio import JSON
from firmware_host.schemas import load_schema
from firmware_host.table.commands import CommandCall, Commands
from firmware_host.table.floor import FloorRequests
from firmware_host.table.round_commands import table_commands
from tests.regen_commands import DOC, SCHEMA, generated
from tests.table.floor_support import Table, make_table

ROOT = Path(__file__).resolve().parents[1]

# -- the policy as it was -----------------------------------------------------------
#: The built-in roles before the specs (issue 29 as merged), written out.
ROLES_BEFORE = {
    "dealer": {"open_betting", "close_betting", "void_throw", "result", "decide",
               "deal_setup", "new_shoe", "status", "dealer_sign_in", "dealer_sign_out"},
    "pit_supervisor": {"void_round", "jackpot_paid", "ack_alert", "verify_software",
                       "dealer_sign_in", "dealer_sign_out", "dealer_sign_in_others", "status",
                       "resolve_result",  # issue 32: a held result resolved
                       # issue 35: a table out of play between rounds for an update
                       "maintenance", "end_maintenance"},
    "floor_system": {"place", "cancel", "status", "replay_rounds"},
    "floor_ingest": {"replay_rounds", "status", "floor_record"},
    "jackpot_attendant": {"jackpot_paid", "status"},
    "observer": {"status"},
    "witness": {"witness_result", "status"},  # issue 32: the result's second reading
}  # fmt: skip


def test_the_policy_derived_from_the_specs_is_the_policy_as_it_was() -> None:
    assert {r: set(p) for r, p in BUILTIN_ROLES.items()} == ROLES_BEFORE
    assert set(COMMAND_PERMISSIONS) == set(CATALOGUE) and len(CATALOGUE) == 19  # 17 and issue 35's two
    play = {"place", "cancel", "open_betting", "close_betting", "void_throw", "result",
            "decide", "deal_setup", "new_shoe"}  # fmt: skip
    assert play == PLAY_PERMISSIONS
    assert {"void_round", "jackpot_paid", "ack_alert", "dealer_sign_in_others", "resolve_result",
            "maintenance", "end_maintenance"} == SUPERVISION_PERMISSIONS  # fmt: skip
    assert TWO_PERSON == ("jackpot_paid",)
    assert set(CATALOGUE) | {"place", "cancel", "floor_record", "dealer_sign_in_others"} == (
        PERMISSIONS
    )


# -- what is generated, and the docs ---------------------------------------------------------
def test_the_schema_and_the_command_table_are_the_specs() -> None:
    for path, text in generated().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is not what the command specs make: run "
            "`.venv/bin/python tests/regen_commands.py`"
        )
    assert load_schema("command_request")["properties"]["command"]["enum"] == list(CATALOGUE)


def request(spec: CommandSpec, **over: Any) -> dict[str, Any]:
    """A request of ``spec`` the schema takes: its scope's round, its required args."""
    names = {"round_id": "T1-000001-aaaa", "after_round_id": None}
    body: dict[str, Any] = {
        "request_id": "r-1", "command": spec.name, "table_id": "T1", "principal": "pit",
        "timestamp": "2026-05-09T07:00:00Z", "signature": "A" * 86 + "==",
        **{k: names[k] for k in spec.names},
    }  # fmt: skip
    if spec.required:
        body["args"] = {k: 1 for k in spec.required}
    body.update(over)
    return {k: v for k, v in body.items() if v is not KeyError}


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_the_schema_says_what_the_floor_reads(name: str) -> None:
    spec = CATALOGUE[name]
    schema = load_schema("command_request")
    ok = jsonschema.Draft202012Validator(schema)
    assert ok.is_valid(request(spec)), list(ok.iter_errors(request(spec)))
    assert not ok.is_valid(request(spec, args={"nope": 1}))  # the floor: UNKNOWN_FIELD
    other = "round_id" if spec.scope in ("follows", "table") else "after_round_id"
    assert not ok.is_valid(request(spec, **{other: "T1-x"}))  # the floor: MALFORMED_REQUEST
    for key in spec.names:  # the round it names is needed
        assert not ok.is_valid(request(spec, **{key: KeyError}))
    if spec.required:
        assert not ok.is_valid(request(spec, args=KeyError))


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    nxt = re.search(r"^#{1,3} ", text[start + len(heading) :], re.M)
    return text[start : start + len(heading) + nxt.start()] if nxt else text[start:]


def test_the_roles_of_docs_security_md_are_the_built_in_roles() -> None:
    text = _section((ROOT / "docs" / "security.md").read_text(), "## Principals, roles")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (.*) \|$", text, re.M)}
    assert set(rows) == set(BUILTIN_ROLES)
    for role, cell in rows.items():
        named = set(re.findall(r"`([\w]+)`", cell)) & PERMISSIONS
        assert named == BUILTIN_ROLES[role], f"docs/security.md, role {role}"


def test_docs_console_md_shows_every_verb() -> None:
    text = (ROOT / "docs" / "console.md").read_text()
    for verb in VERBS.values():
        assert f"| `{verb.syntax}` |" in text, f"docs/console.md: no row for {verb.syntax}"


async def test_each_command_is_answered_by_the_class_its_spec_names(
    tmp_path: Path, amqtt_broker: Any
) -> None:
    from firmware_host.config import validate_document
    from firmware_host.daemon import TableDaemon
    from firmware_host.mqtt import MqttSettings
    from tablesim.principals import make_principals

    cfg = validate_document(
        {"table": {"id": "cmd-1", "game": "fantan", "result_source": "manual"},
         "limits": {"min_stake": 100},
         "auth": make_principals(tmp_path / "keys").auth_section()}
    )  # fmt: skip
    mqtt = MqttSettings(
        host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol
    )
    d = TableDaemon(cfg, state_dir=tmp_path, runtime_dir=tmp_path, mqtt=mqtt)
    await d.start()
    try:
        assert d.parts.floor is not None and d.parts.engine is not None
        commands = d.parts.floor.commands
        owners = {name: commands.owner(name) for name in CATALOGUE}
        # a table without a progressive jackpot: jackpot_paid is refused NOT_SUPPORTED
        assert owners.pop("jackpot_paid") is None
        # a table without a witness: witness_result and resolve_result are refused
        # NO_WITNESS (a table with one: tests/table/test_witness.py)
        assert owners.pop("witness_result") is None and owners.pop("resolve_result") is None
        unanswered = ("jackpot_paid", "witness_result", "resolve_result")
        assert owners == {n: s.handler for n, s in CATALOGUE.items() if n not in unanswered}
        assert d.parts.console_backend is not None and d.parts.console_backend.commands is commands
        with_jackpot = table_commands(d.parts.engine, d.parts.procedure, d.journal, jackpot=object())  # type: ignore[arg-type]
        assert with_jackpot.owner("jackpot_paid") == CATALOGUE["jackpot_paid"].handler
    finally:
        await d.stop()


# -- a command of the test's own ------------------------------------------------------
PAUSE = CommandSpec(
    "pause_table",
    "pause the table: no round opens until it resumes",
    args=("reason",),
    required=("reason",),
    scope="table",
    roles=("pit_supervisor",),
    duty="supervise",
    two_person=True,
    handler="tests.test_command_specs.Pauses",
    console=ConsoleVerb(
        "pause", (Param("REASON...", "reason", "text"),), "pause the table (two operators)"
    ),
)
WITH_PAUSE = specs.catalogue([*CATALOGUE.values(), PAUSE])


class Pauses:
    """The part of the table that answers ``pause_table`` (here, it only says so)."""

    def __init__(self) -> None:
        self.calls: list[CommandCall] = []

    def register_commands(self, commands: Commands) -> None:
        commands.register("pause_table", self.pause)

    def pause(self, call: CommandCall) -> JSON:
        self.calls.append(call)
        return {"paused": True, "by": call.source, "two_person": call.two_person,
                "reason": call.args["reason"]}  # fmt: skip


def _table_with_pause(tmp_path: Path) -> tuple[Table, Pauses]:
    t = make_table(tmp_path)
    settings = replace(
        t.floor.auth.settings,
        roles=builtin_roles(WITH_PAUSE),  # the policy, from the specs
        two_person=frozenset(specs.two_person(WITH_PAUSE)),
    )
    keys = {n: (k.public_key(),) for n, k in t.keys.items()}
    auth = Authenticator(settings, "T1", keys=keys, clock=t.clock)
    commands = table_commands(t.engine, t.floor.procedure, t.journal, catalogue=WITH_PAUSE)
    pauses = Pauses()
    pauses.register_commands(commands)
    t.floor = FloorRequests(t.engine, t.floor.procedure, t.journal, auth=auth, commands=commands)
    return t, pauses


def pause(t: Table, who: str, **fields: Any) -> dict[str, Any]:
    body = {"command": "pause_table", "args": {"reason": "count the float"}, **fields}
    return t.send("commands/request", t.build("commands/request", who, body))


def test_a_new_command_reaches_the_policy() -> None:
    roles = builtin_roles(WITH_PAUSE)
    assert "pause_table" in roles["pit_supervisor"] and "pause_table" not in roles["dealer"]
    assert {r: p - {"pause_table"} for r, p in roles.items()} == BUILTIN_ROLES
    assert specs.with_duty(WITH_PAUSE, "supervise") - {"pause_table"} == (
        SUPERVISION_PERMISSIONS - {"dealer_sign_in_others"}
    )
    assert specs.two_person(WITH_PAUSE) == ("jackpot_paid", "pause_table")


def test_a_new_command_reaches_the_floor(tmp_path: Path) -> None:
    t, pauses = _table_with_pause(tmp_path)
    r = pause(t, "pit")
    assert r["status"] == "ok", r
    assert r["data"] == {"paused": True, "by": "mqtt:pit", "two_person": True,
                         "reason": "count the float"}  # fmt: skip
    assert pause(t, "dealer")["code"] == "NOT_PERMITTED"  # its role, from its spec
    assert pause(t, "pit", round_id="T1-x")["code"] == "MALFORMED_REQUEST"  # its scope
    assert pause(t, "pit", args={"why": "x"})["code"] == "UNKNOWN_FIELD"  # its args
    assert len(pauses.calls) == 1
    # journaled and chained like every command (a retry gets the same answer)
    events = [e.data for e in t.journal.chain.events(50, kind="floor_command")]
    assert [(e["command"], e["principal"]) for e in events] == [("pause_table", "pit")]
    assert t.journal.requests.answered("pit", r["request_id"]) is not None


async def test_a_new_command_reaches_the_console(tmp_path: Path) -> None:
    t, pauses = _table_with_pause(tmp_path)
    backend = TableConsoleBackend(
        name="T1", engine=t.engine, journal=t.journal, link=None, drivers={},
        jackpot_controller=None, loop_lag=lambda: 0.0, commands=t.floor.commands,
    )  # fmt: skip
    ops = {n: hash_pin(p, iterations=100_000) for n, p in (("alice", "1357"), ("bob", "2468"))}
    settings = ConsoleSettings(operators=ops)
    alice, bob = (
        ConsoleSession(backend, settings, Lockout(3, 300), verbs=console_commands(WITH_PAUSE))
        for _ in range(2)
    )
    bob.dual = alice.dual  # one table, one list of requests waiting for a second operator
    assert any(ln.strip().startswith("pause REASON...") for ln in await alice.handle("help"))
    assert "needs an operator login" in (await alice.handle("pause jammed"))[0]
    for s, name, pin in ((alice, "alice", "1357"), (bob, "bob", "2468")):
        await s.handle(f"login {name}")
        assert await s.handle(pin) == [f"logged in as {name}"]
    assert (await alice.handle("pause"))[0] == "error: syntax: pause REASON..."
    asked = await alice.handle("pause count the float")
    assert asked[0].startswith("request 1 pending") and pauses.calls == []  # two operators
    done = await bob.handle("approve 1")
    assert done[0].startswith("approved by bob") and "by: console:alice+bob" in done
    (call,) = pauses.calls
    assert (call.via, call.args) == ("console", {"reason": "count the float"})


def test_a_new_command_reaches_the_schema_and_docs_checks() -> None:
    made = generated(WITH_PAUSE)
    # the check above fails until the generated files are written again...
    assert made[SCHEMA] != SCHEMA.read_text() and made[DOC] != DOC.read_text()
    # ... and what is written names it, its scope and its arguments
    schema = json.loads(made[SCHEMA])
    assert "pause_table" in schema["properties"]["command"]["enum"]
    ok = jsonschema.Draft202012Validator(schema)
    assert ok.is_valid(request(PAUSE, args={"reason": "x"}))
    assert not ok.is_valid(request(PAUSE, round_id="T1-x"))
    assert "| `pause_table` | nothing | `reason` | `pit_supervisor` |" in made[DOC]


def test_adding_a_command_takes_the_files_docs_architecture_md_lists() -> None:
    text = _section((ROOT / "docs" / "architecture.md").read_text(), "### Adding a command")
    for path in ("firmware_host/commands.py", "register_commands", "docs/mqtt.md",
                 "firmware_host/schemas/command_request.json", "tests/regen_commands.py",
                 "docs/security.md", "docs/console.md", "tests/test_command_specs.py"):  # fmt: skip
        assert f"`{path}`" in text or f"`.venv/bin/python {path}`" in text, path


def test_a_spec_that_contradicts_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="required"):
        replace(PAUSE, required=("why",))
    with pytest.raises(ValueError, match="console parameters"):
        replace(PAUSE, console=ConsoleVerb("pause", (Param("ROUND_ID", "round_id"),), "x"))
    with pytest.raises(ValueError, match="declared twice"):
        specs.catalogue([PAUSE, replace(PAUSE, console=None)])
    with pytest.raises(ValueError, match="declared twice"):  # one verb, two commands
        specs.catalogue([PAUSE, replace(PAUSE, name="pause_again")])
    with pytest.raises(ValueError, match="no built-in role"):
        builtin_roles(specs.catalogue([replace(PAUSE, roles=("croupier",))]))
    with pytest.raises(ValueError, match="has a handler already"):
        t = Commands(None, WITH_PAUSE)  # type: ignore[arg-type]
        Pauses().register_commands(t)
        Pauses().register_commands(t)
