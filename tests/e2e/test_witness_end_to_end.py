"""Issue 32 item 1, end to end: a table with a witness, through the real daemon, its
simulated result device on a pty (the Cammegh SS2's wheel, the reference shaker) and a
real mosquitto. The witness is a recognition service with a principal and a key of its
own, sending signed ``witness_result`` commands; a supervisor resolves what is held.

For a roulette and a sic bo table: the witness agrees (settled), disagrees (held,
resolved by a supervisor, settled on the reading that stands), is silent (held at the
configured time); the journal's chain holds both readings, the dispute and the
resolution, and ``tablectl audit verify`` (the real entry point) passes. And the
attacks: a forged reading, a replay of an earlier round's, a reading before betting
closed, a second one, one from a principal that is not the witness: each refused and
journaled, none settles anything (``docs/witness.md``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from firmware_host.auth import Signer
from firmware_host.auth.keys import generate
from firmware_host.config import validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.schemas import validate
from firmware_host.table.phase import Phase
from tablesim.floor_client import FloorClient
from tablesim.principals import Principals, make_principals

pytestmark = pytest.mark.mosquitto

ROLES = {
    "dealer": ("dealer",),
    "pit": ("pit_supervisor",),
    "pit2": ("pit_supervisor",),
    "floor": ("floor_system",),
    "camera": ("witness",),
    "camera2": ("witness",),  # a witness role, but not this table's witness
}
TIMEOUT_S = 2


@dataclass
class Table:
    d: TableDaemon
    floor: FloorClient
    principals: Principals
    sim: Any
    tmp: Path

    @property
    def engine(self) -> Any:
        return self.d.parts.engine

    @property
    def witness(self) -> Any:
        return self.d.parts.witness

    def signer(self, name: str) -> Signer:
        return self.principals.signer(name)

    def in_flight(self) -> str:
        return str(self.engine.current.round_id)

    async def read(self, outcome: Any, *, who: str = "camera", **kw: Any) -> Any:
        """The witness's signed reading of the round in flight (or ``round_id``)."""
        kw.setdefault("round_id", self.in_flight())
        return await self.floor.command(
            "witness_result", signer=self.signer(who), outcome=outcome, **kw
        )

    async def resolve(self, reading: str, reason: str, *, who: str = "pit") -> Any:
        return await self.floor.command(
            "resolve_result",
            round_id=self.in_flight(),
            signer=self.signer(who),
            reading=reading,
            reason=reason,
        )

    def chain_kinds(self, round_id: str) -> list[str]:
        return [
            e.kind
            for e in self.d.journal.chain.events(10_000)
            if isinstance(e.data, dict) and e.data.get("round_id") == round_id
        ]

    def chain_data(self, kind: str, round_id: str) -> list[dict[str, Any]]:
        return [
            e.data
            for e in self.d.journal.chain.events(10_000)
            if e.kind == kind and isinstance(e.data, dict) and e.data.get("round_id") == round_id
        ]

    def faults(self) -> set[str]:
        return {f.code for f in self.d.journal.faults.active()}

    def alerts(self, round_id: str) -> list[Any]:
        return [a for a in self.d.parts.alerts.active() if a.subject == round_id]

    def device(self, name: str = "camera-1") -> Any:
        msgs = [m for m in self.floor.messages if m.topic == f"devices/{name}"]
        return msgs[-1].json() if msgs else None


async def until(cond: Callable[[], bool], timeout: float = 15.0, what: str = "") -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await asyncio.sleep(0.02)


def ok(answer: Any) -> Any:
    assert answer["status"] == "ok", answer
    validate("command_response", answer)
    return answer["data"]


