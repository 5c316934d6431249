"""Issue 28 item 3, the floor's half: the floor's record of a table, as
``docs/floor.md`` shows it, verifies with RFC 8032's first test key (the key of the
vectors of ``docs/security.md``), validates against ``floor_record.json``, and is
exactly the bytes the ingest makes for the same content; a record altered, or signed
for another topic or domain, does not verify."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth.evidence import FLOOR_DOMAIN, TABLE_DOMAIN, EvidenceError, open_sealed
from firmware_host.schemas import errors
from flooringest.notices import RECORDS_IN_FLIGHT, FloorNotices
from flooringest.settings import IngestSettings, WorkerStats
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


class _Paho:
    """paho's side of a connection: its publications not yet acknowledged."""

    def __init__(self) -> None:
        self._out_messages: dict[int, bytes] = {}
        self.sent: list[tuple[str, bytes]] = []

    def publish(self, topic: str, raw: bytes, qos: int, retain: bool) -> None:
        assert qos == 1 and retain
        self._out_messages[len(self.sent)] = raw
        self.sent.append((topic, raw))


class _Store:
    """The store's ``records``: the round each changed table's ``last`` names."""

    async def records(
        self, known: dict[str, int], last: dict[str, int]
    ) -> list[tuple[str, int, str, int | None, str | None]]:
        return [(t, s, f"{t}-{s:06d}-abcd1234", None, None)
                for t, s in last.items() if known.get(t) != s]  # fmt: skip


async def test_records_in_flight_stay_bounded_and_each_table_gets_its_newest() -> None:
    """Issue 36: a duty round published the record of every table that changed at
    once (a thousand in a drain), their PUBACKs came behind the broker's backlog on
    the session's connection, and paho, which reads as many packets in one go as it has
    publications unacknowledged, blocked the worker for seconds at each read. Never
    more than RECORDS_IN_FLIGHT now; the others go once acknowledged, at later duty
    rounds, each table's newest round then, none skipped."""
    paho = _Paho()
    client: Any = SimpleNamespace(_client=paho)
    signer = SimpleNamespace(key=KEY, principal="floor-ingest")
    notices = FloorNotices(IngestSettings(signer=signer), WorkerStats())
    last = {f"T{i:04d}": 5 for i in range(1000)}
    assert await notices.publish_records(client, _Store(), last) == RECORDS_IN_FLIGHT
    # Nothing acknowledged yet (the PUBACKs behind the backlog): nothing more.
    assert await notices.publish_records(client, _Store(), last) == 0
    rounds = 0
    while len(notices.records) < len(last) or notices.records != last:
        paho._out_messages.clear()  # the broker's PUBACKs
        for t in list(last)[::7]:  # some tables play on meanwhile
            last[t] += 1
        assert await notices.publish_records(client, _Store(), last) <= RECORDS_IN_FLIGHT
        assert len(paho._out_messages) <= RECORDS_IN_FLIGHT
        rounds += 1
        assert rounds < 100, "the records never caught up"
    newest: dict[str, int] = {}
    for topic, raw in paho.sent:
        doc, _ = open_sealed(raw, "record", [KEY.public_key()], domain=FLOOR_DOMAIN)
        assert topic == f"casino/floor/records/{doc['table_id']}"
        assert doc["seq"] >= newest.get(doc["table_id"], 0)  # never back
        newest[doc["table_id"]] = doc["seq"]
    assert newest == last
