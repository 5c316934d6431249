"""Issue 28, the floor's half, over a real mosquitto with the reference ingest on
SQLite and on PostgreSQL: each attack of the issue reproduced, refused or detected.

- a fake table (``FAKE-99``): never stored, quarantined ``UNKNOWN_TABLE``, raised on
  the retained faults topic and by ``status``; nothing asked of it;
- a forged round published before the table's real one: quarantined, and the real one
  then stored as the round (no conflict), the floor's signed record naming it;
- a round replayed with a changed payout (or reformatted): quarantined, the stored
  round unchanged;
- a chain that goes back (a journal restored): quarantined ``CHAIN_NOT_ADVANCING``
  until a person releases the first round, after which the table's next rounds follow;
- ``seq`` 999999999, unsigned or signed: never stored, never a gap, no replay asked;
  a replay is never asked beyond what the table announced, and the table's answer
  (``newest_seq``) stops the asking;
- a table added to the registry is known without a restart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import Signer
from firmware_host.auth.evidence import FLOOR_DOMAIN, canonical_text, open_sealed, seal
from firmware_host.auth.keys import generate, load_public_key
from firmware_host.cliargs import CliError
from firmware_host.schemas import errors as schema_errors
from flooringest import messages as m
from flooringest.store import open_store
from flooringest.worker import IngestSettings
from tablesim.emulator import Emulator

from .support import WorkerTask, more_rounds, registry_of

pytestmark = pytest.mark.mosquitto

R = "MO-R-07"


async def until(pred: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.1)


class Floor:
    """Emulated signed tables, one verifying ingest worker with its own key (it signs
    its replay requests and the floor's records), an attacker's client and a watcher
    of everything under ``casino/`` (replay requests, records, faults)."""

    def __init__(self, broker: Any, db: str, directory: Path, tables: list[str]) -> None:
        self.broker = broker
        self.db = db
        self.dir = directory
        self.emu = Emulator(broker.host, broker.port, tables, rate=20)
        self.registry = registry_of(self.emu, directory)
        key, pub = generate("floor-ingest", directory / "ingest-keys")
        self.ingest_key = load_public_key(pub)
        self.signer = Signer("floor-ingest", key)
        self.seen: dict[str, bytes] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def settings(self, **kw: Any) -> IngestSettings:
        opts: dict[str, Any] = {
            "host": self.broker.host,
            "port": self.broker.port,
            "db": self.db,
            "worker": "w1",
            "signer": self.signer,
            "registry_file": self.registry,
            "duty_interval_s": 0.1,
            "gap_grace_s": 0.3,
            "replay_retry_s": 1.0,
            "lag_interval_s": 0.3,
            "registry_refresh_s": 0.3,
            **kw,
        }
        return IngestSettings(**opts)

    @contextlib.asynccontextmanager
    async def running(self, **kw: Any) -> AsyncIterator[Floor]:
        watcher = asyncio.create_task(self._watch())
        worker = WorkerTask(self.settings(**kw))
        play = asyncio.create_task(self.emu.run(paused=True))
        try:
            await worker.subscribed()
            await until(self._online, 20, "the tables online")
            self.worker = worker
            yield self
        finally:
            self.emu.stop()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(play, 20)
            await worker.stop()
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await watcher

    async def _online(self) -> bool:
        return all(t.online for t in self.emu.tables.values())

    async def _watch(self) -> None:
        async with aiomqtt.Client(self.broker.host, self.broker.port) as c:
            await c.subscribe("casino/floor/#", qos=1)
            await c.subscribe("casino/tables/+/commands/request", qos=1)
            async for msg in c.messages:
                payload = msg.payload if isinstance(msg.payload, bytes) else b""
                topic = msg.topic.value
                self.seen[topic] = payload
                if topic.endswith("/commands/request"):
                    self.requests.append((topic.split("/")[2], json.loads(payload)))

    async def attack(self, topic: str, payload: bytes, *, retain: bool = False) -> None:
        """What a client that can publish on a table's topics sends."""
        async with aiomqtt.Client(self.broker.host, self.broker.port) as a:
            await a.publish(topic, payload, qos=1, retain=retain)

    async def play(self, upto: int, tables: list[str] | None = None) -> None:
        if tables is None:
            await more_rounds(self.emu, upto)
            return
        for tid in tables:
            t = self.emu.tables[tid]
            while t.seq < upto:
                t.queue_round()
                self.emu._wake[tid].set()
        while self.emu.unacknowledged():
            await asyncio.sleep(0.05)

    async def read(self, what: Callable[[Any], Awaitable[Any]]) -> Any:
        store = await open_store(self.db)
        try:
            return await what(store)
        finally:
            await store.close()

    async def stored(self, table: str) -> list[tuple[int, str]]:
        return await self.read(lambda s: s.rounds_of(table))  # type: ignore[no-any-return]

    async def lag(self) -> dict[str, Any]:
        return await self.read(lambda s: s.lag())  # type: ignore[no-any-return]

    async def quarantine(self, **kw: Any) -> list[dict[str, Any]]:
        return await self.read(lambda s: s.quarantine.messages(**kw))  # type: ignore[no-any-return]

    async def holds(self, table: str, n: int) -> None:
        async def ok() -> bool:
            return len(await self.stored(table)) == n

        await until(ok, 20, f"{n} rounds of {table} stored")

    async def quarantined(self, n: int, **kw: Any) -> list[dict[str, Any]]:
        async def ok() -> bool:
            return len(await self.quarantine(**kw)) >= n

        await until(ok, 20, f"{n} quarantined {kw}")
        return await self.quarantine(**kw)

    async def record(self, table: str, seq: int) -> dict[str, Any]:
        """The floor's record of ``table`` once it names ``seq``: checked with the
        ingest's public key and the schema."""
        topic = f"casino/floor/records/{table}"

        async def ok() -> bool:
            raw = self.seen.get(topic)
            return raw is not None and json.loads(raw)["seq"] == seq

        await until(ok, 20, f"the floor record of {table} at seq {seq}")
        raw = self.seen[topic]
        doc, _ = open_sealed(raw, "record", [self.ingest_key], domain=FLOOR_DOMAIN)
        assert schema_errors("floor_record", json.loads(raw)) == []
        return doc


def forged_round(real: bytes, seq: int, factor: int = 100) -> dict[str, Any]:
    """The table's real round, renumbered, every payout ``factor`` times, unsigned."""
    doc = json.loads(real)
    doc.pop("signature")
    doc["seq"] = seq
    doc["round_id"] = f"{doc['table_id']}-{seq:06d}-deadbeef"
    for b in doc["bets"]:
        b["payout"] = b.get("payout", 0) * factor + 1
    return doc


def status(db: str) -> tuple[int, str]:
    from flooringest.cli import cmd_status

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cmd_status(argparse.Namespace(db=db, json=False))
    return rc, out.getvalue()


async def test_a_fake_table_is_never_stored(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    f = Floor(mosquitto_broker, db_url, tmp_path, [R])
    async with f.running():
        await f.play(2)
        await f.holds(R, 2)
        real = f.emu.tables[R].sent[2]
        own = Ed25519PrivateKey.generate()  # FAKE-99 signs with a key of its own
        doc = forged_round(real, 1)
        doc["table_id"], doc["round_id"] = "FAKE-99", "FAKE-99-000001-deadbeef"
        fake = "casino/tables/FAKE-99"
        await f.attack(f"{fake}/anchor", seal(own, "anchor", {"table_id": "FAKE-99",
                       "seq": 999999999, "phase": "settled"}), retain=True)  # fmt: skip
        await f.attack(f"{fake}/rounds", seal(own, "rounds", doc))
        doc["seq"], doc["round_id"] = 999999999, "FAKE-99-999999999-deadbeef"
        await f.attack(f"{fake}/rounds", canonical_text(doc).encode())
        rows = await f.quarantined(2, table="FAKE-99")
        assert {(r["code"], r["seq"]) for r in rows} == {
            (m.UNKNOWN_TABLE, 1), (m.UNKNOWN_TABLE, 999999999)
        }  # fmt: skip
        await f.play(3)  # the real table goes on
        await f.holds(R, 3)
        assert await f.stored("FAKE-99") == []
        lag = await f.lag()
        assert "FAKE-99" not in lag["tables"] and lag["gaps_open"] == 0

        # Raised: the retained faults topic, and status (exit 1).
        async def raised() -> bool:
            raw = f.seen.get("casino/floor/ingest/floor-ingest/faults")
            return raw is not None and any(
                x["table_id"] == "FAKE-99" and x["count"] == 2 for x in json.loads(raw)["open"]
            )

        await until(raised, 10, "the fault raised on the faults topic")
        faults = json.loads(f.seen["casino/floor/ingest/floor-ingest/faults"])
        (fault,) = [x for x in faults["open"] if x["table_id"] == "FAKE-99"]
        assert (fault["code"], fault["count"]) == (m.UNKNOWN_TABLE, 2)
        assert fault["first_seen"].endswith("Z") and faults["quarantined"][m.UNKNOWN_TABLE] == 2
        rc, text = await asyncio.to_thread(status, db_url)
        assert rc == 1 and "FAULTS OPEN" in text and "FAKE-99" in text and "UNKNOWN_TABLE" in text
        # Nothing asked of it; no record of it.
        await asyncio.sleep(1.0)
        assert not [t for t, _ in f.requests if t == "FAKE-99"]
        assert "casino/floor/records/FAKE-99" not in f.seen
        assert (await f.record(R, 3))["seq"] == 3


async def test_a_forged_round_before_the_real_one_leaves_the_real_one_stored(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    f = Floor(mosquitto_broker, db_url, tmp_path, [R])
    async with f.running():
        await f.play(3)
        await f.holds(R, 3)
        t = f.emu.tables[R]
        doc = forged_round(t.sent[3], 4)
        # Unsigned; and signed by a key that is not the table's.
        await f.attack(f"casino/tables/{R}/rounds", canonical_text(doc).encode())
        await f.attack(
            f"casino/tables/{R}/rounds", seal(Ed25519PrivateKey.generate(), "rounds", doc)
        )
        rows = await f.quarantined(2, table=R)
        assert {r["code"] for r in rows} == {m.UNSIGNED, m.BAD_SIGNATURE}
        assert {r["seq"] for r in rows} == {4}
        await f.play(4)  # the table's real round 4
        await f.holds(R, 4)
        stored = dict(await f.stored(R))
        assert stored[4].encode() == t.sent[4]  # the real one, as the round
        lag = await f.lag()
        assert lag["conflicts"] == 0 and lag["rounds"] == 4
        real = json.loads(t.sent[4])["chain"]
        # The floor's record: the real round and chain head, signed by the ingest.
        rec = await f.record(R, 4)
        assert rec["round_id"] == json.loads(t.sent[4])["round_id"]
        assert rec["chain"] == real and rec["principal"] == "floor-ingest"
        # The duties' anchor step agrees (the anchor as the table has it).
        await until(
            lambda: _anchored(f, R, f"{real['seq']}:{real['head']}"), 10, "the anchor checked"
        )


async def _anchored(f: Floor, table: str, text: str) -> bool:
    return (await f.lag())["tables"][table]["anchor"] == text


async def test_a_replayed_round_with_a_changed_payout_is_refused(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    f = Floor(mosquitto_broker, db_url, tmp_path, [R])
    async with f.running():
        await f.play(3)
        await f.holds(R, 3)
        real = f.emu.tables[R].sent[2]
        doc = json.loads(real)
        bet = next(b for b in doc["bets"] if "payout" in b)
        changed = real.replace(
            f'"payout":{bet["payout"]}'.encode(),
            f'"payout":{bet["payout"] * 100 + 100000}'.encode(),
            1,
        )
        assert changed != real
        topic = f"casino/tables/{R}/rounds"
        await f.attack(topic, changed)
        await f.attack(topic, json.dumps(doc, indent=2).encode())  # the same, reformatted
        await f.attack(topic, real.replace(b'"seq":2,', b'"seq":2,"seq":3,', 1))  # a duplicate
        await f.attack(topic, real)  # replayed as it was: a duplicate, nothing more
        rows = await f.quarantined(3, table=R)
        assert sorted(r["code"] for r in rows) == sorted(
            [m.BAD_SIGNATURE, m.NOT_CANONICAL, m.NOT_CANONICAL]
        )

        async def duplicate() -> bool:
            return (await f.lag())["duplicates"] >= 1

        await until(duplicate, 10, "the replay counted as a duplicate")
        assert dict(await f.stored(R))[2].encode() == real
        assert (await f.lag())["conflicts"] == 0


async def test_a_chain_that_goes_back_is_held_until_a_person_releases_it(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    from flooringest.cli import cmd_quarantine_list, cmd_quarantine_release

    f = Floor(mosquitto_broker, db_url, tmp_path, [R])
    async with f.running():
        await f.play(6)
        await f.holds(R, 6)
        t = f.emu.tables[R]
        t.chain_seq = 1  # the journal restored from an older copy: its chain went back
        await f.play(8)
        chain = {s: json.loads(t.sent[s])["chain"]["seq"] for s in (6, 7, 8)}
        assert chain[7] < chain[8] < chain[6], chain
        rows = await f.quarantined(2, table=R)
        assert [(r["seq"], r["code"]) for r in rows] == [
            (7, m.CHAIN_NOT_ADVANCING), (8, m.CHAIN_NOT_ADVANCING)
        ]  # fmt: skip
        assert [s for s, _ in await f.stored(R)] == [1, 2, 3, 4, 5, 6]
        assert (await f.record(R, 6))["seq"] == 6  # the floor holds 6, the table cannot say less
        rc, _text = await asyncio.to_thread(status, db_url)
        assert rc == 1
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            await asyncio.to_thread(
                cmd_quarantine_list,
                argparse.Namespace(db=db_url, all=False, table=R, code=None, json=False),
            )
        assert out.getvalue().count(m.CHAIN_NOT_ADVANCING) == 2
        await asyncio.sleep(1.5)  # the floor holds 7 and 8: it does not ask for them
        assert f.emu.replay_requests == []
        # A technician reconciles and accepts round 7; round 8 continues its chain.
        args = argparse.Namespace(
            db=db_url, sha256=rows[0]["sha256"], by="tech-4", reason="journal restored, ticket 812"
        )
        assert await asyncio.to_thread(cmd_quarantine_release, args) == 0
        await f.holds(R, 8)
        with pytest.raises(CliError, match="was released already"):  # once only
            await asyncio.to_thread(cmd_quarantine_release, args)
        await f.play(9)
        await f.holds(R, 9)
        assert [(s, p.encode()) for s, p in await f.stored(R)] == [
            (s, t.sent[s]) for s in range(1, 10)
        ]
        done = await f.quarantine(open_only=False, table=R)
        assert [(r["seq"], r["released_by"]) for r in done] == [
            (7, "tech-4"), (8, "floor-ingest")
        ]  # fmt: skip
        assert (await f.record(R, 9))["seq"] == 9

        # The evidence stays: the duties' anchor step recorded where the chain went back.
        async def evidence() -> bool:
            return any(x["code"] == m.CHAIN_NOT_ADVANCING and x["source"] == "anchor"
                       for x in (await f.lag())["faults"])  # fmt: skip

        await until(evidence, 10, "the anchor fault")
        assert (await f.lag())["quarantine_open"] == 0


async def test_seq_999999999_is_never_stored_and_no_replay_goes_beyond_the_announced(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    f = Floor(mosquitto_broker, db_url, tmp_path, [R])
    async with f.running():
        await f.play(5)
        await f.holds(R, 5)
        t = f.emu.tables[R]
        doc = forged_round(t.sent[5], 999999999, factor=1)
        topic = f"casino/tables/{R}/rounds"
        await f.attack(topic, canonical_text(doc).encode())  # unsigned
        assert t.key is not None
        await f.attack(topic, seal(t.key, "rounds", doc))  # signed by the table itself
        rows = await f.quarantined(2, table=R)
        assert {(r["code"], r["seq"]) for r in rows} == {
            (m.UNSIGNED, 999999999), (m.SEQ_NOT_ANNOUNCED, 999999999)
        }  # fmt: skip
        await asyncio.sleep(2.5)  # grace and retries: nothing may be asked
        lag = await f.lag()
        assert lag["tables"][R]["last_seq"] == 5 and lag["gaps_open"] == 0
        assert f.requests == [] and f.emu.replay_requests == []
        assert (await f.record(R, 5))["seq"] == 5
        # A stale signed state (the table's own, from before its journal was restored)
        # says its last round is 50: the floor asks for 6..50 (no further), the table
        # answers that its newest round is 5, and the asking stops.
        state = {"schema_version": 6, "table_id": R, "availability": "online", "phase": "idle",
                 "last_round_id": f"{R}-000050-aaaaaaaa"}  # fmt: skip
        await f.attack(f"casino/tables/{R}/state", seal(t.key, "state", state), retain=True)

        async def asked() -> bool:
            return bool(f.emu.replay_requests)

        await until(asked, 10, "the replay of the announced tail")
        await asyncio.sleep(3.5)  # three retry periods
        assert f.emu.replay_requests == [(R, 6, 50)], f.emu.replay_requests
        assert all(r["args"].get("to_seq", 0) <= 50 for _, r in f.requests)

        async def closed() -> bool:
            return (await f.lag())["gaps_open"] == 0

        await until(closed, 10, "the tail closed by the table's answer")
        assert f.worker.worker.stats.answers == 1
        # The seq 999999999 round stays quarantined: nothing announced it.
        assert [r["code"] for r in await f.quarantine(code=m.SEQ_NOT_ANNOUNCED)] == [
            m.SEQ_NOT_ANNOUNCED
        ]
        assert [s for s, _ in await f.stored(R)] == [1, 2, 3, 4, 5]


async def test_a_round_before_its_anchor_is_stored_once_the_table_announces_it(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    """The anchor is published before each round; a round whose anchor the floor has not
    seen (lost by a broker) waits in quarantine and is stored by the duties once the
    table's next announcement covers it, from its original bytes."""
    f = Floor(mosquitto_broker, db_url, tmp_path, [R])
    async with f.running():
        await f.play(2)
        await f.holds(R, 2)
        t = f.emu.tables[R]
        _seq, rid, raw = t.next_round()  # round 3 without its anchor
        await f.attack(f"casino/tables/{R}/rounds", raw)
        rows = await f.quarantined(1, table=R)
        assert [(r["seq"], r["code"]) for r in rows] == [(3, m.SEQ_NOT_ANNOUNCED)]
        await f.play(4)  # round 4, with its anchor (seq 4): round 3 is announced now
        await f.holds(R, 4)
        assert [(s, p.encode()) for s, p in await f.stored(R)] == [
            (s, t.sent[s]) for s in (1, 2, 3, 4)
        ]
        (row,) = await f.quarantine(open_only=False, table=R)
        assert row["released_by"] == "floor-ingest" and rid == row["round_id"]


async def test_a_table_added_to_the_registry_is_known_without_a_restart(
    mosquitto_broker: Any, db_url: str, tmp_path: Path
) -> None:
    from flooringest.cli import cmd_quarantine_release

    new = "MO-R-08"
    f = Floor(mosquitto_broker, db_url, tmp_path, [R, new])
    full = Path(f.registry).read_text()
    only_r = full.split(f'[tables."{new}"]')[0]
    Path(f.registry).write_text(only_r)
    async with f.running():
        await f.play(2)
        await f.holds(R, 2)
        rows = await f.quarantined(2, table=new)
        assert {r["code"] for r in rows} == {m.UNKNOWN_TABLE}
        Path(f.registry).write_text(full)  # the table registered; the worker reads it

        async def known() -> bool:
            return new in f.worker.worker.registry

        await until(known, 10, "the new table known")
        await f.play(3)
        await f.holds(new, 1)
        # Its first two rounds, reviewed, accepted by a person (the registry verifies
        # them now).
        for r in sorted(rows, key=lambda r: r["seq"]):
            args = argparse.Namespace(db=f.db, sha256=r["sha256"], by="pit-boss-2",
                                      reason="table installed before its registration")  # fmt: skip
            assert await asyncio.to_thread(cmd_quarantine_release, args) == 0
        await f.holds(new, 3)
        assert [(s, p.encode()) for s, p in await f.stored(new)] == [
            (s, f.emu.tables[new].sent[s]) for s in (1, 2, 3)
        ]
        assert (await f.record(new, 3))["seq"] == 3
