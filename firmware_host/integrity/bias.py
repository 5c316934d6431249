"""Bias detectors of the roulette wheel and of the dice, as pure state machines.

Each takes one result at a time and returns what it found (:class:`Finding`); the
table's extension (``monitor.py``) turns findings into alerts. The designs, their
false-alarm rates and detection delays are in ``docs/integrity.md``, computed by
``stats.py`` and verified by seeded simulation (``tests/integrity/test_bias.py``).

**Budget.** At the design rate (:data:`DESIGN_RATE` results an hour, all year round) a
fair wheel raises a bias alert less than once a year: the 37 pocket CUSUMs together
0.1 a year, the 37 sector CUSUMs 0.1, and the two chi-square tests, run every 1000
spins at ``alpha`` = 5e-5 each, at most 2 x 526 x 5e-5 = 0.053 (a union bound: the
tests on overlapping windows are not independent): at most 0.25 a year, one false
alarm in four years. The dice (18 face CUSUMs, 4 chi-square tests) take the same
budget per shaker: at most 0.1 + 4 x 526 x 5e-5 = 0.21 a year.

**The warning tier** (issue 37). A budget that small makes a small bias slow to find
(a pocket at 1.2 times its fair probability: about 61,000 spins to the alarm). A second
family of CUSUMs, one per pocket and one per face, tuned to a 1.2x bias, runs beside
the alarm tier at a budget of about one false warning a week per wheel and per shaker
(:data:`WARNINGS_PER_WEEK`, ``[integrity] bias_warnings_per_week``): its findings are
``WHEEL_BIAS_WARNING`` and ``DICE_BIAS_WARNING``, warnings for people to review, never
an alarm. The same exact computation gives its rate and its detection times.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from itertools import product

from tablecommon.wheel import WHEEL_ORDER

from ..jsonio import JSON
from .stats import CusumDesign, LazyCusum, chi2_isf, chi2_sf, chi_square, design_cusum

#: Results an hour the false-alarm budget assumes (the issue: 60 spins an hour).
DESIGN_RATE = 60
HOURS_A_YEAR = 24 * 365.25
#: False alarms a year allowed to each family of CUSUMs (pockets, sectors, faces).
CUSUM_BUDGET = 0.1
#: Significance of each periodic chi-square test.
CHI_SQUARE_ALPHA = 5e-5
#: The bias each CUSUM is tuned to (its event's probability times this).
POCKET_BIAS = 1.5
SECTOR_BIAS = 1.2
FACE_BIAS = 1.25
#: The warning tier: tuned to this bias, about this many false warnings a week (per wheel,
#: its 37 pocket CUSUMs together; per shaker, its face CUSUMs together).
WARNING_BIAS = 1.2
WARNINGS_PER_WEEK = 1
HOURS_A_WEEK = 24 * 7
#: Adjacent pockets of a sector CUSUM (a quarter of the wheel); one per starting pocket.
SECTOR_WIDTH = 9


def _arc(first: int, last: int) -> frozenset[int]:
    i, j = WHEEL_ORDER.index(first), WHEEL_ORDER.index(last)
    n = len(WHEEL_ORDER)
    return frozenset(WHEEL_ORDER[(i + k) % n] for k in range((j - i) % n + 1))


#: The French named sectors, a partition of the wheel (the sector chi-square's cells).
NAMED_SECTORS: dict[str, frozenset[int]] = {
    "voisins": _arc(22, 25),  # 17 pockets, 22 to 25 through 0
    "tiers": _arc(27, 33),  # 12 pockets
    "orphelins": _arc(1, 9) | _arc(17, 6),  # 8 pockets: 1-20-14-31-9 and 17-34-6
}


def sector_windows(width: int = SECTOR_WIDTH) -> list[tuple[int, ...]]:
    """Every arc of ``width`` adjacent pockets, one starting at each pocket."""
    n = len(WHEEL_ORDER)
    return [tuple(WHEEL_ORDER[(i + k) % n] for k in range(width)) for i in range(n)]


@dataclass(frozen=True)
class Finding:
    """What a detector found: an alert's code, subject, message and evidence."""

    code: str
    subject: str
    message: str
    evidence: dict[str, JSON] = field(default_factory=dict)


