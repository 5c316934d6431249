"""The integrity extension at the table: bias from settled rounds, the wheel's
operation from the SS2 driver's events, repeated numbers, large transactions on the
`events` topic (journaled with their outbox message), and the state rebuilt after a
restart without raising again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.cammegh.events import GameStateChanged, GameVoided, WheelWarning, WinningNumber
from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.monitor import IntegrityMonitor
from firmware_host.integrity.settings import IntegritySettings
from firmware_host.journal import Journal
from firmware_host.schemas import validate
from firmware_host.table.extension import TableExtensions


def make(tmp_path: Path, game: str = "wheel", **settings: Any) -> tuple[IntegrityMonitor, Journal]:
    j = Journal(tmp_path / "j.sqlite3")
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
    assert ("DICE_BIAS_FACE", "shaker:die1:6") in found and ("DICE_BIAS_TOTAL", "shaker:totals") in found


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


def test_a_ball_revolutions_band_is_a_clear_configuration_error() -> None:
    """No wheel reports the ball's revolutions (docs/integrity.md): the band is refused
    with the reason, never accepted as a check that cannot fire."""
    import pytest

    from firmware_host.config import ConfigInvalid, validate_document

    doc = {
        "table": {"id": "T1", "game": "roulette", "result_source": "manual"},
        "integrity": {"ball_revs_min": 5, "ball_revs_max": 20, "repeat_limit": 4},
    }
    with pytest.raises(ConfigInvalid) as err:
        validate_document(doc)
    text = str(err.value)
    for key in ("integrity.ball_revs_min", "integrity.ball_revs_max"):
        assert f"{key}: not supported" in text
    assert "revolutions" in text and "unknown key" not in text
    del doc["integrity"]["ball_revs_min"], doc["integrity"]["ball_revs_max"]
    assert validate_document(doc).table_id == "T1"
