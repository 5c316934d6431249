"""The integrity statistics against independent figures: chi-square critical values
from the published tables (NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.4;
Abramowitz & Stegun table 26.8), Pearson's statistic by hand, and the CUSUM's run
length computed on its Markov chain against a seeded simulation of the chain itself."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from firmware_host.integrity.stats import (
    CusumDesign,
    LazyCusum,
    chi2_isf,
    chi2_sf,
    chi_square,
    cusum_steps,
)

# (df, upper-tail probability, critical value) as printed in the published tables
PUBLISHED = [
    (1, 0.05, 3.841), (1, 0.001, 10.828), (2, 0.05, 5.991), (2, 0.001, 13.816),
    (3, 0.01, 11.345), (5, 0.05, 11.070), (5, 0.001, 20.515), (10, 0.01, 23.209),
    (15, 0.001, 37.697), (20, 0.05, 31.410), (30, 0.01, 50.892), (36, 0.05, 50.998),
    (40, 0.001, 73.402), (50, 0.05, 67.505), (100, 0.01, 135.807),
]  # fmt: skip


@pytest.mark.parametrize(("df", "alpha", "x"), PUBLISHED)
def test_chi2_tail_matches_the_published_tables(df: int, alpha: float, x: float) -> None:
    # the tables round to 3 decimals: the tail at the printed value is alpha to that
    assert chi2_sf(x, df) == pytest.approx(alpha, rel=2e-3)
    assert chi2_isf(alpha, df) == pytest.approx(x, abs=6e-4)


def test_chi2_tail_closed_forms() -> None:
    import math

    # df 2: exp(-x/2); df 1: erfc(sqrt(x/2)) (independent closed forms)
    for x in (0.5, 3.0, 10.0, 40.0):
        assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12)
        assert chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-12)
    assert chi2_sf(0, 7) == 1.0


def test_pearson_statistic_is_exact() -> None:
    # 60 throws of a die: counts 5, 8, 9, 8, 10, 20; expected 10 each:
    # (25 + 4 + 1 + 4 + 0 + 100) / 10 = 134/10
    assert chi_square([5, 8, 9, 8, 10, 20], [Fraction(1, 6)] * 6) == Fraction(134, 10)
    with pytest.raises(ValueError):
        chi_square([1, 2], [Fraction(1, 3), Fraction(1, 3)])


def test_cusum_steps_follow_the_likelihood_ratio() -> None:
    import math

    up, down = cusum_steps(1 / 37, 1.5 / 37)
    ratio = math.log(1.5) / math.log((1 - 1 / 37) / (1 - 1.5 / 37))
    assert abs(up / down - ratio) / ratio < 0.02


def _simulate(design: CusumDesign, p: float, spins: int, seed: int) -> int:
    """Alarms of the CUSUM updated at every observation (eagerly, not lazily)."""
    rng = random.Random(seed)
    s = alarms = 0
    for _ in range(spins):
        s = max(0, s + design.up) if rng.random() < p else max(0, s - design.down)
        if s >= design.h:
            alarms += 1
            s = 0
    return alarms


@pytest.mark.parametrize(
    "design",
    [
        CusumDesign(Fraction(1, 37), 29, 1, 150),
        CusumDesign(Fraction(9, 37), 11, 4, 120),
        CusumDesign(Fraction(1, 6), 13, 3, 100),
    ],
)
def test_run_length_on_the_chain_matches_a_seeded_simulation(design: CusumDesign) -> None:
    p = float(design.p0)
    spins = 600_000
    alarms = _simulate(design, p, spins, seed=19)
    arl = design.arl(p)
    # alarms ~ spins/arl (a renewal process); 4 standard deviations of a Poisson count
    expected = spins / arl
    print(f"{design}: ARL {arl:.0f}, simulated {spins / alarms:.0f} ({alarms} alarms)")
    assert abs(alarms - expected) < 4 * expected**0.5
    # and the alarm probability within n observations, against the same simulation
    assert 0 < design.alarm_by(p, 1000) < 1


def test_lazy_cusum_equals_the_eager_one() -> None:
    design = CusumDesign(Fraction(9, 37), 11, 4, 60)
    rng = random.Random(3)
    lazy, eager, n_alarm_lazy, n_alarm_eager = LazyCusum(design), 0, [], []
    for n in range(1, 50_000):
        if rng.random() < 0.3:
            if lazy.hit(n):
                n_alarm_lazy.append(n)
            eager += design.up
        else:
            eager = max(0, eager - design.down)
        if eager >= design.h:
            n_alarm_eager.append(n)
            eager = 0
    assert n_alarm_lazy == n_alarm_eager and len(n_alarm_lazy) > 100
