"""Every command to the table, declared once (issue 31).

A *command* is what the floor sends on ``commands/request`` or a technician types at
the console (``docs/architecture.md``, "Words that mean one thing"). Each is one
:class:`CommandSpec` in :data:`COMMAND_SPECS`: its name, its arguments, which round it
names (its *scope*), the permission it needs and the built-in roles that hold it, its
share of the separation of duties, whether two different principals must confirm it,
the part of the table that answers it, its console verb with the verb's syntax and
help, and the line of ``docs/mqtt.md`` that documents it. Everything else is derived
from here:

- the floor's dispatch (``table/floor.py``: the arguments it accepts, the round it
  checks) and the console's verbs (``console/verbs.py``), both running the handler the
  answering part registered (``table/commands.py``);
- the permissions and the built-in roles (``auth/policy.py``), ``[auth] two_person``'s
  default and the duties ``ROLE_MIXES_DUTIES`` compares (``risks.py``);
- the ``command`` enum and the round each command names in
  ``schemas/command_request.json``, and the command table of ``docs/mqtt.md``
  (:func:`schema_rules`, :func:`docs_table`; ``tests/test_command_specs.py`` checks
  both, ``python tests/regen_commands.py`` rewrites them).

A leaf: it imports nothing of the project, so that the policy (``auth``) and the table
(``table``) both read it without importing each other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

#: Which round a command names: ``round`` the round in progress (``round_id``, else
#: ``STALE_ROUND``); ``follows`` the table's last round (``after_round_id``: opening
#: betting, a new shoe); ``table`` none (it is about the table); ``hit`` the round of a
#: jackpot hit (``round_id``, checked against the hit).
Scope = Literal["round", "follows", "table", "hit"]
SCOPES: tuple[Scope, ...] = ("round", "follows", "table", "hit")
#: A command's share of the separation of duties (``ROLE_MIXES_DUTIES``): running the
#: game (``play``), supervising it (``supervise``), or neither (``""``).
Duty = Literal["play", "supervise", ""]
#: How a console parameter is read: one ``word``, an ``int`` (digits), the ``text`` of
#: the rest of the line, or the rest of the line as ``json``.
ParamKind = Literal["word", "int", "text", "json"]

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
_VERB = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
#: The envelope keys a console parameter may fill, by scope (the others fill ``args``).
_ROUND_KEYS: dict[str, tuple[str, ...]] = {
    "round": ("round_id",),
    "follows": ("after_round_id",),
    "table": (),
    "hit": ("round_id",),
}


@dataclass(frozen=True)
class Param:
    """One parameter of a console verb: ``shown`` in its syntax (``ROUND_ID``), the
    argument (or ``round_id``/``after_round_id``) it fills, how it is read."""

    shown: str
    key: str
    kind: ParamKind = "word"
    optional: bool = False


@dataclass(frozen=True)
class ConsoleVerb:
    """A command's verb at the technician console (``docs/console.md``)."""

    verb: str
    params: tuple[Param, ...] = ()
    help: str = ""
    #: Added to the verb's syntax when a line does not follow it.
    hint: str = ""
    #: Needs an operator logged in.
    login: bool = True
    #: The command the verb runs when its optional parameter is left out (``dealer``
    #: alone signs the dealer on duty out: ``dealer_sign_out``).
    otherwise: str = ""

    @property
    def syntax(self) -> str:
        words = [f"[{p.shown}]" if p.optional else p.shown for p in self.params]
        return " ".join([self.verb, *words])


