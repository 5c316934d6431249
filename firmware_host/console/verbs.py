"""The console's verbs, as a table: the console's own (login, the views, the jackpot's
dual-controlled changes...) and one for each command to the table that has a console
verb in its spec (``firmware_host/commands.py``: ``open``, ``close``, ``result``,
``void``, ``ack``, ``dealer``, ``verify-software``), which runs that command's handler
through :meth:`ConsoleBackend.command` as the floor's would run it."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..commands import CATALOGUE, Catalogue, CommandSpec, ConsoleVerb, Param
from ..jsonio import JSON

if TYPE_CHECKING:
    from .session import ConsoleSession

#: What a verb does with the rest of its line: the lines to print.
Run = Callable[["ConsoleSession", "Command", str], Awaitable[list[str]]]


@dataclass(frozen=True)
class Command:
    """One verb of the console."""

    name: str
    syntax: str
    doc: str
    privileged: bool = False
    #: Needs a second, different operator to ``approve`` it (dual control).
    dual: bool = False
    run: Run | None = field(default=None, compare=False, repr=False)
    #: The command to the table it runs (None: one of the console's own).
    spec: CommandSpec | None = None


def shown_word(word: str) -> str:
    """A typed word as an error may repeat it: never one with a digit in it (a PIN
    typed at the wrong moment is never shown back)."""
    return "(not repeated: it has digits)" if any(c.isdigit() for c in word) else repr(word)


# -- the console's own verbs ------------------------------------------------------------
async def _help(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    verbs = s.verbs
    if args:
        c = verbs.get(args.lower())
        if c is None:
            return [f"error: unknown command {shown_word(args)}"]
        needs = " (needs login)" if c.privileged else ""
        if c.dual:
            needs = " (needs login and a second operator's approval)"
        return [f"{c.syntax}  - {c.doc}{needs}"]
    width = max(len(c.syntax) for c in verbs.values())
    return ["commands (* needs an operator login, ** and a second operator's approval):"] + [
        f"  {c.syntax:<{width}}  {('**' if c.dual else '* ') if c.privileged else '  '} {c.doc}"
        for c in verbs.values()
    ]


async def _quit(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    s.closed = True
    if s.user:
        s.audit("console_logout", {"operator": s.user, "why": "quit"})
    return ["bye"]


async def _login(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    if not args or " " in args:
        return ["error: syntax: login NAME"]
    left = s.lockout.locked()
    if left:
        return [s.locked_message(left)]
    if args.isdigit() and args not in s.settings.operators:
        # a PIN typed for the name: never asked for a PIN, repeated or logged
        return ["error: no operator's name is a number (if that was the PIN: it is "
                "not shown nor logged); syntax: login NAME"]  # fmt: skip
    s.ask_pin(args)
    return []


async def _logout(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    if s.user:
        s.audit("console_logout", {"operator": s.user, "why": "logout"})
    s.user = None
    return ["logged out"]


async def _status(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    if args == "json":
        return [json.dumps(s.backend.status(), ensure_ascii=True, separators=(",", ":"))]
    if args:
        return ["error: syntax: status [json]"]
    return s.render.lines(s.backend.status())


async def _selftest(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    if not args:
        return ["error: syntax: selftest DEVICE"]
    return s.render.lines(await s.backend.self_test(args))


async def _lamptest(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    return s.render.lines(await s.backend.lamp_test())


async def _recall(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    words = args.split()
    full = bool(words) and words[-1].lower() == "full"
    if full:
        words = words[:-1]
    try:
        (count,) = [int(w) for w in words] or [1]
    except ValueError:
        return [f"error: syntax: {cmd.syntax}"]
    if not 1 <= count <= 10:
        return ["error: N must be 1..10"]
    return s.render.recall(s.backend.recall(count), full)


async def _events(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    try:
        count = int(args) if args else 20
    except ValueError:
        return [f"error: syntax: {cmd.syntax}"]
    if not 1 <= count <= 1000:
        return ["error: N must be 1..1000"]
    events = s.backend.events(count)
    return s.render.lines(events) if events else ["no event in the log"]


def _view(read: Callable[[ConsoleSession], JSON]) -> Run:
    """A verb that shows what ``read`` returns."""

    async def run(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
        return s.render.lines(read(s))

    return run


async def _pending(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    reqs = s.dual.pending()
    if not reqs:
        return ["no request waits for approval"]
    return [f"  {q.id}: {q.command} {q.args}  (asked by {q.by})" for q in reqs]


async def _approve(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    try:
        rid = int(args)
    except ValueError:
        return ["error: syntax: approve ID (see 'pending')"]
    req = s.dual.take(rid)
    if req is None:
        return [f"error: no pending request {rid} (see 'pending')"]
    who = s.user or "?"
    if req.by == who:
        s.dual.put_back(req)
        return [
            f"error: DUAL_CONTROL: request {rid} was asked by {who}; another operator "
            "must approve it"
        ]
    s.audit(
        "privileged_approval",
        {"id": req.id, "action": req.command, "operator": req.by, "approved_by": who},
    )
    done = req.run(who)
    data = await done if inspect.isawaitable(done) else done
    return [f"approved by {who}: {req.command} {req.args}", *s.render.lines(data)]


async def _jackpot_adjust(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    amount, _, reason = args.partition(" ")
    value = s.minor_units(amount)
    if value is None:
        return [
            "error: syntax: jackpot-adjust AMOUNT REASON... (AMOUNT in "
            f"{s.render.money.currency}, e.g. 250.00 or -10)"
        ]
    if not reason.strip():
        return ["error: a reason is required"]
    why, who = reason.strip(), s.user or "?"
    shown = f"{s.render.money.format(value)} {why}"
    return s.ask_dual(cmd, shown, lambda ok: s.backend.jackpot_adjust(value, why, f"{who}+{ok}"))


async def _jackpot_reset(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    if not args:
        return ["error: syntax: jackpot-reset REASON..."]
    who = s.user or "?"
    return s.ask_dual(cmd, args, lambda ok: s.backend.jackpot_reset(args, f"{who}+{ok}"))


async def _jackpot_param(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    parts = args.split(" ", 2)
    if len(parts) < 3:
        return ["error: syntax: jackpot-param KEY VALUE REASON..."]
    key, value, why = parts
    who = s.user or "?"
    return s.ask_dual(
        cmd, args, lambda ok: s.backend.jackpot_params(key, value, why, f"{who}+{ok}")
    )


async def _clear_fault(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
    code, _, reason = args.partition(" ")
    if not code or not reason.strip():
        return ["error: syntax: clear-fault CODE REASON..."]
    return s.render.lines(s.backend.clear_fault(code, reason.strip(), s.user or "?"))


def _own(name: str, syntax: str, doc: str, run: Run, privileged: bool = False) -> Command:
    return Command(name, syntax, doc, privileged, run=run)


#: The console's own verbs before the table's commands in ``help``, and after them.
_OWN_BEFORE: tuple[Command, ...] = (
    _own("help", "help [COMMAND]", "list commands, or show one command's syntax", _help),
    _own("status", "status [json]", "table, game, phase, round, journal and broker state", _status),
    _own("devices", "devices", "health of every device", _view(lambda s: s.backend.devices())),
    _own("selftest", "selftest DEVICE", "run a device's self-test", _selftest),
    _own("lamptest", "lamptest", "light every lamp of the result board and the sign", _lamptest),
    _own(
        "recall",
        "recall [N] [full]",
        "the last N rounds (default 1, max 10), one screen each; 'full': every field and raw frame",
        _recall,
    ),
    _own(
        "round", "round", "the round in progress: id, phase, bets",
        _view(lambda s: s.backend.round_info()),
    ),
    _own(
        "jackpot", "jackpot", "progressive jackpot meter, parameters and last hits",
        _view(lambda s: s.backend.jackpot()),
    ),
    _own("events", "events [N]", "the last N entries of the event log (default 20)", _events),
    _own("faults", "faults", "latched faults that stop play", _view(lambda s: s.backend.faults())),
    _own(
        "check-config", "check-config", "validate the configuration file on disk",
        _view(lambda s: s.backend.check_config()),
    ),
    _own("login", "login NAME", "log in as an operator (asks for the PIN)", _login),
    _own("logout", "logout", "end the operator session", _logout),
    _own(
        "alerts", "alerts", "integrity alerts not yet cleared (docs/integrity.md)",
        _view(lambda s: s.backend.alerts()),
    ),
    _own(
        "pace", "pace", "the shift so far: games and voids per hour, idle time, per dealer",
        _view(lambda s: s.backend.pace_report()),
    ),
)  # fmt: skip
_OWN_AFTER: tuple[Command, ...] = (
    Command(
        "jackpot-adjust",
        "jackpot-adjust AMOUNT REASON...",
        "add (or subtract, negative) AMOUNT in the table's currency (e.g. 250.00) to the meter",
        True,
        True,
        run=_jackpot_adjust,
    ),
    Command(
        "jackpot-reset",
        "jackpot-reset REASON...",
        "reset the meter to the seed",
        True,
        True,
        run=_jackpot_reset,
    ),
    Command(
        "jackpot-param",
        "jackpot-param KEY VALUE REASON...",
        "change a jackpot parameter (takes effect after the next hit)",
        True,
        True,
        run=_jackpot_param,
    ),
    _own("pending", "pending", "requests waiting for a second operator's approval", _pending),
    _own(
        "approve", "approve ID", "approve another operator's pending request (dual control)",
        _approve, True,
    ),
    _own("clear-fault", "clear-fault CODE REASON...", "clear a latched fault", _clear_fault, True),
    _own("quit", "quit", "close this console session", _quit),
)  # fmt: skip


# -- the table's commands ---------------------------------------------------------------
class _Syntax(ValueError):
    """A line that does not follow a verb's syntax (``detail``: why, if it can say)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)
        self.detail = detail


