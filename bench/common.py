"""Shared pieces of the benchmarks: statistics, the machine, work directories, figures.

Every figure is a :class:`Figure`: a name, a value (the median over repeated runs),
its spread, a unit, the sample count, an optional goal and notes. The table printed
by ``python -m bench`` and the JSON it writes are both made from the same figures,
so the published numbers are the ones measured.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JSON = Any
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------
# statistics


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), ``q`` in [0, 100]."""
    if not values:
        raise ValueError("no samples")
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def latency_summary(seconds: Sequence[float]) -> dict[str, Any]:
    """p50/p90/p99/min/max of latencies given in seconds, in milliseconds."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50": percentile(ms, 50),
        "p90": percentile(ms, 90),
        "p99": percentile(ms, 99),
        "min": min(ms),
        "max": max(ms),
    }


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Median, min, max and interquartile range of repeated measurements."""
    return {
        "n": len(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "q1": percentile(values, 25),
        "q3": percentile(values, 75),
    }


def repeat(fn: Callable[[], float], times: int) -> list[float]:
    """Call ``fn`` (which returns one measurement) ``times`` times."""
    return [fn() for _ in range(times)]


# ---------------------------------------------------------------------------
# figures


@dataclass
class Figure:
    """One published number: the median (or p50/p99) and its spread."""

    section: str
    name: str
    value: float | None  # the headline number (median, or p99 for latency goals)
    unit: str
    stats: dict[str, Any] = field(default_factory=dict)
    goal: str | None = None  # e.g. "< 10 ms"
    ok: bool | None = None  # goal met? None when no goal or not measurable
    note: str = ""
    skipped: str | None = None  # why it was not measured

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "section": self.section,
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "stats": self.stats,
        }
        if self.goal is not None:
            out["goal"] = self.goal
            out["goal_met"] = self.ok
        if self.note:
            out["note"] = self.note
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out


def skipped(section: str, name: str, why: str) -> Figure:
    return Figure(section, name, None, "", skipped=why)


def fmt_num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e6:
        s = f"{v / 1e6:.2f}M"
    elif a >= 1e4:
        s = f"{v / 1e3:.1f}k"
    elif a >= 100:
        s = f"{v:.0f}"
    elif a >= 10:
        s = f"{v:.1f}"
    elif a >= 1:
        s = f"{v:.2f}"
    else:
        s = f"{v:.3g}"
    return f"{s} {unit}".rstrip()


def fmt_spread(f: Figure) -> str:
    st = f.stats
    if f.skipped is not None:
        return f"skipped: {f.skipped}"
    if "p50" in st and "p99" in st:
        return (
            f"p50 {fmt_num(st['p50'])} p99 {fmt_num(st['p99'])} "
            f"max {fmt_num(st['max'])} (n={st['n']})"
        )
    if "median" in st:
        return (
            f"min {fmt_num(st['min'])} IQR {fmt_num(st['q1'])}-{fmt_num(st['q3'])} "
            f"max {fmt_num(st['max'])} (n={st['n']})"
        )
    return ""


def render_table(figures: Sequence[Figure]) -> str:
    """The table ``python -m bench`` prints."""
    rows: list[tuple[str, str, str, str, str]] = []
    for f in figures:
        goal = ""
        if f.goal:
            mark = {True: "MET", False: "MISSED", None: "?"}[f.ok]
            goal = f"{f.goal} {mark}"
        rows.append(
            (f.section, f.name, fmt_num(f.value, f.unit) if f.skipped is None else "-",
             fmt_spread(f), goal)
        )  # fmt: skip
    heads = ("section", "figure", "value", "spread", "goal")
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(heads)
    ]
    widths[3] = min(widths[3], 60)
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    last = None
    for f, r in zip(figures, rows, strict=True):
        if last is not None and f.section != last:
            lines.append("")
        last = f.section
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if f.note:
            lines.append(" " * (widths[0] + 2) + "  note: " + f.note)
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# the machine