@dataclass(frozen=True)
class CommandSpec:
    """One command, everything the table says about it (see the module docstring)."""

    name: str
    #: What it does, as ``docs/mqtt.md`` says it (its "what" column).
    summary: str
    #: The keys ``args`` may hold; :attr:`required` those it must (the handler checks
    #: them and refuses with its own code, ``MALFORMED_REQUEST`` or ``BAD_IDENTIFIER``).
    args: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    scope: Scope = "round"
    #: The permission it needs (empty: its name).
    permission: str = ""
    #: The built-in roles that hold the permission (``auth/policy.py``).
    roles: tuple[str, ...] = ()
    duty: Duty = ""
    #: In ``[auth] two_person`` by default: it acts only once two different principals
    #: confirmed it (at the console: two operators, ``approve``).
    two_person: bool = False
    #: False: answered afresh each time, never journaled (``status``, which changes
    #: nothing).
    journaled: bool = True
    #: Who answers it: the class (under ``firmware_host``) whose method it registers
    #: with the table's :class:`~firmware_host.table.commands.Commands` (a test checks
    #: that the assembled daemon's handler is that one's).
    handler: str = ""
    console: ConsoleVerb | None = None

    def __post_init__(self) -> None:
        problems = spec_problems(self)
        if problems:
            raise ValueError(f"command {self.name!r}: " + "; ".join(problems))

    @property
    def needs(self) -> str:
        """The permission it needs."""
        return self.permission or self.name

    @property
    def names(self) -> tuple[str, ...]:
        """The envelope keys that name its round (``round_id``, ``after_round_id``)."""
        return _ROUND_KEYS[self.scope]


def spec_problems(spec: CommandSpec) -> list[str]:
    """What is wrong with ``spec`` (raised by its constructor)."""
    out = []
    if not _NAME.match(spec.name):
        out.append("a name is lower-case letters, digits and '_'")
    if spec.scope not in SCOPES:
        out.append(f"scope {spec.scope!r} is none of {', '.join(SCOPES)}")
    if not set(spec.required) <= set(spec.args):
        out.append("required arguments must be among its args")
    if len(set(spec.args)) != len(spec.args) or not spec.summary or not spec.handler:
        out.append("args are named once; a summary and a handler are needed")
    verb = spec.console
    if verb is not None:
        keys = [p.key for p in verb.params]
        allowed = set(spec.args) | set(_ROUND_KEYS.get(spec.scope, ()))
        if not _VERB.match(verb.verb) or not verb.help:
            out.append("a console verb is lower-case letters, digits and '-', with its help")
        if not set(keys) <= allowed or len(set(keys)) != len(keys):
            out.append(f"console parameters fill {', '.join(sorted(allowed)) or 'nothing'}")
        if any(p.kind in ("text", "json") or p.optional for p in verb.params[:-1]):
            out.append("only the last console parameter reads the rest or is optional")
        if verb.otherwise and not (verb.params and verb.params[-1].optional):
            out.append("'otherwise' needs an optional last parameter")
    return out


#: A set of commands by name (:data:`CATALOGUE`; a test adds one of its own).
Catalogue = Mapping[str, CommandSpec]


def catalogue(specs: Iterable[CommandSpec]) -> dict[str, CommandSpec]:
    """``specs`` by name, in their order; refuses a name or a console verb twice, and an
    ``otherwise`` naming no command of them."""
    out: dict[str, CommandSpec] = {}
    verbs: set[str] = set()
    for spec in specs:
        if spec.name in out:
            raise ValueError(f"command {spec.name!r} declared twice")
        if spec.console is not None:
            if spec.console.verb in verbs:
                raise ValueError(f"console verb {spec.console.verb!r} declared twice")
            verbs.add(spec.console.verb)
        out[spec.name] = spec
    for spec in out.values():
        if spec.console is not None and spec.console.otherwise not in ("", *out):
            raise ValueError(f"{spec.name}: no command {spec.console.otherwise!r}")
    return out


_ROUND = (Param("ROUND_ID", "round_id"),)
_EVERYONE = (
    "dealer", "pit_supervisor", "floor_system", "floor_ingest", "jackpot_attendant", "observer",
    "witness",
)  # fmt: skip

