"""The bias detectors' warning tier (issue 37): CUSUMs tuned to a pocket or a face at
1.2 times its fair probability, about one false warning a week, raising warnings
distinct from the alarm tier; their detection times computed on the Markov chain and
checked against seeded simulations from the device simulators' own draw; the figures
of docs/integrity.md the computed ones (``python -m bench.integrity`` runs the larger
simulations the document quotes)."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from drivers.cammegh.sim import CammeghSim
from drivers.shaker.model import ShakerModel
from firmware_host.integrity.bias import (
    DiceBias,
    WheelBias,
    face_design,
    face_warning_design,
    pocket_design,
    pocket_warning_design,
)
from firmware_host.integrity.codes import ALERT_CODES

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrity.md"
WEEK = 60 * 24 * 7
POCKET_P = 1.2 / 37
FACE_P = 1.2 / 6


def test_the_warning_tier_is_its_own_code_and_rate() -> None:
    for code in ("WHEEL_BIAS_WARNING", "DICE_BIAS_WARNING"):
        assert ALERT_CODES[code].severity == "warning" and not ALERT_CODES[code].condition
    pw, fw = pocket_warning_design(), face_warning_design(3)
    # one false warning a week (at most) for the 37 pockets, and for the 18 faces
    assert 0.95 < 37 * WEEK / pw.arl(1 / 37) <= 1.0
    assert 0.95 < 18 * WEEK / fw.arl(1 / 6) <= 1.0
    # the alarm tier unchanged: a fraction of one a year
    assert pocket_design().h == 933 and face_design(3).h == 745
    # a pocket that comes up 1 spin in 20 (p = 0.05): warned long before the alarm
    w = WheelBias("W1")
    first: dict[str, int] = {}
    for n in range(1, 3000):
        for f in w.spin(17 if n % 20 == 0 else (n * 7) % 37):
            first.setdefault(f.code, n)
            assert f.subject == "W1:17" or f.code == "WHEEL_CHI_SQUARE"
    assert first["WHEEL_BIAS_WARNING"] < first["WHEEL_BIAS_POCKET"]
    off = WheelBias("W2", warnings_per_week=0)
    codes = {f.code for n in range(1, 3000) for f in off.spin(17 if n % 20 == 0 else (n * 7) % 37)}
    assert "WHEEL_BIAS_POCKET" in codes and "WHEEL_BIAS_WARNING" not in codes
    d = DiceBias("S1")
    faces = [f.code for n in range(600) for f in d.throw([6 if n % 4 == 0 else 1 + n % 6, 1, 2])]
    assert "DICE_BIAS_WARNING" in faces


def test_the_monitor_takes_the_setting(tmp_path: Path) -> None:
    from firmware_host.auth import TableIdentity
    from firmware_host.integrity.alerts import Alerts
    from firmware_host.integrity.monitor import IntegrityMonitor
    from firmware_host.integrity.settings import IntegritySettings
    from firmware_host.journal import Journal
    from firmware_host.table.extension import TableExtensions

    j = Journal(tmp_path / "j.sqlite3", identity=TableIdentity.generate())
    mon = IntegrityMonitor(
        TableExtensions(), alerts=Alerts(j.alerts, j.db), chain=j.chain, table_id="T1", result_device="wheel",
        settings=IntegritySettings(bias_warnings_per_week=7),
    )  # fmt: skip
    assert mon.wheel is not None and mon.wheel.pocket_warning == pocket_warning_design(60, 7)
    for i in range(1500):
        mon.round_settled({"round_id": "r", "outcome": {"number": 17 if i % 15 == 0 else i % 37}})
    (a,) = [a for a in j.alerts.active() if a.code == "WHEEL_BIAS_WARNING"]
    assert a.severity == "warning" and a.subject == "wheel:17" and a.evidence["tier"] == "warning"


def _mean_within(times: list[int], computed: float) -> tuple[float, float]:
    mean = statistics.fmean(times)
    se = statistics.stdev(times) / len(times) ** 0.5
    assert abs(mean - computed) < 4 * se, (mean, se, computed)
    return mean, se


@pytest.mark.slow
def test_a_1_2x_pocket_and_face_simulated_as_computed() -> None:
    weight = 36 * POCKET_P / (1 - POCKET_P)  # the simulator's weight: p = w / (36 + w)
    times = []
    for seed in range(120):
        sim = CammeghSim(seed=500 + seed, bias={17: weight})
        w = WheelBias("W")
        n = 0
        while True:
            n += 1
            if any(f.subject == "W:17" for f in w.spin(sim.pick_number())
                   if f.code == "WHEEL_BIAS_WARNING"):  # fmt: skip
                break
        times.append(n)
    mean, se = _mean_within(times, pocket_warning_design().arl(POCKET_P))
    print(f"pocket at 1.2/37: warned after {mean:.0f} ± {se:.0f} spins (computed "
          f"{pocket_warning_design().arl(POCKET_P):.0f})")  # fmt: skip
    times = []
    for seed in range(300):
        model = ShakerModel(3, 700 + seed, bias=[1, 1, 1, 1, 1, 1.25])  # p(6) = 0.2
        d = DiceBias("S")
        n = 0
        while True:
            n += 1
            if any(f.subject == "S:die1:6" for f in d.throw(model.roll())
                   if f.code == "DICE_BIAS_WARNING"):  # fmt: skip
                break
        times.append(n)
    q90 = face_warning_design(3).quantiles(FACE_P, [0.9])[0]
    mean, se = _mean_within(times, face_warning_design(3).arl(FACE_P))
    within = sum(t <= q90 for t in times) / len(times)
    print(f"face at 1.2/6: warned after {mean:.0f} ± {se:.0f} throws, {within:.1%} within the "
          f"computed 90 % quantile {q90}")  # fmt: skip
    assert abs(within - 0.9) < 4 * (0.09 / len(times)) ** 0.5


@pytest.mark.slow
def test_the_documented_warning_figures_are_the_computed_ones() -> None:
    text = DOC.read_text()

    def has(value: int) -> None:
        assert re.search(rf"\b{value:,}\b", text), f"docs/integrity.md lacks {value:,}"

    pw, fw = pocket_warning_design(), face_warning_design(3)
    for design in (pw, fw):
        assert f"h = {design.h}" in text and f"+{design.up} / -{design.down}" in text
    has(round(pw.arl(1 / 37)))
    has(round(fw.arl(1 / 6)))
    for design, p in ((pw, POCKET_P), (fw, FACE_P), (pocket_design(), POCKET_P),
                      (face_design(3), FACE_P)):  # fmt: skip
        has(round(design.arl(p)))
    for value in pw.quantiles(POCKET_P, [0.5, 0.9, 0.999]):
        has(value)
    for value in fw.quantiles(FACE_P, [0.5, 0.9, 0.999]):
        has(value)
    for value in fw.quantiles(FACE_P, [0.5, 0.9], copies=3):
        has(value)