def _value(p: Param, piece: str) -> JSON:
    if p.kind == "int":
        if not piece.isdigit():
            raise _Syntax()
        return int(piece)
    if p.kind == "json":
        try:
            return json.loads(piece)
        except json.JSONDecodeError as exc:
            raise _Syntax(f"{exc.msg} at column {exc.pos + 1}") from None
    return piece


def parse(verb: ConsoleVerb, text: str) -> dict[str, JSON]:
    """The parameters of ``verb`` read from ``text`` (what follows the verb), by key:
    each parameter one word, but the last, which takes the rest of the line (one word
    for a ``word`` or an ``int``); an optional one may be left out."""
    values: dict[str, JSON] = {}
    rest = text.strip()
    for n, p in enumerate(verb.params):
        if n == len(verb.params) - 1:
            piece, rest = rest.strip(), ""
            if p.kind in ("word", "int") and " " in piece:
                raise _Syntax()
        else:
            piece, _, rest = rest.partition(" ")
        if not piece.strip():
            if p.optional:
                continue
            raise _Syntax()
        values[p.key] = _value(p, piece.strip())
    return values


def _table_command(spec: CommandSpec, verb: ConsoleVerb) -> Command:
    """The verb of a command to the table: its line parsed by its spec's parameters,
    the command run by the backend (or asked for, when it needs a second operator)."""

    async def run(s: ConsoleSession, cmd: Command, args: str) -> list[str]:
        try:
            values = parse(verb, args)
        except _Syntax as exc:
            why = exc.detail or verb.hint
            return [f"error: syntax: {cmd.syntax}" + (f" ({why})" if why else "")]
        name = verb.otherwise if verb.otherwise and not values else spec.name
        round_id, after = values.pop("round_id", None), values.pop("after_round_id", None)

        def act(operator: str | None) -> Awaitable[JSON]:
            return s.backend.command(
                name,
                values,
                round_id=None if round_id is None else str(round_id),
                after_round_id=None if after is None else str(after),
                operator=operator,
            )

        if cmd.dual:
            who = s.user or "?"
            return s.ask_dual(cmd, args, lambda ok: act(f"{who}+{ok}"))
        return s.render.lines(await act(s.user))

    return Command(
        verb.verb,
        verb.syntax,
        verb.help,
        privileged=verb.login,
        dual=spec.two_person,
        run=run,
        spec=spec,
    )


def console_commands(catalogue: Catalogue = CATALOGUE) -> dict[str, Command]:
    """Every verb of a console over a table answering ``catalogue``, in ``help``'s order."""
    table = [_table_command(spec, spec.console) for spec in catalogue.values() if spec.console]
    verbs = (*_OWN_BEFORE, *table, *_OWN_AFTER)
    out = {c.name: c for c in verbs}
    if len(out) != len(verbs):
        raise ValueError("a console verb is declared twice")
    return out


#: The console's verbs over the table's commands (:data:`~firmware_host.commands.CATALOGUE`).
VERBS = console_commands()
COMMANDS: tuple[Command, ...] = tuple(VERBS.values())
