"""A line-protocol file checked (``tablectl check-config`` of a table naming it, every
problem with the file's line), read (``tablectl decode --protocol``) and replayed
(``tablectl sim line-* --protocol --capture``); the worked example of docs/drivers.md
("Connecting a device that speaks text lines") end to end.

The expected lines below are counted in the texts written here; the expected events of
the worked example are what its capture holds (written by hand in
``docs/protocols/examples/acme-wheel.log``: games 41, 42, 43 won by 17, 0 and 32).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from drivers.lineproto.driver import LineShakerDriver, LineWheelDriver
from drivers.lineproto.load import load_protocol, read_protocol
from drivers.lineproto.sim import ReplaySim
from drivers.lineproto.spec import ProtocolInvalid
from firmware_host.cli import main
from tablecommon.events.shaker import DiceRead
from tablecommon.events.wheel import GameStateChanged, WinningNumber

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "protocols" / "examples"
ACME = EXAMPLES / "acme-wheel.toml"
ACME_LOG = EXAMPLES / "acme-wheel.log"

GOOD = """\
[protocol]
name = "T"
kind = "wheel"
format = 1

[[rule]]
name = "game"
event = "game_state"
pattern = 'G (?P<spin>\\d{1,4}) (?P<state>[1-7])'
fields.spin = "int"
fields.state = "int"
examples = ["G 1 2"]

[[rule]]
name = "win"
event = "winning_number"
pattern = 'W (?P<number>\\d{1,2})'
fields.number = "pocket"
examples = ["W 17"]
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ProtocolInvalid) as info:
        read_protocol(text, "p.toml")
    return info.value.problems


def test_a_good_file_reads() -> None:
    p = read_protocol(GOOD, "p.toml")
    assert p.kind == "wheel" and [r.name for r in p.rules] == ["game", "win"]
    assert [r.line for r in p.rules] == [6, 14]  # their [[rule]] headers


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # a pattern that does not compile: the line of its pattern
        ("'W (?P<number>\\d{1,2})'", "'W (?P<number>\\d{1,2}'",
         r"^p\.toml:17: rule 'win': pattern does not compile: missing \)"),
        # catastrophic backtracking refused
        ("'W (?P<number>\\d{1,2})'", "'W (?P<number>(\\d+)+)'",
         r"^p\.toml:17: rule 'win': .*repetition"),
        # an event without the field it needs (winning_number: number)
        ("'W (?P<number>\\d{1,2})'\nfields.number = \"pocket\"", "'W (?P<n>\\d{1,2})'",
         r"^p\.toml:\d+: rule 'win': .*needs the field 'number'"),
        # a group that is no field of the event
        ("(?P<state>[1-7])'", "(?P<state>[1-7])(?P<colour>[RB])'",
         r"^p\.toml:\d+: rule 'game': group 'colour' is not a field of game_state"),
        # a conversion refused
        ('fields.state = "int"', 'fields.state = "float"',
         r"^p\.toml:11: rule 'game': field 'state': unknown conversion 'float'"),
        # an unknown key of a rule: its own line
        ('examples = ["W 17"]', 'examples = ["W 17"]\ncolour = "red"',
         r"^p\.toml:20: rule 'win': unknown key 'colour'"),
        # a kind the software does not know
        ('kind = "wheel"', 'kind = "roulette"', r"^p\.toml:3: \[protocol\] kind: 'roulette'"),
        # an example its own rule does not read
        ('examples = ["W 17"]', 'examples = ["W 17", "W 37"]',
         r"^p\.toml:19: rule 'win': example 'W 37': rule 'win': field 'number'"),
    ],
)  # fmt: skip
def test_each_problem_is_placed_in_the_file(old: str, new: str, expected: str) -> None:
    assert old in GOOD
    found = problems(GOOD.replace(old, new))
    assert any(re.search(expected, p) for p in found), found


