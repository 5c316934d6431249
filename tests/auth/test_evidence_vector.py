"""What the table says, signed (issue 28): the vector of docs/security.md checked as a
floor vendor would (``cryptography`` and an RFC 8785 library written apart from ours),
the table's own signing checked against it, and every refusal of ``open_sealed``."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from firmware_host.auth.evidence import FLOOR_DOMAIN, EvidenceError, open_sealed, seal

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
# RFC 8032 section 7.1, TEST 1 (the key of docs/security.md's vectors).
RFC8032_SECRET = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
RFC8032_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"


def vectors() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"```\w+ vector=(\w+)\n(.*?)```", text, flags=re.S)
    }


def test_a_vendor_verifies_the_documented_table_message_with_a_few_lines() -> None:
    """The recipe of docs/security.md, "What the table says", with nothing of ours."""
    v = vectors()
    message = v["table_message"].strip().encode("utf-8")
    signed = v["table_signed_bytes"].rstrip("\n").encode("utf-8")
    public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(RFC8032_PUBLIC))

    payload = json.loads(message)
    signature = base64.b64decode(payload.pop("signature"))
    rebuilt = b"tablectl-table-v1\n" + b"anchor" + b"\n" + rfc8785.dumps(payload)
    assert rebuilt == signed  # the documented bytes are what a vendor rebuilds
    public.verify(signature, rebuilt)  # raises if not
    # The message is the canonical text with the signature as its last member.
    assert (
        message
        == rfc8785.dumps(payload)[:-1] + b',"signature":"' + base64.b64encode(signature) + b'"}'
    )
    # Signed for the anchor topic only: the same bytes are no round.
    with pytest.raises(InvalidSignature):
        public.verify(signature, b"tablectl-table-v1\nrounds\n" + rfc8785.dumps(payload))


def test_the_table_signs_exactly_the_documented_message() -> None:
    v = vectors()
    message = v["table_message"].strip().encode("utf-8")
    payload = json.loads(message)
    del payload["signature"]
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(RFC8032_SECRET))
    assert seal(key, "anchor", payload) == message
    assert open_sealed(message, "anchor", [key.public_key()]) == (payload, 0)


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def _code(raw: bytes, topic: str, keys: list[Ed25519PublicKey]) -> str:
    with pytest.raises(EvidenceError) as exc:
        open_sealed(raw, topic, keys)
    return exc.value.code


def test_open_sealed_refuses_every_alteration_with_its_code(key: Ed25519PrivateKey) -> None:
    round_ = {"table_id": "T1", "seq": 619, "bets": [{"stake": 100, "payout": 200}]}
    msg = seal(key, "rounds", round_)
    pub = [key.public_key()]
    assert open_sealed(msg, "rounds", pub)[0] == round_
    # A payout raised (bytes changed, signature kept): not what the table signed.
    assert _code(msg.replace(b'"payout":200', b'"payout":20000'), "rounds", pub) == "BAD_SIGNATURE"
    # The same content, spelled otherwise (a space; members reordered).
    assert _code(msg.replace(b'"seq":619', b'"seq": 619'), "rounds", pub) == "NOT_CANONICAL"
    reordered = b'{"table_id":"T1",' + msg[1:].replace(b',"table_id":"T1"', b"")
    assert json.loads(reordered) == json.loads(msg)
    assert _code(reordered, "rounds", pub) == "NOT_CANONICAL"
    # A duplicated member a first-wins parser reads: {"seq":1,...,"seq":619} (last wins here).
    assert _code(b'{"seq":1,' + msg[1:], "rounds", pub) == "NOT_CANONICAL"
    # Another topic, another key, no signature, garbage.
    assert _code(msg, "anchor", pub) == "BAD_SIGNATURE"
    assert _code(msg, "rounds", [Ed25519PrivateKey.generate().public_key()]) == "BAD_SIGNATURE"
    assert _code(msg, "rounds", []) == "BAD_SIGNATURE"
    unsigned = json.dumps(round_, separators=(",", ":")).encode()
    assert _code(unsigned, "rounds", pub) == "UNSIGNED"
    assert _code(msg.replace(b'"signature":"', b'"signature":"AA'), "rounds", pub) == "UNSIGNED"
    assert _code(b"\xff\xfe", "rounds", pub) == "NOT_JSON"
    assert _code(b"[1,2]", "rounds", pub) == "NOT_AN_OBJECT"


def test_two_keys_during_a_rotation_either_verifies(key: Ed25519PrivateKey) -> None:
    new = Ed25519PrivateKey.generate()
    keys = [key.public_key(), new.public_key()]
    assert open_sealed(seal(key, "state", {"a": 1}), "state", keys)[1] == 0
    assert open_sealed(seal(new, "state", {"a": 1}), "state", keys)[1] == 1


def test_the_floor_domain_is_not_the_tables(key: Ed25519PrivateKey) -> None:
    """A table's signed message is never a floor record, and the other way round."""
    record = seal(key, "record", {"table_id": "T1", "seq": 4}, domain=FLOOR_DOMAIN)
    assert open_sealed(record, "record", [key.public_key()], domain=FLOOR_DOMAIN)[1] == 0
    assert _code(record, "record", [key.public_key()]) == "BAD_SIGNATURE"


def test_floats_and_astral_member_names_take_the_exact_canonical_form(
    key: Ed25519PrivateKey,
) -> None:
    """Where orjson's sorted output is not JCS (a float, a name beyond the BMP, a big
    integer), the message is still the RFC 8785 text a vendor rebuilds."""
    payload = {"rpm": 27.5, "tiny": 1e-7, "big": 1e21, "\U0001f600": 1, "\ue000": 2}
    msg = seal(key, "devices/wheel", payload)
    body = json.loads(msg)
    sig = base64.b64decode(body.pop("signature"))
    key.public_key().verify(sig, b"tablectl-table-v1\ndevices/wheel\n" + rfc8785.dumps(body))
    assert msg.startswith(rfc8785.dumps(payload)[:-1])
    assert open_sealed(msg, "devices/wheel", [key.public_key()])[0] == payload
