"""``[switches.<name>]`` in ``tablectl check-config`` (issue 32 item 3): each problem
named with its path and a specific message; and every key documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmware_host.cli import main
from firmware_host.console.settings import DEMO_PIN_HASH

ROOT = Path(__file__).resolve().parents[1]

HEAD = f"""version = 1
[table]
id = "sw-1"
game = "fantan"
result_source = "manual"
[console.operators.tech1]
pin_hash = "{DEMO_PIN_HASH}"
"""
SIMULATED = "[daemon]\nsimulated = true\n"
KEYPAD = '[devices.keypad]\ndriver = "keypad-gpio"\npins = { "1" = 5, "2" = 6, confirm = 26 }\n'


def check(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str) -> tuple[int, str]:
    f = tmp_path / "table.toml"
    head = HEAD.replace('result_source = "manual"\n', "") if "[devices." in body else HEAD
    f.write_text(head + body)  # a fantan table with its keypad reads its results from it
    rc = main(["check-config", str(f)])
    out = capsys.readouterr().out
    return rc, out.replace(f"{f}: ", "")


def test_a_valid_section_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = check(tmp_path, capsys, SIMULATED + """
[switches.lid]
kind = "lid"
pin = 17
[switches.drop]
kind = "drop_box"
pin = 22
pin_b = 23
open_level = "low"
pull = "down"
[switches.tray]
kind = "tray"
pin = 24
open_in_round = true
technician = false
""")  # fmt: skip
    assert rc == 0, out
    assert out.startswith("ok (table sw-1"), out


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ('[switches.lid]\nkind = "window"\npin = 17\n',
         "switches.lid.kind: unknown kind 'window'; kinds: lid, door, drop_box, cash_box, tray, "
         "logic, tilt, tamper"),
        ('[switches.a]\nkind = "lid"\npin = 17\n[switches.b]\nkind = "door"\npin = 17\n',
         "switches.b.pin: GPIO17 is already used by switches.a.pin"),
        ('[switches.a]\nkind = "lid"\npin = 17\n[switches.b]\nkind = "door"\npin = 18\npin_b = 17\n',
         "switches.b.pin_b: GPIO17 is already used by switches.a.pin"),
        ('[switches.a]\nkind = "drop_box"\npin = 17\npin_b = 17\n',
         "switches.a.pin_b: GPIO17 is also pin: a changeover switch's two contacts are two pins"),
        ('[switches.a]\nkind = "lid"\npin = 17\nbounce_ms = 500\nchatter_ms = 400\n',
         "switches.a.chatter_ms: must be longer than bounce_ms (500)"),
        ('[switches.a]\nkind = "lid"\npin = 17\ncolour = "red"\n',
         "switches.a.colour: unknown key"),
        ('[switches.a]\nkind = "lid"\n', "switches.a.pin: required key is missing"),
        ('[switches.a]\nkind = "lid"\npin = 40\n', "switches.a.pin"),
        ('[switches."a b"]\nkind = "lid"\npin = 17\n',
         "switches.a b: a switch's name is 1-32 letters, digits, '_' or '-'"),
        (KEYPAD + '[switches.lid]\nkind = "lid"\npin = 6\n',
         "switches.lid.pin: GPIO6 is already used by devices.keypad.pins.2"),
        (KEYPAD + '[switches.keypad]\nkind = "lid"\npin = 17\n',
         "switches.keypad: a device has this name too (both are published on devices/keypad)"),
    ],
)  # fmt: skip
def test_each_problem_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, error: str
) -> None:
    rc, out = check(tmp_path, capsys, SIMULATED + body)
    assert rc == 1, out
    assert error in out, out
    assert "Traceback" not in out


def test_a_disabled_switch_frees_its_pin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = '[switches.a]\nkind = "lid"\npin = 17\nenabled = false\n[switches.b]\nkind = "door"\npin = 17\n'
    rc, out = check(tmp_path, capsys, SIMULATED + body)
    assert rc == 0, out


def test_switches_need_gpio_pins_unless_simulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from drivers.gpio import gpio_unavailable

    why = gpio_unavailable()
    if why is None:
        pytest.skip("this machine has GPIO pins")
    rc, out = check(tmp_path, capsys, '[switches.lid]\nkind = "lid"\npin = 17\n')
    assert rc == 1, out
    assert f"switches: 1 switch(es) need GPIO pins, and this machine has none ({why})" in out


def test_every_key_is_documented() -> None:
    from drivers.switches.settings import SWITCH_KINDS, SWITCH_SETTINGS

    text = (ROOT / "docs" / "configuration.md").read_text()
    block = text.split("## `[switches.<name>]`", 1)[1].split("\n## ", 1)[0]
    for key in SWITCH_SETTINGS:
        assert f"`{key}`" in block, key
    for kind in SWITCH_KINDS:
        assert f"`{kind}`" in block, kind


def test_the_lab_names_are_documented_as_the_code_has_them() -> None:
    from drivers.switches.settings import SWITCH_KINDS
    from firmware_host.integrity.significant import SIGNIFICANT_EVENTS, SWITCH_NAMES

    text = (ROOT / "docs" / "integrity.md").read_text()
    assert set(SWITCH_NAMES) == set(SWITCH_KINDS)
    for kind, (opened, closed) in SWITCH_NAMES.items():
        assert f"| `{kind}` | {SWITCH_KINDS[kind]} | {opened} / {closed} |" in text, kind
    for event, name in SIGNIFICANT_EVENTS.items():
        assert f"| `{event}` | {name} |" in text, event


def test_the_demo_table_has_its_switches_and_they_pass_check_config() -> None:
    from firmware_host.assembly import assembly_problems
    from firmware_host.config import validate_document
    from tablesim.tables import DEMO_SWITCHES, table_document, to_toml

    doc = table_document("roulette", {})
    assert doc["switches"] == DEMO_SWITCHES and doc["daemon"]["simulated"] is True
    assert "[switches.drop_box]" in to_toml(doc)
    cfg = validate_document(doc)
    assert [p for p in assembly_problems(cfg) if "switch" in p] == []
