"""Issue 28 end to end: the real daemon (a manual fantan table, signed requests), a real
mosquitto and the reference ingest on PostgreSQL.

- a forged round published before the table's real one is quarantined, and the real
  one is stored as the round (no conflict); the floor's signed record names it; the
  honest journal passes ``tablectl audit verify --anchors`` against what the floor holds;
- the journal restored from an old copy, then from a newer old copy: the table is
  refused both times (the ingest's record, which the table cannot write, and its own
  retained anchor, which it no longer overwrites), never reuses a ``seq`` the floor has
  seen, and its first round after a technician's clear is quarantined at the floor
  (its chain goes back) until a person releases it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth import TableIdentity, load_public_key
from firmware_host.auth.evidence import FLOOR_DOMAIN, open_sealed, seal
from firmware_host.config import load_config
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.table.floorcheck import BEHIND
from flooringest.store import open_store
from flooringest.worker import IngestSettings
from tablesim.floor_client import FloorClient
from tablesim.principals import Principals, make_principals
from tablesim.tables import to_toml

from .conftest import new_database
from .support import WorkerTask

pytestmark = pytest.mark.mosquitto

TABLE = "ft-ev"
CONFIG = f"""\
version = 1
[table]
id = "{TABLE}"
game = "fantan"
payable_unit = 100
result_source = "manual"
[limits]
min_stake = 1000
"""
ROLES = {
    "dealer": ("dealer",),
    "pit": ("pit_supervisor",),
    "floor": ("floor_system",),
    "ingest": ("floor_ingest",),
}


async def until(pred: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.1)


class Site:
    """One table's state directory and configuration, its floor's principals, the
    ingest (PostgreSQL) and a floor client; the daemon started and stopped at will."""

    def __init__(self, tmp: Path, broker: Any, db: str) -> None:
        self.tmp, self.broker, self.db = tmp, broker, db
        self.state = tmp / "state"
        self.state.mkdir()
        # Installed as docs/security.md says: the identity key made, its public half
        # given to the floor's registry.
        TableIdentity.create(self.state / "identity.key")
        self.principals: Principals = make_principals(tmp / "keys", ROLES)
        self.config = tmp / "fantan.toml"
        self.config.write_text(CONFIG + to_toml({"auth": self.principals.auth_section()}))
        self.cfg = load_config(self.config)
        self.daemon: TableDaemon | None = None
        self.ingest: WorkerTask | None = None
        self._clients = 0

    @property
    def journal(self) -> Path:
        return self.state / "journal.sqlite3"

    async def start(self) -> TableDaemon:
        d = TableDaemon(
            self.cfg, state_dir=self.state, runtime_dir=self.state,
            mqtt=MqttSettings(host=self.broker.host, port=self.broker.port,
                              reconnect_min_ms=50, reconnect_max_ms=500),
        )  # fmt: skip
        await d.start()
        self.daemon = d
        return d

    async def stop(self) -> None:
        if self.daemon is not None:
            await self.daemon.stop()
            self.daemon = None

    async def start_ingest(self) -> None:
        registry = self.tmp / "tables.toml"
        registry.write_text(
            f'[tables."{TABLE}"]\ngame = "fantan"\nkeys = ["{self.state / "identity.pub"}"]\n'
        )
        self.ingest = WorkerTask(
            IngestSettings(
                host=self.broker.host, port=self.broker.port, db=self.db, group="ev",
                worker="w1", session_expiry_s=3600, duty_interval_s=0.2, gap_grace_s=0.5,
                replay_retry_s=3.0, lag_interval_s=0.5,
                signer=self.principals.signer("ingest"), registry_file=str(registry),
            )
        )  # fmt: skip
        await self.ingest.subscribed()

    @contextlib.asynccontextmanager
    async def floor(self) -> AsyncIterator[FloorClient]:
        self._clients += 1  # request ids of its own (the journal remembers every one)
        async with FloorClient(
            self.broker.host,
            self.broker.port,
            TABLE,
            signers=self.principals,
            client_id=f"ev-{self._clients}",
        ) as client:
            yield client

    async def play(
        self,
        floor: FloorClient,
        number: int,
        meanwhile: Callable[[], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        assert self.daemon is not None and self.daemon.parts.engine is not None
        after = self.daemon.parts.engine.last_round_id()  # the dealer's terminal knows it
        assert (r := await floor.command("open_betting", round_id=after))["status"] == "ok", r
        if meanwhile is not None:
            await meanwhile()
        bet = {"bet_id": f"b{time.monotonic_ns()}", "seat": 1, "bet_type": "fan",
               "selection": number, "stake": 2000}  # fmt: skip
        assert (r := await floor.place(bet))["status"] == "accepted", r
        assert (r := await floor.command("close_betting"))["status"] == "ok", r
        assert (r := await floor.command("result", outcome={"number": number}))["status"] == "ok"
        return dict(await floor.next_round())

    async def stored(self) -> dict[int, str]:
        store = await open_store(self.db)
        try:
            return dict(await store.rounds_of(TABLE))
        finally:
            await store.close()

    async def quarantined(self) -> list[dict[str, Any]]:
        store = await open_store(self.db)
        try:
            return await store.quarantine.messages(table=TABLE)
        finally:
            await store.close()

    async def retained(self, topic: str) -> bytes | None:
        """The broker's retained message on ``topic`` (None: nothing retained)."""
        async with aiomqtt.Client(self.broker.host, self.broker.port) as c:
            await c.subscribe(topic, qos=1)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    async for msg in c.messages:
                        if msg.retain:
                            return bytes(msg.payload)  # type: ignore[arg-type]
        return None

    async def record_seq(self) -> int:
        raw = await self.retained(f"casino/floor/records/{TABLE}")
        if raw is None:
            return 0
        key = load_public_key(self.principals.public_keys["ingest"])
        doc, _ = open_sealed(raw, "record", [key], domain=FLOOR_DOMAIN)
        return int(doc["seq"])


