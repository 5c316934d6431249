"""Issue 28 item 3, the floor's half: the floor's record of a table, as
``docs/floor.md`` shows it, verifies with RFC 8032's first test key (the key of the
vectors of ``docs/security.md``), validates against ``floor_record.json``, and is
exactly the bytes the ingest makes for the same content; a record altered, or signed
for another topic or domain, does not verify."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth.evidence import FLOOR_DOMAIN, TABLE_DOMAIN, EvidenceError, open_sealed
from firmware_host.schemas import errors
from flooringest.worker import record_message

DOC = Path(__file__).resolve().parents[2] / "docs" / "floor.md"
#: RFC 8032 section 7.1, TEST 1.
KEY = Ed25519PrivateKey.from_private_bytes(
    bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
)


def doc_record() -> bytes:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"^```json schema=floor_record\n(.*?)\n```", text, re.S | re.M)
    assert m, "docs/floor.md shows no floor record"
    return m.group(1).encode("utf-8")


def test_the_documented_record_verifies_and_is_what_the_ingest_makes() -> None:
    raw = doc_record()
    doc, i = open_sealed(raw, "record", [KEY.public_key()], domain=FLOOR_DOMAIN)
    assert i == 0 and errors("floor_record", json.loads(raw)) == []
    chain = doc["chain"]
    made = record_message(
        KEY, doc["principal"], doc["table_id"], doc["seq"], doc["round_id"],
        chain["seq"], chain["head"], doc["at"],
    )  # fmt: skip
    assert made == raw
    # A record without a chain (a table before issue 15) is valid too.
    plain = record_message(KEY, "floor-ingest", "T1", 1, "T1-000001-abcd1234", None, None,
                           "2026-11-28T07:36:13.455Z")  # fmt: skip
    assert errors("floor_record", json.loads(plain)) == []


def test_an_altered_record_or_another_domain_does_not_verify() -> None:
    raw = doc_record()
    with pytest.raises(EvidenceError) as e:
        open_sealed(raw.replace(b'"seq":41', b'"seq":40'), "record", [KEY.public_key()],
                    domain=FLOOR_DOMAIN)  # fmt: skip
    assert e.value.code == "BAD_SIGNATURE"
    for topic, domain in (("record", TABLE_DOMAIN), ("anchor", FLOOR_DOMAIN)):
        with pytest.raises(EvidenceError):
            open_sealed(raw, topic, [KEY.public_key()], domain=domain)
