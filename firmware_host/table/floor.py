"""Requests from the floor: ``bets/request`` and ``commands/request``.

Every request gets exactly one response (``bets/response``, ``commands/response``)
echoing its ``request_id``, accepted or rejected with a stable error code and a
message. Malformed JSON, unknown fields, negative or fractional stakes, unknown bet
types, bets after close: all rejected, none raising out of here, none blocking the
table. No MQTT here: the floor link hands us payload bytes (:meth:`FloorRequests.handle`)
and publishes what we return; every answer is built by
:func:`firmware_host.schemas.response`.
"""

from __future__ import annotations

import logging

from .. import boundedjson
from ..games.errors import CodedError, RulesError
from ..games.money import parse_json_int
from ..jsonio import JSON
from ..schemas import response
from .engine import RoundEngine, RoundFault
from .jackpot import JackpotController
from .procedures import Procedure

log = logging.getLogger(__name__)

MAX_PAYLOAD = boundedjson.MAX_REQUEST_BYTES

BET_REQUEST_KEYS = frozenset({"request_id", "action", "bet", "bet_id"})
COMMAND_REQUEST_KEYS = frozenset({"request_id", "command", "args", "operator"})

#: Commands a floor system may send, with the argument keys each takes.
COMMANDS: dict[str, frozenset[str]] = {
    "open_betting": frozenset(),
    "close_betting": frozenset(),
    "void_round": frozenset({"reason"}),
    "void_throw": frozenset({"reason"}),
    "result": frozenset({"outcome"}),
    "status": frozenset(),
    "decide": frozenset({"seat", "action", "hand", "amount", "bet_id"}),
    "jackpot_paid": frozenset({"hit_id"}),
    "deal_setup": frozenset({"banker", "banker_capital", "casino_capital", "declared", "dice"}),
    "new_shoe": frozenset(),
}


class RequestError(CodedError, ValueError):
    """A request refused before it reaches the table (malformed, unknown field or
    command...): answered with its ``code`` and ``message``."""

    code = "MALFORMED_REQUEST"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


def _decode(payload: bytes, keys: frozenset[str], what: str) -> dict[str, JSON]:
    try:  # size, nesting and container count checked before parsing (boundedjson)
        data = boundedjson.loads(payload, parse_int=parse_json_int)
    except boundedjson.RequestShapeError as exc:
        raise RequestError(exc.code, f"{what}: {exc.message}") from None
    if not isinstance(data, dict):
        raise RequestError(
            "MALFORMED_REQUEST", f"{what} must be a JSON object, got {type(data).__name__}"
        )
    unknown = set(data) - keys
    if unknown:
        raise RequestError(
            "UNKNOWN_FIELD", f"unknown field(s) in {what}: {', '.join(sorted(unknown))}"
        )
    rid = data.get("request_id")
    if not isinstance(rid, str) or not 0 < len(rid) <= 128:
        raise RequestError(
            "MALFORMED_REQUEST", "request_id must be a non-empty string of at most 128 characters"
        )
    return data


def internal_error(exc: BaseException) -> dict[str, str]:
    """``code`` and ``message`` of an answer to a request whose handling failed."""
    return {"code": "INTERNAL_ERROR", "message": f"internal error: {type(exc).__name__}"}


def _peek_request_id(payload: bytes) -> str | None:
    return boundedjson.peek_request_id(payload, parse_int=parse_json_int)


