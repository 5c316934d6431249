"""The alert model in the journal (issue 19, deliverable 1): raised, counted,
acknowledged with a reason, cleared; every step an event of the audit chain; kept
across a restart; nothing left by a transaction that rolled back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from firmware_host.journal import AlertAcknowledged, AlertNotFound, Journal


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 5, 9, 7, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_momentary_alert_counts_then_clears_on_acknowledgement(tmp_path: Path) -> None:
    clock = Clock()
    j = Journal(tmp_path / "j.sqlite3", clock=clock)
    a, new = j.alerts.raise_alert("SPIN_TOO_FAST", "spin of 9 s", subject="wheel:W1", evidence={"s": 9})
    assert new and a.count == 1 and a.state == "raised" and not a.condition
    clock.now += timedelta(minutes=5)
    b, new = j.alerts.raise_alert("SPIN_TOO_FAST", "spin of 8 s", subject="wheel:W1", evidence={"s": 8})
    assert not new and b.id == a.id and b.count == 2
    assert b.first_seen == "2026-05-09T07:00:00.000Z" and b.last_seen == "2026-05-09T07:05:00.000Z"
    assert b.evidence == {"s": 8}
    # another subject is another alert
    c, new = j.alerts.raise_alert("SPIN_TOO_FAST", "spin of 7 s", subject="wheel:W2")
    assert new and c.id != a.id
    with pytest.raises(ValueError):
        j.alerts.acknowledge_alert(a.id, by="console:tech1", reason="  ")
    done = j.alerts.acknowledge_alert(a.id, by="console:tech1", reason="ball launcher checked")
    assert done.state == "cleared" and done.acknowledged_by == "console:tech1"
    assert [x.id for x in j.alerts.active()] == [c.id]
    with pytest.raises(AlertNotFound):
        j.alerts.acknowledge_alert(a.id, by="console:tech1", reason="again")
    with pytest.raises(AlertNotFound):
        j.alerts.acknowledge_alert(999, by="console:tech1", reason="none")
    # raised again after clearing: a new alert
    d, new = j.alerts.raise_alert("SPIN_TOO_FAST", "spin of 6 s", subject="wheel:W1")
    assert new and d.id not in (a.id, c.id) and d.count == 1
    kinds = [(e.kind, e.data.get("alert_id")) for e in j.chain.events(20)]
    assert kinds == [
        ("alert_raised", a.id), ("alert_raised", a.id), ("alert_raised", c.id),
        ("alert_acknowledged", a.id), ("alert_cleared", a.id), ("alert_raised", d.id),
    ]  # fmt: skip
    ack = next(e for e in j.chain.events(20) if e.kind == "alert_acknowledged")
    assert ack.data["by"] == "console:tech1" and ack.data["reason"] == "ball launcher checked"
    assert j.chain.verify().ok


def test_condition_alert_waits_for_both_acknowledgement_and_its_end(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite3", clock=Clock())
    # acknowledged first, ended later
    a, _ = j.alerts.raise_alert("CLOCK_UNSYNCHRONISED", "no sync for 2 h", momentary=False)
    acked = j.alerts.acknowledge_alert(a.id, by="mqtt:pit", reason="NTP server down, IT called")
    assert acked.state == "acknowledged" and acked.condition
    with pytest.raises(AlertAcknowledged):
        j.alerts.acknowledge_alert(a.id, by="mqtt:pit", reason="twice")
    j.alerts.raise_alert("CLOCK_UNSYNCHRONISED", "no sync for 3 h", momentary=False)  # still holds
    assert j.alerts.get(a.id).count == 2 and j.alerts.get(a.id).state == "acknowledged"  # type: ignore[union-attr]
    ended = j.alerts.end_condition("CLOCK_UNSYNCHRONISED")
    assert ended is not None and ended.state == "cleared"
    # ended first, acknowledged later
    b, _ = j.alerts.raise_alert("CLOCK_UNSYNCHRONISED", "no sync", momentary=False)
    assert b.id != a.id
    assert j.alerts.end_condition("CLOCK_UNSYNCHRONISED").state == "raised"  # type: ignore[union-attr]
    assert j.alerts.acknowledge_alert(b.id, by="console:tech1", reason="seen").state == "cleared"
    assert j.alerts.end_condition("CLOCK_UNSYNCHRONISED") is None
    assert j.alerts.active() == [] and j.chain.verify().ok


def test_alerts_survive_a_restart_and_a_rollback_leaves_none(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with Journal(path, clock=Clock()) as j:
        a, _ = j.alerts.raise_alert("WHEEL_BIAS_POCKET", "pocket 17", subject="W1:17", severity="critical")
        with pytest.raises(RuntimeError), j.db.transaction():
            j.alerts.raise_alert("SHOE_LENGTH", "short shoe")
            raise RuntimeError("the change it belonged to failed")
    with Journal(path, clock=Clock()) as j:
        assert [(x.id, x.code, x.subject) for x in j.alerts.active()] == [
            (a.id, "WHEEL_BIAS_POCKET", "W1:17")
        ]
        assert [e.kind for e in j.chain.events(10) if e.kind.startswith("alert_")] == ["alert_raised"]
        assert j.chain.verify().ok


def test_every_alert_code_is_documented() -> None:
    from firmware_host.integrity.codes import ALERT_CODES

    text = (Path(__file__).resolve().parents[2] / "docs" / "integrity.md").read_text()
    for c in ALERT_CODES.values():
        row = f"| `{c.code}` | {c.severity} | {'yes' if c.condition else 'no'} |"
        assert row in text, c.code