#: Every command to the table, in the order the floor's answers list them.
COMMAND_SPECS: tuple[CommandSpec, ...] = (
    CommandSpec(
        "open_betting",
        "a new round, betting open (art. 3 of each regulation)",
        scope="follows",
        roles=("dealer",),
        duty="play",
        handler="table.round_commands.RoundCommands",
        console=ConsoleVerb(
            "open",
            (Param("AFTER_ROUND_ID", "after_round_id", optional=True),),
            "open betting for a new round, naming the round it follows as `round` shows it "
            "(a table that takes results by command)",
            hint="the last round as `round` shows it",
        ),
    ),
    CommandSpec(
        "close_betting",
        "no more bets",
        roles=("dealer",),
        duty="play",
        handler="table.round_commands.RoundCommands",
        console=ConsoleVerb(
            "close",
            _ROUND,
            "close betting of the round in progress (named)",
            hint="the round as `round` shows it",
        ),
    ),
    CommandSpec(
        "void_round",
        "void the round, every bet refunded",
        args=("reason",),
        required=("reason",),
        roles=("pit_supervisor",),
        duty="supervise",
        handler="table.round_commands.RoundCommands",
        console=ConsoleVerb(
            "void",
            (*_ROUND, Param("REASON...", "reason", "text")),
            "void the round in progress (named, as `round` shows it), every bet refunded",
            hint="the round id as `round` shows it",
        ),
    ),
    CommandSpec(
        "void_throw",
        "a voided throw (57/2004 art. 3 3)-4)): betting reopens, bets stay",
        args=("reason",),
        required=("reason",),
        roles=("dealer",),
        duty="play",
        handler="table.round_commands.RoundCommands",
    ),
    CommandSpec(
        "result",
        'a manual table\'s result (`result_source = "manual"`); refused '
        "`RESULT_FROM_DEVICE_ONLY` on a table whose device reads results",
        args=("outcome",),
        required=("outcome",),
        roles=("dealer",),
        duty="play",
        handler="table.round_commands.RoundCommands",
        console=ConsoleVerb(
            "result",
            (*_ROUND, Param("OUTCOME-JSON", "outcome", "json")),
            "enter the result of the round in progress (named), e.g. "
            'result ROUND_ID {"number": 17} (tables without their result device)',
        ),
    ),
    CommandSpec(
        "decide",
        "a player's decision (blackjack, stud poker)",
        args=("seat", "action", "hand", "amount", "bet_id"),
        required=("seat", "action"),
        roles=("dealer",),
        duty="play",
        handler="table.round_commands.RoundCommands",
    ),
    CommandSpec(
        "deal_setup",
        "Super Pan 9's setup before the first card (the game names what it needs: "
        "`deal_setup_keys`)",
        args=("banker", "banker_capital", "casino_capital", "declared", "dice"),
        roles=("dealer",),
        duty="play",
        handler="table.round_commands.RoundCommands",
    ),
    CommandSpec(
        "new_shoe",
        "a new shoe in play where the shoe cannot say it (a shoe's own shuffle does): "
        "journaled and published as a `new_shoe` event; the baccarat roads on `board` "
        "start again",
        scope="follows",
        roles=("dealer",),
        duty="play",
        handler="table.round_commands.RoundCommands",
    ),
    CommandSpec(
        "jackpot_paid",
        "a jackpot payment confirmed; by two different principals (`[auth] two_person`): "
        'the first is answered `"paid": false` with `confirmed_by`',
        args=("hit_id",),
        required=("hit_id",),
        scope="hit",
        roles=("pit_supervisor", "jackpot_attendant"),
        duty="supervise",
        two_person=True,
        handler="table.round_commands.JackpotPayments",
    ),
    CommandSpec(
        "status",
        "the table's phase, round, `last_round_id` (not journaled)",
        scope="table",
        roles=_EVERYONE,
        journaled=False,
        handler="table.round_commands.RoundCommands",
    ),
    CommandSpec(
        "replay_rounds",
        "publish finished rounds again on `rounds`, the bytes first published (below, "
        '"Replay on request")',
        args=("from_seq", "to_seq"),
        required=("from_seq",),
        scope="table",
        roles=("floor_system", "floor_ingest"),
        handler="table.floor.FloorRequests",
    ),
    CommandSpec(
        "ack_alert",
        "acknowledge an integrity alert (`docs/integrity.md`); `ALERT_NOT_FOUND`, "
        "`ALERT_ALREADY_ACKNOWLEDGED`",
        args=("alert_id", "reason"),
        required=("alert_id", "reason"),
        scope="table",
        roles=("pit_supervisor",),
        duty="supervise",
        handler="integrity.alerts.Alerts",
        console=ConsoleVerb(
            "ack",
            (Param("ALERT_ID", "alert_id", "int"), Param("REASON...", "reason", "text")),
            "acknowledge an integrity alert, with a reason",
            hint="the id as `alerts` shows it",
        ),
    ),
    CommandSpec(
        "verify_software",
        "the installed software checked against its signed manifest, answered with the "
        "seeded hash (`docs/integrity.md`)",
        args=("seed",),
        required=("seed",),
        scope="table",
        roles=("pit_supervisor",),
        handler="integrity.selfcheck.SoftwareCheck",
        console=ConsoleVerb(
            "verify-software",
            (Param("SEED", "seed", optional=True),),
            "check the installed files against the signed manifest (SEED: the seeded answer too)",
            login=False,
        ),
    ),
    CommandSpec(
        "dealer_sign_in",
        "the dealer on duty, in every round from now (`docs/integrity.md`); `dealer` "
        "defaults to the dealer the principal is bound to (`[auth.principals] dealer`, "
        "else its own name); another dealer only by a supervisor "
        "(`dealer_sign_in_others`), else `DEALER_NOT_BOUND`",
        args=("dealer",),
        scope="table",
        roles=("dealer", "pit_supervisor"),
        handler="integrity.pace.DealerRoster",
        console=ConsoleVerb(
            "dealer",
            (Param("NAME", "dealer", optional=True),),
            "sign dealer NAME in at the table (without NAME: the dealer on duty signs out)",
            otherwise="dealer_sign_out",
        ),
    ),
    CommandSpec(
        "dealer_sign_out",
        "the dealer on duty signs out (`NO_DEALER` if none)",
        scope="table",
        roles=("dealer", "pit_supervisor"),
        handler="integrity.pace.DealerRoster",
    ),
    # -- maintenance between rounds (issue 35: rolling updates) --------------------------
    CommandSpec(
        "maintenance",
        "the round in progress finishes, no new round opens (`MAINTENANCE`) until "
        "`end_maintenance`; the retained `state` says `maintenance` (`docs/install.md`, "
        '"Rolling updates")',
        args=("reason",),
        required=("reason",),
        scope="table",
        roles=("pit_supervisor",),
        duty="supervise",
        handler="table.maintenance.Maintenance",
        console=ConsoleVerb(
            "maintenance",
            (Param("REASON...", "reason", "text"),),
            "take the table out of play after the round in progress (an update), with a reason",
        ),
    ),
    CommandSpec(
        "end_maintenance",
        "rounds open again (`NOT_IN_MAINTENANCE` if the table is not in maintenance)",
        args=("reason",),
        scope="table",
        roles=("pit_supervisor",),
        duty="supervise",
        handler="table.maintenance.Maintenance",
        console=ConsoleVerb(
            "end-maintenance",
            (Param("REASON...", "reason", "text", optional=True),),
            "put the table back in play after maintenance",
        ),
    ),
    CommandSpec(
        "witness_result",
        "the witness's reading of the round's result, `outcome` in the game's form "
        "(`docs/witness.md`); `WITNESS_TOO_EARLY`, `WITNESS_ALREADY_READ`, `NOT_THE_WITNESS`, "
        "`NO_WITNESS`",
        args=("outcome",),
        required=("outcome",),
        roles=("witness",),
        handler="table.witness.ResultWitness",
    ),
    CommandSpec(
        "resolve_result",
        "a disputed result resolved: `reading` (`primary` or `witness`) stands, with a "
        "`reason` (`docs/witness.md`); `RESULT_NOT_DISPUTED`, `NO_WITNESS_READING`",
        args=("reading", "reason"),
        required=("reading", "reason"),
        roles=("pit_supervisor",),
        duty="supervise",
        handler="table.witness.ResultWitness",
        console=ConsoleVerb(
            "resolve",
            (*_ROUND, Param("READING", "reading"), Param("REASON...", "reason", "text")),
            "resolve a held result (RESULT_DISPUTED): which reading stands, primary or witness",
            hint="the round id as `round` shows it; READING: primary or witness",
        ),
    ),
)
#: :data:`COMMAND_SPECS` by name.
CATALOGUE: Catalogue = catalogue(COMMAND_SPECS)