class FloorRequests:
    """Turns request payloads into engine calls and response payloads.

    ``procedure``: the game procedure (whether results may be entered by command;
    player decisions and deal setups go to it); ``jackpot``: the progressive jackpot
    (``jackpot_paid``), or None."""

    def __init__(
        self,
        engine: RoundEngine,
        procedure: Procedure,
        *,
        jackpot: JackpotController | None = None,
    ) -> None:
        self.engine = engine
        self.procedure = procedure
        self.jackpot = jackpot
        self.table_id = engine.cfg.table_id
        self.counters = {
            "bets_accepted": 0,
            "bets_rejected": 0,
            "commands_ok": 0,
            "commands_error": 0,
        }

    async def handle(self, topic: str, payload: bytes) -> JSON:
        """The floor link's request handler: ``topic`` relative to the table's root."""
        if topic == "bets/request":
            return self.handle_bet_request(payload)
        if topic == "commands/request":
            return self.handle_command_request(payload)
        return None

    def handle_bet_request(self, payload: bytes) -> dict[str, JSON]:
        try:
            data = _decode(payload, BET_REQUEST_KEYS, "bet request")
            action = data.get("action")
            if action == "place":
                if "bet" not in data or "bet_id" in data:
                    raise RequestError(
                        "MALFORMED_REQUEST", "place takes a 'bet' object (and no top-level bet_id)"
                    )
                answer = self.engine.place_bet(data["bet"])
            elif action == "cancel":
                if "bet" in data:
                    raise RequestError("MALFORMED_REQUEST", "cancel takes a 'bet_id', not a 'bet'")
                answer = self.engine.cancel_bet(data.get("bet_id"))
            else:
                raise RequestError(
                    "UNKNOWN_ACTION", f"action must be 'place' or 'cancel', got {action!r}"
                )
        except RequestError as exc:
            self.counters["bets_rejected"] += 1
            return response(self.table_id, _peek_request_id(payload), "rejected", **exc.to_json())
        except Exception as exc:  # never let one request stop the table
            log.exception("bet request failed")
            self.counters["bets_rejected"] += 1
            return response(
                self.table_id, _peek_request_id(payload), "rejected", **internal_error(exc)
            )
        self.counters["bets_accepted" if answer.accepted else "bets_rejected"] += 1
        body = answer.to_json()
        return response(
            self.table_id, data["request_id"], body.pop("status"), action=action, **body
        )

    def handle_command_request(self, payload: bytes) -> dict[str, JSON]:
        rid: str | None = None
        try:
            data = _decode(payload, COMMAND_REQUEST_KEYS, "command request")
            rid = data["request_id"]
            command = data.get("command")
            args = data.get("args", {})
            if not isinstance(args, dict):
                raise RequestError("MALFORMED_REQUEST", "args must be a JSON object")
            operator = data.get("operator", "floor")
            if not isinstance(operator, str) or len(operator) > 64:
                raise RequestError(
                    "MALFORMED_REQUEST", "operator must be a string of at most 64 characters"
                )
            result = self._run(command, args, operator)
        except RequestError as exc:
            self.counters["commands_error"] += 1
            return response(
                self.table_id, rid or _peek_request_id(payload), "error", **exc.to_json()
            )
        except RulesError as exc:
            self.counters["commands_error"] += 1
            return response(self.table_id, rid, "error", **exc.to_json())
        except Exception as exc:
            log.exception("command failed")
            self.counters["commands_error"] += 1
            return response(self.table_id, rid, "error", **internal_error(exc))
        self.counters["commands_ok"] += 1
        return response(self.table_id, rid, "ok", command=command, data=result)

    def _run(self, command: object, args: dict[str, JSON], operator: str) -> JSON:
        if not isinstance(command, str) or command not in COMMANDS:
            raise RequestError(
                "UNKNOWN_COMMAND", f"unknown command {command!r}; known: {', '.join(COMMANDS)}"
            )
        unknown = set(args) - COMMANDS[command]
        if unknown:
            raise RequestError(
                "UNKNOWN_FIELD", f"{command} takes no argument(s) {', '.join(sorted(unknown))}"
            )
        e = self.engine
        source = f"mqtt:{operator}"
        if command == "status":
            return e.get_status()
        if command == "open_betting":
            return {"round_id": e.open_betting(source=source).round_id}
        if command == "close_betting":
            return {"round_id": e.close_betting(source=source).round_id}
        if command in ("void_round", "void_throw"):
            reason = args.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                raise RequestError("MALFORMED_REQUEST", f"{command} needs a 'reason' string")
            if command == "void_throw":
                return {"round_id": e.reopen_betting(reason, source=source).round_id}
            payload = e.void_round(reason, source=source)
            return {"round_id": payload["round_id"], "status": "void"}
        if command == "decide":
            return self.procedure.decide(args, source)
        if command == "deal_setup":
            return self.procedure.deal_setup(args, source)
        if command == "new_shoe":
            return e.new_shoe(source=source)
        if command == "jackpot_paid":
            if self.jackpot is None:
                raise RequestError("NOT_SUPPORTED", "this table has no progressive jackpot")
            hit_id = args.get("hit_id")
            if not isinstance(hit_id, str):
                raise RequestError("MALFORMED_REQUEST", "jackpot_paid needs a 'hit_id' string")
            return self.jackpot.confirm_payment(hit_id, who=operator)
        if command == "result":
            if not self.procedure.manual_results:
                raise RequestError(
                    "RESULT_FROM_DEVICE_ONLY",
                    "this table reads its results from its device; a result cannot be entered remotely",
                )
            if "outcome" not in args:
                raise RequestError("MALFORMED_REQUEST", "result needs an 'outcome'")
            payload = e.submit_result(args["outcome"], source=source)
            return {"round_id": payload["round_id"], "status": payload["status"]}
        raise RoundFault(
            f"command {command} is not available", code="UNKNOWN_COMMAND"
        )  # pragma: no cover
