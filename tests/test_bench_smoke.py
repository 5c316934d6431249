"""Smoke test of ``python -m bench``: the package imports, one cheap figure is measured,
the table is printed and the JSON written. (The benchmarks themselves are run by hand:
``python -m bench --quick``; see docs/performance.md.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.__main__ import main
from bench.common import percentile, render_table
from bench.peers import poker_peers
from bench.rules import settle_throughput


def test_percentile_interpolates_between_ranks() -> None:
    # Worked by hand: the median of 1..4 is 2.5; p99 of (0, 10) is 0 + 0.99 * 10.
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile([0, 10], 99) == pytest.approx(9.9)
    assert percentile([7], 99) == 7


def test_one_settlement_figure_is_measured_and_printed() -> None:
    fig = settle_throughput("fantan", rounds=3, repeats=1)
    assert fig.value is not None and fig.value > 0
    assert fig.stats["n"] == 1
    assert "settle fantan" in render_table([fig])


def test_poker_peers_agree_or_say_skipped() -> None:
    figs = poker_peers(500, 1)
    ours, *peers = figs
    assert ours.value is not None and ours.value > 0
    for f in peers:
        if f.skipped is not None:
            assert f.skipped == "package not installed"
        else:  # same hands, same categories: the peers are standard poker evaluators
            assert f.stats["category_agreement"] == 1.0
            assert f.stats["order_agreement"] == 1.0


def test_machine_section_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    assert main(["--quick", "--only", "machine", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    names = [f["name"] for f in doc["figures"]]
    assert names == ["fsync of a 4 KiB append", "CPU: n-body, s per 1M steps"]
    assert doc["mode"] == "quick" and doc["machine"]["nproc"] >= 1
    assert doc["machine"]["journal_fs"]["fstype"]
    printed = capsys.readouterr().out
    assert "QUICK MODE" in printed and "fsync of a 4 KiB append" in printed


def test_stages_split_each_round_window_into_its_stages(tmp_path: Path) -> None:
    from bench.stages import split

    # Two rounds (line at 10.000 s and 20.000 s) with the daemon's stamps in between, a
    # stamp outside every window, and two collector pauses (one inside, one outside).
    trace = tmp_path / "stages.txt"
    trace.write_text(
        "\n".join(
            [
                "5.0000000 event",  # outside: ignored
                "10.0002000 event",
                "10.0005000 procedure",
                "10.0015000 settled",
                "10.0030000 committed",
                "10.0032000 publish",
                "10.0033000 written",
                "10.0020000 gc1 10.0025000",
                "20.0001000 event",
                "20.0004000 procedure",
                "20.0010000 settled",
                "20.0020000 committed",
                "20.0021000 publish",
                "20.0023000 written",
                "30.0000000 gc2 30.0200000",
            ]
        )
        + "\n"
    )
    steps, totals, pauses, rounds = split([(10.0, 10.004), (20.0, 20.003)], trace)
    assert [round(x, 3) for x in steps["event"]] == [0.2, 0.1]
    assert [round(x, 3) for x in steps["settled"]] == [1.0, 0.6]
    assert [round(x, 3) for x in steps["written"]] == [0.1, 0.2]
    assert [round(x, 3) for x in steps["floor"]] == [0.7, 0.7]
    assert [round(x, 3) for x in totals] == [4.0, 3.0]
    # Each round's own split, for the report of the slowest rounds.
    assert [{k: round(v, 3) for k, v in r.items()} for r in rounds] == [
        {"total": 4.0, "event": 0.2, "procedure": 0.3, "settled": 1.0, "committed": 1.5,
         "publish": 0.2, "written": 0.1, "floor": 0.7},
        {"total": 3.0, "event": 0.1, "procedure": 0.3, "settled": 0.6, "committed": 1.0,
         "publish": 0.1, "written": 0.2, "floor": 0.7},
    ]  # fmt: skip
    assert [(g, round(ms, 3)) for g, ms in pauses] == [("gc1", 0.5)]


def test_the_pi_fsync_shim_slows_fsync_and_fdatasync(tmp_path: Path) -> None:
    """bench/pi.py's LD_PRELOAD shim, built here with gcc: a child's fsync and fdatasync
    each take at least the delay (a missing gcc skips: the bench says so too)."""
    import os
    import shutil
    import subprocess
    import sys

    from bench.pi import build_shim

    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("gcc is not installed")
    shim = build_shim(tmp_path)
    code = (
        "import os, time\n"
        f"fd = os.open({str(tmp_path / 'f')!r}, os.O_WRONLY | os.O_CREAT)\n"
        "os.write(fd, b'x')\n"
        "t = time.perf_counter(); [os.fsync(fd) for _ in range(5)]; a = time.perf_counter() - t\n"
        "t = time.perf_counter(); [os.fdatasync(fd) for _ in range(5)]; b = time.perf_counter() - t\n"
        "print(a, b)\n"
    )
    env = {**os.environ, "LD_PRELOAD": str(shim), "TABLECTL_FSYNC_DELAY_US": "20000"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    a, b = (float(x) for x in out.stdout.split())
    assert a >= 5 * 0.020 and b >= 5 * 0.020, (a, b)
    env["TABLECTL_FSYNC_DELAY_US"] = "0"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    a0, _ = (float(x) for x in out.stdout.split())
    assert a0 < a


def test_limit_ratios_are_the_table_over_the_sum_of_the_component_medians() -> None:
    """bench.limit: limit = median(commit) + median(settle) + median(publish); the
    table's p50 and p99 divided by it (figures computed here by hand)."""
    from bench.limit import _ratio_figures

    table = [0.004, 0.005, 0.006]  # seconds: p50 5 ms
    parts = {
        "commit": [0.0005, 0.001, 0.0015],  # median 1 ms
        "settle": [0.0002, 0.0005, 0.0009],  # median 0.5 ms
        "publish": [0.001, 0.001, 0.003],  # median 1 ms
    }
    p50, p99 = _ratio_figures(100, table, parts)
    assert p50.stats["limit_ms"] == pytest.approx(2.5)
    assert p50.value == pytest.approx(5.0 / 2.5)
    # p99 of [4, 5, 6] ms by linear interpolation between ranks: 4 + 0.99 * 2 = 5.98
    assert p99.value == pytest.approx(5.98 / 2.5)
    assert p50.ok is True and p99.ok is True  # 2.0 <= 2, 2.39 <= 3
    other, _ = _ratio_figures(10, table, parts)
    assert other.goal is None and other.ok is None