def test_a_pattern_reading_another_rules_example_is_ambiguous() -> None:
    """Two rules that both read a line: each example of either is checked against all
    the rules; the problem names both rules, on the line of the example's rule."""
    text = GOOD + (
        '\n[[rule]]\nname = "any"\nevent = "none"\npattern = \'[A-Z] [0-9 ]{1,8}\'\n'
        'examples = ["X 1"]\n'
    )
    found = problems(text)
    assert (
        "p.toml:12: rule 'game': example 'G 1 2': ambiguous: rules 'game' and 'any' both read it"
        in found
    )
    assert (
        "p.toml:19: rule 'win': example 'W 17': ambiguous: rules 'win' and 'any' both read it"
        in found
    )


def test_a_garbage_line_a_rule_reads_is_a_problem() -> None:
    text = GOOD.replace("format = 1", 'format = 1\ngarbage = ["W 5", "W 99"]')
    assert problems(text) == ["p.toml:5: [protocol] garbage: 'W 5' is read by rule 'win'"]


def test_every_problem_at_once() -> None:
    text = GOOD.replace('kind = "wheel"\nformat = 1', 'kind = "wheel"\nformat = 2\ncolour = 1')
    found = problems(text)
    assert len(found) == 2 and all(p.startswith("p.toml:") for p in found)


def test_not_toml_and_not_a_file() -> None:
    (problem,) = problems("[protocol\nname=")
    assert problem.startswith("p.toml: not valid TOML")
    with pytest.raises(ProtocolInvalid) as info:
        load_protocol("/nonexistent/p.toml")
    assert "cannot read it" in info.value.problems[0]


# ------------------------------------------------------------------ check-config
def _table(tmp_path: Path, driver: str, protocol: str) -> Path:
    table = tmp_path / "tables" / "t.toml"
    table.parent.mkdir(exist_ok=True)
    table.write_text(
        'version = 1\n[table]\nid = "r1"\ngame = "roulette"\n'
        f'[devices.wheel]\ndriver = "{driver}"\nprotocol = "{protocol}"\nport = "/dev/ttyUSB0"\n'
    )
    return table


def test_check_config_validates_the_tables_protocol_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file named by the table (relative to the table file) is read with the table;
    each of its problems is one error line with the protocol file's own line."""
    table = _table(tmp_path, "line-wheel", "wheels/w.toml")
    (tmp_path / "tables" / "wheels").mkdir()
    wheel = tmp_path / "tables" / "wheels" / "w.toml"
    wheel.write_text(GOOD)
    assert main(["check-config", str(table)]) == 0
    capsys.readouterr()
    wheel.write_text(
        GOOD.replace("\\d{1,2})'", "\\d{1,2}'").replace(
            'fields.state = "int"', 'fields.state = "x"'
        )
    )
    assert main(["check-config", str(table)]) == 1
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if "devices.wheel.protocol" in line]
    assert len(lines) == 2
    assert f"{wheel}:11: rule 'game': field 'state': unknown conversion 'x'" in lines[0]
    assert f"{wheel}:17: rule 'win': pattern does not compile" in lines[1]


def test_check_config_refuses_a_file_of_another_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "w.toml").write_text(GOOD)
    assert main(["check-config", str(_table(tmp_path, "line-shaker", "w.toml"))]) == 1
    out = capsys.readouterr()
    assert (
        'it describes a wheel and line-shaker serves a shaker (driver = "line-wheel")'
        in out.out + out.err
    )


def test_check_config_names_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-config", str(_table(tmp_path, "line-wheel", "nowhere.toml"))]) == 1
    out = capsys.readouterr()
    assert f"{tmp_path / 'tables' / 'nowhere.toml'}: cannot read it" in out.out + out.err


def test_the_shipped_files_and_the_worked_example_check() -> None:
    for path in [*sorted((ROOT / "drivers" / "lineproto" / "protocols").glob("*.toml")), ACME]:
        assert load_protocol(path).rules
    assert main(["check-config", str(EXAMPLES / "acme-roulette.toml")]) == 0


