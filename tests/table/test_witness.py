"""The witness as a part (``firmware_host/table/witness.py``, ``docs/witness.md``): on a
temporary journal, no broker. The end-to-end cases (roulette, sic bo, mosquitto, the
attacks over the wire) are ``tests/e2e/test_witness_end_to_end.py``; here the parts'
edges: the order of the readings, a second primary, a late reading, the timeout, the
two-person resolution, a void and a restart, the device and keypad witnesses, the
health snapshot, the configuration's refusals."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from firmware_host.assembly import read_plan
from firmware_host.auth import Principal
from firmware_host.commands import CATALOGUE
from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games import get_game
from firmware_host.games.base import Bet
from firmware_host.games.money import MoneyRules
from firmware_host.journal import Journal
from firmware_host.schemas import PAYLOAD_SCHEMA_VERSION, validate
from firmware_host.table.commands import CommandCall, Commands
from firmware_host.table.engine import RoundEngine
from firmware_host.table.extension import TableExtensions
from firmware_host.table.phase import Phase
from firmware_host.table.reading import RequestError
from firmware_host.table.roundfault import RoundFault
from firmware_host.table.witness import FAULT, ResultWitness, WitnessDevice, WitnessHealth
from firmware_host.table.witness_settings import WitnessSettings
from tablecommon.events.keypad import KeypadResult
from tablecommon.events.shaker import DiceRead
from tablecommon.events.wheel import WinningNumber

WHEEL = {"driver": "cammegh-ss2", "port": "socket://127.0.0.1:9"}
SHAKER = {"driver": "shaker-ref", "port": "socket://127.0.0.1:9"}
KEYPAD = {
    "driver": "keypad-gpio",
    "pins": {"1": 5, "2": 6, "3": 13, "4": 19, "confirm": 26, "void": 21, "bell": 20},
}
KEYPAD2 = {
    "driver": "keypad-gpio",
    "pins": {"1": 2, "2": 3, "3": 4, "4": 17, "confirm": 27, "void": 22, "bell": 10},
}


def doc(game: str = "roulette", witness: dict[str, Any] | None = None, **devices: Any) -> dict:
    out: dict[str, Any] = {
        "table": {"id": "w1", "game": game},
        "limits": {"min_stake": 100, "max_stake": 1_000_000},
        "devices": devices or {"wheel": WHEEL},
        "daemon": {"simulated": True},
    }
    if witness is not None:
        out["witness"] = witness
    return out


@dataclass
class Rig:
    engine: RoundEngine
    witness: ResultWitness
    journal: Journal
    extensions: TableExtensions
    alerts: list[tuple[str, str, str]]
    published: list[dict[str, Any]]
    health: WitnessHealth
    commands: Commands

    def round(self) -> str:
        self.engine.open_betting()
        rid = self.engine.current.round_id
        assert self.engine.desk.place(
            {"bet_id": f"b-{rid[-4:]}", "seat": 1, "bet_type": "red", "stake": 1000}
        ).accepted
        self.engine.close_betting()
        return str(rid)

    def call(self, name: str, who: str = "pit", two: bool = False, **args: Any) -> Any:
        cur = self.engine.current
        return self.commands.run(
            CommandCall(
                CATALOGUE[name],
                args,
                via="mqtt",
                who=Principal(who, True, "ed25519:00"),
                round_id=cur.round_id if cur is not None else "none",
                request_id=f"{who}-{name}",
                two_person=two,
            )
        )

    def faults(self) -> set[str]:
        return {f.code for f in self.journal.faults.active()}

    def kinds(self, rid: str) -> list[str]:
        return [
            e.kind
            for e in self.journal.chain.events(1000)
            if isinstance(e.data, dict) and e.data.get("round_id") == rid
        ]


def rig(tmp_path: Path, settings: WitnessSettings | None = None, game: str = "roulette") -> Rig:
    devices = {"shaker": SHAKER} if game == "sicbo" else {"wheel": WHEEL}
    cfg = validate_document(doc(game, {}, **devices))
    j = Journal(tmp_path / "journal.sqlite3")
    ext = TableExtensions()
    engine = RoundEngine(cfg, j, extensions=ext)
    w = ResultWitness(
        settings or WitnessSettings(timeout_s=5),
        engine,
        db=j.db,
        chain=j.chain,
        faults=j.faults,
        approvals=j.requests,
        extensions=ext,
    )
    alerts: list[tuple[str, str, str]] = []
    published: list[dict[str, Any]] = []
    health = WitnessHealth(
        w,
        raise_alert=lambda code, message, subject="", evidence=None: alerts.append(
            (code, subject, message)
        ),
        publish=lambda name, body: published.append({"device": name, **body}),
    )
    commands = Commands(engine)
    w.register_commands(commands)
    return Rig(engine, w, j, ext, alerts, published, health, commands)


@pytest.fixture
def r(tmp_path: Path) -> Iterator[Rig]:
    out = rig(tmp_path)
    yield out
    out.journal.close()


def test_primary_then_an_agreeing_witness_settles_on_the_primary_with_both_frames(r: Rig) -> None:
    rid = r.round()
    held = r.witness.submit_result(
        {"number": 9}, source="wheel:spin 1", frames=[("wheel", "rx", b"*X;5;001;9")]
    )
    assert held is None and r.engine.phase is Phase.CLOSED and r.witness.holding()
    assert r.journal.rounds.settlement(rid) is None
    out = r.witness.witness_reading({"number": 9}, "mqtt:camera", [("camera", "rx", b"{}")])
    assert out == {"round_id": rid, "status": "settled"}
    assert r.journal.rounds.settlement(rid)["outcome"]["number"] == 9
    assert [f.data for f in r.journal.frames.of_round(rid)] == [b"*X;5;001;9", b"{}"]
    assert r.kinds(rid).count("result_reading") == 2 and "result_witnessed" in r.kinds(rid)
    assert not r.faults() and not r.alerts and not r.witness.holding()


def test_a_witness_before_the_primary_waits_for_it(r: Rig) -> None:
    rid = r.round()
    assert r.witness.witness_reading({"number": 0}, "mqtt:camera") == {
        "round_id": rid, "status": "waiting"}  # fmt: skip
    assert not r.witness.holding()  # the device's next reading is still the round's
    payload = r.witness.submit_result({"number": 0}, source="wheel")
    assert payload is not None and payload["status"] == "settled"


def test_disagreement_holds_the_round_latches_the_fault_and_raises_the_alert(r: Rig) -> None:
    rid = r.round()
    r.witness.submit_result({"number": 1}, source="wheel")
    assert r.witness.witness_reading({"number": 2}, "mqtt:camera")["status"] == "held"
    assert r.faults() == {FAULT} and r.journal.rounds.settlement(rid) is None
    assert [(c, s) for c, s, _ in r.alerts] == [(FAULT, rid)]
    assert r.engine.phase is Phase.CLOSED
    with pytest.raises(RoundFault) as e:  # a second device reading for the round
        r.witness.submit_result({"number": 2}, source="wheel")
    assert e.value.code == "RESULT_HELD"
    with pytest.raises(RoundFault) as e:  # a second witness reading
        r.witness.witness_reading({"number": 1}, "mqtt:camera")
    assert e.value.code == "WITNESS_ALREADY_READ"
    assert r.witness.held() == {"round_id": rid, "disputed": "disagree",
                                "primary": {"number": 1, "colour": "red"},
                                "witness": {"number": 2, "colour": "black"}}  # fmt: skip
    snap = r.published[-1]
    validate_device(snap)
    assert snap["state"] == "fault" and snap["witness"]["disagreement_rate"] == 1.0


def validate_device(snap: dict[str, Any]) -> None:
    body = {"schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": "w1", "updated_at": "2026-01-01T00:00:00.000Z",
            "signature": "A" * 86 + "==", **snap}  # fmt: skip
    validate("device", body)


def test_timeout_holds_then_a_late_reading_is_evidence_and_a_supervisor_picks_it(r: Rig) -> None:
    rid = r.round()
    r.witness.submit_result({"number": 5}, source="wheel")
    assert r.witness.expire("another-round") is False
    assert r.witness.expire(rid) is True and r.faults() == {FAULT}
    assert r.witness.expire(rid) is False  # held once
    with pytest.raises(RoundFault) as e:
        r.call("resolve_result", reading="witness", reason="x")
    assert e.value.code == "NO_WITNESS_READING"
    late = r.witness.witness_reading({"number": 6}, "mqtt:camera")
    assert late == {"round_id": rid, "status": "held", "late": True}
    assert r.journal.rounds.settlement(rid) is None
    out = r.call("resolve_result", reading="witness", reason="the camera is right")
    assert out["resolved"] is True and out["outcome"]["number"] == 6
    assert r.journal.rounds.settlement(rid)["outcome"]["number"] == 6
    assert not r.faults() and "result_resolved" in r.kinds(rid)
    assert r.health.counts == {"readings": 1, "agreed": 0, "disagreed": 0, "timeouts": 1,
                               "resolved": 1}  # fmt: skip


def test_resolution_by_two_people_where_the_policy_says_so(r: Rig) -> None:
    rid = r.round()
    r.witness.submit_result({"number": 5}, source="wheel")
    r.witness.witness_reading({"number": 7}, "mqtt:camera")
    first = r.call("resolve_result", two=True, reading="primary", reason="the wheel")
    assert first == {"round_id": rid, "resolved": False, "confirmed_by": ["pit"]}
    again = r.call("resolve_result", two=True, reading="primary", reason="the wheel")
    assert again["resolved"] is False  # the same supervisor twice is still one
    other = r.call("resolve_result", who="pit2", two=True, reading="witness", reason="no")
    assert other["resolved"] is False  # confirming another reading is another decision
    done = r.call("resolve_result", who="pit2", two=True, reading="primary", reason="yes")
    assert done["confirmed_by"] == ["pit", "pit2"] and done["outcome"]["number"] == 5
    assert r.journal.rounds.settlement(rid)["outcome"]["number"] == 5


def test_resolve_refuses_a_round_that_is_not_held(r: Rig) -> None:
    r.round()
    with pytest.raises(RoundFault) as e:
        r.call("resolve_result", reading="primary", reason="x")
    assert e.value.code == "RESULT_NOT_DISPUTED"
    r.witness.submit_result({"number": 5}, source="wheel")  # waiting, not disputed
    with pytest.raises(RoundFault) as e:
        r.call("resolve_result", reading="primary", reason="x")
    assert e.value.code == "RESULT_NOT_DISPUTED"


def test_a_reading_before_betting_closed_is_refused(r: Rig) -> None:
    r.engine.open_betting()
    with pytest.raises(RoundFault) as e:
        r.witness.witness_reading({"number": 3}, "mqtt:camera")
    assert e.value.code == "WITNESS_TOO_EARLY"
    r.engine.void_round("test")
    with pytest.raises(RoundFault) as e:
        r.witness.witness_reading({"number": 3}, "mqtt:camera")
    assert e.value.code == "WRONG_PHASE"


def test_a_void_ends_the_hold_and_clears_the_fault(r: Rig) -> None:
    rid = r.round()
    r.witness.submit_result({"number": 5}, source="wheel")
    r.witness.expire(rid)
    r.engine.void_round("witness down")
    assert not r.faults() and not r.witness.holding()
    assert r.journal.rounds.round(rid).status == "void"
    r.engine.open_betting()  # play goes on


def test_a_restart_voids_the_held_round_and_clears_its_fault(tmp_path: Path) -> None:
    first = rig(tmp_path)
    rid = first.round()
    first.witness.submit_result({"number": 5}, source="wheel")
    first.witness.witness_reading({"number": 8}, "mqtt:camera")
    assert first.faults() == {FAULT}
    first.journal.close()
    again = rig(tmp_path)
    assert again.faults() == {FAULT}  # latched across the restart
    again.engine.resume()
    assert again.journal.rounds.round(rid).status == "void" and not again.faults()
    again.journal.close()


def test_only_the_named_principal_reads_for_an_mqtt_witness(tmp_path: Path) -> None:
    r = rig(tmp_path, WitnessSettings(principal="camera"))
    r.round()
    with pytest.raises(RequestError) as e:
        r.call("witness_result", who="other", outcome={"number": 1})
    assert e.value.code == "NOT_THE_WITNESS"
    assert r.call("witness_result", who="camera", outcome={"number": 1})["status"] == "waiting"
    [reading] = [e.data for e in r.journal.chain.events(100) if e.kind == "result_reading"]
    assert reading["source"] == "mqtt:camera" and reading["frames"][0]["device"] == "witness"
    r.journal.close()


async def test_a_second_wheel_as_witness(tmp_path: Path) -> None:
    r = rig(tmp_path, WitnessSettings(source="device", device="wheel2"))
    dev = WitnessDevice(r.witness, r.extensions)
    rid = r.round()

    def number(n: int, device: str = "wheel2") -> WinningNumber:
        return WinningNumber(device=device, raw=f"{n}".encode(), number=n, pocket=str(n),
                             spin=1, direction="c", speed=20, confirmed_by="line")  # fmt: skip

    await dev.on_device_event("wheel", number(4))  # the result device: not the witness
    assert r.witness.held() is None
    await dev.on_device_event("wheel2", number(4))
    assert r.witness.submit_result({"number": 4}, source="wheel") is not None
    assert r.journal.rounds.settlement(rid)["outcome"]["number"] == 4
    r.round()
    with pytest.raises(RequestError) as e:  # the mqtt command is not this witness's
        r.call("witness_result", who="camera", outcome={"number": 1})
    assert e.value.code == "NOT_THE_WITNESS"
    r.journal.close()


async def test_a_second_shaker_reads_under_the_dome_and_is_taken_at_the_close(
    tmp_path: Path,
) -> None:
    r = rig(tmp_path, WitnessSettings(source="device", device="cam"), game="sicbo")
    dev = WitnessDevice(r.witness, r.extensions)
    r.engine.open_betting()
    rid = r.engine.current.round_id
    await dev.on_device_event("cam", DiceRead(device="cam", raw=b"D", shake=1, dice=(6, 1, 3),
                                              flags=("flat",) * 3))  # fmt: skip
    assert r.witness.held() is None  # sealed while betting is open
    r.engine.close_betting()
    assert r.witness.submit_result({"dice": [1, 3, 6]}, source="shaker") is not None
    assert r.journal.rounds.settlement(rid)["outcome"]["dice"] == [1, 3, 6]
    # a tilted die is no reading
    r.engine.open_betting()
    r.engine.close_betting()
    await dev.on_device_event("cam", DiceRead(device="cam", shake=2, dice=(6, 1, 3),
                                              flags=("flat", "tilted", "flat")))  # fmt: skip
    assert r.witness.held() is None
    r.journal.close()


async def test_a_keypad_witness_and_a_reading_the_game_refuses(tmp_path: Path) -> None:
    # The part alone (the keypad-gpio's keys are 1-4: on a real table, a fantan's second
    # keypad, below); a reading the game refuses is a witness_refused fault, no reading.
    r = rig(tmp_path, WitnessSettings(source="keypad", device="keypad"))
    dev = WitnessDevice(r.witness, r.extensions)
    rid = r.round()
    await dev.on_device_event("keypad", KeypadResult(device="keypad", value=40))  # no pocket 40
    refusals = [e for e in r.journal.chain.events(100) if e.kind == "witness_refused"]
    assert [e.data["outcome"] for e in refusals] == [{"number": 40}]
    assert r.witness.held() is None
    await dev.on_device_event("keypad", KeypadResult(device="keypad", value=12))
    r.witness.submit_result({"number": 13}, source="wheel")
    assert r.faults() == {FAULT} and r.journal.rounds.settlement(rid) is None
    r.journal.close()


# -- the rules core: when two readings are the same result --------------------------
def _settle_all(game_id: str, dice: tuple[int, int, int]) -> list[tuple[str, int]]:
    game = get_game(game_id)
    rules = game.default_rules()
    bets = [Bet(f"b{i}", 1, t, s, 100) for i, (t, s) in enumerate(game.math_bets(rules))]
    out = game.settle(rules, game.parse_outcome(rules, {"dice": list(dice)}), bets, MoneyRules())
    return [(r.bet.bet_id, r.amounts.payout) for r in out.results]


@pytest.mark.parametrize("game_id", ["sicbo", "fish-prawn-crab"])
def test_dice_readings_in_another_order_are_the_same_result(game_id: str) -> None:
    # 57/2004 art. 6-7 and 59/2004 art. 5-6: every bet is decided by the faces the three
    # dice show. Checked independently: each bet of the game's house-edge table is paid
    # the same for every order of every throw, and same_outcome says so for each order.
    game = get_game(game_id)
    rules = game.default_rules()
    for throw in itertools.combinations_with_replacement(range(1, 7), 3):
        base = _settle_all(game_id, throw)
        for order in set(itertools.permutations(throw)):
            assert _settle_all(game_id, order) == base
            a = game.parse_outcome(rules, {"dice": list(throw)})
            b = game.parse_outcome(rules, {"dice": list(order)})
            assert game.same_outcome(rules, a, b)
    one = game.parse_outcome(rules, {"dice": [1, 2, 3]})
    other = game.parse_outcome(rules, {"dice": [1, 2, 4]})
    assert not game.same_outcome(rules, one, other)


def test_roulette_readings_are_the_same_result_only_for_the_same_pocket() -> None:
    game = get_game("roulette")
    rules = game.default_rules()
    a, b = (game.parse_outcome(rules, {"number": n}) for n in (17, 17))
    assert game.same_outcome(rules, a, b)
    assert not game.same_outcome(rules, a, game.parse_outcome(rules, {"number": 18}))


# -- the configuration ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("witness", "message"),
    [
        ({"source": "device"}, "witness.device: a device witness names"),
        ({"source": "mqtt", "device": "wheel"}, "witness.device: an mqtt witness names no device"),
        ({"source": "keypad", "device": "k", "principal": "cam"}, "witness.principal"),
        ({"name": "a/b"}, "witness.name: a single topic level"),
        ({"source": "camera"}, "witness.source"),
        ({"timeout_s": 0}, "witness.timeout_s"),
    ],
)
def test_the_section_refuses(witness: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigInvalid) as e:
        validate_document(doc("roulette", witness))
    assert message in str(e.value)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {
                **doc("roulette", {}),
                "table": {"id": "w1", "game": "roulette", "result_source": "manual"},
                "devices": {},
            },
            "a table whose results are entered by command",
        ),
        (
            doc("roulette", {"source": "device", "device": "wheel"}),
            "devices.wheel is the table's result device",
        ),
        (
            doc("roulette", {"source": "keypad", "device": "w2"}, wheel=WHEEL, w2=WHEEL),
            "devices.w2 is a wheel; a keypad witness of this table is a keypad",
        ),
        (doc("roulette", {"source": "device", "device": "nope"}), "no enabled [devices.nope]"),
        (doc("roulette", {"name": "wheel"}), "'wheel' is a configured device's name"),
    ],
)
def test_the_table_refuses_a_witness_that_cannot_work(document: dict, message: str) -> None:
    plan = read_plan(validate_document(document))
    assert any(message in p for p in plan.problems), plan.problems


def test_a_second_wheel_listed_after_the_result_device_is_a_witness() -> None:
    plan = read_plan(
        validate_document(
            doc("roulette", {"source": "device", "device": "w2"}, wheel=WHEEL, w2=WHEEL)
        )
    )
    assert not [p for p in plan.problems if "witness" in p] and plan.witness is not None
    assert read_plan(validate_document(doc())).witness is None
    # fantan: the dealer's keypad reads the count, the inspector's keypad witnesses it
    fantan = validate_document(
        doc("fantan", {"source": "keypad", "device": "inspector"}, keypad=KEYPAD, inspector=KEYPAD2)
    )
    assert not [p for p in read_plan(fantan).problems if "witness" in p]


def test_the_witness_answers_its_commands_as_their_specs_say(r: Rig) -> None:
    for name in ("witness_result", "resolve_result"):
        assert r.commands.owner(name) == CATALOGUE[name].handler == "table.witness.ResultWitness"


async def test_a_baccarat_coup_from_the_shoe_is_held_for_the_finished_hand(tmp_path: Path) -> None:
    # The shoe procedure's result (the finished hand, 55/2004 art. 9) goes to the witness
    # like the wheel's; a camera reading the same hand settles it, another hand holds it.
    from firmware_host.table.procedures import Device, ProcedureContext, make_procedure
    from tablecommon.events.shoe import CardDealt

    shoe = {"driver": "shoe-ref", "port": "socket://127.0.0.1:9"}
    cfg = validate_document(doc("baccarat", {}, shoe=shoe))
    j = Journal(tmp_path / "journal.sqlite3")
    ext = TableExtensions()
    engine = RoundEngine(cfg, j, extensions=ext)
    w = ResultWitness(
        WitnessSettings(), engine, db=j.db, chain=j.chain, faults=j.faults,
        approvals=j.requests, extensions=ext,
    )  # fmt: skip
    proc = make_procedure(
        ProcedureContext(engine, devices=(Device("shoe", "shoe", None),), extensions=ext, results=w)
    )
    hand = {"player": ["9H", "KD"], "banker": ["2S", "3C"]}
    for n, witness in enumerate(({**hand}, {"player": ["9H", "KD"], "banker": ["2S", "4C"]})):
        engine.open_betting()
        rid = engine.current.round_id
        assert engine.desk.place({"bet_id": f"p{n}", "seat": 1, "bet_type": "player",
                                  "stake": 1000}).accepted  # fmt: skip
        for seq, card in enumerate(["9H", "2S", "KD", "3C"], start=1 + 4 * n):
            await proc.on_device_event("shoe", CardDealt(device="shoe", card=card, seq=seq))
        assert w.holding() and j.rounds.settlement(rid) is None
        await proc.on_device_event("shoe", CardDealt(device="shoe", card="5D", seq=99))
        assert w.holding()  # a card after the finished hand: a misdeal, nothing settles
        out = w.witness_reading(witness, "mqtt:camera")
        if n == 0:
            assert out["status"] == "settled"
            assert j.rounds.settlement(rid)["outcome"]["winner"] == "player"
        else:
            assert out["status"] == "held" and {f.code for f in j.faults.active()} == {FAULT}
    j.close()


def test_a_hold_the_journal_cannot_write_leaves_the_round_waiting(r: Rig, monkeypatch: Any) -> None:
    # The attack on the memory: a dispute whose transaction rolls back (a full disk)
    # must not leave the witness believing it read; the journal holds neither.
    from firmware_host.journal.errors import JournalFull, StorageError

    rid = r.round()
    r.witness.submit_result({"number": 1}, source="wheel")

    def full(*a: Any, **k: Any) -> Any:
        raise JournalFull("disk full")

    monkeypatch.setattr(r.journal.faults, "set_fault", full)
    with pytest.raises(StorageError):
        r.witness.witness_reading({"number": 2}, "mqtt:camera")
    assert r.witness.held() == {"round_id": rid, "disputed": None,
                                "primary": {"number": 1, "colour": "red"}, "witness": None}  # fmt: skip
    assert [e.data["reading"] for e in r.journal.chain.events(100)
            if e.kind == "result_reading"] == ["primary"]  # fmt: skip
    monkeypatch.undo()
    assert r.witness.witness_reading({"number": 1}, "mqtt:camera")["status"] == "settled"
    assert r.journal.rounds.settlement(rid)["outcome"]["number"] == 1
