"""What a witness costs a round (``docs/witness.md``): roulette rounds of five bets
settled by the round engine on a temporary journal, straight from the device's reading
(the baseline) and through the witness (the device's reading held, then an agreeing
witness reading journaled and compared before the same settlement), in the same run.

    python -m bench.witness [--rounds N]

Prints the time a round takes from its result to its committed settlement and the
journal's growth per round, each as a ratio to the baseline (no timing asserts: the
machine is shared)."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from firmware_host.config import validate_document
from firmware_host.journal import Journal
from firmware_host.table.engine import RoundEngine
from firmware_host.table.extension import TableExtensions
from firmware_host.table.witness import ResultWitness
from firmware_host.table.witness_settings import WitnessSettings

DOC = {
    "table": {"id": "bench-w", "game": "roulette", "result_source": "manual"},
    "limits": {"min_stake": 100, "max_stake": 1_000_000},
}
BETS = [
    {"bet_type": "straight", "selection": [17]},
    {"bet_type": "red"},
    {"bet_type": "dozen", "selection": 2},
    {"bet_type": "split", "selection": [17, 20]},
    {"bet_type": "column", "selection": 1},
]


def _run(directory: Path, rounds: int, witnessed: bool) -> dict[str, Any]:
    cfg = validate_document(DOC)
    path = directory / ("witnessed.sqlite3" if witnessed else "direct.sqlite3")
    j = Journal(path)
    ext = TableExtensions()
    engine = RoundEngine(cfg, j, extensions=ext)
    witness = ResultWitness(
        WitnessSettings(), engine, db=j.db, chain=j.chain, faults=j.faults,
        approvals=j.requests, extensions=ext,
    )  # fmt: skip
    spent = 0.0
    size0 = os.path.getsize(path)
    for i in range(rounds):
        engine.open_betting()
        for n, bet in enumerate(BETS):
            engine.desk.place({"bet_id": f"{i}-{n}", "seat": 1 + n, "stake": 1000, **bet})
        engine.close_betting()
        number = i % 37
        t0 = time.perf_counter()
        if witnessed:
            witness.submit_result(
                {"number": number}, source="wheel", frames=[("wheel", "rx", b"*X;5")]
            )
            witness.witness_reading({"number": number}, "mqtt:camera", [("camera", "rx", b"{}")])
        else:
            engine.submit_result(
                {"number": number}, source="wheel", frames=[("wheel", "rx", b"*X;5")]
            )
        spent += time.perf_counter() - t0
    j.db.sql.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    grown = os.path.getsize(path) - size0
    j.close()
    return {"ms_per_round": 1000 * spent / rounds, "bytes_per_round": grown / rounds}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.witness")
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = _run(Path(tmp), args.rounds, witnessed=False)
        with_witness = _run(Path(tmp), args.rounds, witnessed=True)
    print(f"{args.rounds} roulette rounds of {len(BETS)} bets, result to committed settlement")
    for key, unit in (("ms_per_round", "ms"), ("bytes_per_round", "bytes")):
        ratio = with_witness[key] / base[key] if base[key] else float("nan")
        print(
            f"  {key}: direct {base[key]:.2f} {unit}, witnessed {with_witness[key]:.2f} {unit}"
            f" (x{ratio:.2f})"
        )


if __name__ == "__main__":
    main()
