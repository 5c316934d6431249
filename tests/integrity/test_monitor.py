"""The integrity extension at the table: bias from settled rounds, the wheel's
operation from the SS2 driver's events, repeated numbers, large transactions on the
`events` topic (journaled with their outbox message), and the state rebuilt after a
restart without raising again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from firmware_host.auth import TableIdentity
from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.monitor import IntegrityMonitor
from firmware_host.integrity.settings import IntegritySettings
from firmware_host.journal import Journal
from firmware_host.schemas import validate
from firmware_host.table.extension import TableExtensions
from tablecommon.events.wheel import GameStateChanged, GameVoided, WheelWarning, WinningNumber


def make(tmp_path: Path, game: str = "wheel", **settings: Any) -> tuple[IntegrityMonitor, Journal]:
    j = Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate())
    alerts = Alerts(j)
    mon = IntegrityMonitor(
        TableExtensions(), alerts=alerts, journal=j, table_id="T1", result_device=game,
        settings=IntegritySettings(**settings), wheel_name="wheel",
    )  # fmt: skip
    return mon, j


def spin(mon: IntegrityMonitor, n: int, at: float, **kw: Any) -> None:
    import asyncio

    ev = WinningNumber(device="wheel", number=n, pocket=str(n), spin=kw.get("spin", 1),
                       direction=kw.get("direction", "clockwise"), speed=kw.get("speed", 250),
                       confirmed_by="line", monotonic=at)  # fmt: skip
    asyncio.run(mon.on_device_event("wheel", ev))


def rim(mon: IntegrityMonitor, at: float) -> None:
    import asyncio

    ev = GameStateChanged(device="wheel", state=3, state_name="ball in rim", previous=2,
                          spin=1, speed=250, direction="clockwise", monotonic=at)  # fmt: skip
    asyncio.run(mon.on_device_event("wheel", ev))


def codes(j: Journal) -> list[str]:
    return [a.code for a in j.active_alerts()]


def test_wheel_operation_from_the_driver_events(tmp_path: Path) -> None:
    mon, j = make(tmp_path, wheel_serial="SS2-7", spin_min_ms=15000,
                  spin_max_ms=40000, rotor_rpm_min=20, rotor_rpm_max=30,
                  alternate_direction=True)  # fmt: skip
    rim(mon, 100.0)
    spin(mon, 5, 110.0, direction="clockwise")  # 10 s: too fast
    assert codes(j) == ["SPIN_TOO_FAST"]
    rim(mon, 200.0)
    spin(mon, 6, 260.0, direction="anticlockwise")  # 60 s: too slow; direction alternated
    assert codes(j) == ["SPIN_TOO_FAST", "SPIN_TOO_SLOW"]
    rim(mon, 300.0)
    spin(mon, 7, 325.0, direction="anticlockwise", speed=350)  # same direction; 35 rpm
    assert codes(j)[2:] == ["WHEEL_ROTOR_SPEED", "WHEEL_DIRECTION"]
    a = j.active_alerts()[-1]
    assert a.subject == "SS2-7" and a.evidence["direction"] == "anticlockwise"
    import asyncio

    # a misfire voids the game: counted once (the warning that led to the void is not)
    warn = WheelWarning(device="wheel", code="MISS_SPIN", message="m", flags=2,
                        flag_names=("miss_spin",), state=3, spin=9, action="void", source="vendor")  # fmt: skip
    void = GameVoided(device="wheel", spin=9, reason="MISS_SPIN", message="m",
                      restart_required=True, source="vendor")  # fmt: skip
    launch = WheelWarning(device="wheel", code="LAUNCH_FAILURE", message="m", flags=8,
                          flag_names=("launch_failure",), state=3, spin=10, action="warn",
                          source="vendor")  # fmt: skip
    for ev in (warn, void, launch):
        asyncio.run(mon.on_device_event("wheel", ev))
    (misfire,) = [x for x in j.active_alerts() if x.code == "WHEEL_MISFIRE"]
    assert misfire.count == 2 and misfire.evidence["count"] == 2
    assert misfire.evidence["reason"] == "LAUNCH_FAILURE"


def test_repeated_numbers_and_bias_from_settled_rounds(tmp_path: Path) -> None:
    mon, j = make(tmp_path, repeat_limit=3)
    for n in (4, 4, 9, 9, 9):
        mon.round_settled({"round_id": "r", "outcome": {"number": n}, "bets": []})
    (rep,) = j.active_alerts()
    assert rep.code == "REPEATED_NUMBER" and rep.evidence["times"] == 3 and rep.subject == "wheel:9"
    # a pocket that comes up far too often: the pocket CUSUM and the chi-square fire
    for i in range(2000):
        mon.round_settled({"round_id": "r", "outcome": {"number": 17 if i % 5 == 0 else i % 37}})
    assert {"WHEEL_BIAS_POCKET", "WHEEL_CHI_SQUARE"} <= set(codes(j))
    assert j.verify_chain().ok


def test_dice_bias_from_settled_rounds(tmp_path: Path) -> None:
    mon, j = make(tmp_path, game="shaker")
    for i in range(1500):
        mon.round_settled({"round_id": "r", "outcome": {"dice": [6, 1 + i % 6, 1 + (i // 6) % 6]}})
    found = {(a.code, a.subject) for a in j.active_alerts()}
    assert ("DICE_BIAS_FACE", "shaker:die1:6") in found and (
        "DICE_BIAS_TOTAL",
        "shaker:totals",
    ) in found


def test_large_payouts_raise_an_event_and_an_alert_at_settlement(tmp_path: Path) -> None:
    """At settlement only payouts are reported (stakes were, when placed:
    ``test_large_transactions.py``)."""
    mon, j = make(tmp_path, large_transaction=50_000_000)
    payload = {
        "round_id": "T1-000001-aaaaaaaa", "currency": "MOP", "outcome": {"number": 1},
        "bets": [
            {"bet_id": "a", "seat": 1, "bet_type": "red", "stake": 50_000_000, "payout": 50_000_000},
            {"bet_id": "b", "seat": 2, "bet_type": "red", "stake": 49_999_999, "payout": 49_999_999},
        ],
    }  # fmt: skip
    mon.round_settled(payload)
    events = [e for e in j.events(20) if e.kind == "large_transaction"]
    assert [(e.data["kind"], e.data["amount"], e.data["bet_id"]) for e in events] == [
        ("payout", 50_000_000, "a"),
    ]  # fmt: skip
    pending = [json.loads(m.payload) for m in j.outbox_pending() if m.topic == "events"]
    assert [p["data"]["kind"] for p in pending] == ["payout"]
    for p in pending:
        validate("event", p)
        assert p["event"] == "large_transaction" and p["round_id"] == payload["round_id"]
    assert codes(j) == ["LARGE_TRANSACTION"]


@dataclass
class _Recalled:
    settlement: Any


class _History:
    def __init__(self, outcomes: list[int]) -> None:
        self.rounds = [_Recalled({"status": "settled", "outcome": {"number": n}}) for n in outcomes]

    def recall(self, n: int = 10) -> list[_Recalled]:
        return list(reversed(self.rounds))[:n]  # newest first


def test_statistics_rebuilt_after_a_restart_without_raising_again(tmp_path: Path) -> None:
    mon, j = make(tmp_path, repeat_limit=3)
    mon.resumed([], _History([8, 8, 8, 8, 1, 2, 3]))
    assert mon.wheel is not None and mon.wheel.spins == 7 and mon.wheel.window.counts[8] == 4
    assert codes(j) == []


def revs(mon: IntegrityMonitor, spin_no: int, n: int | None, at: float = 1.0) -> None:
    import asyncio

    ms = tuple(500 + 80 * i for i in range(n - 1)) if n else ()
    ev = WinningNumber(device="wheel", number=7, pocket="7", spin=spin_no, direction="clockwise",
                       speed=250, confirmed_by="2 passes", monotonic=at, ball_revs=n,
                       ball_rev_ms=ms)  # fmt: skip
    asyncio.run(mon.on_device_event("wheel", ev))


def test_ball_revolutions_outside_the_band_raise_held_until_acknowledged(tmp_path: Path) -> None:
    mon, j = make(tmp_path, wheel_serial="GW-1", ball_revs_min=6, ball_revs_max=16)
    for spin_no, n in enumerate((6, 11, 16, None), 1):  # the edges are inside; None unknown
        revs(mon, spin_no, n)
    assert codes(j) == []
    revs(mon, 5, 5)
    (a,) = j.active_alerts()
    assert a.code == "WHEEL_BALL_REVS" and a.severity == "warning"
    assert a.evidence["revs"] == 5 and a.evidence["spin"] == 5
    assert (a.evidence["min_revs"], a.evidence["max_revs"]) == (6, 16)
    assert len(a.evidence["rev_ms"]) == 4 and "5 revolutions" in a.message
    revs(mon, 6, 17)
    (a,) = j.active_alerts()
    assert a.count == 2 and a.evidence["revs"] == 17  # the same alert, seen again
    mon.alerts.acknowledge(a.id, by="console:pit", reason="ball replaced")
    assert j.active_alerts() == []  # momentary: cleared once acknowledged
    revs(mon, 7, 12)
    assert j.active_alerts() == []
    revs(mon, 8, 30)
    (b,) = j.active_alerts()
    assert b.id != a.id and b.count == 1 and b.evidence["spin"] == 8
    # one side only: 0 is off
    mon2, j2 = make(tmp_path / "b", ball_revs_max=20)
    revs(mon2, 1, 1)
    assert codes(j2) == []
    revs(mon2, 2, 21)
    assert codes(j2) == ["WHEEL_BALL_REVS"]


def test_a_silent_or_stuck_track_sensor_is_a_sensor_alert(tmp_path: Path) -> None:
    import asyncio

    mon, j = make(tmp_path, ball_revs_min=6, ball_revs_max=16)
    ev = WheelWarning(device="wheel", code="BALL_REVS_UNKNOWN", flags=0, flag_names=(),
                      message="spin 4: revolutions unknown: the ball-track sensor gave no pulse",
                      state=4, spin=4, action="warn", source="gpio-wheel")  # fmt: skip
    asyncio.run(mon.on_device_event("wheel", ev))
    revs(mon, 4, None)  # the result itself carries no count: no band alert
    (a,) = j.active_alerts()
    assert a.code == "WHEEL_BALL_TRACK" and a.evidence["reason"] == "BALL_REVS_UNKNOWN"


def _roulette(devices: dict[str, Any], **integrity: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "table": {"id": "T1", "game": "roulette"},
        "daemon": {"simulated": True},
        "devices": devices,
        "integrity": {"repeat_limit": 4, **integrity},
    }


def test_a_ball_revolutions_band_needs_a_wheel_that_counts_them() -> None:
    """The band is refused, saying why, where no wheel reports the ball's revolutions (the
    SS2, a gpio-wheel without the ball-track sensor, a table without a wheel); accepted
    for a gpio-wheel with one (docs/integrity.md)."""
    import pytest

    from firmware_host.assembly import read_plan
    from firmware_host.config import ConfigInvalid, validate_document

    gpio = {"driver": "gpio-wheel", "index_pin": 5, "ball_pin": 6, "direction": "clockwise"}
    ss2 = {"driver": "cammegh-ss2", "port": "/dev/null"}
    band = {"ball_revs_min": 5, "ball_revs_max": 20}

    def problems(doc: dict[str, Any]) -> list[str]:
        return [p for p in read_plan(validate_document(doc)).problems if "ball_revs" in p]

    ok = problems(_roulette({"wheel": {**gpio, "ball_track_pin": 19}}, **band))
    assert ok == []
    for devices, why in (
        ({"wheel": ss2}, "devices.wheel (cammegh-ss2) does not report the ball's revolutions"),
        ({"wheel": gpio}, "devices.wheel (a gpio-wheel) has no ball-track sensor"),
    ):
        found = problems(_roulette(devices, **band))
        assert [p.split(":")[0] for p in found] == [
            "integrity.ball_revs_min", "integrity.ball_revs_max"]  # fmt: skip
        assert all(why in p and "could never fire" in p for p in found)
    only_max = problems(_roulette({"wheel": ss2}, ball_revs_max=20))
    assert len(only_max) == 1 and only_max[0].startswith("integrity.ball_revs_max")
    assert problems(_roulette({"wheel": ss2})) == []  # no band, no problem
    manual = {"table": {"id": "T1", "game": "sicbo"}, "integrity": band, "version": 1}
    assert all("has no wheel" in p for p in problems(manual)) and problems(manual)
    with pytest.raises(
        ConfigInvalid, match=r"integrity.ball_revs_min: 20 is above ball_revs_max 5"
    ):
        validate_document(_roulette({"wheel": {**gpio, "ball_track_pin": 19}},
                                    ball_revs_min=20, ball_revs_max=5))  # fmt: skip