# ------------------------------------------------------------------ decode and sim
def _events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_decode_the_worked_examples_capture(capsys: pytest.CaptureFixture[str]) -> None:
    """The driver may be left out (the file says its kind); the capture's three games,
    its fault, and its states as they changed."""
    assert main(["decode", "--protocol", str(ACME), str(ACME_LOG)]) == 0
    events = _events(capsys.readouterr().out)
    wins = [(e["spin"], e["number"]) for e in events if e["kind"] == "WinningNumber"]
    assert wins == [(41, 17), (42, 0), (43, 32)]
    states = [e["state"] for e in events if e["kind"] == "GameStateChanged"]
    assert states == [6] + [2, 3, 4, 5] * 3 + [6]
    (fault,) = [e for e in events if e["kind"] == "WheelWarning"]
    assert fault["code"] == "WHEEL_FAULT_E3" and fault["action"] == "fault"
    # the driver named: the capture before --protocol (argparse reads the two optional
    # positionals together)
    assert main(["decode", "line-wheel", str(ACME_LOG), "--protocol", str(ACME), "--garbled"]) == 0
    garbled = [e for e in _events(capsys.readouterr().out) if e["kind"] == "Garbled"]
    assert [g["raw"] for g in garbled] == ["GAME 4"]  # the line cut short


def test_decode_a_bad_file_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("\\d{1,2})'", "\\d{1,2}'"))
    assert main(["decode", "--protocol", str(bad), str(ACME_LOG)]) != 0
    err = capsys.readouterr().err
    assert f"tablectl decode: error: PROTOCOL_INVALID: {bad}:17: rule 'win'" in err
    assert "Traceback" not in err


def test_decode_and_sim_with_a_file_of_another_kind_than_the_driver(
    capsys: pytest.CaptureFixture[str],
) -> None:
    said = f"PROTOCOL_INVALID: {ACME}: it describes a wheel, and line-shaker serves a shaker: use line-wheel"
    assert main(["decode", "line-shaker", str(ACME_LOG), "--protocol", str(ACME)]) != 0
    assert said in capsys.readouterr().err
    assert main(["sim", "line-shaker", "--protocol", str(ACME)]) != 0
    assert said in capsys.readouterr().err


def test_sim_refuses_protocol_for_a_native_device_and_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", "cammegh-ss2", "--protocol", str(ACME)]) != 0
    err = capsys.readouterr().err
    assert "OPTION_NOT_APPLICABLE: --protocol does not apply to cammegh-ss2" in err
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("\\d{1,2})'", "\\d{1,2}'").replace("format = 1", "format = 2"))
    assert main(["sim", "line-wheel", "--protocol", str(bad)]) != 0
    err = capsys.readouterr().err
    assert f"PROTOCOL_INVALID: {bad}:4: [protocol] format: 2 is not 1" in err
    assert "(and 1 more: tablectl check-config of a table naming it lists them)" in err
    assert "Traceback" not in err


async def test_the_worked_example_replayed_to_a_line_wheel() -> None:
    """``tablectl sim line-wheel --protocol acme-wheel.toml --capture acme-wheel.log``'s
    device, read by the ``line-wheel`` driver over TCP (``--tcp``: the replay starts when
    the driver connects; on a pty it starts at once, and a replay at full speed is over
    before the driver has opened the port): the three games."""
    protocol = load_protocol(ACME)
    sim = ReplaySim(protocol, ACME_LOG.read_bytes(), speed=1e6, max_gap=0.0, loop=False)
    server = await sim.serve_tcp()
    driver = LineWheelDriver("wheel", {"protocol": str(ACME), "port": server.url})
    sub = driver.events()
    got: list[Any] = []

    async def pump() -> None:
        async for ev in sub:
            got.append(ev)

    task = asyncio.create_task(pump())
    await driver.start()
    try:
        async with asyncio.timeout(60):
            while sum(isinstance(e, WinningNumber) for e in got) < 3:
                await asyncio.sleep(0.02)
    finally:
        await driver.stop()
        await sim.close()
        sub.close()
        await asyncio.wait_for(task, 5)
    assert [(e.spin, e.number) for e in got if isinstance(e, WinningNumber)] == [
        (41, 17), (42, 0), (43, 32)]  # fmt: skip
    states = [e.state for e in got if isinstance(e, GameStateChanged)]
    assert states[states.index(2) :][:4] == [2, 3, 4, 5]