def _target_arl(
    cusums: int, rate: int = DESIGN_RATE, budget: float = CUSUM_BUDGET,
    hours: float = HOURS_A_YEAR,
) -> float:  # fmt: skip
    """The in-control run length each of ``cusums`` CUSUMs needs for ``budget`` false
    alarms together in ``hours`` (a year) at ``rate`` results an hour."""
    return cusums * rate * hours / budget


@cache
def pocket_design(rate: int = DESIGN_RATE) -> CusumDesign:
    return design_cusum(Fraction(1, 37), POCKET_BIAS / 37, _target_arl(37, rate))


@cache
def sector_design(rate: int = DESIGN_RATE, width: int = SECTOR_WIDTH) -> CusumDesign:
    return design_cusum(Fraction(width, 37), SECTOR_BIAS * width / 37, _target_arl(37, rate))


@cache
def face_design(dice: int, rate: int = DESIGN_RATE) -> CusumDesign:
    return design_cusum(Fraction(1, 6), FACE_BIAS / 6, _target_arl(6 * dice, rate))


@cache
def pocket_warning_design(
    rate: int = DESIGN_RATE, per_week: int = WARNINGS_PER_WEEK
) -> CusumDesign:
    """The warning tier's pocket CUSUM: tuned to 1.2/37, ``per_week`` false warnings a
    week for the wheel's 37 pockets together."""
    return design_cusum(
        Fraction(1, 37), WARNING_BIAS / 37, _target_arl(37, rate, per_week, HOURS_A_WEEK)
    )


@cache
def face_warning_design(
    dice: int, rate: int = DESIGN_RATE, per_week: int = WARNINGS_PER_WEEK
) -> CusumDesign:
    """The warning tier's face CUSUM: tuned to 1.2/6, ``per_week`` false warnings a week
    for the shaker's ``6 x dice`` faces together."""
    return design_cusum(
        Fraction(1, 6), WARNING_BIAS / 6, _target_arl(6 * dice, rate, per_week, HOURS_A_WEEK)
    )


@cache
def critical(df: int, alpha: float = CHI_SQUARE_ALPHA) -> float:
    return chi2_isf(alpha, df)


class _Window:
    """Counts of the last ``size`` results over ``cells`` cells."""

    def __init__(self, size: int, cells: int) -> None:
        self.size = size
        self.items: deque[int] = deque()
        self.counts = [0] * cells

    def add(self, cell: int) -> None:
        self.items.append(cell)
        self.counts[cell] += 1
        if len(self.items) > self.size:
            self.counts[self.items.popleft()] -= 1


def _chi_finding(
    code: str, subject: str, what: str, counts: Sequence[int], probs: Sequence[Fraction],
    labels: Sequence[str], **extra: JSON,
) -> Finding | None:  # fmt: skip
    stat = chi_square(counts, probs)
    df = len(counts) - 1
    limit = critical(df)
    if float(stat) < limit:
        return None
    p = chi2_sf(float(stat), df)
    return Finding(
        code,
        subject,
        f"{what}: chi-square {float(stat):.2f} on {df} df over {sum(counts)} results "
        f"(p = {p:.2e}, limit {limit:.2f} at alpha {CHI_SQUARE_ALPHA:g})",
        {"statistic": round(float(stat), 4), "df": df, "p_value": p, "critical": round(limit, 4),
         "alpha": CHI_SQUARE_ALPHA, "results": sum(counts),
         "counts": dict(zip(labels, counts, strict=True)), **extra},
    )  # fmt: skip


