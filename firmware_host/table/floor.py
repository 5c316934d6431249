"""Requests from the floor: ``bets/request`` and ``commands/request``.

Every request gets exactly one response (``bets/response``, ``commands/response``)
echoing its ``request_id``, accepted or rejected with a stable error code and a
message. Malformed JSON, unknown fields, negative or fractional stakes, unknown bet
types, bets after close: all rejected, none raising out of here, none blocking the
table. No MQTT here: the daemon hands us payload bytes and publishes what we return.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..games.errors import RulesError
from .engine import SCHEMA_VERSION, RoundEngine, RoundFault

log = logging.getLogger(__name__)

JSON = Any
MAX_PAYLOAD = 64 * 1024

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
}


class RequestError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _decode(payload: bytes, keys: frozenset[str], what: str) -> dict[str, JSON]:
    if len(payload) > MAX_PAYLOAD:
        raise RequestError(
            "REQUEST_TOO_LARGE", f"{what} is {len(payload)} bytes; the limit is {MAX_PAYLOAD}"
        )
    try:
        data = json.loads(payload.decode("utf-8"))
    except UnicodeDecodeError:
        raise RequestError("MALFORMED_JSON", f"{what} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise RequestError(
            "MALFORMED_JSON", f"{what} is not valid JSON: {exc.msg} at position {exc.pos}"
        ) from None
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


def _peek_request_id(payload: bytes) -> str | None:
    try:
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return None
    rid = data.get("request_id") if isinstance(data, dict) else None
    return rid if isinstance(rid, str) and len(rid) <= 128 else None


class FloorRequests:
    """Turns request payloads into engine calls and response payloads."""

    def __init__(
        self,
        engine: RoundEngine,
        *,
        on_command: Callable[[str, Mapping[str, JSON]], JSON] | None = None,
    ) -> None:
        self.engine = engine
        self.table_id = engine.cfg.table_id
        #: The game procedure (player decisions go to it); set by the daemon.
        self.procedure: Any = None
        #: Extra commands handled by the daemon (device self-test...), name -> handler.
        self.on_command = on_command
        self.counters = {
            "bets_accepted": 0,
            "bets_rejected": 0,
            "commands_ok": 0,
            "commands_error": 0,
        }

    def _base(self, request_id: str | None) -> dict[str, JSON]:
        return {
            "schema_version": SCHEMA_VERSION,
            "table_id": self.table_id,
            "request_id": request_id,
        }

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
            return {
                **self._base(_peek_request_id(payload)),
                "status": "rejected",
                "code": exc.code,
                "message": exc.message,
            }
        except Exception as exc:  # never let one request stop the table
            log.exception("bet request failed")
            self.counters["bets_rejected"] += 1
            return {
                **self._base(_peek_request_id(payload)),
                "status": "rejected",
                "code": "INTERNAL_ERROR",
                "message": f"internal error: {type(exc).__name__}",
            }
        self.counters["bets_accepted" if answer.accepted else "bets_rejected"] += 1
        return {**self._base(data["request_id"]), "action": action, **answer.to_json()}

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
            rid = rid or _peek_request_id(payload)
            return {**self._base(rid), "status": "error", "code": exc.code, "message": exc.message}
        except RulesError as exc:
            self.counters["commands_error"] += 1
            return {**self._base(rid), "status": "error", "code": exc.code, "message": exc.message}
        except Exception as exc:
            log.exception("command failed")
            self.counters["commands_error"] += 1
            return {
                **self._base(rid),
                "status": "error",
                "code": "INTERNAL_ERROR",
                "message": f"internal error: {type(exc).__name__}",
            }
        self.counters["commands_ok"] += 1
        return {**self._base(rid), "command": command, "status": "ok", "data": result}

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
            decide = getattr(self.procedure, "decide", None) if self.procedure else None
            if decide is None:
                raise RequestError("NOT_SUPPORTED", "this table takes no player decisions")
            result: JSON = decide(args, source)
            return result
        if command == "deal_setup":
            setup = getattr(self.procedure, "deal_setup", None) if self.procedure else None
            if setup is None:
                raise RequestError("NOT_SUPPORTED", "this table takes no deal setup")
            out: JSON = setup(args, source)
            return out
        if command == "jackpot_paid":
            if e.jackpot is None:
                raise RequestError("NOT_SUPPORTED", "this table has no progressive jackpot")
            hit_id = args.get("hit_id")
            if not isinstance(hit_id, str):
                raise RequestError("MALFORMED_REQUEST", "jackpot_paid needs a 'hit_id' string")
            paid: JSON = e.jackpot.confirm_payment(hit_id, who=operator)
            return paid
        if command == "result":
            if not e.manual_results:
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
