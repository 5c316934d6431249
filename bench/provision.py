"""``python -m bench.provision [--tables N] [--out FILE]``: ``tablectl provision`` of an
N-table inventory (default 1,000), timed as whole commands (issue 35), written to
``bench/results-provision.json`` and ``.txt`` (``docs/performance.md`` quotes them).

Measured in the same run, each a whole ``tablectl`` or ``cp`` process:

- **first**: ``tablectl provision`` of the inventory into an empty directory (every
  table's identity and audit keys generated, passwords drawn and hashed, every file
  written);
- **again**: the same command a second time (a no-op: the summary must say 0 created,
  0 changed, and no file's bytes or time may change; both are checked here);
- **baseline**: ``cp -a`` of the first run's output: the same files, the same bytes and
  modes, written by the system's plainest tool, with no key generation, hashing or
  checking. The ratios are first / baseline and again / baseline: what provisioning
  costs over writing its output;
- **check**: ``tablectl check-config`` of every table file written (one process, every
  file), as the test does on a smaller inventory: each must be ``ok``.

The inventory is synthetic and fixed: the ten games in turn, 20 tables a pit, the device
games with their result device, two dealers a table from four a pit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from firmware_host.auth import generate
from firmware_host.games import GAME_IDS

ROOT = Path(__file__).resolve().parents[1]
FLOOR = ROOT / "config" / "provision" / "floor.toml"
#: A result device for the games the inventory gives one (the others: manual results).
DEVICES = {
    "roulette": "wheel=cammegh-ss2:/dev/table-wheel",
    "sicbo": "shaker=shaker-ref:/dev/table-shaker",
    "baccarat": "shoe=shoe-ref:/dev/table-shoe",
    "blackjack": "shoe=shoe-ref:/dev/table-shoe",
}


def inventory(n: int) -> str:
    lines = ["table_id,game,pit,devices,dealers"]
    for i in range(n):
        game = GAME_IDS[i % len(GAME_IDS)]
        pit = f"pit-{i // 20:03d}"
        dealers = f"dealer-{pit}-{i % 4};dealer-{pit}-{(i + 1) % 4}"
        lines.append(f"T{i:05d},{game},{pit},{DEVICES.get(game, '')},{dealers}")
    return "\n".join(lines) + "\n"


def _run(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    os.sync()  # what an earlier step left to write back is not this one's
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    return time.perf_counter() - t0, proc


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def measure(n: int) -> dict[str, Any]:
    tablectl = [sys.executable, "-m", "firmware_host"]
    with tempfile.TemporaryDirectory(prefix="bench-provision-") as tmp:
        base = Path(tmp)
        inv = base / "inventory.csv"
        inv.write_text(inventory(n))
        keys = base / "keys"
        names = {"pit-boss-01", "floor-pos", "attendant-01"}
        names |= {d for line in inv.read_text().splitlines()[1:] for d in line.split(",")[4].split(";")}
        for name in sorted(names):
            generate(name, keys)
        out = base / "out"
        cmd = [*tablectl, "provision", str(inv), "--floor", str(FLOOR), "--keys", str(keys),
               "--out", str(out), "--etc-dir", f"{out}/tables/{{table}}"]  # fmt: skip
        first_s, first = _run(cmd)
        if first.returncode != 0:
            raise SystemExit(f"provision failed: {first.stderr[-2000:]}")
        files = sum(1 for p in out.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        before = _snapshot(out)
        again_s, again = _run(cmd)
        noop = "0 file(s) created, 0 changed" in again.stdout and _snapshot(out) == before
        copy_s, copied = _run(["cp", "-a", str(out), str(base / "copy")])
        if copied.returncode != 0:
            raise SystemExit(f"cp failed: {copied.stderr}")
        tables = sorted(str(p) for p in (out / "tables").glob("*/table.toml"))
        check_s, check = _run([*tablectl, "check-config", "--quiet", *tables])
        shutil.rmtree(base / "copy")
        return {
            "tables": n,
            "files": files,
            "bytes": size,
            "first_s": round(first_s, 3),
            "again_s": round(again_s, 3),
            "baseline_cp_s": round(copy_s, 3),
            "first_over_baseline": round(first_s / copy_s, 1),
            "again_over_baseline": round(again_s / copy_s, 1),
            "again_is_a_noop": noop,
            "first_summary": first.stdout.strip(),
            "again_summary": again.stdout.strip(),
            "check_config_s": round(check_s, 3),
            "check_config_ok": check.returncode == 0,
            "check_config_problems": check.stdout.strip().splitlines()[:10],
        }


def repeated(n: int, runs: int) -> dict[str, Any]:
    """:func:`measure` ``runs`` times, each in a fresh directory: the median of each
    time (and the ratios of those medians), every run's times kept."""
    all_runs = [measure(n) for _ in range(runs)]
    out = dict(all_runs[len(all_runs) // 2])
    for key in ("first_s", "again_s", "baseline_cp_s", "check_config_s"):
        out[key] = statistics.median(r[key] for r in all_runs)
        out[key.removesuffix("_s") + "_runs_s"] = [r[key] for r in all_runs]
    out["first_over_baseline"] = round(out["first_s"] / out["baseline_cp_s"], 1)
    out["again_over_baseline"] = round(out["again_s"] / out["baseline_cp_s"], 1)
    out["again_is_a_noop"] = all(r["again_is_a_noop"] for r in all_runs)
    out["check_config_ok"] = all(r["check_config_ok"] for r in all_runs)
    out["runs"] = runs
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.provision", description=__doc__)
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3, help="fresh runs (medians reported)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results-provision"),
                    help="where to write FILE.json and FILE.txt")  # fmt: skip
    args = ap.parse_args(argv)
    res = repeated(args.tables, args.runs)
    res["cpus"] = os.cpu_count()
    text = (
        f"tablectl provision, {res['tables']} tables ({res['files']} files, "
        f"{res['bytes'] / 1e6:.1f} MB):\n"
        f"  medians of {res['runs']} runs, each in a fresh directory (every run: "
        f"first {res['first_runs_s']} s, baseline {res['baseline_cp_runs_s']} s)\n"
        f"  first run   {res['first_s']:.2f} s  ({res['first_over_baseline']}x cp -a of its output)\n"
        f"  second run  {res['again_s']:.2f} s  ({res['again_over_baseline']}x cp -a); "
        f"a no-op: {res['again_is_a_noop']}\n"
        f"  baseline    {res['baseline_cp_s']:.2f} s  (cp -a of the output)\n"
        f"  check-config of every table file: {res['check_config_s']:.2f} s, "
        f"all ok: {res['check_config_ok']}\n"
    )
    print(text, end="")
    Path(args.out + ".json").write_text(json.dumps(res, indent=1) + "\n")
    Path(args.out + ".txt").write_text(text)
    return 0 if res["again_is_a_noop"] and res["check_config_ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