class WheelBias:
    """One wheel (by serial number): per-pocket and per-sector CUSUMs on every spin,
    and chi-square tests of the pockets and the named sectors every ``chi_every``
    spins over the last ``window`` spins."""

    def __init__(
        self, serial: str, *, window: int = 3700, chi_every: int = 1000,
        rate: int = DESIGN_RATE, warnings_per_week: int = WARNINGS_PER_WEEK,
    ) -> None:  # fmt: skip
        self.serial = serial
        self.spins = 0
        self.chi_every = chi_every
        self.pocket = pocket_design(rate)
        self.sector = sector_design(rate)
        self._pockets = [LazyCusum(self.pocket) for _ in range(37)]
        #: The warning tier (None: off), and its CUSUM of each pocket.
        self.warnings_per_week = warnings_per_week
        self.pocket_warning = (
            pocket_warning_design(rate, warnings_per_week) if warnings_per_week else None
        )
        self._pocket_warnings = (
            [LazyCusum(self.pocket_warning) for _ in range(37)] if self.pocket_warning else []
        )
        self._windows = sector_windows()
        self._sectors = [LazyCusum(self.sector) for _ in self._windows]
        self._in_windows: list[list[int]] = [[] for _ in range(37)]
        for i, arc in enumerate(self._windows):
            for pocket in arc:
                self._in_windows[pocket].append(i)
        self._named = list(NAMED_SECTORS)
        self._named_of = {p: k for k, name in enumerate(self._named) for p in NAMED_SECTORS[name]}
        self.window = _Window(window, 37)
        self.named_window = _Window(window, len(self._named))

    def spin(self, number: int) -> list[Finding]:
        if not 0 <= number <= 36:
            raise ValueError(f"pocket {number} is not on a single-zero wheel")
        self.spins += 1
        n = self.spins
        found: list[Finding] = []
        if self._pockets[number].hit(n):
            found.append(Finding(
                "WHEEL_BIAS_POCKET", f"{self.serial}:{number}",
                f"wheel {self.serial}: pocket {number} comes up more often than a fair wheel "
                "allows (CUSUM)",
                {"serial": self.serial, "pocket": number, "spins": n,
                 "threshold": self.pocket.h, "up": self.pocket.up, "down": self.pocket.down,
                 "count_in_window": self.window.counts[number] + 1},
            ))  # fmt: skip
        w = self.pocket_warning
        if w is not None and self._pocket_warnings[number].hit(n):
            found.append(Finding(
                "WHEEL_BIAS_WARNING", f"{self.serial}:{number}",
                f"wheel {self.serial}: pocket {number} comes up more often than expected, "
                f"for review (warning tier: a fair wheel gives about {self.warnings_per_week} "
                "such warning(s) a week)",
                {"serial": self.serial, "pocket": number, "spins": n, "tier": "warning",
                 "threshold": w.h, "up": w.up, "down": w.down, "tuned_to": WARNING_BIAS,
                 "false_warnings_a_week": self.warnings_per_week,
                 "count_in_window": self.window.counts[number] + 1},
            ))  # fmt: skip
        for i in self._in_windows[number]:
            if self._sectors[i].hit(n):
                arc = self._windows[i]
                found.append(Finding(
                    "WHEEL_BIAS_SECTOR", f"{self.serial}:{arc[0]}-{arc[-1]}",
                    f"wheel {self.serial}: the sector {arc[0]} to {arc[-1]} comes up more "
                    "often than a fair wheel allows (CUSUM)",
                    {"serial": self.serial, "sector": list(arc), "spins": n,
                     "threshold": self.sector.h, "up": self.sector.up,
                     "down": self.sector.down},
                ))  # fmt: skip
        self.window.add(number)
        self.named_window.add(self._named_of[number])
        if n % self.chi_every == 0:
            f = _chi_finding(
                "WHEEL_CHI_SQUARE", f"{self.serial}:pockets", f"wheel {self.serial} pockets",
                self.window.counts, [Fraction(1, 37)] * 37, [str(p) for p in range(37)],
                serial=self.serial, spins=n,
            )  # fmt: skip
            if f:
                found.append(f)
            f = _chi_finding(
                "WHEEL_CHI_SQUARE", f"{self.serial}:sectors",
                f"wheel {self.serial} named sectors", self.named_window.counts,
                [Fraction(len(NAMED_SECTORS[s]), 37) for s in self._named], self._named,
                serial=self.serial, spins=n,
            )  # fmt: skip
            if f:
                found.append(f)
        return found


