"""The integrity statistics, as pure functions (no I/O, no clock, no randomness).

- :func:`chi_square`: Pearson's statistic from integer counts and exact probabilities,
  an exact :class:`~fractions.Fraction`;
- :func:`chi2_sf`: its upper tail, the p-value, by the closed-form series of the
  regularised upper incomplete gamma function for an integer number of degrees of
  freedom (even: a finite Poisson sum; odd: ``erfc`` plus a finite sum), checked
  against published critical values (``tests/integrity/test_stats.py``);
  :func:`chi2_isf` inverts it by bisection;
- :class:`CusumDesign`: a one-sided Bernoulli CUSUM on integer steps (a hit adds
  ``up``, a miss subtracts ``down``, floored at 0, alarm at ``h``), the sequential
  test of one pocket, sector or face; its average run length (:meth:`CusumDesign.arl`)
  and run-length distribution (:meth:`CusumDesign.alarm_by`) computed exactly on its
  Markov chain; :func:`design_cusum` picks the steps from the log-likelihood ratio of
  a fair and a biased probability and the threshold from a target average run length;
- :class:`LazyCusum`: the running statistic, updated only when its event happens (a
  miss only ever lowers it, so the misses in between are applied at once).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction


def chi_square(counts: Sequence[int], probs: Sequence[Fraction]) -> Fraction:
    """Pearson's chi-square of ``counts`` against ``probs`` (summing to 1), exact."""
    if len(counts) != len(probs) or not counts:
        raise ValueError("counts and probabilities must be as many, and some")
    if sum(probs) != 1 or any(p <= 0 for p in probs):
        raise ValueError("probabilities must be positive and sum to 1")
    n = sum(counts)
    if n <= 0:
        raise ValueError("no observation")
    return sum((Fraction(c) - n * p) ** 2 / (n * p) for c, p in zip(counts, probs, strict=True))  # type: ignore[return-value]


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for a chi-square variable with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("df must be at least 1")
    if x <= 0:
        return 1.0
    half = x / 2.0
    if df % 2 == 0:
        # Q(k, x/2) for integer k = df/2: e^{-x/2} sum_{i<k} (x/2)^i / i!
        term, total = 1.0, 1.0
        for i in range(1, df // 2):
            term *= half / i
            total += term
        return min(1.0, math.exp(-half) * total)
    # odd: Q(1/2, x/2) = erfc(sqrt(x/2)); Q(a+1, y) = Q(a, y) + y^a e^{-y} / Gamma(a+1)
    total = math.erfc(math.sqrt(half))
    a = 0.5
    term = math.exp(-half) * math.sqrt(half) / math.gamma(1.5)  # y^{1/2} e^{-y} / Gamma(3/2)
    for _ in range((df - 1) // 2):
        total += term
        term *= half / (a + 1.0)  # y^{a+1} e^{-y} / Gamma(a+2)
        a += 1.0
    return min(1.0, total)


def chi2_isf(alpha: float, df: int) -> float:
    """The critical value: the x with ``chi2_sf(x, df) == alpha``."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")
    lo, hi = 0.0, float(df) + 10.0
    while chi2_sf(hi, df) > alpha:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if chi2_sf(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class CusumDesign:
    """A one-sided Bernoulli CUSUM: ``S = max(0, S + up)`` on a hit, ``max(0, S - down)``
    on a miss, alarm when ``S >= h`` (then ``S`` starts again from 0)."""

    p0: Fraction
    up: int
    down: int
    h: int

    def arl(self, p: float) -> float:
        """Average run length (observations to the alarm, from 0) when the event's
        probability is ``p``: exact on the chain's states 0..h-1 (a banded linear
        system solved by elimination)."""
        h, up, down = self.h, self.up, self.down
        q = 1.0 - p
        # row s: L(s) - p L(s+up) - q L(max(s-down, 0)) = 1, with L(>= h) = 0
        rows: list[dict[int, float]] = []
        for s in range(h):
            row: dict[int, float] = {s: 1.0}
            if s + up < h:
                row[s + up] = row.get(s + up, 0.0) - p
            t = max(s - down, 0)
            row[t] = row.get(t, 0.0) - q
            rows.append(row)
        rhs = [1.0] * h
        # forward elimination of the sub-diagonal band (at most `down` below)
        for s in range(h):
            piv = rows[s][s]
            for r in range(s + 1, min(h, s + down + 1)):
                f = rows[r].get(s)
                if not f:
                    continue
                factor = f / piv
                for c, v in rows[s].items():
                    rows[r][c] = rows[r].get(c, 0.0) - factor * v
                rows[r].pop(s, None)
                rhs[r] -= factor * rhs[s]
        out = [0.0] * h
        for s in range(h - 1, -1, -1):
            acc = rhs[s] - sum(v * out[c] for c, v in rows[s].items() if c > s)
            out[s] = acc / rows[s][s]
        return out[0]

    def _alarmed(self, p: float) -> Iterator[float]:
        """P(alarm within 1, 2, 3... observations, from 0) when the probability is ``p``:
        the chain of scores walked one observation at a time."""
        h, up, down = self.h, self.up, self.down
        dist = [0.0] * h
        dist[0] = 1.0
        alarmed = 0.0
        while True:
            nxt = [0.0] * h
            for s, w in enumerate(dist):
                if not w:
                    continue
                if s + up >= h:
                    alarmed += w * p
                else:
                    nxt[s + up] += w * p
                nxt[max(s - down, 0)] += w * (1.0 - p)
            dist = nxt
            yield alarmed

    def alarm_by(self, p: float, n: int) -> float:
        """P(alarm within ``n`` observations, from 0) when the probability is ``p``."""
        return next(itertools.islice(self._alarmed(p), n - 1, None)) if n > 0 else 0.0

    def quantiles(
        self, p: float, probs: Sequence[float], limit: int = 10_000_000, *, copies: int = 1
    ) -> list[int]:
        """The smallest ``n`` with P(alarm within ``n``) >= each of ``probs`` (ascending),
        in one walk of the chain; ``copies``: the first alarm of that many independent
        CUSUMs of this design (``1 - (1 - F(n)) ** copies``)."""
        out: list[int] = []
        want = list(probs)
        for n, alarmed in enumerate(itertools.islice(self._alarmed(p), limit), start=1):
            f = 1.0 - (1.0 - alarmed) ** copies
            while want and f >= want[0]:
                out.append(n)
                want.pop(0)
            if not want:
                return out
        raise ValueError(f"quantiles {want} beyond {limit} observations")

    def within(self, p: float, prob: float, limit: int = 1_000_000) -> int:
        """The smallest ``n`` with ``alarm_by(p, n) >= prob`` (walked one step at a time)."""
        for n, alarmed in enumerate(itertools.islice(self._alarmed(p), limit), start=1):
            if alarmed >= prob:
                return n
        raise ValueError(f"no alarm with probability {prob} within {limit} observations")


def cusum_steps(p0: float, p1: float, max_step: int = 40) -> tuple[int, int]:
    """Integer steps ``(up, down)`` in the ratio of the log-likelihood ratio of a hit
    and of a miss (``ln(p1/p0)`` : ``ln((1-p0)/(1-p1))``), the best approximation with
    ``up + down <= max_step``."""
    ratio = math.log(p1 / p0) / math.log((1 - p0) / (1 - p1))
    best = (1, 1)
    err = math.inf
    for down in range(1, max_step):
        up = max(1, round(ratio * down))
        if up + down > max_step:
            break
        e = abs(up / down - ratio) / ratio
        if e < err - 1e-12:
            best, err = (up, down), e
    return best


def design_cusum(p0: Fraction, p1: float, target_arl: float, max_step: int = 40) -> CusumDesign:
    """The CUSUM for ``p0`` against ``p1`` whose in-control run length is at least
    ``target_arl``, with the lowest such threshold (found by doubling then bisection)."""
    up, down = cusum_steps(float(p0), p1, max_step)
    p = float(p0)
    lo, hi = up, up
    while CusumDesign(p0, up, down, hi).arl(p) < target_arl:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if CusumDesign(p0, up, down, mid).arl(p) >= target_arl:
            hi = mid
        else:
            lo = mid + 1
    return CusumDesign(p0, up, down, hi)


class LazyCusum:
    """The running statistic of one :class:`CusumDesign` over a stream of observations
    numbered 1, 2, ...: :meth:`hit` at the observation where its event happened."""

    __slots__ = ("design", "last", "value")

    def __init__(self, design: CusumDesign, start: int = 0) -> None:
        self.design = design
        self.value = 0
        #: The observation number the value stands at.
        self.last = start

    def at(self, n: int) -> int:
        """The value after observation ``n`` if nothing happened since :attr:`last`."""
        return max(0, self.value - self.design.down * (n - self.last))

    def hit(self, n: int) -> bool:
        """Observation ``n`` was this event: True if the CUSUM alarms (it restarts at 0)."""
        v = max(0, self.value - self.design.down * (n - self.last - 1)) + self.design.up
        self.last = n
        if v >= self.design.h:
            self.value = 0
            return True
        self.value = v
        return False
