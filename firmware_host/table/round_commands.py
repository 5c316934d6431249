"""The commands the round engine, the procedure and the jackpot answer, registered with
the table's :class:`~.commands.Commands` (their specs: :mod:`firmware_host.commands`).

From the console (:attr:`~.commands.CommandCall.console`) a command is also recorded as
the operator's ``privileged_action``, a void's reason names the console and the
operator, and the answer shows a technician more than the floor's (the phase, the bets
refunded, the outcome and totals); the floor's answers are ``docs/mqtt.md``'s.
"""

from __future__ import annotations

from ..commands import CATALOGUE, Catalogue
from ..journal import AuditLog, JackpotStore, RequestStore
from ..jsonio import JSON
from .commands import CommandCall, Commands
from .engine import RoundEngine, StaleRound
from .jackpot import JackpotController
from .journaling import FloorJournal
from .procedures import Procedure
from .reading import MAX_REQUEST_ID, RequestError, identifier, reason_text


def table_commands(
    engine: RoundEngine,
    procedure: Procedure,
    journal: FloorJournal,
    *,
    jackpot: JackpotController | None = None,
    catalogue: Catalogue = CATALOGUE,
) -> Commands:
    """The table's :class:`~.commands.Commands` with the handlers of the round engine,
    the procedure and the jackpot registered (the other parts register theirs:
    ``register_commands``); ``journal``: the parts they write through (the chain for a
    console operator's privileged actions, the jackpot's hits and the approvals)."""
    commands = Commands(engine, catalogue)
    RoundCommands(engine, procedure, journal.chain).register_commands(commands)
    if jackpot is None:
        commands.unavailable(
            "jackpot_paid", "NOT_SUPPORTED", "this table has no progressive jackpot"
        )
    else:
        JackpotPayments(
            engine, jackpot, hits=journal.jackpot, approvals=journal.requests
        ).register_commands(commands)
    return commands


def _with_round(out: JSON, round_id: JSON) -> JSON:
    return {**out, "round_id": round_id} if isinstance(out, dict) else out


class RoundCommands:
    """The round's commands: the engine's phases, results and voids, the procedure's
    decisions and deal setups, and ``status``."""

    def __init__(self, engine: RoundEngine, procedure: Procedure, chain: AuditLog) -> None:
        self.engine = engine
        self.procedure = procedure
        self.chain = chain

    def register_commands(self, commands: Commands) -> None:
        for name, handler in (
            ("status", self.status),
            ("open_betting", self.open_betting),
            ("close_betting", self.close_betting),
            ("void_round", self.void_round),
            ("void_throw", self.void_throw),
            ("decide", self.decide),
            ("deal_setup", self.deal_setup),
            ("new_shoe", self.new_shoe),
        ):
            commands.register(name, handler)
        if self.procedure.manual_results:
            commands.register("result", self.result)
        else:
            commands.unavailable(
                "result",
                "RESULT_FROM_DEVICE_ONLY",
                "this table reads its results from its device; a result cannot be entered "
                "by command",
            )

    def _privileged(self, call: CommandCall, why: str, **data: JSON) -> None:
        """A console operator's action, in the audit chain with who and why (the floor's
        are its ``floor_command`` entries)."""
        if call.console:
            self.chain.append_event(
                "privileged_action",
                {"action": call.name, "operator": call.operator, "why": why, **data},
            )

    def status(self, call: CommandCall) -> JSON:
        status = self.engine.get_status()
        status["last_round_id"] = self.engine.last_round_id()
        return status

    def open_betting(self, call: CommandCall) -> JSON:
        self._privileged(call, "console")
        out: dict[str, JSON] = {"round_id": self.engine.open_betting(source=call.source).round_id}
        return {**out, "phase": "open"} if call.console else out

    def close_betting(self, call: CommandCall) -> JSON:
        self._privileged(call, "console", round_id=call.round_id)
        out: dict[str, JSON] = {"round_id": self.engine.close_betting(source=call.source).round_id}
        return {**out, "phase": "closed"} if call.console else out

    def void_round(self, call: CommandCall) -> JSON:
        reason = reason_text(call.args.get("reason"), f"{call.name}'s 'reason'")
        self._privileged(call, reason, round_id=call.round_id)
        if call.console:
            reason = f"{reason} (console, {call.operator})"
        payload = self.engine.void_round(reason, source=call.source)
        out: dict[str, JSON] = {"round_id": payload["round_id"], "status": "void"}
        if call.console:
            out["refunded"] = len(payload["bets"])
        return out

    def void_throw(self, call: CommandCall) -> JSON:
        reason = reason_text(call.args.get("reason"), f"{call.name}'s 'reason'")
        return {"round_id": self.engine.reopen_betting(reason, source=call.source).round_id}

    def result(self, call: CommandCall) -> JSON:
        if "outcome" not in call.args:
            raise RequestError("MALFORMED_REQUEST", "result needs an 'outcome'")
        outcome = call.args["outcome"]
        self._privileged(call, "console", outcome=outcome, round_id=call.round_id)
        payload = self.procedure.submit_result(outcome, source=call.source)
        if payload is None:  # held for the table's witness (docs/witness.md)
            return {"round_id": call.round_id, "status": "held"}
        out = {"round_id": payload["round_id"], "status": payload["status"]}
        if call.console:
            out.update(outcome=payload.get("outcome"), totals=payload.get("totals"))
        return out

    def decide(self, call: CommandCall) -> JSON:
        return _with_round(self.procedure.decide(call.args, call.source), call.round_id)

    def deal_setup(self, call: CommandCall) -> JSON:
        return _with_round(self.procedure.deal_setup(call.args, call.source), call.round_id)

    def new_shoe(self, call: CommandCall) -> JSON:
        return self.engine.new_shoe(source=call.source)


