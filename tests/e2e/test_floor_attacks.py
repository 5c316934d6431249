"""Issue 14's attacks, as a hostile floor client would make them, over a real mosquitto
against a running table daemon (``tests/table/test_floor_trust.py`` covers each
wall in detail, against the request handler): each is refused, or answered with
the original answer while nothing acts again."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from firmware_host.auth import Signer
from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.schemas import validate
from firmware_host.timefmt import utc_now
from tablesim.floor_client import FloorClient
from tablesim.principals import make_principals

ROLES = {
    "dealer": ("dealer",),
    "pit": ("pit_supervisor",),
    "floor": ("floor_system",),
    "floor2": ("floor_system",),
}


@pytest.fixture
async def table(tmp_path: Path, mosquitto_broker: Any) -> Any:
    principals = make_principals(tmp_path / "keys", ROLES)
    doc = {
        "table": {"id": "atk-1", "game": "roulette", "result_source": "manual"},
        "limits": {"min_stake": 100, "max_stake": 1_000_000},
        "auth": principals.auth_section(),
    }
    cfg = validate_document(doc)
    mqtt = MqttSettings(host=mosquitto_broker.host, port=mosquitto_broker.port, reconnect_min_ms=50)
    d = TableDaemon(cfg, state_dir=tmp_path, runtime_dir=tmp_path, mqtt=mqtt)
    await d.start()
    await d.parts.link.wait_subscribed(30)
    floor = FloorClient(mosquitto_broker.host, mosquitto_broker.port, "atk-1", signers=principals)
    await floor.start()
    try:
        yield d, floor, principals
    finally:
        await floor.stop()
        await d.stop()


async def answer_to_unauthenticated(floor: FloorClient, kind: str, payload: bytes) -> Any:
    """Publish ``payload``; the answer names no principal (nothing in the request is
    trusted) and echoes its request id only if it could be read."""
    before = len(floor.messages)
    await floor.send_raw(kind, payload)
    topic = f"{kind}/response"
    for _ in range(300):
        for m in floor.messages[before:]:
            if m.topic == topic and "principal" not in m.json():
                return m.json()
        await asyncio.sleep(0.02)
    raise AssertionError(f"no answer on {topic}")


def ok(answer: Any) -> Any:
    assert answer["status"] in ("ok", "accepted"), answer
    return answer


@pytest.mark.mosquitto
async def test_retried_void_and_result_after_the_next_round_opened(table: Any) -> None:
    d, floor, _ = table
    first = ok(await floor.command("open_betting"))["data"]["round_id"]
    void = ok(await floor.command("void_round", request_id="void-1", reason="ball left the wheel"))
    second = ok(await floor.command("open_betting"))["data"]["round_id"]
    ok(
        await floor.place(
            {"bet_id": "s4", "seat": 1, "bet_type": "straight", "selection": [4], "stake": 1000}
        )
    )
    # the retry, as docs/mqtt.md tells a requester to do: same request_id, signed again
    again = await floor.command(
        "void_round", round_id=first, request_id="void-1", reason="ball left the wheel"
    )
    assert again == void
    assert d.parts.engine.current.round_id == second and len(d.parts.engine.desk.bets()) == 1
    ok(await floor.command("close_betting"))
    result = ok(await floor.command("result", request_id="res-1", outcome={"number": 4}))
    assert result["data"]["round_id"] == second
    third = ok(await floor.command("open_betting"))["data"]["round_id"]
    ok(await floor.command("close_betting"))
    again = await floor.command(
        "result", round_id=second, request_id="res-1", outcome={"number": 4}
    )
    assert again == result
    assert d.parts.engine.current.round_id == third and d.parts.engine.phase.value == "closed"
    stale = await floor.command("result", round_id=second, outcome={"number": 4})
    assert (stale["code"], stale["round_id"]) == ("STALE_ROUND", third)
    validate("command_response", stale)
    assert d.journal.rounds.settlement(third) is None


@pytest.mark.mosquitto
async def test_a_retried_accepted_bet_after_close_is_answered_accepted(table: Any) -> None:
    d, floor, _ = table
    rnd = ok(await floor.command("open_betting"))["data"]["round_id"]
    bet = {"bet_id": "b1", "seat": 2, "bet_type": "red", "stake": 1000}
    placed = ok(await floor.place(bet, request_id="bet-1"))
    ok(await floor.command("close_betting"))
    assert await floor.place(bet, round_id=rnd, request_id="bet-1") == placed
    again = await floor.place(bet, round_id=rnd)  # a new request for the same bet
    assert (again["status"], again["round_id"]) == ("accepted", rnd)
    ok(await floor.command("result", outcome={"number": 1}))
    settled = await floor.next_round()
    assert [b["bet_id"] for b in settled["bets"]] == ["b1"]
    assert (await floor.place(bet, round_id=rnd))["status"] == "accepted"  # after settlement


@pytest.mark.mosquitto
async def test_unsigned_forged_replayed_expired_and_wrong_role(table: Any) -> None:
    d, floor, principals = table
    rnd = ok(await floor.command("open_betting"))["data"]["round_id"]
    body = {
        "request_id": "x-1",
        "command": "void_round",
        "round_id": rnd,
        "args": {"reason": "not allowed"},
    }
    unsigned = await answer_to_unauthenticated(floor, "commands", json.dumps(body).encode())
    assert unsigned["code"] == "UNSIGNED"
    # the pit supervisor's name on a request signed with the floor system's key
    thief = Signer("pit", principals.signer("floor").key)
    forged = thief.sign("commands/request", "atk-1", body)
    answer = await answer_to_unauthenticated(floor, "commands", json.dumps(forged).encode())
    assert answer["code"] == "BAD_SIGNATURE"
    old = principals.signer("pit").sign(
        "commands/request",
        "atk-1",
        dict(body, request_id="x-2"),
        at=utc_now() - timedelta(minutes=5),
    )
    expired = await floor.send_raw_awaiting("commands", json.dumps(old).encode(), "x-2")
    assert expired["code"] == "REQUEST_EXPIRED"
    wrong_role = await floor.command(
        "void_round", reason="dealer", signer=principals.signer("dealer")
    )
    assert (wrong_role["code"], wrong_role["principal"]) == ("NOT_PERMITTED", "dealer")
    assert d.parts.engine.phase.value == "open" and d.parts.engine.current.round_id == rnd
    # a captured request replayed byte for byte: its answer again, nothing acts twice
    close = principals.signer("dealer").sign(
        "commands/request",
        "atk-1",
        {"request_id": "c-1", "command": "close_betting", "round_id": rnd},
    )
    payload = json.dumps(close).encode()
    first = ok(await floor.send_raw_awaiting("commands", payload, "c-1"))
    ok(await floor.command("result", outcome={"number": 7}))
    nxt = ok(await floor.command("open_betting"))["data"]["round_id"]
    assert await floor.send_raw_awaiting("commands", payload, "c-1") == first
    assert d.parts.engine.current.round_id == nxt and d.parts.engine.phase.value == "open"


@pytest.mark.mosquitto
async def test_a_bet_is_cancelled_only_by_the_principal_that_placed_it(table: Any) -> None:
    d, floor, principals = table
    ok(await floor.command("open_betting"))
    ok(await floor.place({"bet_id": "b1", "seat": 1, "bet_type": "black", "stake": 500}))
    other = await floor.cancel("b1", signer=principals.signer("floor2"))
    assert (other["status"], other["code"]) == ("rejected", "BET_NOT_OWNER")
    validate("bet_response", other)
    assert [b.bet_id for b in d.parts.engine.desk.bets()] == ["b1"]
    assert (await floor.cancel("b1"))["status"] == "accepted"
    assert d.parts.engine.desk.bets() == []
    state = floor.state
    assert state["auth"] == "signed" and state["result_source"] == "manual"
    validate("state", state)


@pytest.mark.mosquitto
async def test_a_dealer_signs_in_only_as_itself_a_supervisor_anyone(table: Any) -> None:
    # Issue 29: dealer-01 signed dealer_sign_in for dealer-02 and got ok.
    d, floor, principals = table
    dealer, pit = principals.signer("dealer"), principals.signer("pit")
    other = await floor.command("dealer_sign_in", dealer="dealer-02", signer=dealer)
    assert (other["status"], other["code"]) == ("error", "DEALER_NOT_BOUND"), other
    validate("command_response", other)
    assert d.parts.dealers.current() is None
    ok(await floor.command("dealer_sign_in", signer=dealer))
    assert d.parts.dealers.current() == "dealer"
    ok(await floor.command("dealer_sign_in", dealer="dealer-02", signer=pit))
    assert d.parts.dealers.current() == "dealer-02"
    ins = [e.data for e in d.journal.chain.events(50, kind="dealer_signed_in")]
    assert [(x["dealer"], x["by"], x["authority"]) for x in ins] == [
        ("dealer", "mqtt:dealer", "bound"),
        ("dealer-02", "mqtt:pit", "supervisor"),
    ]
    # the round the floor stores names the dealer on duty
    ok(await floor.command("open_betting"))
    ok(await floor.command("close_betting"))
    ok(await floor.command("result", outcome={"number": 9}))
    assert (await floor.next_round())["dealer"] == "dealer-02"


@pytest.mark.mosquitto
async def test_a_bet_with_a_duplicated_stake_is_refused_and_nothing_is_placed(
    table: Any,
) -> None:
    # Issue 29: "stake":10000,"stake":90000 was journaled at 90000, while a floor
    # system logging with a first-wins parser recorded 10000.
    d, floor, principals = table
    rnd = ok(await floor.command("open_betting"))["data"]["round_id"]
    bet = {"bet_id": "dup", "seat": 1, "bet_type": "red", "stake": 90000}
    signed = principals.signer("floor").sign(
        "bets/request", "atk-1",
        {"request_id": "dup-1", "action": "place", "round_id": rnd, "bet": bet},
    )  # fmt: skip
    text = json.dumps(signed).replace('"stake": 90000', '"stake": 10000, "stake": 90000')
    answer = await answer_to_unauthenticated(floor, "bets", text.encode())
    assert (answer["code"], answer["request_id"]) == ("DUPLICATE_MEMBER", None), answer
    validate("bet_response", answer)
    assert d.parts.engine.desk.bets() == [] and d.journal.requests.answered("floor", "dup-1") is None
    # sent once as signed, the same request id is then placed, once, at its one stake
    placed = ok(await floor.send_raw_awaiting("bets", json.dumps(signed).encode(), "dup-1"))
    assert placed["bet"]["stake"] == 90000 and [b.stake for b in d.parts.engine.desk.bets()] == [90000]
    state = floor.state
    assert state["accepted_risks"] == []
    by = {(b["principal"], b["code"]) for b in state["refused_requests"]["by"]}
    validate("state", state)
    assert by <= {("floor", "DUPLICATE_MEMBER"), ("unsigned", "DUPLICATE_MEMBER"),
                  ("unsigned", "UNSIGNED")}  # fmt: skip


@pytest.mark.mosquitto
async def test_an_unauthenticated_refusal_under_a_pending_id_is_not_taken_for_the_answer(
    table: Any,
) -> None:
    # Issue 29 item 8: a refusal of authentication carries the request id it could
    # read, names no principal, is sent at QoS 0 and journaled nowhere; the reference
    # client keeps waiting for the answer that names its principal.
    d, floor, principals = table
    rnd = ok(await floor.command("open_betting"))["data"]["round_id"]
    body = {"request_id": "pos-7", "action": "place", "round_id": rnd,
            "bet": {"bet_id": "b7", "seat": 1, "bet_type": "red", "stake": 1000}}  # fmt: skip
    forged = dict(principals.signer("floor2").sign("bets/request", "atk-1", body),
                  principal="floor")  # fmt: skip
    refusal = await answer_to_unauthenticated(floor, "bets", json.dumps(forged).encode())
    assert (refusal["code"], refusal["request_id"]) == ("BAD_SIGNATURE", "pos-7")
    assert "principal" not in refusal
    validate("bet_response", refusal)
    real = ok(await floor.place(body["bet"], request_id="pos-7"))
    assert real["principal"] == "floor" and [b.bet_id for b in d.parts.engine.desk.bets()] == ["b7"]


@pytest.mark.mosquitto
async def test_an_accepted_risk_is_logged_at_start_and_in_the_retained_state(
    tmp_path: Path, mosquitto_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 29: a freshness window of 300 s runs only when accepted in so many words,
    # and then every floor system sees it on the retained state.
    principals = make_principals(tmp_path / "keys", ROLES)
    doc = {
        "table": {"id": "atk-2", "game": "roulette", "result_source": "manual"},
        "auth": principals.auth_section(max_age_s=300),
    }
    with pytest.raises(ConfigInvalid, match="FRESHNESS_WINDOW_LONG"):
        TableDaemon(validate_document(doc), state_dir=tmp_path, runtime_dir=tmp_path)
    doc["auth"]["accept_risks"] = ["FRESHNESS_WINDOW_LONG"]
    mqtt = MqttSettings(host=mosquitto_broker.host, port=mosquitto_broker.port, reconnect_min_ms=50)
    d = TableDaemon(validate_document(doc), state_dir=tmp_path, runtime_dir=tmp_path, mqtt=mqtt)
    caplog.set_level("WARNING")
    await d.start()
    floor = FloorClient(mosquitto_broker.host, mosquitto_broker.port, "atk-2", signers=principals)
    await floor.start()
    try:
        await floor.until(lambda: isinstance(floor.state, dict)
                          and "accepted_risks" in floor.state, 10, "the state")  # fmt: skip
        assert floor.state["accepted_risks"] == ["FRESHNESS_WINDOW_LONG"]
        validate("state", floor.state)
        logged = [r.getMessage() for r in caplog.records if "accepted risk" in r.getMessage()]
        assert len(logged) == 1 and "auth.max_age_s: FRESHNESS_WINDOW_LONG" in logged[0]
        # refusals before authorisation: counted, and kept when the daemon stops
        for i in range(3):
            junk = json.dumps({"request_id": f"j-{i}", "command": "status"}).encode()
            assert (await answer_to_unauthenticated(floor, "commands", junk))["code"] == "UNSIGNED"
        assert d.parts.floor is not None and d.parts.floor.refusals.total == 3
    finally:
        await floor.stop()
        await d.stop()
    import sqlite3

    con = sqlite3.connect(f"file:{tmp_path / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        rows = [json.loads(r[0]) for r in con.execute(
            "SELECT data FROM events WHERE kind = 'requests_refused'")]  # fmt: skip
    finally:
        con.close()
    assert [(r["total"], r["counts"]) for r in rows] == [
        (3, [{"principal": "unsigned", "verified": False, "code": "UNSIGNED", "count": 3}])
    ]
