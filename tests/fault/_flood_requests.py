"""The malformed requests of the flood test (``test_request_flood.py``), each with the
error codes ``docs/mqtt.md`` documents for its kind. Shared by the test and the flooder
process (``_flooder.py``)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_PAYLOAD = 16 * 1024  # firmware_host.boundedjson.MAX_REQUEST_BYTES (checked by the test)
MAX_DEPTH = 16  # firmware_host.boundedjson.MAX_DEPTH (checked by the test)

#: Fantan results that cannot be (58/2004 art. 3 2): 1 to 4, or a count of buttons).
IMPOSSIBLE: list[Any] = [{"number": 9}, {"buttons": -4}, {"buttons": "many"}, [1]]

#: A bet outside betting is refused for that before its content is looked at.
OUTSIDE = {"BETTING_CLOSED", "NO_ROUND"}


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


def make_flood(rng: random.Random) -> Iterator[Malformed]:
    """An endless stream of malformed requests, every kind in turn (seeded)."""
    n = 0

    def rid() -> str:
        return f"flood-{n}"

    def bet_req(bet: Any, **extra: Any) -> bytes:
        return json.dumps({"request_id": rid(), "action": "place", "bet": bet, **extra}).encode()

    def cmd_req(command: Any, **extra: Any) -> bytes:
        return json.dumps({"request_id": rid(), "command": command, **extra}).encode()

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
            {"MALFORMED_REQUEST"},
        ),
        "request_id not a string": lambda: (
            "commands",
            json.dumps({"request_id": n, "command": "status"}).encode(),
            None,
            {"MALFORMED_REQUEST"},
        ),
        "request_id too long": lambda: (
            "commands",
            json.dumps({"request_id": "r" * 200, "command": "status"}).encode(),
            None,
            {"MALFORMED_REQUEST"},
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
        "stake NaN": lambda: stake(float("nan"), {"BET_INVALID_STAKE"}),
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
            {"BET_MALFORMED"} | OUTSIDE,
        ),
        "missing bet_id": lambda: (
            "bets",
            bet_req({k: v for k, v in valid_bet(rng, "x").items() if k != "bet_id"}),
            rid(),
            {"BET_MISSING_FIELD"} | OUTSIDE,
        ),
        "unknown action": lambda: (
            "bets",
            json.dumps({"request_id": rid(), "action": rng.choice(["take", 5, None])}).encode(),
            rid(),
            {"UNKNOWN_ACTION"},
        ),
        "cancel of an unknown bet": lambda: (
            "bets",
            json.dumps({"request_id": rid(), "action": "cancel", "bet_id": f"nope-{n}"}).encode(),
            rid(),
            {"BET_NOT_FOUND"} | OUTSIDE,
        ),
        "cancel without bet_id": lambda: (
            "bets",
            json.dumps({"request_id": rid(), "action": "cancel"}).encode(),
            rid(),
            {"BET_MALFORMED"},
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
        "operator too long": lambda: (
            "commands",
            cmd_req("status", operator="o" * 100),
            rid(),
            {"MALFORMED_REQUEST"},
        ),
        "void without reason": lambda: (
            "commands",
            cmd_req("void_round", args={"reason": " "}),
            rid(),
            {"MALFORMED_REQUEST"},
        ),
        "result without outcome": lambda: (
            "commands",
            cmd_req("result", args={}),
            rid(),
            {"MALFORMED_REQUEST"},
        ),
        "impossible result": lambda: (
            "commands",
            cmd_req("result", args={"outcome": rng.choice(IMPOSSIBLE)}),
            rid(),
            {"OUTCOME_INVALID", "WRONG_PHASE"},
        ),
        "decision at fantan": lambda: (
            "commands",
            cmd_req("decide", args={"seat": 1, "action": "hit"}),
            rid(),
            {"NOT_SUPPORTED"},
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
        yield Malformed(kind, name, payload, request_id, frozenset(codes))
