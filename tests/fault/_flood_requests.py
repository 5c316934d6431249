"""The malformed requests of the flood test (``test_request_flood.py``), each with the
error codes ``docs/mqtt.md`` documents for its kind. Shared by the test and the flooder
process (``_flooder.py``)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_PAYLOAD = 16 * 1024  # firmware_host.boundedjson.MAX_REQUEST_BYTES (checked by the test)
MAX_DEPTH = 16  # firmware_host.boundedjson.MAX_DEPTH (checked by the test)

#: Fantan results that cannot be (58/2004 art. 3 2): 1 to 4, or a count of buttons).
IMPOSSIBLE: list[Any] = [{"number": 9}, {"buttons": -4}, {"buttons": "many"}, [1]]

#: A bet outside betting is refused for that before its content is looked at; so is a
#: request naming a round that is not in progress (issue 14: requests name their round;
#: the flood names one that never is, :data:`FLOOD_ROUND`).
OUTSIDE = {"BETTING_CLOSED", "NO_ROUND", "STALE_ROUND"}

#: The round every flood request names.
FLOOD_ROUND = "flood-round"


def valid_bet(rng: random.Random, bet_id: str) -> dict[str, Any]:
    return {
        "bet_id": bet_id,
        "seat": rng.randint(1, 8),
        "bet_type": "fan",
        "selection": rng.randint(1, 4),
        "stake": 1000 * rng.randint(1, 10),
    }


def _nest(n: int) -> Any:
    v: Any = 0
    for _ in range(n):
        v = [v]
    return v


@dataclass
class Malformed:
    kind: str  # "bets" or "commands"
    category: str
    payload: bytes
    request_id: str | None  # what the response must echo (None: unreadable request)
    codes: frozenset[str]


#: A request id the table echoes (``firmware_host/table/floor.py``): printable ASCII.
_IDENT = re.compile(r"[\x21-\x7e]+")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


#: The refusals of a request's reading, before its signature is looked at (docs/mqtt.md,
#: "Requests: bounds and order"): too large, nested too deep, too many arrays or
#: objects (all measured on the bytes), not UTF-8 or not JSON.
READING = frozenset(
    {"REQUEST_TOO_LARGE", "REQUEST_TOO_DEEP", "REQUEST_TOO_COMPLEX", "MALFORMED_JSON"}
)


def _on_a_signed_table(m: Malformed) -> Malformed:
    """What a table that requires signatures answers an unsigned request: refused where
    it stops being readable (``request_id: null``), else ``UNSIGNED`` with the request's
    ``request_id`` when it has the identifier form (issue 29), else null; never a
    principal (docs/security.md).

    A kind refused while it is read keeps its codes, without parsing it here: the
    table bounds depth and size before parsing, and ``json.loads`` has no such
    bound (thousands of ``[`` raise RecursionError; a dict nested 17 deep or with
    2000 arrays parses, yet the table refuses it REQUEST_TOO_DEEP / _COMPLEX before
    it could look for a signature)."""
    if len(m.payload) > MAX_PAYLOAD:
        return Malformed(m.kind, m.category, m.payload, None, frozenset({"REQUEST_TOO_LARGE"}))
    if m.codes <= READING:
        return Malformed(m.kind, m.category, m.payload, None, m.codes)
    try:
        doc = json.loads(m.payload, parse_constant=_no_constant)
    except ValueError:
        return Malformed(m.kind, m.category, m.payload, None, m.codes)
    if not isinstance(doc, dict):
        return Malformed(m.kind, m.category, m.payload, None, m.codes)
    rid = doc.get("request_id")
    readable = isinstance(rid, str) and 0 < len(rid) <= 128 and _IDENT.fullmatch(rid)
    return Malformed(
        m.kind, m.category, m.payload, rid if readable else None, frozenset({"UNSIGNED"})
    )


def make_flood(rng: random.Random, *, signed_table: bool = True) -> Iterator[Malformed]:
    """An endless stream of malformed requests, every kind in turn (seeded). The codes
    are those of an unsigned table; ``signed_table`` (the tables of the tests): those of
    a table that requires signatures, the flood being unsigned."""
    n = 0

    def rid() -> str:
        return f"flood-{n}"

    def bet_req(bet: Any, **extra: Any) -> bytes:
        return json.dumps(
            {"request_id": rid(), "action": "place", "round_id": FLOOD_ROUND, "bet": bet, **extra}
        ).encode()

    def cmd_req(command: Any, **extra: Any) -> bytes:
        named = {} if command == "status" else {"round_id": FLOOD_ROUND}
        return json.dumps({"request_id": rid(), "command": command, **named, **extra}).encode()

    def stake(value: Any, codes: set[str]) -> tuple[str, bytes, str | None, set[str]]:
        bet = valid_bet(rng, f"fb{n}")
        bet["stake"] = value
        return "bets", bet_req(bet), rid(), codes | OUTSIDE

    makers: dict[str, Any] = {
        "invalid JSON": lambda: (
            rng.choice(["bets", "commands"]),
            b'{"request_id": "x", "action": place}',
            None,
            {"MALFORMED_JSON"},
        ),
        "not UTF-8": lambda: ("bets", b'{"request_id": "\xff\xfe"}', None, {"MALFORMED_JSON"}),
        "not an object": lambda: (
            rng.choice(["bets", "commands"]),
            rng.choice([b"[1, 2, 3]", b'"place"', b"42", b"null", b"true"]),
            None,
            {"MALFORMED_REQUEST"},
        ),
        "no request_id": lambda: (
            "bets",
            json.dumps({"action": "place", "bet": valid_bet(rng, "x")}).encode(),
            None,
            {"BAD_IDENTIFIER"},
        ),
        "request_id not a string": lambda: (
            "commands",
            json.dumps({"request_id": n, "command": "status"}).encode(),
            None,
            {"BAD_IDENTIFIER"},
        ),
        "request_id too long": lambda: (
            "commands",
            json.dumps({"request_id": "r" * 200, "command": "status"}).encode(),
            None,
            {"BAD_IDENTIFIER"},
        ),
        "unknown request field": lambda: (
            "bets",
            bet_req(valid_bet(rng, f"fb{n}"), player="eve"),
            rid(),
            {"UNKNOWN_FIELD"},
        ),
        "unknown bet field": lambda: (
            "bets",
            bet_req({**valid_bet(rng, f"fb{n}"), "colour": "red"}),
            rid(),
            {"BET_UNKNOWN_FIELD"} | OUTSIDE,
        ),
        "negative stake": lambda: stake(-1000, {"BET_INVALID_STAKE"}),
        "zero stake": lambda: stake(0, {"BET_INVALID_STAKE"}),
        "fractional stake": lambda: stake(1000.5, {"BET_INVALID_STAKE"}),
        "stake as a string": lambda: stake("1000", {"BET_INVALID_STAKE"}),
        "stake as a boolean": lambda: stake(True, {"BET_INVALID_STAKE"}),
        # NaN is no JSON number (RFC 8259): the request is not JSON at all
        "stake NaN": lambda: ("bets", stake(float("nan"), set())[1], rid(), {"MALFORMED_JSON"}),
        "huge stake": lambda: stake(10**30, {"BET_INVALID_STAKE", "BET_STAKE_OUT_OF_LIMITS"}),
        "unknown bet type": lambda: (
            "bets",
            bet_req({**valid_bet(rng, f"fb{n}"), "bet_type": rng.choice(["zero", "FAN", ""])}),
            rid(),
            {"BET_UNKNOWN_TYPE"} | OUTSIDE,
        ),
        "seat not a number": lambda: (
            "bets",
            bet_req({**valid_bet(rng, f"fb{n}"), "seat": "one"}),
            rid(),
            {"BET_INVALID_SEAT"} | OUTSIDE,
        ),
        "selection out of range": lambda: (
            "bets",
            bet_req({**valid_bet(rng, f"fb{n}"), "selection": rng.choice([0, 5, "x", [1, 2]])}),
            rid(),
            {"BET_INVALID_SELECTION"} | OUTSIDE,
        ),
        "bet not an object": lambda: (
            "bets",
            bet_req(rng.choice([[1, 2], "fan 3", 7])),
            rid(),
            {"MALFORMED_REQUEST"},
        ),
        "missing bet_id": lambda: (
            "bets",
            bet_req({k: v for k, v in valid_bet(rng, "x").items() if k != "bet_id"}),
            rid(),
            {"BAD_IDENTIFIER"},
        ),
        "unknown action": lambda: (
            "bets",
            json.dumps({"request_id": rid(), "action": rng.choice(["take", 5, None])}).encode(),
            rid(),
            {"UNKNOWN_ACTION"},
        ),
        "cancel of an unknown bet": lambda: (
            "bets",
            json.dumps(
                {
                    "request_id": rid(),
                    "action": "cancel",
                    "round_id": FLOOD_ROUND,
                    "bet_id": f"nope-{n}",
                }
            ).encode(),
            rid(),
            {"BET_NOT_FOUND"} | OUTSIDE,
        ),
        "cancel without bet_id": lambda: (
            "bets",
            json.dumps({"request_id": rid(), "action": "cancel", "round_id": FLOOD_ROUND}).encode(),
            rid(),
            {"BAD_IDENTIFIER"},
        ),
        # Refused by the link unread: the answer cannot echo the request id.
        "oversized payload": lambda: (
            rng.choice(["bets", "commands"]),
            json.dumps({"request_id": rid(), "pad": "x" * (MAX_PAYLOAD + 1000)}).encode(),
            None,
            {"REQUEST_TOO_LARGE"},
        ),
        # Deeply nested JSON (used to recurse to RecursionError: a traceback each).
        "deeply nested": lambda: (
            rng.choice(["bets", "commands"]),
            b"[" * rng.randint(MAX_DEPTH + 1, MAX_PAYLOAD),
            None,
            {"REQUEST_TOO_DEEP", "REQUEST_TOO_COMPLEX"},
        ),
        "nested past the depth limit": lambda: (
            rng.choice(["bets", "commands"]),
            json.dumps({"request_id": rid(), "args": _nest(MAX_DEPTH + 1)}).encode(),
            None,
            {"REQUEST_TOO_DEEP"},
        ),
        "too many arrays": lambda: (
            "bets",
            json.dumps({"request_id": rid(), "bet": [[0]] * 2000}).encode(),
            None,
            {"REQUEST_TOO_COMPLEX"},
        ),
        "unknown command": lambda: (
            "commands",
            cmd_req(rng.choice(["reboot", "settle", "", 3])),
            rid(),
            {"UNKNOWN_COMMAND"},
        ),
        "unknown command argument": lambda: (
            "commands",
            cmd_req("close_betting", args={"now": True}),
            rid(),
            {"UNKNOWN_FIELD"},
        ),
        "args not an object": lambda: (
            "commands",
            cmd_req("status", args=[1]),
            rid(),
            {"MALFORMED_REQUEST"},
        ),
        "unknown field operator": lambda: (
            "commands",
            cmd_req("status", operator="o" * 100),
            rid(),
            {"UNKNOWN_FIELD"},
        ),
        "void without reason": lambda: (
            "commands",
            cmd_req("void_round", args={"reason": " "}),
            rid(),
            {"MALFORMED_REQUEST"} | OUTSIDE,
        ),
        "result without outcome": lambda: (
            "commands",
            cmd_req("result", args={}),
            rid(),
            {"MALFORMED_REQUEST"} | OUTSIDE,
        ),
        "impossible result": lambda: (
            "commands",
            cmd_req("result", args={"outcome": rng.choice(IMPOSSIBLE)}),
            rid(),
            {"OUTCOME_INVALID", "WRONG_PHASE"} | OUTSIDE,
        ),
        "decision at fantan": lambda: (
            "commands",
            cmd_req("decide", args={"seat": 1, "action": "hit"}),
            rid(),
            {"NOT_SUPPORTED"} | OUTSIDE,
        ),
        "jackpot at fantan": lambda: (
            "commands",
            cmd_req("jackpot_paid", args={"hit_id": "h"}),
            rid(),
            {"NOT_SUPPORTED"},
        ),
    }
    names = list(makers)
    while True:
        n += 1
        name = names[n % len(names)] if n <= len(names) else rng.choice(names)
        kind, payload, request_id, codes = makers[name]()
        m = Malformed(kind, name, payload, request_id, frozenset(codes))
        yield _on_a_signed_table(m) if signed_table else m