def unsigned(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer as the journal keeps it (the link signs what it publishes)."""
    return {k: v for k, v in answer.items() if k != "signature"}


def refused(answer: Any, code: str) -> Any:
    assert answer["status"] == "error" and answer["code"] == code, answer
    validate("command_response", answer)
    return answer


MQTT_WITNESS = {"source": "mqtt", "name": "camera-1", "principal": "camera", "timeout_s": TIMEOUT_S}


async def start_table(
    tmp: Path,
    broker: Any,
    game: str,
    device: dict[str, Any],
    sim: Any,
    *,
    witness: dict[str, Any] = MQTT_WITNESS,
    second: dict[str, Any] | None = None,
    **auth: Any,
) -> Table:
    principals = make_principals(tmp / "keys", ROLES)
    doc = {
        "table": {"id": f"w-{game}", "game": game},
        "limits": {"min_stake": 100, "max_stake": 1_000_000},
        "devices": {"result": device, **({"wheel2": second} if second else {})},
        "witness": witness,
        "auth": principals.auth_section(**auth),
    }  # fmt: skip
    cfg = validate_document(doc)
    mqtt = MqttSettings(host=broker.host, port=broker.port, reconnect_min_ms=50)
    d = TableDaemon(cfg, state_dir=tmp, runtime_dir=tmp, mqtt=mqtt)
    await d.start()
    await d.parts.link.wait_subscribed(30)
    floor = FloorClient(broker.host, broker.port, f"w-{game}", signers=principals)
    await floor.start()
    return Table(d, floor, principals, sim, tmp)


async def stop_table(t: Table) -> None:
    await t.floor.stop()
    await t.d.stop()


def audit_verify(t: Table) -> subprocess.CompletedProcess[str]:
    """``tablectl audit verify`` on the stopped daemon's journal, the real entry point."""
    return subprocess.run(
        [sys.executable, "-m", "firmware_host", "audit", "verify",
         "--journal", str(t.tmp / "journal.sqlite3"), "--key", str(t.tmp / "audit.key")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


# -- roulette ------------------------------------------------------------------------
@pytest.fixture
async def roulette(tmp_path: Path, mosquitto_broker: Any) -> AsyncIterator[Table]:
    from bench.table import FAST
    from drivers.cammegh.sim import CammeghSim

    sim = CammeghSim(seed=11, timing=FAST)
    server = await sim.serve_pty()
    await sim.power_on()
    t = await start_table(
        tmp_path,
        mosquitto_broker,
        "roulette",
        {"driver": "cammegh-ss2", "port": str(server.path)},
        sim,
        two_person=["jackpot_paid", "resolve_result"],
    )
    try:
        yield t
    finally:
        await stop_table(t)
        await sim.stop()


async def spin_round(t: Table, number: int, stake: int = 1000) -> str:
    """A round opened by the wheel, a straight on ``number`` and red, the ball landing
    on ``number``: returns the round, its result held for the witness."""
    await until(lambda: t.engine.phase is Phase.OPEN, what="betting open")
    rid = t.engine.current.round_id
    bets = [
        {"bet_id": f"s-{rid[-4:]}", "seat": 1, "bet_type": "straight", "selection": [number],
         "stake": stake},
        {"bet_id": f"r-{rid[-4:]}", "seat": 2, "bet_type": "red", "stake": stake},
    ]  # fmt: skip
    for bet in bets:
        answer = await t.floor.place(bet, round_id=rid)
        assert answer["status"] == "accepted", answer
    t.sim.set_next(number)
    assert await t.sim.spin() == number
    await until(t.witness.holding, what="the primary reading held")
    return str(rid)


async def test_roulette_witness_agrees_disagrees_and_is_silent(roulette: Table) -> None:
    t = roulette
    # 1. The witness agrees: settled on the wheel's number, both readings in the chain.
    rid = await spin_round(t, 17)
    assert t.engine.phase is Phase.CLOSED and t.d.journal.rounds.settlement(rid) is None
    assert ok(await t.read({"number": 17}))["status"] == "settled"
    settled = await t.floor.next_round()
    assert (settled["round_id"], settled["status"]) == (rid, "settled")
    assert settled["outcome"]["number"] == 17
    assert {b["bet_id"]: b["result"] for b in settled["bets"]} == {
        f"s-{rid[-4:]}": "win",
        f"r-{rid[-4:]}": "lose",
    }  # fmt: skip (17 is black)
    readings = t.chain_data("result_reading", rid)
    assert [r["reading"] for r in readings] == ["primary", "witness"]
    assert readings[0]["source"].startswith("result:spin") and readings[0]["frames"]
    assert readings[1]["source"] == "mqtt:camera"
    assert "result_witnessed" in t.chain_kinds(rid) and not t.faults()
    await until(lambda: (t.device() or {}).get("witness", {}).get("agreed") == 1)
    health = t.device()
    validate("device", health)
    assert health["state"] == "online" and health["witness"]["lag_ms"] >= 0

    # 2. It disagrees: held (nothing settled, betting closed, the fault latched, the alert
    # raised, both readings and their frames journaled); the wheel's next game is not a
    # round; two supervisors resolve it for the witness's reading; settled on that.
    rid = await spin_round(t, 4)
    held = ok(await t.read({"number": 5}))
    assert held == {"round_id": rid, "status": "held"}
    await until(lambda: "RESULT_DISPUTED" in t.faults(), what="the fault")
    assert t.engine.phase is Phase.CLOSED and t.d.journal.rounds.settlement(rid) is None
    [alert] = t.alerts(rid)
    assert alert.code == "RESULT_DISPUTED" and alert.state == "raised"
    disputed = t.chain_data("result_disputed", rid)[0]
    assert disputed["why"] == "disagree"
    assert disputed["primary"]["outcome"]["number"] == 4
    assert disputed["witness"]["outcome"]["number"] == 5
    assert disputed["primary"]["frames"] and disputed["witness"]["frames"]
    assert len(t.d.journal.frames.of_round(rid)) >= 2
    late_bet = {"bet_id": "late", "seat": 3, "bet_type": "black", "stake": 1000}
    assert (await t.floor.place(late_bet, round_id=rid))["code"] == "BETTING_CLOSED"
    await asyncio.sleep(0.5)  # the wheel goes on to its next game: nothing opens
    assert t.engine.current.round_id == rid and t.engine.phase is Phase.CLOSED
    events = [m.json() for m in t.floor.messages if m.topic == "events"]
    assert any(e["event"] == "result_disputed" and e["round_id"] == rid for e in events)
    state = [m.json() for m in t.floor.messages if m.topic == "state"][-1]
    assert "RESULT_DISPUTED" in state["faults"]
    await until(lambda: t.device()["state"] == "fault", what="the witness in fault")
    assert t.device()["witness"]["disagreed"] == 1
    first = ok(await t.resolve("witness", "the camera shows 5: the wheel misread"))
    assert first == {"round_id": rid, "resolved": False, "confirmed_by": ["pit"]}
    assert t.d.journal.rounds.settlement(rid) is None  # one supervisor is not enough
    second = ok(await t.resolve("witness", "confirmed on the video", who="pit2"))
    assert second["resolved"] is True and second["outcome"]["number"] == 5
    settled = await t.floor.next_round()
    assert (settled["round_id"], settled["outcome"]["number"]) == (rid, 5)
    assert {b["result"] for b in settled["bets"]} == {"lose", "win"}  # 5 is red
    resolved = t.chain_data("result_resolved", rid)[0]
    assert (resolved["reading"], resolved["by"]) == ("witness", ["pit", "pit2"])
    await until(lambda: not t.faults(), what="the fault cleared")
    # the alert stays until acknowledged
    [alert] = t.alerts(rid)
    ok(await t.floor.command("ack_alert", signer=t.signer("pit"), alert_id=alert.id,
                             reason="round resolved on the video"))  # fmt: skip
    assert t.alerts(rid) == []

    # 3. It is silent: held at the configured time; a late reading is evidence, not a
    # result; a supervisor voids the round, every bet refunded.
    rid = await spin_round(t, 26)
    loop = asyncio.get_running_loop()
    read_at = loop.time()
    await until(lambda: "RESULT_DISPUTED" in t.faults(), timeout=TIMEOUT_S + 10, what="timeout")
    waited = loop.time() - read_at
    assert TIMEOUT_S - 0.3 <= waited <= TIMEOUT_S + 3, waited
    assert t.chain_data("result_disputed", rid)[0]["why"] == "timeout"
    assert t.d.journal.rounds.settlement(rid) is None
    await until(lambda: t.device()["state"] == "offline", what="the witness offline")
    assert t.device()["witness"]["timeouts"] == 1
    late = ok(await t.read({"number": 26}))
    assert late == {"round_id": rid, "status": "held", "late": True}
    assert t.d.journal.rounds.settlement(rid) is None
    ok(await t.floor.command("void_round", round_id=rid, signer=t.signer("pit"),
                             reason="witness silent"))  # fmt: skip
    voided = await t.floor.next_round()
    assert (voided["round_id"], voided["status"]) == (rid, "void")
    await until(lambda: not t.faults(), what="the fault cleared by the void")
    # play goes on: the wheel's next game opens the next round
    await until(lambda: t.engine.phase is Phase.OPEN, what="the next round")

    # 4. The whole chain verifies with the table's key, by the real entry point.
    await stop_table(t)
    done = audit_verify(t)
    assert done.returncode == 0, done.stdout + done.stderr


async def test_roulette_forged_replayed_early_and_duplicate_readings_are_refused(
    roulette: Table,
) -> None:
    t = roulette
    # A reading before betting closed: refused, journaled with its answer.
    await until(lambda: t.engine.phase is Phase.OPEN, what="betting open")
    first = t.engine.current.round_id
    early = refused(await t.read({"number": 1}, request_id="early-1"), "WITNESS_TOO_EARLY")
    assert t.d.journal.requests.answered("camera", "early-1").answer == unsigned(early)

    # The first round, read and agreed; its signed reading kept to be replayed.
    t.sim.set_next(8)
    assert await t.sim.spin() == 8
    await until(t.witness.holding)
    body = t.floor.command_body("witness_result", round_id=first, outcome={"number": 8})
    signed = t.signer("camera").sign("commands/request", t.floor.table_id,
                                      {"request_id": "cam-1", **body})  # fmt: skip
    agreed = await t.floor.send_raw_awaiting("commands", json.dumps(signed).encode(), "cam-1")
    assert ok(agreed)["status"] == "settled"
    assert (await t.floor.next_round())["round_id"] == first

    # The next round is read by the wheel and held for its witness.
    rid = await spin_round(t, 30)
    # A forgery: the witness's name, another key (BAD_SIGNATURE), counted, unjournaled.
    priv, _ = generate("camera", t.tmp / "forger", overwrite=True)
    forger = Signer("camera", priv)
    before = t.d.parts.floor.counters["refused_unauthenticated"]
    body = t.floor.command_body("witness_result", round_id=rid, outcome={"number": 30})
    forged = forger.sign("commands/request", t.floor.table_id, {"request_id": "f-1", **body})
    answer = await t.floor.send_raw_awaiting("commands", json.dumps(forged).encode(), "f-1")
    assert answer["status"] == "error" and answer["code"] == "BAD_SIGNATURE"
    assert t.d.parts.floor.counters["refused_unauthenticated"] == before + 1
    # The earlier round's reading replayed, byte for byte: its first answer again, nothing
    # acts; re-sent under a new request id (the witness's own key): STALE_ROUND.
    replayed = await t.floor.send_raw_awaiting("commands", json.dumps(signed).encode(), "cam-1")
    assert replayed == agreed
    stale = refused(await t.read({"number": 8}, round_id=first), "STALE_ROUND")
    assert stale["round_id"] == rid
    # Another principal with the witness role, not this table's witness.
    refused(await t.read({"number": 30}, who="camera2"), "NOT_THE_WITNESS")
    # A dealer may not read for the witness.
    refused(await t.read({"number": 30}, who="dealer"), "NOT_PERMITTED")
    # A reading the game refuses (no pocket 37).
    bad = await t.read({"number": 37})
    assert bad["status"] == "error" and t.witness.held()["witness"] is None, bad
    assert t.d.journal.rounds.settlement(rid) is None and t.engine.phase is Phase.CLOSED
    assert not t.faults()  # none of them is a reading: the round waits for the real one
    # The real reading disagrees: held. A second reading (a "duplicate"): refused.
    assert ok(await t.read({"number": 31}, request_id="cam-2"))["status"] == "held"
    dup = refused(await t.read({"number": 30}, request_id="cam-3"), "WITNESS_ALREADY_READ")
    assert t.d.journal.requests.answered("camera", "cam-3").answer == unsigned(dup)
    # The same request again (QoS 1 redelivery): the same answer, nothing acts.
    again = await t.read({"number": 31}, request_id="cam-2")
    assert again["data"] == {"round_id": rid, "status": "held"}
    assert t.d.journal.rounds.settlement(rid) is None
    # resolve_result: only for the round held, only a supervisor, a reading that exists
    refused(await t.resolve("primary", "x", who="dealer"), "NOT_PERMITTED")
    refused(await t.resolve("nobody", "x"), "MALFORMED_REQUEST")
    ok(await t.resolve("primary", "the wheel's sensor is right"))
    ok(await t.resolve("primary", "seen on the video", who="pit2"))
    settled = await t.floor.next_round()
    assert (settled["round_id"], settled["outcome"]["number"]) == (rid, 30)
    await stop_table(t)
    done = audit_verify(t)
    assert done.returncode == 0, done.stdout + done.stderr


# -- sic bo --------------------------------------------------------------------------
@pytest.fixture
async def sicbo(tmp_path: Path, mosquitto_broker: Any) -> AsyncIterator[Table]:
    from drivers.shaker.sim import ShakerSimulator

    sim = ShakerSimulator(seed=5)
    server = await sim.serve_pty()
    t = await start_table(
        tmp_path, mosquitto_broker, "sicbo", {"driver": "shaker-ref", "port": str(server.path)}, sim
    )
    shaker = t.d.drivers["result"]
    await until(lambda: shaker.health.state.value == "online", what="the shaker online")
    try:
        yield t
    finally:
        await stop_table(t)
        await sim.close()


async def throw_round(t: Table, dice: tuple[int, int, int]) -> str:
    """The dice shaken under the dome (betting opens, the reading sealed), a bet on
    small, betting closed by the dealer: the sealed reading is the primary, held."""
    await until(lambda: t.engine.phase is Phase.IDLE, what="no round in flight")
    await t.sim.throw(dice)
    await until(lambda: t.engine.phase is Phase.OPEN, what="betting open")
    rid = str(t.engine.current.round_id)
    bet = {"bet_id": f"sm-{rid[-4:]}", "seat": 1, "bet_type": "small", "stake": 1000}
    assert (await t.floor.place(bet, round_id=rid))["status"] == "accepted"
    await until(lambda: t.d.parts.procedure.sealed is not None, what="the sealed reading")
    ok(await t.floor.command("close_betting", round_id=rid, signer=t.signer("dealer")))
    await until(t.witness.holding, what="the primary reading held")
    return rid


async def test_sicbo_witness_agrees_disagrees_and_is_silent(sicbo: Table) -> None:
    t = sicbo
    # Agrees, the camera listing the dice in another order (three dice are not told
    # apart, 57/2004 art. 6-7): settled on the shaker's reading.
    rid = await throw_round(t, (1, 2, 4))
    assert ok(await t.read({"dice": [4, 1, 2]}))["status"] == "settled"
    settled = await t.floor.next_round()
    assert (settled["round_id"], settled["outcome"]["dice"]) == (rid, [1, 2, 4])
    assert settled["bets"][0]["result"] == "win"  # total 7: small (art. 6)

    # Disagrees: held; one supervisor (no two-person rule on this table) resolves it for
    # the shaker's reading.
    rid = await throw_round(t, (6, 6, 5))
    assert ok(await t.read({"dice": [6, 5, 5]})) == {"round_id": rid, "status": "held"}
    await until(lambda: "RESULT_DISPUTED" in t.faults())
    assert t.d.journal.rounds.settlement(rid) is None
    await asyncio.sleep(0.3)
    assert t.engine.phase is Phase.CLOSED and t.engine.current.round_id == rid
    data = ok(await t.resolve("primary", "dice seen on the dome camera: 6-6-5"))
    assert (data["resolved"], data["outcome"]["dice"]) == (True, [6, 6, 5])
    settled = await t.floor.next_round()
    assert (settled["round_id"], settled["outcome"]["dice"]) == (rid, [6, 6, 5])
    assert settled["bets"][0]["result"] == "lose"  # 17: big
    await until(lambda: not t.faults())

    # Silent: held at the configured time; resolved for the primary.
    rid = await throw_round(t, (3, 3, 3))
    await until(lambda: "RESULT_DISPUTED" in t.faults(), timeout=TIMEOUT_S + 10)
    assert t.chain_data("result_disputed", rid)[0]["why"] == "timeout"
    refused(await t.resolve("witness", "x"), "NO_WITNESS_READING")
    ok(await t.resolve("primary", "the witness was down; the dice seen by the inspector"))
    settled = await t.floor.next_round()
    assert (settled["round_id"], settled["outcome"]["triple"]) == (rid, True)
    kinds = t.chain_kinds(rid)
    for kind in ("result_reading", "result_disputed", "result_resolved"):
        assert kind in kinds, (kind, kinds)
    await until(lambda: t.device()["witness"]["resolved"] == 2, what="the health")
    health = t.device()
    validate("device", health)
    assert health["witness"]["disagreed"] == 1 and health["witness"]["timeouts"] == 1
    assert health["witness"]["disagreement_rate"] == 0.5
    await stop_table(t)
    done = audit_verify(t)
    assert done.returncode == 0, done.stdout + done.stderr


# -- a second device as the witness -------------------------------------------------
async def test_a_second_wheel_witnesses_the_first(tmp_path: Path, mosquitto_broker: Any) -> None:
    # Two SS2 wheels over their own ptys read the same ball (a second sensor ring): the
    # first drives the rounds, the second's winning number is the witness's reading.
    from bench.table import FAST
    from drivers.cammegh.sim import CammeghSim

    sims = [CammeghSim(seed=s, timing=FAST) for s in (1, 2)]
    ports = [await sim.serve_pty() for sim in sims]
    for sim in sims:
        await sim.power_on()
    t = await start_table(
        tmp_path,
        mosquitto_broker,
        "roulette",
        {"driver": "cammegh-ss2", "port": str(ports[0].path)},
        sims[0],
        witness={
            "source": "device",
            "device": "wheel2",
            "name": "wheel2-witness",
            "timeout_s": TIMEOUT_S,
        },
        second={"driver": "cammegh-ss2", "port": str(ports[1].path)},
    )
    try:
        await until(lambda: t.d.drivers["wheel2"].health.state.value == "online")
        for first, second in ((21, 21), (21, 22)):
            await until(lambda: t.engine.phase is Phase.OPEN, what="betting open")
            rid = t.in_flight()
            sims[0].set_next(first)
            sims[1].set_next(second)
            await asyncio.gather(sims[0].spin(), sims[1].spin())
            if first == second:
                settled = await t.floor.next_round()
                assert (settled["round_id"], settled["outcome"]["number"]) == (rid, 21)
                assert "result_witnessed" in t.chain_kinds(rid)
                assert t.chain_data("result_reading", rid)[1]["source"] == "wheel2"
            else:
                await until(lambda: "RESULT_DISPUTED" in t.faults(), what="held")
                assert t.chain_data("result_disputed", rid)[0]["witness"]["outcome"]["number"] == 22
                ok(await t.resolve("witness", "the second ring read it right"))
                settled = await t.floor.next_round()
                assert (settled["round_id"], settled["outcome"]["number"]) == (rid, 22)
        await until(
            lambda: (t.device("wheel2-witness") or {}).get("witness", {}).get("disagreed") == 1
        )
        assert t.device("wheel2-witness")["witness"]["source"] == "device"
    finally:
        await stop_table(t)
        for sim in sims:
            await sim.stop()