# -- what is derived for the policy ---------------------------------------------------
def permissions(specs: Catalogue) -> tuple[str, ...]:
    """The permissions the commands need, each once, in their order."""
    return tuple(dict.fromkeys(s.needs for s in specs.values()))


def role_permissions(specs: Catalogue) -> dict[str, set[str]]:
    """Role -> the command permissions its built-in definition holds."""
    out: dict[str, set[str]] = {}
    for spec in specs.values():
        for role in spec.roles:
            out.setdefault(role, set()).add(spec.needs)
    return out


def with_duty(specs: Catalogue, duty: Duty) -> frozenset[str]:
    return frozenset(s.needs for s in specs.values() if s.duty == duty)


def two_person(specs: Catalogue) -> tuple[str, ...]:
    """The commands ``[auth] two_person`` holds by default."""
    return tuple(s.name for s in specs.values() if s.two_person)


# -- what is derived for the JSON Schema and docs/mqtt.md ---------------------------------
def schema_rules(specs: Catalogue) -> dict[str, Any]:
    """The parts of ``command_request.json`` the specs decide: the ``command`` enum and
    ``allOf``, the round each scope names and the arguments each command takes."""
    by_scope = {s: [c.name for c in specs.values() if c.scope == s] for s in SCOPES}
    rules: list[dict[str, Any]] = []
    names = by_scope["round"] + by_scope["hit"]
    scoped = (
        (by_scope["follows"], {"required": ["after_round_id"], "not": {"required": ["round_id"]}}),
        (
            by_scope["table"],
            {"not": {"anyOf": [{"required": ["round_id"]}, {"required": ["after_round_id"]}]}},
        ),
        (names, {"required": ["round_id"], "not": {"required": ["after_round_id"]}}),
    )
    for commands, rule in scoped:
        if commands:
            rules.append({"if": {"properties": {"command": {"enum": commands}}}, "then": rule})
    bare = [s.name for s in specs.values() if not s.args]
    if bare:
        rules.append(
            {
                "if": {"properties": {"command": {"enum": bare}}},
                "then": {"properties": {"args": {"maxProperties": 0}}},
            }
        )
    for spec in specs.values():
        if not spec.args:
            continue
        args: dict[str, Any] = {"propertyNames": {"enum": list(spec.args)}}
        then: dict[str, Any] = {"properties": {"args": args}}
        if spec.required:
            args["required"] = list(spec.required)
            then["required"] = ["args"]
        rules.append({"if": {"properties": {"command": {"const": spec.name}}}, "then": then})
    return {"enum": list(specs), "allOf": rules}


