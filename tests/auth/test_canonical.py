"""The canonical form floor requests are signed over (RFC 8785, JCS), checked against
the RFC's own examples, and the test vector of docs/security.md kept true."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import (
    Authenticator,
    AuthSettings,
    PrincipalSpec,
    canonicalize,
    signing_input,
)
from firmware_host.auth.canonical import CanonicalError, _number

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "security.md"

# RFC 8032 section 7.1, TEST 1: a key anyone can check the vector with.
RFC8032_SECRET = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
RFC8032_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"


def test_rfc8785_section_3_2_3_example() -> None:
    # RFC 8785 section 3.2.3: the input and its canonical form, as printed in the RFC.
    text = r"""{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"""
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonicalize(json.loads(text)).decode("utf-8") == expected


def test_rfc8785_section_3_2_3_sorting_by_utf16_code_units() -> None:
    # RFC 8785 section 3.2.3, "Sorting of Object Properties": the emoji (a surrogate
    # pair, 0xD83D...) sorts before U+FB33, unlike a sort by code points.
    text = r"""{
      "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }"""
    out = json.loads(canonicalize(json.loads(text)))
    assert list(out.values()) == [
        "Carriage Return",
        "One",
        "Control",
        "Latin Small Letter O With Diaeresis",
        "Euro Sign",
        "Emoji: Grinning Face",
        "Hebrew Letter Dalet With Dagesh",
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        # RFC 8785 appendix B (ECMAScript number serialisation), a selection.
        (0.0, "0"),
        (-0.0, "0"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (9007199254740992.0, "9007199254740992"),
        (295147905179352830000.0, "295147905179352830000"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (-1.5, "-1.5"),
        (333333333.3333333, "333333333.3333333"),
    ],
)
def test_numbers_are_written_as_ecmascript_does(value: float, text: str) -> None:
    assert _number(value) == text


def test_what_has_no_canonical_form_is_refused() -> None:
    for bad in (float("nan"), float("inf"), {"a": "\ud800"}, {1: 2}, object()):
        with pytest.raises(CanonicalError):
            canonicalize(bad)


def _blocks() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"```\w+ vector=(\w+)\n(.*?)```", text, flags=re.S)
    }


def test_the_test_vector_of_docs_security_md() -> None:
    blocks = _blocks()
    assert {"public_key", "request", "signed_bytes"} <= set(blocks)
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(RFC8032_SECRET))
    public = key.public_key()
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert raw.hex() == RFC8032_PUBLIC
    assert serialization.load_pem_public_key(blocks["public_key"].encode()) == public
    request = json.loads(blocks["request"])
    message = blocks["signed_bytes"].rstrip("\n").encode("utf-8")
    assert signing_input("commands/request", request) == message
    # Ed25519 is deterministic: the signature is the one the document prints...
    assert base64.b64encode(key.sign(message)).decode() == request["signature"]
    # ... and the table verifies it, as the principal the request names.
    settings = AuthSettings(
        principals={"pit-boss-2": PrincipalSpec("pit-boss-2", (), ("pit_supervisor",))}
    )
    auth = Authenticator(settings, "MO-R-07", keys={"pit-boss-2": (public,)})
    who = auth.verify("commands/request", request)
    assert (who.name, who.verified) == ("pit-boss-2", True)


def test_the_duplicated_member_vector_of_docs_security_md(tmp_path: Path) -> None:
    """Issue 29: the request with a member named twice is signed over its last-wins
    reading (the attack is real: a last-wins parser verifies it) and a first-wins parser
    reads another stake; the table refuses it, as the document prints."""
    from firmware_host.table.floor import FloorRequests
    from tests.table.floor_support import make_table

    blocks = _blocks()
    raw = blocks["duplicate_request"].encode()
    last_wins = json.loads(raw)
    first_wins = json.loads(raw, object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    assert (last_wins["bet"]["stake"], first_wins["bet"]["stake"]) == (90000, 10000)
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(RFC8032_SECRET))
    key.public_key().verify(
        base64.b64decode(last_wins["signature"]), signing_input("bets/request", last_wins)
    )
    doc = {
        "table": {"id": "MO-R-07", "game": "roulette", "result_source": "manual"},
        "limits": {"min_stake": 100, "max_stake": 1_000_000},
    }
    t = make_table(tmp_path, doc=doc, keys={"pos": key})
    settings = AuthSettings(
        principals={"floor-pos": PrincipalSpec("floor-pos", (), ("floor_system",))}
    )
    auth = Authenticator(settings, "MO-R-07", keys={"floor-pos": (key.public_key(),)},
                         clock=t.clock)  # fmt: skip
    floor = FloorRequests(t.engine, t.floor.procedure, t.journal, auth=auth)
    answer = floor.answer("bets/request", raw)
    expected = json.loads(blocks["duplicate_answer"])
    assert {k: answer.get(k) for k in expected} == expected, answer
    assert set(answer) == {*expected, "message"}
    assert t.engine.desk.bets() == []
