"""The smallest machine (issue 18 item 5): the table daemon under a CPU budget modelled
on a Raspberry Pi 4, its journal's fsync slowed to a published SD-card figure.

**CPU.** A cgroup (v1 ``cpu`` controller: ``cpu.cfs_period_us`` and
``cpu.cfs_quota_us``; cgroup v2 ``cpu.max`` where that is what the machine has) holds
the daemon to a fraction of one core. The fraction is calibrated, not guessed: the
bench's single-core reference (``bench.common.nbody``, the Benchmarks Game n-body in
pure Python) runs inside the cgroup, and the quota is adjusted until it takes what a
Raspberry Pi 4 Model B (1.5 GHz) took in a published run of the same program: 158.26 s
for five million steps, 31.7 s per million ("Performance Analysis of Languages on
Raspberry Pi", chaitanyamehta.github.io; the source ``docs/performance.md`` already
uses for its Pi estimate). A short period (a quota of at least 1 ms per period, the
kernel's minimum) keeps the throttling fine-grained: the daemon runs at full speed for
its share of each period, so work shorter than a period is delayed by at most the rest
of that period, as it would run slower on a slower core.

**fsync.** An ``LD_PRELOAD`` shim, compiled with gcc by the bench at run time (never
committed as a binary), makes every ``fsync`` and ``fdatasync`` of the daemon (SQLite
calls ``fdatasync`` on Linux) sleep ``FSYNC_DELAY_US`` after the real call. The figure:
an SD card of the SD Association's Application Performance Class A1 (SD
specification 5.1) guarantees at least 500 random 4 KiB write IOPS, that is 2 ms per
4 KiB random write; a small SQLite commit is one such write plus its flush. So 2 ms per
fsync, the guaranteed floor of an A1 card (A2's 2,000 IOPS need command queueing,
which the Pi 4's SD host does not use). Not modelled: the card's occasional stalls of
tens to hundreds of milliseconds while it reorganises its flash.

Then the same measurements as the ``e2e`` and ``footprint`` sections: result ->
floor p50/p99 with 10, 100 and 1,000 bets (the Cammegh wheel simulator, mosquitto on
loopback: the broker and the floor are *not* under the budget, as they run on other
machines), start -> READY and memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .common import REPO, Figure

SECTION = "pi budget"
#: Seconds per million n-body steps on a Raspberry Pi 4 Model B (see the docstring).
PI4_NBODY_S_PER_M = 158.26 / 5
#: A1 SD card: 500 random 4 KiB write IOPS guaranteed -> 2 ms per write (docstring).
FSYNC_DELAY_US = 2000
CGROUP_V1 = Path("/sys/fs/cgroup/cpu")
CGROUP_V2 = Path("/sys/fs/cgroup")
P99_GOAL_MS = 50.0
JSON = Any

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <errno.h>

static long delay_ns(void) {
    static long ns = -1;
    if (ns < 0) {
        const char *s = getenv("TABLECTL_FSYNC_DELAY_US");
        ns = s ? atol(s) * 1000L : 0;
    }
    return ns;
}

static void slow(void) {
    long ns = delay_ns();
    if (ns > 0) {
        struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
    }
}

int fsync(int fd) {
    static int (*real)(int) = 0;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int r = real(fd);
    slow();
    return r;
}

int fdatasync(int fd) {
    static int (*real)(int) = 0;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int r = real(fd);
    slow();
    return r;
}
"""


def build_shim(directory: Path) -> Path:
    """Compile the fsync shim into ``directory``; raises when gcc is missing."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise FileNotFoundError("gcc is not installed: the fsync shim cannot be built")
    src = directory / "slowfsync.c"
    out = directory / "slowfsync.so"
    src.write_text(SHIM_C)
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-O2", "-o", str(out), str(src), "-ldl"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


class CpuBudget:
    """A cgroup holding processes to ``quota_us`` of CPU per ``period_us``."""

    def __init__(self, name: str) -> None:
        if (CGROUP_V1 / "cpu.cfs_quota_us").exists():
            self.v2 = False
            self.path = CGROUP_V1 / name
        elif (CGROUP_V2 / "cgroup.controllers").exists():
            self.v2 = True
            self.path = CGROUP_V2 / name
        else:
            raise FileNotFoundError("no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2)")
        self.path.mkdir(exist_ok=True)
        self.period_us = 0
        self.quota_us = 0

    def set(self, quota_us: int, period_us: int) -> None:
        quota_us = max(1000, quota_us)
        if self.v2:
            (self.path / "cpu.max").write_text(f"{quota_us} {period_us}\n")
        else:
            (self.path / "cpu.cfs_period_us").write_text(f"{period_us}\n")
            (self.path / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
        self.quota_us, self.period_us = quota_us, period_us

    @property
    def share(self) -> float:
        return self.quota_us / self.period_us

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def close(self) -> None:
        # Move anything left back to the root, then remove the group.
        root = self.path.parent / "cgroup.procs"
        with contextlib.suppress(OSError):
            for pid in self.procs.read_text().split():
                with contextlib.suppress(OSError):
                    root.write_text(pid)
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _nbody_in(budget: CpuBudget, steps: int) -> float:
    """Seconds per million n-body steps of a child process inside ``budget``."""
    code = (
        "import sys, time\n"
        f"open({str(budget.procs)!r}, 'w').write(str(__import__('os').getpid()))\n"
        "from bench.common import nbody\n"
        "t = time.perf_counter()\n"
        f"nbody({steps})\n"
        "print(time.perf_counter() - t)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return 1e6 * float(out.stdout.strip()) / steps


def calibrate(budget: CpuBudget, steps: int, log: Callable[[str], None]) -> dict[str, JSON]:
    """Set the quota so that n-body inside the cgroup takes the Pi 4's time."""
    free = _nbody_in_unbounded(steps)
    share = min(1.0, free / PI4_NBODY_S_PER_M)
    history = []
    for _ in range(5):
        # The period: the quota (>= 1 ms, the kernel's minimum) is 1 ms at the share.
        period = round(1000 / share)
        budget.set(1000, period)
        got = _nbody_in(budget, steps)
        history.append({"share": budget.share, "period_us": period, "s_per_m": got})
        log(f"    quota 1000 us / period {period} us ({100 * budget.share:.1f}% of a core): "
            f"n-body {got:.1f} s per 1M steps (Pi 4: {PI4_NBODY_S_PER_M:.1f})")  # fmt: skip
        if abs(got - PI4_NBODY_S_PER_M) / PI4_NBODY_S_PER_M < 0.08:
            break
        share = max(0.02, min(1.0, share * got / PI4_NBODY_S_PER_M))
    return {"unbounded_s_per_m": free, "calibration": history}