def with_schema_rules(schema: Mapping[str, Any], specs: Catalogue) -> dict[str, Any]:
    """``schema`` (``command_request.json``) with the parts :func:`schema_rules` makes."""
    rules = schema_rules(specs)
    out = dict(schema)
    props = dict(out["properties"])
    command = {k: v for k, v in props["command"].items() if k not in ("examples", "enum")}
    props["command"] = {**command, "enum": rules["enum"]}
    out["properties"] = props
    out["allOf"] = rules["allOf"]
    return out


_NAMES = {
    "round": "`round_id`",
    "follows": "`after_round_id`",
    "table": "nothing",
    "hit": "`round_id` of the hit",
}
#: Where docs/mqtt.md's command table starts and ends.
DOCS_BEGIN = "<!-- commands: generated from firmware_host/commands.py -->"
DOCS_END = "<!-- /commands -->"


def docs_table(specs: Catalogue) -> str:
    """The command table of ``docs/mqtt.md`` (between :data:`DOCS_BEGIN` and
    :data:`DOCS_END`)."""
    rows = [
        "| command | names | args | roles | what |",
        "|---|---|---|---|---|",
    ]
    for s in specs.values():
        needed = [f"`{a}`" for a in s.required]
        optional = [f"`{a}`" for a in s.args if a not in s.required]
        parts = [", ".join(needed)] if needed else []
        if optional:
            parts.append("optional: " + ", ".join(optional))
        args = "; ".join(parts)
        roles = ", ".join(f"`{r}`" for r in s.roles)
        if s.permission:
            roles += f" (permission `{s.permission}`)"
        cells = (f"`{s.name}`", _NAMES[s.scope], args, roles, s.summary)
        rows.append("|" + "|".join(f" {c} " if c else " " for c in cells) + "|")
    return "\n".join(rows)


def with_docs_table(text: str, specs: Catalogue) -> str:
    """``text`` (``docs/mqtt.md``) with its command table made from ``specs``."""
    head, begin, rest = text.partition(DOCS_BEGIN)
    _, end, tail = rest.partition(DOCS_END)
    if not begin or not end:
        raise ValueError(f"no {DOCS_BEGIN} ... {DOCS_END} in the text")
    return f"{head}{DOCS_BEGIN}\n{docs_table(specs)}\n{DOCS_END}{tail}"
