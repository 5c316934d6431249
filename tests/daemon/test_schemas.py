"""JSON Schemas of the MQTT payloads, and docs/mqtt.md kept true by them.

Every ```json block in docs/mqtt.md names its schema in the info string
(```json schema=round) and must validate; the schemas must reject what the contract
forbids (floats as money, a void without a reason, unknown bet fields...); payloads
built from the rules core's own settlements must validate.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st
from resign_docs import TOPICS, example_key, topic_of

from firmware_host import schemas
from firmware_host.auth.evidence import seal
from firmware_host.games import get_game
from firmware_host.games.money import MoneyRules
from firmware_host.journal import JOURNAL_SPECS
from firmware_host.mqtt import MQTT_SPECS
from firmware_host.table.theo import with_theo

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "mqtt.md"
#: The floor's own payloads (published by the floor ingest, not the table) are shown in
#: docs/floor.md, and carry their own schema version.
FLOOR_DOC = ROOT / "docs" / "floor.md"
FLOOR_SCHEMAS = {"floor_record"}
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.S | re.M)


def doc_blocks() -> list[tuple[str, str, int]]:
    out = []
    for doc in (DOC, FLOOR_DOC):
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            info = m.group("info").strip()
            if info.split(" ", 1)[0] != "json" or (doc is FLOOR_DOC and "schema=" not in info):
                continue
            line = text.count("\n", 0, m.start()) + 1
            sm = re.search(r"\bschema=(\w+)", info)
            out.append((sm.group(1) if sm else "", m.group("body"), line))
    return out


def test_every_schema_is_a_valid_2020_12_schema() -> None:
    for name in schemas.SCHEMA_NAMES:
        s = schemas.load_schema(name)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(s)
        assert s["$id"].endswith(f"/{name}.json")
    packaged = {p.stem for p in (ROOT / "firmware_host" / "schemas").glob("*.json")}
    assert packaged == set(schemas.SCHEMA_NAMES)


def test_topics_map_to_schemas() -> None:
    assert schemas.schema_for_topic("rounds") == "round"
    assert schemas.schema_for_topic("devices/wheel") == "device"
    assert schemas.schema_for_topic("bets/response") == "bet_response"
    with pytest.raises(KeyError):
        schemas.schema_for_topic("devices/a/b")


def test_the_doc_shows_a_valid_example_of_every_payload() -> None:
    blocks = doc_blocks()
    assert blocks, "docs/mqtt.md has no JSON examples"
    for name, body, line in blocks:
        assert name in schemas.SCHEMA_NAMES, (
            f"docs/mqtt.md:{line}: ```json block without schema=<name>"
        )
        problems = schemas.errors(name, json.loads(body))
        assert not problems, f"docs/mqtt.md:{line} ({name}): {problems}"
    shown = {name for name, _, _ in blocks}
    assert shown == set(schemas.SCHEMA_NAMES), f"no example of {set(schemas.SCHEMA_NAMES) - shown}"
    rounds = [json.loads(b) for n, b, _ in blocks if n == "round"]
    assert {r["status"] for r in rounds} == {"settled", "void"}


def test_the_doc_examples_are_signed_with_the_documented_example_key() -> None:
    """Each example of a payload the table publishes carries the signature of RFC 8032's
    first test key over its topic, so that a reader can check any of them by the
    recipe of docs/security.md (here with ``cryptography`` and RFC 8785 alone). After
    editing an example: ``python tests/daemon/resign_docs.py``."""
    public = example_key().public_key()
    checked = 0
    for name, body, line in doc_blocks():
        if name not in TOPICS:
            continue
        doc = json.loads(body)
        signature = base64.b64decode(doc.pop("signature"))
        signed = b"tablectl-table-v1\n" + topic_of(name, doc).encode() + b"\n" + rfc8785.dumps(doc)
        try:
            public.verify(signature, signed)
        except InvalidSignature:
            pytest.fail(f"docs/mqtt.md:{line} ({name}): the signature does not verify; "
                        "run `python tests/daemon/resign_docs.py`")  # fmt: skip
        checked += 1
    assert checked >= 20


def test_the_doc_lists_every_topic_and_config_key() -> None:
    text = DOC.read_text(encoding="utf-8")
    for topic in ["state", "devices/<device>", *schemas.TOPIC_SCHEMAS]:
        assert f"`{topic}`" in text, f"topic {topic} not in docs/mqtt.md"
    for key in [*MQTT_SPECS, *JOURNAL_SPECS]:
        assert f"| `{key}` |" in text, f"config key {key} not in docs/mqtt.md"


def test_doc_example_round_money_adds_up() -> None:
    """The settled example is real: totals are the sums of its bets (60/2004 art. 8: 35:1, 2:1)."""
    for name, body, _ in doc_blocks():
        if name != "round":
            continue
        r = json.loads(body)
        t = r["totals"]
        assert t["stakes"] == sum(b["stake"] for b in r["bets"])
        assert t["payout"] == sum(b["payout"] for b in r["bets"])
        assert t["net"] == sum(b["net"] for b in r["bets"]) == -t["house_net"]
        for b in r["bets"]:
            if b["bet_type"] == "straight" and b["result"] == "win":
                assert b["payout"] == 35 * b["stake"]


# -- what the schemas must refuse --------------------------------------------------------


def example(name: str, status: str | None = None) -> dict[str, Any]:
    for n, body, _ in doc_blocks():
        doc = json.loads(body)
        if n == name and (status is None or doc.get("status") == status):
            return doc
    raise LookupError(name)


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    *head, last = path.split(".")
    cur: Any = d
    for p in head:
        cur = cur[int(p)] if p.isdigit() else cur[p]
    if value is KeyError:
        del cur[last]
    else:
        cur[int(last) if last.isdigit() else last] = value
    return d


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("bets.0.stake", 100.5),  # money is never fractional
        ("bets.0.payout", 350000.25),
        ("totals.net", "340000"),  # nor a string
        ("bets.0.stake", -1),  # (0 is allowed: mah-jong payments between players)
        ("bets.0.result", "refund"),  # a refund only in a void round
        ("bets.0.breakage", "0.5"),  # breakage is an exact fraction string
        ("bets.0.extra", 1),  # unknown bet field
        ("bets.1.net", 50000),  # a lost bet cannot gain
        ("void_reason", "why not"),  # settled rounds have none
        ("status", "pending"),
        ("round_id", ""),
        ("seq", 0),
        ("game", "poker"),
        ("currency", "mop"),
        ("timestamps.settled", "2026-05-09 07:35:43"),  # ISO-8601 UTC with Z only
        ("timestamps.settled", KeyError),
        ("schema_version", 1),  # version 1 predates signed requests (issue 14)
        ("schema_version", 2),  # version 2 predates the chain (issue 15)
        ("rules.regulation", KeyError),
        ("chain", KeyError),  # every round carries its chain position (issue 15)
        ("chain.head", "A" * 64),  # lowercase hex SHA-256
        ("chain.seq", 0),
        ("table_id", "a/b"),
        ("totals", {"stakes": 1}),
        ("somewhere_else", {"x": 0.1}),  # no float anywhere, even in game extras
    ],
)
def test_round_schema_refuses(path: str, value: Any) -> None:
    good = example("round", "settled")
    assert schemas.errors("round", good) == []
    assert schemas.errors("round", _set(good, path, value)), f"{path}={value!r} was accepted"


def test_void_round_needs_a_reason_and_refunds() -> None:
    good = example("round", "void")
    assert schemas.errors("round", good) == []
    assert schemas.errors("round", _set(good, "void_reason", None))
    assert schemas.errors("round", _set(good, "void_reason", ""))
    assert schemas.errors("round", _set(good, "bets.0.result", "win"))
    assert schemas.errors("round", _set(good, "timestamps.void", KeyError))


@pytest.mark.parametrize(
    ("name", "path", "value"),
    [
        ("state", "availability", "maybe"),
        ("state", "colour", "red"),
        ("device", "state", "broken"),
        ("jackpot", "amount", 12.5),
        ("jackpot", "amount", -1),
        ("event", "event", "Betting Open"),
        ("bet_request", "bet.stake", 12.5),
        ("bet_request", "bet.stake", -100),
        ("bet_request", "bet.colour", "red"),
        ("bet_request", "request_id", KeyError),
        ("bet_request", "bet_id", "x"),  # place takes a bet, not a bet_id
        ("bet_response", "status", "maybe"),
        ("command_request", "command", ""),
        ("command_response", "status", "error"),  # an error needs code and message
        ("anchor", "chain", KeyError),
        ("anchor", "chain.head", "1234"),
        ("anchor", "seq", 0),
        ("state", "anchor.chain.seq", "12"),
        ("state", "fault_details", [{"code": "X"}]),  # a latched fault with no message
    ],
)
def test_other_schemas_refuse(name: str, path: str, value: Any) -> None:
    good = example(name) if name != "command_response" else example(name, "ok")
    assert schemas.errors(name, good) == []
    assert schemas.errors(name, _set(good, path, value)), f"{name}: {path}={value!r} was accepted"


def test_validate_accepts_bytes_and_raises_validation_error() -> None:
    schemas.validate("state", json.dumps(example("state")).encode())
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate("state", {"schema_version": schemas.PAYLOAD_SCHEMA_VERSION})


# -- payloads from the rules core validate -----------------------------------------------------------

ROULETTE_BETS = [
    ("straight", lambda n: n), ("split", lambda n: [1, 2]), ("red", lambda n: None),
    ("black", lambda n: None), ("dozen", lambda n: 1 + n % 3), ("column", lambda n: 1 + n % 3),
]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    number=st.integers(0, 36),
    bets=st.lists(
        st.tuples(
            st.integers(0, len(ROULETTE_BETS) - 1), st.integers(1, 10**7), st.integers(0, 36)
        ),
        max_size=12,
    ),
)
def test_settlements_of_the_rules_core_validate_as_rounds(
    number: int, bets: list[tuple[int, int, int]]
) -> None:
    game = get_game("roulette")
    rules = game.default_rules()
    raws = [
        {
            "bet_id": f"b{i}",
            "seat": i % 8,
            "bet_type": ROULETTE_BETS[k][0],
            "selection": ROULETTE_BETS[k][1](n),
            "stake": s,
        }
        for i, (k, s, n) in enumerate(bets)
    ]
    parsed = game.parse_bets(rules, raws)
    settlement = game.settle(rules, game.parse_outcome(rules, number), parsed, MoneyRules())
    # each bet's edge and theoretical win, as the table's payload builder adds them
    body = with_theo(game, rules, MoneyRules(), settlement.to_json())
    payload = {
        "schema_version": schemas.PAYLOAD_SCHEMA_VERSION, "table_id": "t1",
        "round_id": "t1-000001-00000000", "seq": 1, "chain": {"seq": 7, "head": "0" * 64},
        "game": body["game"], "rules": game.rules_json(rules), "currency": "MOP", "minor_digits": 2,
        "status": "settled", "void_reason": None, "outcome": body["outcome"], "bets": body["bets"],
        "totals": body["totals"], "theo_basis": body["theo_basis"],
        "jackpot": {"contributions": [], "hits": []},
        "timestamps": {"opened": "2026-05-09T07:35:00.000Z", "closed": "2026-05-09T07:35:30.000Z",
                       "result": "2026-05-09T07:35:40.000Z", "settled": "2026-05-09T07:35:40.002Z"},
        "dealer": None,
    }  # fmt: skip
    sealed = seal(Ed25519PrivateKey.generate(), "rounds", payload)  # as the table publishes it
    assert schemas.errors("round", json.loads(sealed)) == []


def test_every_schema_carries_the_payload_schema_version() -> None:
    # One constant, kept with the schemas, is what every payload says it is.
    for name in schemas.SCHEMA_NAMES:
        s = schemas.load_schema(name)
        if "schema_version" in s.get("properties", {}) and name not in FLOOR_SCHEMAS:
            assert s["properties"]["schema_version"]["const"] == schemas.PAYLOAD_SCHEMA_VERSION
    r = schemas.response("t-1", "r1", "error", code="X", message="m")
    assert r == {
        "schema_version": schemas.PAYLOAD_SCHEMA_VERSION,
        "table_id": "t-1",
        "request_id": "r1",
        "status": "error",
        "code": "X",
        "message": "m",
    }