class JackpotPayments:
    """``jackpot_paid``: step 2 of a jackpot hit, confirmed by two different principals
    where ``[auth] two_person`` says so (:attr:`~.commands.CommandCall.two_person`): the
    first confirmation is journaled as an approval, the second (by someone else)
    confirms the payment."""

    def __init__(
        self,
        engine: RoundEngine,
        jackpot: JackpotController,
        *,
        hits: JackpotStore,
        approvals: RequestStore,
    ) -> None:
        self.engine = engine
        self.jackpot = jackpot
        self.hits, self.approvals = hits, approvals

    def register_commands(self, commands: Commands) -> None:
        commands.register("jackpot_paid", self.paid)

    def paid(self, call: CommandCall) -> JSON:
        hit_id = identifier(call.args.get("hit_id"), "jackpot_paid's 'hit_id'", MAX_REQUEST_ID)
        hit = self.hits.hit(hit_id)
        if hit is None:
            raise RequestError("JACKPOT_HIT_NOT_FOUND", f"no jackpot hit {hit_id!r}")
        if hit.round_id != call.round_id:
            raise StaleRound(
                f"jackpot_paid names round {call.round_id}; hit {hit_id} was won in "
                f"round {hit.round_id}",
                self.engine.current.round_id if self.engine.current else None,
            )
        if hit.paid:
            return {"hit_id": hit_id, "round_id": hit.round_id, "paid": True, "already": True,
                    "amount": hit.amount}  # fmt: skip
        who = call.operator
        if not call.two_person:
            out = self.jackpot.confirm_payment(hit_id, who=who)
            return {**out, "round_id": hit.round_id} if isinstance(out, dict) else out
        before = self.approvals.approvals("jackpot_paid", hit_id)
        if who in before:
            raise RequestError(
                "SECOND_PRINCIPAL_REQUIRED",
                f"hit {hit_id} is confirmed by {who}; a second, different principal "
                "must confirm the payment",
            )
        approved = self.approvals.approve("jackpot_paid", hit_id, who, call.request_id or "")
        if len(approved) < 2:
            return {"hit_id": hit_id, "round_id": hit.round_id, "paid": False,
                    "confirmed_by": approved, "amount": hit.amount}  # fmt: skip
        out = self.jackpot.confirm_payment(hit_id, who=approved)
        self.approvals.clear_approvals("jackpot_paid", hit_id)
        result = dict(out) if isinstance(out, dict) else {}
        result.update({"round_id": hit.round_id, "confirmed_by": approved})
        return result
