"""Requests from the floor: ``bets/request`` and ``commands/request``, a trust boundary.

Every request gets exactly one response (``bets/response``, ``commands/response``),
accepted or rejected (ok or error) with a stable code and a message; nothing raises
out of here, nothing blocks the table. No MQTT here: the floor link hands us payload
bytes (:meth:`FloorRequests.handle`) and publishes what we return; every answer is
built by :func:`firmware_host.schemas.response`. A request goes through, in order:

1. **Reading**: a size limit, UTF-8, JSON (no NaN, no member named twice in an
   object: ``DUPLICATE_MEMBER``), an object.
2. **Who sent it** (:class:`~firmware_host.auth.Authenticator`): for this table,
   from a known principal, signed by its key (``docs/security.md``). A refusal of
   steps 1-2 echoes the request's ``request_id`` when it could be read in the
   identifier form (else null) and nothing else of it, names no principal (nothing
   in the request is trusted: a requester matches answers by principal and request
   id), and is never journaled.
3. **Seen before?** The answer to every request is journaled by ``(principal,
   request_id)``: a request id answered before gets that answer again and acts
   nothing (``REQUEST_ID_CONFLICT`` if its content differs). ``status`` alone, which
   changes nothing, is answered afresh.
4. **Fresh and permitted?** Signed within ``[auth] max_age_s`` of the table's clock;
   the principal's roles permit what it asks (``NOT_PERMITTED``). Refused requests of
   steps 1, 2 and 4 are counted (:class:`~.refusals.RefusalLedger`: one chain entry a
   minute with the counts, never a row each), so no sender, of the lowest role or of
   none, can grow the journal.
5. **For the round it names, in its phase**: a command names its ``round_id``
   (opening betting names the round it follows, ``after_round_id``; its spec's scope,
   ``firmware_host/commands.py``) and is refused ``STALE_ROUND`` otherwise; a bet names its round too, and only its principal may
   cancel it; identifiers are printable ASCII; the round's and the seat's caps
   (``[bets]``).
6. **Acting and answering in ONE journal transaction**: the change and its answer
   commit together, so a crash leaves both or neither, and a retry never acts twice.
   When the journal cannot write (``DISK_FULL``, ``JOURNAL_IO``) nothing acted and the
   refusal is not journaled: the same request id acts once when it writes again.

A command is what its spec (:mod:`firmware_host.commands`) declares: the arguments it
takes, the round it names, the permission it needs; what it does is the handler the
part that implements it registered with the table's :class:`~.commands.Commands`
(``table/commands.py``), the same the console runs.

``replay_rounds`` asks the table to publish finished rounds again from the journal,
the same bytes on ``rounds`` (a floor system repairing a gap in ``seq``); it is
rate-limited per principal (:class:`ReplayBudgets`: at most :data:`REPLAY_MAX_ROUNDS`
rounds a request, a budget of rounds a minute for each principal, refused
``REPLAY_RATE_LIMITED`` unjournaled, so the same request may be sent again later): one
principal spending its budget never starves another's repairs (the floor ingest's).

Commands that need two different principals (``[auth] two_person``, a jackpot
payment by default) act on the second confirmation; the first is journaled as an
approval.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from .. import boundedjson
from ..auth import AUTH_FIELDS, BET_PERMISSIONS, Authenticator, AuthError, Principal
from ..auth.policy import PRINCIPAL_NAME
from ..commands import CommandSpec
from ..games.errors import CodedError
from ..games.money import parse_json_int
from ..journal import STORAGE_CODES, StorageError
from ..jsonio import JSON
from ..schemas import response
from .commands import PREPARED, CommandCall, Commands, Deferred
from .engine import BetAnswer, RoundEngine, StaleRound
from .jackpot import JackpotController
from .journaling import FloorJournal
from .procedures import Procedure
from .reading import (
    MAX_BET_ID,
    MAX_REQUEST_ID,
    RequestError,
    identifier,
    is_identifier,
    shown,
)
from .refusals import RefusalLedger
from .replay import REPLAY_MAX_ROUNDS, ReplayBudgets
from .round_commands import table_commands

log = logging.getLogger(__name__)

MAX_PAYLOAD = boundedjson.MAX_REQUEST_BYTES

BET_REQUEST_KEYS = frozenset({"request_id", "action", "round_id", "bet", "bet_id", *AUTH_FIELDS})
COMMAND_REQUEST_KEYS = frozenset(
    {"request_id", "command", "round_id", "after_round_id", "args", *AUTH_FIELDS}
)


def _decode(payload: bytes, what: str) -> dict[str, JSON]:
    try:  # size, nesting and container count checked before parsing (boundedjson)
        data = boundedjson.loads(payload, parse_int=parse_json_int)
    except boundedjson.RequestShapeError as exc:
        raise RequestError(exc.code, f"{what}: {exc.message}") from None
    if not isinstance(data, dict):
        raise RequestError(
            "MALFORMED_REQUEST", f"{what} must be a JSON object, got {type(data).__name__}"
        )
    return data


def internal_error(exc: BaseException) -> dict[str, str]:
    """``code`` and ``message`` of an answer to a request whose handling failed."""
    return {"code": "INTERNAL_ERROR", "message": f"internal error: {type(exc).__name__}"}


def _readable_id(data: Mapping[str, JSON] | None) -> str | None:
    """The ``request_id`` of a request that could be read, if it has the identifier
    form: echoed in a refusal of its authentication (to nothing on the table is it
    matched: such a refusal is never journaled and names no principal)."""
    rid = data.get("request_id") if data is not None else None
    return rid if is_identifier(rid, MAX_REQUEST_ID) else None


def _claimed(data: Mapping[str, JSON] | None) -> str | None:
    """The principal a request names, if it names one in the form of a name."""
    name = data.get("principal") if data is not None else None
    return name if isinstance(name, str) and PRINCIPAL_NAME.match(name) else None


def content_digest(request: Mapping[str, JSON]) -> str:
    """What makes two requests under one request id the same request: the SHA-256 of
    their content without ``signature`` and ``timestamp`` (a retry is signed again)."""
    content = {k: v for k, v in request.items() if k not in ("signature", "timestamp")}
    text = json.dumps(
        content,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=lambda o: f"<{type(o).__name__}>",
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _NotJournaled(Exception):
    """Rolls a request's transaction back: its answer (a storage refusal) is sent but
    never journaled."""

    def __init__(self, answer: dict[str, JSON]) -> None:
        super().__init__(answer.get("code"))
        self.answer = answer


@dataclass
class _Acted:
    """A request's answer and the round it concerns (keeps the answer in retention)."""

    answer: dict[str, JSON]
    round_id: str | None = None