async def test_the_example_shaker_file_speaks_to_a_line_shaker() -> None:
    """Without a capture the simulator speaks the file's examples: the driver reads
    them as the shaker kind's events (each reading twice: one DiceRead)."""
    from drivers.lineproto import DEFAULT_PROTOCOL

    protocol = load_protocol(DEFAULT_PROTOCOL["shaker"])
    sim = ReplaySim(protocol, None, speed=100.0, max_gap=0.0, loop=True)
    server = await sim.serve_tcp()
    driver = LineShakerDriver(
        "shaker", {"protocol": str(DEFAULT_PROTOCOL["shaker"]), "port": server.url}
    )
    sub = driver.events()
    got: list[Any] = []

    async def pump() -> None:
        async for ev in sub:
            got.append(ev)

    task = asyncio.create_task(pump())
    await driver.start()
    try:
        async with asyncio.timeout(60):
            while not any(isinstance(e, DiceRead) for e in got):
                await asyncio.sleep(0.02)
    finally:
        await driver.stop()
        await sim.close()
        sub.close()
        await asyncio.wait_for(task, 5)
    first = next(e for e in got if isinstance(e, DiceRead))
    assert (first.shake, first.dice) == (7, (3, 4, 5))  # the file's first dice example


# ------------------------------------------------------------------ the docs stay true
def test_the_format_page_lists_every_event_field_and_conversion() -> None:
    from drivers.lineproto.fields import CONVERSIONS
    from drivers.lineproto.kinds import EVENTS

    page = (ROOT / "docs" / "protocols" / "line-protocol.md").read_text()
    rows = {(m[0], m[1]): m[2] for m in re.findall(r"^\| (\w+) \| `(\w+)` \| (.*) \|$", page, re.M)}
    for kind, events in EVENTS.items():
        for event, fields in events.items():
            if event == "none":
                continue
            row = rows[(kind, event)]
            for f in fields.values():
                shown = f"**`{f.name}`**" if f.required else f"`{f.name}`"
                assert shown in row, (kind, event, f.name)
    for conv in CONVERSIONS:
        assert f'| `"{conv}"` |' in page
    for key in (
        "end",
        "send_end",
        "encoding",
        "max_line",
        "printable",
        "silence_ms",
        "status_every_ms",
    ):
        assert f"| `{key}` |" in page


def test_the_worked_examples_excerpt_is_the_file() -> None:
    """The rules shown in docs/drivers.md are those of acme-wheel.toml, key for key."""
    import tomllib

    page = (ROOT / "docs" / "drivers.md").read_text()
    section = page.split("## Connecting a device that speaks text lines", 1)[1]
    excerpt = tomllib.loads(section.split("```toml\n", 1)[1].split("```", 1)[0])
    whole = tomllib.loads(ACME.read_text())
    assert excerpt["rule"] == whole["rule"][: len(excerpt["rule"])]
    assert excerpt["results"] == whole["results"]
    assert excerpt["protocol"]["garbage"] == whole["protocol"]["garbage"]
    table = tomllib.loads(section.split("```toml\n", 2)[2].split("```", 1)[0])
    assert (
        table["devices"] == tomllib.loads((EXAMPLES / "acme-roulette.toml").read_text())["devices"]
    )
