"""Procedure scenarios (``tests/table/scenarios/``, run by ``tests/table/scenario.py``):
each procedure's rounds and fault events (void requested, open refused, device problem,
card refused, misdeal, result refused), and scenarios that must fail."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenario import Scenario, ScenarioFailed, must_fail

SCENARIOS = sorted((Path(__file__).resolve().parent / "scenarios").glob("*.txt"))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_scenario(path: Path, tmp_path: Path) -> None:
    expected_failure = must_fail(path)
    if expected_failure is None:
        await Scenario(path, tmp_path).run()
        return
    with pytest.raises(ScenarioFailed) as exc:
        await Scenario(path, tmp_path).run()
    assert expected_failure in str(exc.value)


def test_every_fault_event_of_the_procedures_has_a_scenario() -> None:
    text = "\n".join(p.read_text() for p in SCENARIOS if must_fail(p) is None)
    for kind in (
        "void_requested",
        "open_refused",
        "device_problem",
        "card_refused",
        "misdeal",
        "result_refused",
        "spin_void",
        "throw_void",
    ):
        assert f"expect event {kind}" in text, kind
    assert any(must_fail(p) for p in SCENARIOS)