def _mounts() -> list[tuple[str, str, str]]:
    out = []
    with contextlib.suppress(OSError), open("/proc/mounts", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                out.append((parts[1].replace("\\040", " "), parts[2], parts[0]))
    return out


def filesystem_of(path: str | Path) -> dict[str, str]:
    """Mount point, filesystem type and device holding ``path`` (from /proc/mounts)."""
    real = os.path.realpath(path)
    best = ("/", "?", "?")
    for mnt, fstype, dev in _mounts():
        if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
            best = (mnt, fstype, dev)
    return {"path": real, "mount": best[0], "fstype": best[1], "device": best[2]}


MEMORY_FS = {"tmpfs", "ramfs", "devtmpfs", "overlay-tmpfs"}


def disk_workdir_base() -> tuple[Path, str]:
    """Where journals go: the temp dir when it is on a disk, else ``.bench-work`` in the repo.

    Returns (base, why). A journal on tmpfs would hide the fsync cost the goal includes.
    """
    chosen = os.environ.get("BENCH_WORKDIR")
    if chosen:  # python -m bench --workdir DIR
        base = Path(chosen)
        base.mkdir(parents=True, exist_ok=True)
        fs = filesystem_of(base)
        return base, f"--workdir {base} ({fs['fstype']} on {fs['device']})"
    tmp = Path(tempfile.gettempdir())
    fs = filesystem_of(tmp)
    if fs["fstype"] not in MEMORY_FS:
        return tmp, f"{tmp} is {fs['fstype']} on {fs['device']}"
    base = REPO / ".bench-work"
    base.mkdir(exist_ok=True)
    return base, f"{tmp} is {fs['fstype']} (memory): journals under {base} instead"


@contextlib.contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    base, _ = disk_workdir_base()
    d = Path(tempfile.mkdtemp(prefix=f"bench-{prefix}-", dir=base))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fsync_latency(directory: Path, n: int = 200) -> dict[str, Any]:
    """fsync of a 4 KiB append, the cost under every durable journal commit."""
    p = directory / "fsync.probe"
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    samples = []
    try:
        for _ in range(n):
            os.write(fd, b"x" * 4096)
            t0 = time.perf_counter()
            os.fsync(fd)
            samples.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        p.unlink()
    return latency_summary(samples)


def nbody(steps: int) -> float:
    """The Computer Language Benchmarks Game's n-body simulation (five planets, pure
    Python, the classic Python program's algorithm); returns seconds for ``steps``.

    It is the CPU micro-benchmark of ``python -m bench``: published timings of the same
    program on a Raspberry Pi 4 give a single-core speed ratio (docs/performance.md)."""
    pi = 3.14159265358979323
    solar_mass = 4 * pi * pi
    days_per_year = 365.24
    bodies: list[Any] = [
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], solar_mass],
        [[4.84143144246472090e00, -1.16032004402742839e00, -1.03622044471123109e-01],
         [1.66007664274403694e-03 * days_per_year, 7.69901118419740425e-03 * days_per_year,
          -6.90460016972063023e-05 * days_per_year], 9.54791938424326609e-04 * solar_mass],
        [[8.34336671824457987e00, 4.12479856412430479e00, -4.03523417114321381e-01],
         [-2.76742510726862411e-03 * days_per_year, 4.99852801234917238e-03 * days_per_year,
          2.30417297573763929e-05 * days_per_year], 2.85885980666130812e-04 * solar_mass],
        [[1.28943695621391310e01, -1.51111514016986312e01, -2.23307578892655734e-01],
         [2.96460137564761618e-03 * days_per_year, 2.37847173959480950e-03 * days_per_year,
          -2.96589568540237556e-05 * days_per_year], 4.36624404335156298e-05 * solar_mass],
        [[1.53796971148509165e01, -2.59193146099879641e01, 1.79258772950371181e-01],
         [2.68067772490389322e-03 * days_per_year, 1.62824170038242295e-03 * days_per_year,
          -9.51592254519715870e-05 * days_per_year], 5.15138902046611451e-05 * solar_mass],
    ]  # fmt: skip
    pairs: list[Any] = [(bodies[i], bodies[j]) for i in range(5) for j in range(i + 1, 5)]
    # offset the sun's momentum
    px = py = pz = 0.0
    for _r, [vx, vy, vz], m in bodies:
        px -= vx * m
        py -= vy * m
        pz -= vz * m
    bodies[0][1] = [px / solar_mass, py / solar_mass, pz / solar_mass]
    dt = 0.01
    t0 = time.perf_counter()
    for _ in range(steps):
        for ([x1, y1, z1], v1, m1), ([x2, y2, z2], v2, m2) in pairs:
            dx = x1 - x2
            dy = y1 - y2
            dz = z1 - z2
            mag = dt * ((dx * dx + dy * dy + dz * dz) ** (-1.5))
            b1m = m1 * mag
            b2m = m2 * mag
            v1[0] -= dx * b2m
            v1[1] -= dy * b2m
            v1[2] -= dz * b2m
            v2[0] += dx * b1m
            v2[1] += dy * b1m
            v2[2] += dz * b1m
        for r, [vx, vy, vz], _m in bodies:
            r[0] += dt * vx
            r[1] += dt * vy
            r[2] += dt * vz
    return time.perf_counter() - t0


def machine_info(journal_dir: Path) -> dict[str, JSON]:
    model = "?"
    mhz = None
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("cpu MHz") and mhz is None:
                with contextlib.suppress(ValueError):
                    mhz = float(line.split(":", 1)[1])
    mem_kb = None
    with contextlib.suppress(OSError), open("/proc/meminfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    mosq = None
    from tablesim.broker import find_mosquitto

    binary = find_mosquitto()
    if binary:
        with contextlib.suppress(Exception):
            out = subprocess.run([binary, "-h"], capture_output=True, text=True, timeout=5)
            m = re.search(r"mosquitto version (\S+)", out.stdout + out.stderr)
            mosq = m.group(1) if m else "?"
    import sqlite3

    return {
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "cpu_mhz": mhz,
        "mem_total_mb": round(mem_kb / 1024) if mem_kb else None,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "sqlite": sqlite3.sqlite_version,
        "kernel": platform.release(),
        "machine": platform.machine(),
        "mosquitto": mosq,
        "loadavg_at_start": os.getloadavg(),
        "journal_fs": filesystem_of(journal_dir),
    }


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise ValueError(f"no VmRSS for {pid}")


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (from /proc/PID/stat), in seconds."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def linear_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ys over xs."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0