def _nbody_in_unbounded(steps: int) -> float:
    code = (
        "import time\nfrom bench.common import nbody\nt = time.perf_counter()\n"
        f"nbody({steps})\nprint(time.perf_counter() - t)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    return 1e6 * float(out.stdout.strip()) / steps


@contextlib.contextmanager
def daemons_on_the_pi(budget: CpuBudget, shim: Path, delay_us: int) -> Iterator[None]:
    """Every daemon the bench starts meanwhile runs inside ``budget`` with the shim."""
    from .procs import DaemonProcess

    old = DaemonProcess.module
    DaemonProcess.module = [
        "-m", "bench.pi", "--wrap", str(budget.procs), str(shim), str(delay_us), "-m",
        "firmware_host",
    ]  # fmt: skip
    try:
        yield
    finally:
        DaemonProcess.module = old


def _wrap(argv: list[str]) -> None:
    """``python -m bench.pi --wrap PROCS SHIM DELAY_US -m firmware_host run ...``: join
    the cgroup, then exec the daemon with the shim preloaded (start-up included)."""
    procs, shim, delay, *rest = argv
    Path(procs).write_text(str(os.getpid()))
    env = dict(os.environ)
    env["LD_PRELOAD"] = shim
    env["TABLECTL_FSYNC_DELAY_US"] = delay
    os.execve(sys.executable, [sys.executable, *rest], env)


def run(host: str, port: int, quick: bool, log: Callable[[str], None]) -> list[Figure]:
    from . import table

    figs: list[Figure] = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-pi-"))
    budget = CpuBudget(f"tablectl-bench-pi-{os.getpid()}")
    try:
        shim = build_shim(tmp)
        cal = calibrate(budget, 100_000 if quick else 300_000, log)
        last = cal["calibration"][-1]
        figs.append(
            Figure(
                SECTION,
                "CPU budget (calibrated n-body)",
                last["s_per_m"],
                "s per 1M steps",
                {**cal, "quota_us": budget.quota_us, "period_us": budget.period_us},
                note=f"cgroup {'v2 cpu.max' if budget.v2 else 'v1 cfs quota'} "
                f"{budget.quota_us}/{budget.period_us} us = {100 * budget.share:.1f}% of a core; "
                f"target {PI4_NBODY_S_PER_M:.1f} s (Raspberry Pi 4, published); unbounded here "
                f"{cal['unbounded_s_per_m']:.1f} s",
            )
        )
        fs_note = f"fsync + {FSYNC_DELAY_US / 1000:.0f} ms (A1 SD card, LD_PRELOAD shim)"
        with daemons_on_the_pi(budget, shim, FSYNC_DELAY_US):
            plan = (
                [(10, 20), (100, 20), (1000, 5)] if quick else [(10, 100), (100, 100), (1000, 30)]
            )
            e2e = asyncio.run(table._e2e(host, port, plan, fs_note))
            for f in e2e:
                f.section = SECTION
                f.name += " (Pi budget)"
                if "100 bets" in f.name:
                    f.goal, f.ok = (
                        f"p99 < {P99_GOAL_MS:.0f} ms",
                        f.value is not None and f.value < P99_GOAL_MS,
                    )
                else:
                    f.goal = f.ok = None
            figs += e2e
            fp = (
                asyncio.run(table._footprint(host, port, rounds=40, starts=2, idle_s=3.0))
                if quick
                else asyncio.run(table._footprint(host, port, rounds=300, starts=3, idle_s=9.0))
            )
            for f in fp:
                f.section = SECTION
                f.name += " (Pi budget)"
                f.goal = f.ok = None  # the goals are the Pi's own, measured on a Pi
            figs += fp
    finally:
        budget.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return figs


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--wrap":
        _wrap(args[1:])
        return 0  # not reached: exec
    print("python -m bench --only pi: the Pi-budget section of the bench", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["PI4_NBODY_S_PER_M", "CpuBudget", "build_shim", "calibrate", "run"]
