"""The clock's synchronisation (issue 19, item 6): what timedatectl and chronyc say,
read; the latched warning once the clock stays unsynchronised beyond the bound; its
end when synchronised again; cleared once acknowledged. The probe and the monotonic
clock are injected."""

from __future__ import annotations

from pathlib import Path

from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.clock import ClockState, ClockWatch, parse_chronyc, parse_timedatectl
from firmware_host.journal import Journal

# `chronyc tracking` as chrony 4 prints it (synchronised, then not)
CHRONY_OK = """\
Reference ID    : C0A80101 (gw.casino.lan)
Stratum         : 3
Ref time (UTC)  : Sat May 09 07:34:51 2026
System time     : 0.000012345 seconds fast of NTP time
Last offset     : +0.000004321 seconds
RMS offset      : 0.000021000 seconds
Frequency       : 12.345 ppm slow
Residual freq   : +0.001 ppm
Skew            : 0.020 ppm
Root delay      : 0.001234567 seconds
Root dispersion : 0.000345678 seconds
Update interval : 64.2 seconds
Leap status     : Normal
"""
CHRONY_BAD = """\
Reference ID    : 00000000 ()
Stratum         : 0
Ref time (UTC)  : Thu Jan 01 00:00:00 1970
System time     : 0.000000000 seconds fast of NTP time
Leap status     : Not synchronised
"""


def test_the_tools_outputs_are_read() -> None:
    assert parse_timedatectl("yes\n") is True and parse_timedatectl("no\n") is False
    assert parse_timedatectl("") is None
    assert parse_chronyc(CHRONY_OK) is True and parse_chronyc(CHRONY_BAD) is False
    assert parse_chronyc("506 Cannot talk to daemon\n") is None


def test_latched_warning_beyond_the_bound(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.sqlite3")
    alerts = Alerts(j.alerts, j.db)
    now = [0.0]
    states = {"s": ClockState(False, "chronyc", "Not synchronised")}
    watch = ClockWatch(alerts, unsync_max_s=900, probe=lambda: states["s"],
                       monotonic=lambda: now[0])  # fmt: skip
    watch.check()
    now[0] = 899.0
    watch.check()
    assert j.alerts.active() == []  # within the bound
    now[0] = 900.0
    watch.check()
    (a,) = j.alerts.active()
    assert a.code == "CLOCK_UNSYNCHRONISED" and a.condition and a.evidence["seconds"] == 900
    now[0] = 1000.0
    watch.check()
    assert j.alerts.active()[0].count == 1  # raised once while it lasts
    alerts.acknowledge(a.id, by="console:tech1", reason="NTP server rebooting")
    assert j.alerts.active()[0].state == "acknowledged"  # latched while unsynchronised
    states["s"] = ClockState(True, "timedatectl", "yes")
    now[0] = 1100.0
    watch.check()
    assert j.alerts.active() == []
    kinds = [e.kind for e in j.chain.events(20)]
    assert kinds == ["alert_raised", "alert_acknowledged", "alert_cleared"]
    # an unknown state counts as unsynchronised (no tool answered)
    states["s"] = ClockState(None, "none", "neither answered")
    watch.check()
    now[0] = 2100.0
    watch.check()
    assert [a.code for a in j.alerts.active()] == ["CLOCK_UNSYNCHRONISED"]
    assert j.chain.verify().ok