@cache
def total_probabilities(dice: int) -> tuple[tuple[int, ...], tuple[Fraction, ...]]:
    """The totals of ``dice`` fair dice and their exact probabilities (counted over
    the 6**dice throws)."""
    counts: dict[int, int] = {}
    for throw in product(range(1, 7), repeat=dice):
        counts[sum(throw)] = counts.get(sum(throw), 0) + 1
    totals = tuple(sorted(counts))
    return totals, tuple(Fraction(counts[t], 6**dice) for t in totals)


class DiceBias:
    """One shaker's dice, each die by its position in the result: per-die face CUSUMs
    on every throw, chi-square tests of each die's faces and of the totals every
    ``chi_every`` throws over the last ``window`` throws."""

    def __init__(
        self, shaker: str, dice: int = 3, *, window: int = 3700, chi_every: int = 1000,
        rate: int = DESIGN_RATE, warnings_per_week: int = WARNINGS_PER_WEEK,
    ) -> None:  # fmt: skip
        self.shaker = shaker
        self.dice = dice
        self.throws = 0
        self.chi_every = chi_every
        self.design = face_design(dice, rate)
        self._faces = [[LazyCusum(self.design) for _ in range(6)] for _ in range(dice)]
        #: The warning tier (None: off), and its CUSUM of each face of each die.
        self.warnings_per_week = warnings_per_week
        self.warning = (
            face_warning_design(dice, rate, warnings_per_week) if warnings_per_week else None
        )
        self._face_warnings = (
            [[LazyCusum(self.warning) for _ in range(6)] for _ in range(dice)]
            if self.warning
            else []
        )
        self.windows = [_Window(window, 6) for _ in range(dice)]
        self.totals, self.total_probs = total_probabilities(dice)
        self.total_window = _Window(window, len(self.totals))

    def throw(self, dice: Iterable[int]) -> list[Finding]:
        faces = [int(d) for d in dice]
        if len(faces) != self.dice or any(not 1 <= f <= 6 for f in faces):
            raise ValueError(f"a throw of {self.dice} dice, faces 1-6, got {faces}")
        self.throws += 1
        n = self.throws
        found: list[Finding] = []
        for i, face in enumerate(faces):
            if self._faces[i][face - 1].hit(n):
                found.append(Finding(
                    "DICE_BIAS_FACE", f"{self.shaker}:die{i + 1}:{face}",
                    f"shaker {self.shaker}: die {i + 1} shows {face} more often than a fair "
                    "die allows (CUSUM)",
                    {"shaker": self.shaker, "die": i + 1, "face": face, "throws": n,
                     "threshold": self.design.h, "up": self.design.up,
                     "down": self.design.down},
                ))  # fmt: skip
            warn = self.warning
            if warn is not None and self._face_warnings[i][face - 1].hit(n):
                found.append(Finding(
                    "DICE_BIAS_WARNING", f"{self.shaker}:die{i + 1}:{face}",
                    f"shaker {self.shaker}: die {i + 1} shows {face} more often than expected, "
                    f"for review (warning tier: fair dice give about {self.warnings_per_week} "
                    "such warning(s) a week)",
                    {"shaker": self.shaker, "die": i + 1, "face": face, "throws": n,
                     "tier": "warning", "threshold": warn.h, "up": warn.up, "down": warn.down,
                     "tuned_to": WARNING_BIAS, "false_warnings_a_week": self.warnings_per_week},
                ))  # fmt: skip
            self.windows[i].add(face - 1)
        self.total_window.add(self.totals.index(sum(faces)))
        if n % self.chi_every == 0:
            for i, w in enumerate(self.windows):
                f = _chi_finding(
                    "DICE_BIAS_FACE", f"{self.shaker}:die{i + 1}",
                    f"shaker {self.shaker} die {i + 1} faces", w.counts, [Fraction(1, 6)] * 6,
                    [str(k) for k in range(1, 7)], shaker=self.shaker, die=i + 1, throws=n,
                )  # fmt: skip
                if f:
                    found.append(f)
            f = _chi_finding(
                "DICE_BIAS_TOTAL", f"{self.shaker}:totals", f"shaker {self.shaker} totals",
                self.total_window.counts, list(self.total_probs), [str(t) for t in self.totals],
                shaker=self.shaker, throws=n,
            )  # fmt: skip
            if f:
                found.append(f)
        return found
