"""The table's extension point: an extension hears every committed phase change,
settled and voided round with its published payload, the restart with the journal's
history, and the periodic tick; one that fails never stops the table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from firmware_host.config import load_config
from firmware_host.journal import Journal, RoundRecord
from firmware_host.table.engine import Phase, RoundEngine
from firmware_host.table.extension import RoundHistory, TableExtension, TableExtensions

ROOT = Path(__file__).resolve().parents[2]
CFG = load_config(ROOT / "config" / "roulette.toml")


class Recorder(TableExtension):
    name = "recorder"

    def __init__(self, extensions: TableExtensions) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.history: list[Any] = []
        extensions.add(self)

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        self.seen.append(("phase", (phase.value, rnd.round_id if rnd else None)))

    def round_settled(self, payload: Mapping[str, Any]) -> None:
        self.seen.append(("settled", payload["outcome"]["number"]))

    def round_voided(self, payload: Mapping[str, Any]) -> None:
        self.seen.append(("voided", payload["void_reason"]))

    def resumed(self, resolved: Sequence[Mapping[str, Any]], history: RoundHistory) -> None:
        self.seen.append(("resumed", [p["status"] for p in resolved]))
        self.history = [r.settlement["status"] for r in history.recall(5) if r.settlement]

    def tick(self) -> None:
        self.seen.append(("tick", None))


class Broken(TableExtension):
    name = "broken"

    def phase_changed(self, phase: Phase, rnd: RoundRecord | None) -> None:
        raise RuntimeError("a display fell off the wall")


def test_hooks_follow_the_rounds(tmp_path: Path) -> None:
    ext = TableExtensions()
    ext.add(Broken())  # first, so that the recorder runs after a failing extension
    rec = Recorder(ext)
    j = Journal(tmp_path / "j.sqlite3")
    e = RoundEngine(CFG, j, extensions=ext)
    r1 = e.open_betting().round_id
    assert e.desk.place({"bet_id": "a", "bet_type": "red", "stake": 2500}).accepted
    e.close_betting()
    e.submit_result({"number": 17})
    r2 = e.open_betting().round_id
    e.void_round("chip in the wheel")
    r3 = e.open_betting().round_id
    ext.tick()
    assert rec.seen == [
        ("phase", ("open", r1)),
        ("phase", ("closed", r1)),
        ("settled", 17),
        ("phase", ("idle", None)),
        ("phase", ("open", r2)),
        ("voided", "chip in the wheel"),
        ("phase", ("idle", None)),
        ("phase", ("open", r3)),
        ("tick", None),
    ]
    j.close()

    # a restart: the round left open is voided, then the extension rebuilds from history
    ext2 = TableExtensions()
    rec2 = Recorder(ext2)
    e2 = RoundEngine(CFG, Journal(tmp_path / "j.sqlite3"), extensions=ext2)
    e2.resume()
    assert rec2.seen[0][0] == "voided" and "restarted" in rec2.seen[0][1]
    assert rec2.seen[-1] == ("resumed", ["void"])
    assert rec2.history == ["void", "void", "settled"]  # newest first