@pytest.fixture
def pg_db(postgres: Any) -> str:
    return new_database(postgres)


async def test_a_forged_round_before_the_real_one_is_quarantined_and_the_real_one_stored(
    tmp_path: Path, mosquitto_broker: Any, pg_db: str
) -> None:
    site = Site(tmp_path, mosquitto_broker, pg_db)
    await site.start_ingest()
    d = await site.start()
    try:
        async with site.floor() as floor:
            first = await site.play(floor, 1)

            async def forge() -> None:
                # While round 2 is open, the attacker publishes round seq 2 with every bet
                # paid a hundredfold, before the table's real round 2: unsigned; with the
                # signature of the table's round 1; signed with a key of the attacker's.
                forged = dict(first, seq=2, round_id=f"{TABLE}-000002-00000000")
                forged["bets"] = [dict(b, payout=100 * b["stake"]) for b in forged["bets"]]
                unsigned = {k: v for k, v in forged.items() if k != "signature"}
                async with aiomqtt.Client(mosquitto_broker.host, mosquitto_broker.port) as bad:
                    topic = f"casino/tables/{TABLE}/rounds"
                    await bad.publish(topic, json.dumps(unsigned), qos=1)
                    await bad.publish(topic, json.dumps(forged), qos=1)
                    await bad.publish(topic, seal(Ed25519PrivateKey.generate(), "rounds", forged))

                async def both() -> bool:
                    return len(await site.quarantined()) >= 3

                await until(both, 15, "the forgeries quarantined (before the real round)")

            # (The test's floor client, which verifies nothing, takes the forgery for the
            # round; the ingest does not.)
            await site.play(floor, 2, meanwhile=forge)
        journal_rounds = {r.seq: r.round_id for r in d.journal.rounds.summary(10)}  # type: ignore[union-attr]

        async def both_stored() -> bool:
            return len(await site.stored()) == 2 and len(await site.quarantined()) >= 3

        await until(both_stored, 30, "the real rounds stored and the forgeries quarantined")
        stored = await site.stored()
        assert [json.loads(stored[s])["round_id"] for s in (1, 2)] == [
            journal_rounds[1],
            journal_rounds[2],
        ]
        assert d.journal is not None
        (text,) = d.journal.db.sql.execute(
            "SELECT payload FROM settlements WHERE round_id = ?", (journal_rounds[2],)
        ).fetchone()
        assert stored[2] == text  # the real round 2, byte for byte as journaled and signed
        assert all(b["payout"] < 100 * b["stake"] for b in json.loads(text)["bets"])
        codes = sorted(q["code"] for q in await site.quarantined())
        assert codes == ["BAD_SIGNATURE", "NOT_CANONICAL", "UNSIGNED"], codes
        await until(lambda: _eq(site.record_seq(), 2), 10, "the floor's record of round 2")
        store = await open_store(pg_db)
        try:
            lag = await store.lag()
        finally:
            await store.close()
        assert lag["conflicts"] == 0
    finally:
        await site.stop()
        if site.ingest is not None:
            await site.ingest.stop()
    # The honest journal against what the floor holds: nothing rewritten.
    anchors = tmp_path / "anchors.jsonl"
    anchors.write_text("".join(p + "\n" for _, p in sorted(stored.items())))
    r = subprocess.run(
        [sys.executable, "-m", "firmware_host", "audit", "verify", "--journal",
         str(site.journal), "--key", str(site.state / "audit.key"), "--anchors", str(anchors)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr


async def _eq(value: Awaitable[int], expected: int) -> bool:
    return await value == expected


def backup(src: Path, dst: Path) -> None:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)


def restore(copy: Path, journal: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{journal}{suffix}").unlink(missing_ok=True)
    backup(copy, journal)


async def test_two_successive_restores_are_refused_end_to_end(
    tmp_path: Path, mosquitto_broker: Any, pg_db: str
) -> None:
    site = Site(tmp_path, mosquitto_broker, pg_db)
    await site.start_ingest()
    old, newer = tmp_path / "old.sqlite3", tmp_path / "newer.sqlite3"
    try:
        await site.start()
        async with site.floor() as floor:
            await site.play(floor, 1)
        await site.stop()
        backup(site.journal, old)  # after round 1
        await site.start()
        async with site.floor() as floor:
            await site.play(floor, 2)
        await site.stop()
        backup(site.journal, newer)  # after round 2
        await site.start()
        async with site.floor() as floor:
            await site.play(floor, 3)
            await site.play(floor, 4)
        await site.stop()
        await until(lambda: _eq(site.record_seq(), 4), 15, "the floor's record of round 4")
        anchor = await site.retained(f"casino/tables/{TABLE}/anchor")
        assert anchor is not None and json.loads(anchor)["seq"] == 4

        for copy in (old, newer):
            restore(copy, site.journal)
            d = await site.start()
            assert d.journal is not None
            faults = {f.code: f for f in d.journal.faults.active()}
            assert BEHIND in faults, (copy.name, list(faults))
            assert "Rounds continue from seq 5" in faults[BEHIND].message
            await asyncio.sleep(0.5)  # whatever the link would publish, it has
            again = await site.retained(f"casino/tables/{TABLE}/anchor")
            assert again == anchor, "the table overwrote the broker's anchor with an older one"
            state = json.loads(await site.retained(f"casino/tables/{TABLE}/state") or b"{}")
            assert BEHIND in state.get("faults", []) and state.get("anchor") is None, state
            assert d.parts.engine is not None
            async with site.floor() as floor:
                r = await floor.command("open_betting", round_id=d.parts.engine.last_round_id())
                assert (r["status"], r.get("code")) == ("error", "PLAY_STOPPED"), r
            await site.stop()

        # The technician reconciled the newer copy with the floor and clears the fault.
        d = await site.start()
        assert d.parts.console_backend is not None and d.journal is not None
        d.parts.console_backend.clear_fault(BEHIND, "reconciled with the floor's rounds 3-4", "tech1")
        async with site.floor() as floor:
            fifth = await site.play(floor, 1)
        assert fifth["seq"] == 5  # never a seq the floor has seen

        async def quarantined() -> bool:
            return any(q["code"] == "CHAIN_NOT_ADVANCING" for q in await site.quarantined())

        await until(quarantined, 15, "round 5 quarantined: its chain goes back")
        assert 5 not in await site.stored()
        (q,) = [q for q in await site.quarantined() if q["code"] == "CHAIN_NOT_ADVANCING"]
        # A person who reconciled the table accepts it, as docs/floor.md says.
        r = subprocess.run(
            [sys.executable, "-m", "firmware_host", "floor-ingest", "quarantine", "release",
             "--db", pg_db, "--sha256", q["sha256"], "--by", "pit-boss-2",
             "--reason", "journal restored from a copy, reconciled"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads((await site.stored())[5])["round_id"] == fifth["round_id"]
    finally:
        await site.stop()
        if site.ingest is not None:
            await site.ingest.stop()


async def test_replay_budgets_are_per_principal_over_mosquitto(
    tmp_path: Path, mosquitto_broker: Any, pg_db: str
) -> None:
    """The issue's starvation: a point-of-sale principal (role floor_system) spends the
    table's replay budget in a few requests; the floor ingest's one-round repair that
    follows is answered all the same (each principal has its own minute's budget)."""
    site = Site(tmp_path, mosquitto_broker, pg_db)
    await site.start()
    try:
        async with site.floor() as floor:
            for n in (1, 2, 3):
                await site.play(floor, n)
            pos, ingest = site.principals.signer("floor"), site.principals.signer("ingest")
            refused = None
            for _ in range(10):  # 500 rounds a request at most, 2,000 a minute each
                r = await floor.command("replay_rounds", from_seq=1, signer=pos)
                if r["status"] == "error":
                    refused = r
                    break
                assert r["data"]["queued"] >= 1, r
            # Three rounds a request: the budget lasts 667 requests; ask many at once.
            while refused is None:
                answers = await asyncio.gather(
                    *(floor.command("replay_rounds", from_seq=1, signer=pos) for _ in range(50))
                )
                refused = next((a for a in answers if a["status"] == "error"), None)
            assert refused["code"] == "REPLAY_RATE_LIMITED", refused
            repair = await floor.command("replay_rounds", from_seq=2, to_seq=2, signer=ingest)
            assert repair["status"] == "ok", repair
            assert (repair["data"]["queued"], repair["data"]["first_seq"]) == (1, 2), repair
    finally:
        await site.stop()