class FloorRequests:
    """Turns request payloads into commands and bets, and answers them.

    ``commands``: what the table answers, each command's handler registered by the part
    that implements it (``table/commands.py``); by default the round engine's, the
    ``procedure``'s and the ``jackpot``'s (:func:`~.round_commands.table_commands`).
    ``replay_rounds`` is the floor's own (rate-limited per principal:
    ``replay_budgets``). ``auth``: who may send what.
    ``journal``: the parts of the journal the requests use
    (:class:`~.journaling.FloorJournal`)."""

    def __init__(
        self,
        engine: RoundEngine,
        procedure: Procedure,
        journal: FloorJournal,
        *,
        auth: Authenticator,
        jackpot: JackpotController | None = None,
        replay_budgets: ReplayBudgets | None = None,
        commands: Commands | None = None,
    ) -> None:
        self.engine = engine
        self.replay_budgets = replay_budgets or ReplayBudgets()
        self.commands = commands or table_commands(engine, procedure, journal, jackpot=jackpot)
        self.commands.register("replay_rounds", self.replay)
        self._db = journal.db
        self._requests = journal.requests
        self._chain = journal.chain
        self._rounds = journal.rounds
        self._jackpots = journal.jackpot
        self.procedure = procedure
        self.auth = auth
        self.table_id = engine.cfg.table_id
        #: Requests refused before authorisation: counted, never journaled one by one.
        self.refusals = RefusalLedger(
            self._chain, known=auth.settings.principals, clock=auth.clock
        )
        engine.extensions.add(self.refusals)  # its window flushes on the table's tick
        self.counters = {
            "bets_accepted": 0,
            "bets_rejected": 0,
            "commands_ok": 0,
            "commands_error": 0,
            "refused_unauthenticated": 0,
            "answered_again": 0,
        }

    async def handle(self, topic: str, payload: bytes) -> JSON:
        """The floor link's request handler: ``topic`` relative to the table's root."""
        if topic in ("bets/request", "commands/request"):
            try:
                return self._answer(topic, payload)
            except Deferred as d:  # slow work: in a worker thread, then answered again
                token = PREPARED.set(await asyncio.to_thread(d.work))
            try:
                return self._answer(topic, payload)
            finally:
                PREPARED.reset(token)
        return None

    def handle_bet_request(self, payload: bytes) -> dict[str, JSON]:
        return self.answer("bets/request", payload)

    def handle_command_request(self, payload: bytes) -> dict[str, JSON]:
        return self.answer("commands/request", payload)

    # -- one request ---------------------------------------------------------------------
    def answer(self, topic: str, payload: bytes) -> dict[str, JSON]:
        """The answer to one request on ``topic`` (see the module docstring)."""
        try:
            return self._answer(topic, payload)
        except Deferred as d:  # a synchronous caller: the slow work on this thread
            token = PREPARED.set(d.work())
        try:
            return self._answer(topic, payload)
        finally:
            PREPARED.reset(token)

    def _answer(self, topic: str, payload: bytes) -> dict[str, JSON]:
        bets = topic == "bets/request"
        what = "bet request" if bets else "command request"
        refused = "rejected" if bets else "error"
        data: dict[str, JSON] | None = None
        try:
            data = _decode(payload, what)
            who = self.auth.verify(topic, data)
            rid = identifier(data.get("request_id"), "request_id", MAX_REQUEST_ID, show=False)
        except (RequestError, AuthError) as exc:
            self.counters["refused_unauthenticated"] += 1
            self.refusals.count(_claimed(data), False, exc.code)
            # Nothing in the request is trusted yet: its request id (if readable) and no
            # principal, unjournaled: matched to nothing on the table, and a requester
            # knows it from its own answer, which names the principal it signed as.
            answer = response(self.table_id, _readable_id(data), refused, **exc.to_json())
            return self._count(bets, answer)
        spec = None if bets else self._spec(data)
        if spec is not None and not spec.journaled:  # status: changes nothing
            return self._count(bets, self._unjournaled(spec, data, who, rid))
        digest = content_digest(data)
        try:
            before = self._requests.answered(who.name, rid)
        except StorageError as exc:
            return self._count(bets, self._unwritten(bets, rid, who, data, exc))
        if before is not None:
            self.counters["answered_again"] += 1
            if before.digest == digest:
                return dict(before.answer)
            return self._count(
                bets,
                self._refusal(
                    bets,
                    rid,
                    who,
                    "REQUEST_ID_CONFLICT",
                    f"request id {rid!r} of {who.name} was used at {before.at} for another "
                    "request; a new request needs a new request_id",
                ),
            )
        try:
            self.auth.check_fresh(data)
            self._authorise(bets, data, who)
        except AuthError as exc:
            self.refusals.count(who.name, who.verified, exc.code)
            extra = self._named(bets, data) if exc.code == "NOT_PERMITTED" else {}
            return self._count(bets, self._refusal(bets, rid, who, exc.code, exc.message, **extra))
        budget = (
            self.replay_budgets.of(who.name)
            if not bets and data.get("command") == "replay_rounds"
            else None
        )
        if budget is not None and not budget.available():
            # Not journaled: the same request, re-signed, may be sent again later.
            wait = budget.retry_after()
            return self._count(
                bets,
                self._refusal(
                    bets,
                    rid,
                    who,
                    "REPLAY_RATE_LIMITED",
                    f"this table replays at most {budget.per_window} rounds a minute for "
                    f"{who.name}; send the request again in {wait:.0f} s",
                    command="replay_rounds",
                    retry_after_s=round(wait, 3),
                ),
            )
        # A latched storage fault is checked outside the transaction: its probe write
        # can only clear the fault from there (inside, it would be a savepoint).
        storage = self._db.storage.blocked()
        if storage is not None:
            return self._count(bets, self._unwritten(bets, rid, who, data, storage))
        try:
            with self._db.transaction():
                acted = self._bet(data, who, rid) if bets else self._command(data, who, rid)
                if acted.answer.get("code") in STORAGE_CODES:
                    # The journal failed under the engine: nothing acted. A transient
                    # refusal is never journaled as the answer a retry would get.
                    raise _NotJournaled(acted.answer)
                self._requests.record_answer(
                    who.name,
                    rid,
                    topic=topic,
                    digest=digest,
                    answer=acted.answer,
                    round_id=acted.round_id,
                    verified=who.verified,
                )
        except _NotJournaled as exc:
            return self._count(bets, exc.answer)
        except StorageError as exc:
            return self._count(bets, self._unwritten(bets, rid, who, data, exc))
        except Exception as exc:  # never let one request stop the table; nothing acted
            if isinstance(exc, Deferred) and PREPARED.get() is None:
                raise  # its slow work is done outside, then the request answered again
            log.exception("%s %s of %s failed; rolled back", what, rid, who.audit)
            return self._count(
                bets,
                response(self.table_id, rid, refused, principal=who.name, **internal_error(exc)),
            )
        return self._count(bets, acted.answer)

    def _authorise(self, bets: bool, data: Mapping[str, JSON], who: Principal) -> None:
        """``NOT_PERMITTED`` before anything is journaled: what the request asks for,
        or, for what names no known action or command, anything on its topic but
        ``status`` (an observer's request never reaches the journal)."""
        if not self.auth.signatures:
            return
        specs = self.commands.catalogue.values()
        if bets:
            asked = data.get("action")
            if isinstance(asked, str) and asked in BET_PERMISSIONS:
                self.auth.allowed(who, asked)
                return
            topic = set(BET_PERMISSIONS)
        else:
            spec = self._spec(data)
            if spec is not None:
                self.auth.allowed(who, spec.needs)
                return
            topic = {s.needs for s in specs if s.journaled}
        if not self.auth.settings.permissions(who.name) & topic:
            but = ", ".join(s.name for s in specs if not s.journaled) or "nothing"
            raise AuthError(
                "NOT_PERMITTED",
                f"{who.name} may send nothing on {'bets' if bets else 'commands'}/request "
                f"but {but}",
            )

    def _spec(self, data: Mapping[str, JSON]) -> CommandSpec | None:
        """The spec of the command a request names, if it names one."""
        name = data.get("command")
        return self.commands.catalogue.get(name) if isinstance(name, str) else None

    def _named(self, bets: bool, data: Mapping[str, JSON]) -> dict[str, JSON]:
        """The action or command a refusal names, when it is a known one."""
        key = "action" if bets else "command"
        named = data.get(key)
        known = BET_PERMISSIONS if bets else tuple(self.commands.catalogue)
        return {key: named} if isinstance(named, str) and named in known else {}

    def _count(self, bets: bool, answer: dict[str, JSON]) -> dict[str, JSON]:
        good = answer.get("status") in ("accepted", "ok")
        key = ("bets_" if bets else "commands_") + (
            ("accepted" if bets else "ok") if good else ("rejected" if bets else "error")
        )
        self.counters[key] += 1
        return answer

    def _refusal(
        self, bets: bool, rid: str, who: Principal, code: str, message: str, **extra: JSON
    ) -> dict[str, JSON]:
        return response(
            self.table_id,
            rid,
            "rejected" if bets else "error",
            principal=who.name,
            code=code,
            message=message,
            **extra,
        )

    def _unwritten(
        self, bets: bool, rid: str, who: Principal, data: Mapping[str, JSON], exc: StorageError
    ) -> dict[str, JSON]:
        """The answer when the journal cannot write (``DISK_FULL``, ``JOURNAL_IO``): the
        transaction that would have acted and journaled the answer rolled back, so
        nothing acted and nothing is journaled (a retry acts once when the journal
        writes again). The storage guard logged the fault once; no traceback per request."""
        return self._refusal(bets, rid, who, exc.code, exc.message, **self._named(bets, data))

    # -- bets ---------------------------------------------------------------------------
    def _bet(self, data: dict[str, JSON], who: Principal, rid: str) -> _Acted:
        action = data.get("action")
        try:
            unknown = set(data) - BET_REQUEST_KEYS
            if unknown:
                raise RequestError(
                    "UNKNOWN_FIELD",
                    f"unknown field(s) in bet request: {', '.join(sorted(unknown))}",
                )
            if action not in ("place", "cancel"):
                raise RequestError(
                    "UNKNOWN_ACTION", f"action must be 'place' or 'cancel', got {shown(action)}"
                )
            self.auth.allowed(who, str(action))
            round_id = identifier(data.get("round_id"), "round_id", MAX_REQUEST_ID)
            if action == "place":
                bet = data.get("bet")
                if not isinstance(bet, dict) or "bet_id" in data:
                    raise RequestError(
                        "MALFORMED_REQUEST", "place takes a 'bet' object (and no top-level bet_id)"
                    )
                identifier(bet.get("bet_id"), "bet_id", MAX_BET_ID)
                answer = self.engine.desk.place(bet, round_id=round_id, principal=who.name)
            else:
                if "bet" in data:
                    raise RequestError("MALFORMED_REQUEST", "cancel takes a 'bet_id', not a 'bet'")
                bet_id = identifier(data.get("bet_id"), "bet_id", MAX_BET_ID)
                answer = self.engine.desk.cancel(bet_id, round_id=round_id, principal=who.name)
        except (RequestError, AuthError) as exc:
            body: dict[str, JSON] = {"status": "rejected", **exc.to_json()}
            if isinstance(action, str) and action in ("place", "cancel"):
                body["action"] = action
            return _Acted(response(self.table_id, rid, principal=who.name, **body))
        return _Acted(self._bet_answer(rid, who, str(action), answer), answer.round_id)

    def _bet_answer(
        self, rid: str, who: Principal, action: str, answer: BetAnswer
    ) -> dict[str, JSON]:
        body = answer.to_json()
        status = body.pop("status")
        return response(self.table_id, rid, status, action=action, principal=who.name, **body)

    # -- commands -----------------------------------------------------------------------
    def _unjournaled(
        self, spec: CommandSpec, data: dict[str, JSON], who: Principal, rid: str
    ) -> dict[str, JSON]:
        """A command that changes nothing (``status``): answered afresh, never journaled."""
        try:
            self.auth.check_fresh(data)
            spec, args = self._command_envelope(data, spec.name)
            self.auth.allowed(who, spec.needs)
            result = self.commands.run(self._call(spec, args, data, who, rid))
        except CodedError as exc:
            if isinstance(exc, AuthError):
                self.refusals.count(who.name, who.verified, exc.code)
            plain = isinstance(exc, (RequestError, AuthError))
            extra: dict[str, JSON] = {} if plain else {"command": spec.name}
            return self._refusal(False, rid, who, exc.code, exc.message, **extra)
        except Exception as exc:  # never let one request stop the table
            if isinstance(exc, Deferred) and PREPARED.get() is None:
                raise
            log.exception("command request %s of %s failed", rid, who.audit)
            return response(self.table_id, rid, "error", principal=who.name, **internal_error(exc))
        return response(
            self.table_id, rid, "ok", command=spec.name, principal=who.name, data=result
        )

    def _command_envelope(
        self, data: dict[str, JSON], command: object
    ) -> tuple[CommandSpec, dict[str, JSON]]:
        """The command's spec and its ``args``, if the request is one of it: known
        fields, a known command, the arguments it takes, the round its scope names."""
        unknown = set(data) - COMMAND_REQUEST_KEYS
        if unknown:
            raise RequestError(
                "UNKNOWN_FIELD",
                f"unknown field(s) in command request: {', '.join(sorted(unknown))}",
            )
        catalogue = self.commands.catalogue
        spec = catalogue.get(command) if isinstance(command, str) else None
        if spec is None:
            raise RequestError(
                "UNKNOWN_COMMAND",
                f"unknown command {shown(command)}; known: {', '.join(catalogue)}",
            )
        args = data.get("args", {})
        if not isinstance(args, dict):
            raise RequestError("MALFORMED_REQUEST", "args must be a JSON object")
        unknown = set(args) - set(spec.args)
        if unknown:
            raise RequestError(
                "UNKNOWN_FIELD", f"{spec.name} takes no argument(s) {', '.join(sorted(unknown))}"
            )
        if spec.scope == "follows":
            if "round_id" in data or "after_round_id" not in data:
                raise RequestError(
                    "MALFORMED_REQUEST",
                    f"{spec.name} names the round it follows: 'after_round_id' (null on a table "
                    "that never played), not 'round_id'",
                )
            if data["after_round_id"] is not None:
                identifier(data["after_round_id"], "after_round_id", MAX_REQUEST_ID)
        elif spec.scope == "table":
            if "round_id" in data or "after_round_id" in data:
                raise RequestError("MALFORMED_REQUEST", f"{spec.name} names no round")
        else:
            if "after_round_id" in data:
                raise RequestError(
                    "MALFORMED_REQUEST", f"{spec.name} names its 'round_id', not 'after_round_id'"
                )
            identifier(data.get("round_id"), "round_id", MAX_REQUEST_ID)
        return spec, args

    def _call(
        self,
        spec: CommandSpec,
        args: dict[str, JSON],
        data: Mapping[str, JSON],
        who: Principal,
        rid: str,
    ) -> CommandCall:
        round_id, after = data.get("round_id"), data.get("after_round_id")
        return CommandCall(
            spec,
            args,
            via="mqtt",
            who=who,
            round_id=round_id if isinstance(round_id, str) else None,
            after_round_id=after if isinstance(after, str) else None,
            request_id=rid,
            two_person=spec.name in self.auth.settings.two_person,
        )

    def _command(self, data: dict[str, JSON], who: Principal, rid: str) -> _Acted:
        command = data.get("command")
        round_id = data.get("round_id")
        named = str(round_id) if isinstance(round_id, str) else None
        try:
            spec, args = self._command_envelope(data, command)
            self.auth.allowed(who, spec.needs)
            result = self.commands.run(self._call(spec, args, data, who, rid))
        except StaleRound as exc:
            return _Acted(
                self._refusal(
                    False,
                    rid,
                    who,
                    exc.code,
                    exc.message,
                    command=str(command),
                    round_id=exc.current,
                ),
                named,
            )
        except CodedError as exc:
            extra: dict[str, JSON] = {"command": command} if isinstance(command, str) else {}
            return _Acted(self._refusal(False, rid, who, exc.code, exc.message, **extra), named)
        acted_on = result.get("round_id") if isinstance(result, dict) else None
        # The audit chain names who did it, as the table established it (in the same
        # transaction as the change and its answer).
        self._chain.append_event(
            "floor_command",
            {
                "command": command,
                "request_id": rid,
                "principal": who.name,
                "verified": who.verified,
                "key": who.key,
                "round_id": acted_on if isinstance(acted_on, str) else None,
            },
        )
        return _Acted(
            response(self.table_id, rid, "ok", command=command, principal=who.name, data=result),
            acted_on if isinstance(acted_on, str) else None,
        )

    def replay(self, call: CommandCall) -> JSON:
        """``replay_rounds``: queue finished rounds ``from_seq..to_seq`` again (their
        journaled bytes, on ``rounds``), at most :data:`REPLAY_MAX_ROUNDS` and what is
        left of the principal's budget for the minute."""
        args = call.args
        budget = self.replay_budgets.of(call.who.name if call.who is not None else call.via)
        first = _seq_arg(args.get("from_seq"), "from_seq")
        last = None if args.get("to_seq") is None else _seq_arg(args.get("to_seq"), "to_seq")
        if last is not None and last < first:
            raise RequestError("MALFORMED_REQUEST", f"to_seq {last} is before from_seq {first}")
        limit = min(REPLAY_MAX_ROUNDS, budget.available())
        queued = self._rounds.replay_range(self.table_id, first, last, limit=limit)
        budget.spend(len(queued))
        seqs = [seq for seq, _ in queued]
        newest = self._rounds.next_seq(self.table_id) - 1
        # More to ask for: the limit cut the range short (the rounds after the last one
        # queued, up to to_seq or the table's newest round).
        end = newest if last is None else min(last, newest)
        more = len(queued) == limit and bool(seqs) and seqs[-1] < end
        return {
            "from_seq": first,
            "to_seq": last,
            "queued": len(seqs),
            "first_seq": seqs[0] if seqs else None,
            "last_seq": seqs[-1] if seqs else None,
            "newest_seq": newest,
            "more": more,
        }


def _seq_arg(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**53 - 1:
        raise RequestError(
            "MALFORMED_REQUEST", f"replay_rounds' {what!r} must be a round's seq (1 or more)"
        )
    return value
