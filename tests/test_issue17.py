"""Issue 17's ten points, each with the command that used to fail and now succeeds.

| point | used to fail | test here (and elsewhere) |
|---|---|---|
| 1 | `./dev demo --broker mqtt://HOST:PORT` (unreachable): 30 s of silence, a traceback, the temporary directory left; the daemon's log named no broker | `test_point1_*` |
| 2 | `tablectl score mahjong --hand @hand.json`: no such file shipped, and a traceback; non-UTF-8 or deeply nested TOML and a damaged journal: tracebacks | `test_point2_*`, tests/test_cli_errors.py |
| 3 | `tablectl run --config config/roulette.toml ...`: idle forever, nothing said why, no console command to play a round | `test_point3_*`, tests/test_docs_commands.py (the README's run --simulate) |
| 4 | `./dev setup`: 20-40 s of silence then pip's and setuptools' warnings (license table deprecated); `./dev foo` printed `set -euo pipefail` | `test_point4_*` |
| 5 | `./dev demo`: always seed 1, unsaid; `--quiet` printed three lines per round; "1 rounds"; `--game` did not list the games; Ctrl-C printed nothing | `test_point5_*` |
| 6 | the demo's rows did not add up (no banker row), raw JSON selections, mah-jong seats 0-3 | tests/tablesim/test_printer.py, `test_point6_*` |
| 7 | the console: minor units, epoch times, 40-line `recall 1`, nothing for `recall 3` on an empty journal, the PIN echoed | tests/daemon/test_console_operator.py, `test_point7_*` |
| 8 | logs: no line for a round, a void or a reload; our timestamp beside journald's; no priorities | `test_point8_*` |
| 9 | no one-shot `tablectl status`, no completion, `./dev tablectl` resolved paths from the repository | `test_point9_*` |
| 10 | tests/drivers/test_cammegh_driver.py::test_component_fault_packet_fault_health_and_void failed on a loaded machine | `test_point10_*` (and that test, under load: docs/reliability.md) |
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from firmware_host.cli import build_parser, main
from firmware_host.cliargs import CliError
from firmware_host.config import load_config, validate_document
from firmware_host.console import hash_pin
from firmware_host.daemon import TableDaemon
from firmware_host.games import GAME_IDS
from firmware_host.logsetup import JournalFormatter, journal_stream, setup_logging
from firmware_host.mqtt import MqttSettings
from tablesim.broker import free_port
from tablesim.demo import run_demo

ROOT = Path(__file__).resolve().parents[1]
PIN = "8642"


# -- 1 ---------------------------------------------------------------------------------
async def test_point1_unreachable_broker_named_at_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(CliError) as exc:  # one line through tablectl's one error path
        await run_demo(
            game="roulette", rounds=1, broker=f"mqtt://127.0.0.1:{port}", speed=1.0, seed=1,
            bets=1, quiet=False,
        )  # fmt: skip
    assert exc.value.code == "BROKER_UNREACHABLE" and time.monotonic() - t0 < 10
    assert f"cannot reach the MQTT broker 127.0.0.1:{port}" in exc.value.message
    assert not list(tmp_path.glob("tablectl-demo-*"))  # nothing left behind


async def test_point1_the_daemon_log_names_the_broker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    cfg = validate_document(
        {
            "table": {"id": "b-1", "game": "fantan", "result_source": "manual"},
            "console": {"operators": {"tech1": {"pin_hash": hash_pin(PIN)}}},
        }
    )
    d = TableDaemon(
        cfg, state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(host="127.0.0.1", port=port, reconnect_min_ms=50),
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="firmware_host.mqtt"):
        await d.start()
        try:
            await asyncio.sleep(0.5)
        finally:
            await d.stop()
    text = caplog.text
    # Since issue 15 the journal is first checked against the floor: the start-up
    # check names the broker it cannot reach (and play waits, JOURNAL_UNCHECKED).
    assert f"broker unreachable (127.0.0.1:{port}:" in text, text


# -- 2 ---------------------------------------------------------------------------------
def test_point2_the_readme_hand_is_shipped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (ROOT / "README.md").read_text()
    hand = re.search(r"score mahjong --hand @(\S+)", readme)
    assert hand is not None and (ROOT / hand.group(1)).is_file()
    monkeypatch.chdir(ROOT)
    assert main(["score", "mahjong", "--hand", f"@{hand.group(1)}"]) == 0
    assert "Valid: 135/91/M art. 4 (a)" in capsys.readouterr().out


def test_point2_missing_file_is_a_message(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["score", "mahjong", "--hand", "@hand.json"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "tablectl score: error: FILE_UNREADABLE: --hand: cannot read hand.json: No such file "
        "or directory"
    )


# -- 3 ---------------------------------------------------------------------------------
async def test_point3_a_manual_table_plays_a_round_from_the_console(
    tmp_path: Path, amqtt_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The example roulette table without its wheel: the log says how results come, and
    a logged-in operator opens, closes and enters a result; the round settles."""
    source = ROOT / "config" / "roulette.toml"
    doc = tomllib.loads(source.read_text())
    del doc["devices"]  # without its wheel: results entered by people, who are on record
    doc["table"]["result_source"] = "manual"
    doc["console"] = {"operators": {"tech1": {"pin_hash": hash_pin(PIN)}}}
    cfg = validate_document(doc, str(source), require_version=True)
    d = TableDaemon(
        cfg, state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol),
    )  # fmt: skip
    with caplog.at_level(logging.INFO):
        await d.start()
        try:
            s = d.new_session("test")
            await s.handle("login tech1")
            assert await s.handle(PIN) == ["logged in as tech1"]
            opened = await s.handle("open")
            rid = next(x.split(": ", 1)[1] for x in opened if x.startswith("round_id: "))
            await s.handle(f"close {rid}")
            out = await s.handle(f'result {rid} {{"number": 17}}')
            assert "status: settled" in out, out
            recall = "\n".join(await s.handle("recall"))
            assert '"number": 17' in recall
        finally:
            await d.stop()
    assert "no wheel device configured: results are entered by command" in caplog.text
    assert re.search(r"round roulette-01-000001-\w+ settled: \{\"number\":17", caplog.text)


async def test_point3_run_simulate_serves_the_wheel() -> None:
    from firmware_host.subcommands.daemon import simulated_table

    cfg, served = await simulated_table(str(ROOT / "config" / "roulette.toml"))
    try:
        wheel = cfg.sections["devices"].untracked()["wheel"]
        assert wheel.driver == "cammegh-ss2" and wheel.settings["port"] == served[0].where
    finally:
        for s in served:
            await s.close()


# -- 4 ---------------------------------------------------------------------------------
def test_point4_dev_help_and_unknown_command() -> None:
    bad = subprocess.run([str(ROOT / "dev"), "foo"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "unknown command 'foo'" in bad.stderr
    assert "set -euo" not in bad.stdout + bad.stderr
    ok = subprocess.run([str(ROOT / "dev"), "help"], capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and "./dev demo" in ok.stdout and "set -euo" not in ok.stdout


def test_point4_setup_is_quiet_and_pyproject_has_no_deprecated_license() -> None:
    """Every pip call in ./dev goes through ``step`` (one line, output to the log); the
    project's license is an SPDX string (a TOML table is deprecated by setuptools 77,
    which the build now requires)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(project["project"]["license"], str)
    assert any(r.startswith("setuptools>=77") for r in project["build-system"]["requires"])
    dev = (ROOT / "dev").read_text()
    pip_lines = [ln for ln in dev.splitlines() if "-m pip install" in ln]
    assert pip_lines and all("step " in ln or ln.strip().startswith('"$VENV') for ln in pip_lines)
    assert "--quiet" not in "".join(pip_lines)  # hidden in the log, shown on failure


# -- 5 ---------------------------------------------------------------------------------
async def test_point5_random_seed_printed_quiet_and_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc = await run_demo(
        game="fantan", rounds=1, broker=None, speed=20.0, seed=None, bets=2, quiet=True
    )
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert len(lines) == 3, lines  # one line per round, the summary, the seed to replay
    assert lines[0].startswith("#1 ") and lines[1].startswith("1 round settled, ")
    m = re.fullmatch(r"seed (\d+): tablectl demo --game fantan --seed \1", lines[2])
    assert m is not None, lines[2]


async def test_point5_same_seed_same_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    texts = []
    for _ in range(2):
        await run_demo(
            game="sicbo", rounds=2, broker=None, speed=20.0, seed=4242, bets=3, quiet=True
        )
        out = capsys.readouterr().out
        texts.append([re.sub(r"demo-sicbo-\d+-\w+", "ID", ln) for ln in out.splitlines()[:2]])
    assert texts[0] == texts[1]


def test_point5_game_help_lists_the_games() -> None:
    demo = build_parser()._subparsers._group_actions[0].choices["demo"]  # type: ignore[union-attr]
    helptext = demo.format_help()
    assert all(g in helptext for g in GAME_IDS)


def test_point5_ctrl_c_ends_with_a_summary(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "demo", "--game", "fantan", "--speed", "10"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + 60
    while "#1 " not in seen and time.monotonic() < deadline:
        seen += proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    out = seen + rest
    assert proc.returncode == 130, out
    assert "interrupted (Ctrl-C)." in out and re.search(r"\d+ rounds? settled, ", out)
    assert "Traceback" not in out


async def test_point5_ctrl_c_is_journaled_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    from tablesim.demo import DemoTable

    monkeypatch.setattr("tablesim.demo.shutil.rmtree", lambda *a, **k: None)
    t = DemoTable("fantan", speed=20.0, seed=1, bets=1)
    await t.start()
    await t.play(1)
    await t.stop("demo interrupted (Ctrl-C)")
    from firmware_host.journal import Journal

    with Journal(t.tmp / "journal.sqlite3", readonly=True) as j:
        last = j.chain.events(1, kind="power_down")
    assert last[-1].data["reason"] == "demo interrupted (Ctrl-C)"


# -- 6 ---------------------------------------------------------------------------------
def test_point6_the_banker_has_its_row() -> None:
    from tablesim.printer import round_rows

    r = json.loads((ROOT / "tests" / "golden" / "super-pan-9.json").read_text())[0]
    rows = round_rows(r)
    banker = [x for x in rows if x.who == "banker"]
    assert banker and banker[0].stake == r["banker"]["capital"]
    assert banker[0].what == f"capital, place {r['banker']['place']}"


# -- 7 ---------------------------------------------------------------------------------
def test_point7_console_help_documents_recall_full() -> None:
    text = (ROOT / "docs" / "console.md").read_text()
    assert "recall [N] [full]" in text and "approve ID" in text


# -- 8 ---------------------------------------------------------------------------------
def test_point8_under_systemd_priorities_and_no_timestamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open(tmp_path / "stream", "w+") as stream:
        st = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        monkeypatch.delenv("TABLECTL_LOG_FORMAT", raising=False)
        assert journal_stream(stream)
        handler = setup_logging("INFO", stream)
        try:
            logging.getLogger("firmware_host.x").error("journal refused\nsecond line")
            logging.getLogger("firmware_host.x").info("round settled")
            logging.getLogger("firmware_host.x").debug("not at INFO")
        finally:
            logging.getLogger().removeHandler(handler)
        stream.seek(0)
        lines = stream.read().splitlines()
    assert lines == [
        "<3>firmware_host.x: journal refused",
        "<3>second line",
        "<6>firmware_host.x: round settled",
    ]


def test_point8_elsewhere_iso_local_timestamps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOURNAL_STREAM", "1:1")  # inherited, but not this stream
    monkeypatch.setenv("INVOCATION_ID", "abc")
    monkeypatch.delenv("TABLECTL_LOG_FORMAT", raising=False)
    with open(tmp_path / "log", "w+") as stream:
        assert not journal_stream(stream)
        handler = setup_logging("WARNING", stream)
        try:
            logging.getLogger("firmware_host.y").warning("broker 127.0.0.1:1883: refused")
            logging.getLogger("firmware_host.y").info("hidden at WARNING")
        finally:
            logging.getLogger().removeHandler(handler)
        stream.seek(0)
        (line,) = stream.read().splitlines()
    assert re.match(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d WARNING firmware_host.y: broker", line
    ), line


def test_point8_priority_of_each_level() -> None:
    f = JournalFormatter("%(message)s")
    for level, prio in ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4),
                        (logging.INFO, 6), (logging.DEBUG, 7)):  # fmt: skip
        rec = logging.LogRecord("n", level, __file__, 1, "m", None, None)
        assert f.format(rec) == f"<{prio}>m"


async def test_point8_void_and_reload_have_their_line(
    tmp_path: Path, amqtt_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "table.toml"
    path.write_text(
        'version = 1\n[table]\nid = "lg-1"\ngame = "fantan"\nresult_source = "manual"\n'
        f'[limits]\nmin_stake = 100\n[console.operators.tech1]\npin_hash = "{hash_pin(PIN)}"\n'
    )
    d = TableDaemon(
        load_config(path), config_path=path, state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol),
    )  # fmt: skip
    with caplog.at_level(logging.INFO):
        await d.start()
        try:
            assert d.parts.engine is not None
            d.parts.engine.open_betting()
            d.parts.engine.void_round("dealer error\x1b[2J", source="test")
            path.write_text(path.read_text().replace("100", "200"))
            d.reload()
        finally:
            await d.stop()
    assert re.search(r"round lg-1-000001-\w+ voided: dealer error", caplog.text)
    assert "reload applied: limits" in caplog.text


def test_point8_log_level_option() -> None:
    config = str(ROOT / "config" / "roulette.toml")
    args = build_parser().parse_args(["run", "--config", config, "--log-level", "debug"])
    assert args.log_level == "DEBUG"


# -- 9 ---------------------------------------------------------------------------------
async def test_point9_status_once_from_the_console_socket(
    tmp_path: Path, amqtt_broker: Any
) -> None:
    from firmware_host.subcommands.ops import console_query, status_text

    cfg = validate_document(
        {
            "table": {"id": "st-1", "game": "sicbo", "result_source": "manual"},
            "console": {"operators": {"tech1": {"pin_hash": hash_pin(PIN)}}},
        }
    )
    d = TableDaemon(
        cfg, state_dir=tmp_path, runtime_dir=tmp_path,
        mqtt=MqttSettings(host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol),
    )  # fmt: skip
    await d.start()
    try:
        text = await console_query(str(tmp_path / "console.sock"), "status json")
    finally:
        await d.stop()
    status = json.loads(text)
    assert status["table_id"] == "st-1" and status["phase"] == "idle"
    human = status_text(status)
    assert "table:" in human and "phase:     idle" in human and "faults:    none" in human


def test_point9_bash_completion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    (tmp_path / "c.sh").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "c.sh")], timeout=30).returncode == 0
    probe = (
        f"source {tmp_path / 'c.sh'}; COMP_WORDS=(tablectl demo --game ba); COMP_CWORD=3; "
        "_tablectl; echo ${COMPREPLY[@]}"
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["baccarat"]


def test_point9_every_subcommand_has_a_manual_with_an_example() -> None:
    parser = build_parser()
    subs = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, p in subs.items():
        text = p.format_help()
        assert "examples:" in text and f"tablectl {name}" in text.split("examples:")[1], (
            f"tablectl {name} --help has no example: add one to firmware_host.cli.EXAMPLES"
        )


def test_point9_dev_takes_paths_from_where_you_stand() -> None:
    done = subprocess.run(
        [str(ROOT / "dev"), "tablectl", "check-config", "roulette.toml"],
        cwd=ROOT / "config", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("roulette.toml: ok")


# -- 10 --------------------------------------------------------------------------------
async def test_point10_a_component_fault_ends_the_game_unread() -> None:
    """The cause of the flaky driver test: the simulated wheel played on after a
    component fault and could read a number. Now no number follows the fault, however
    long the game would have gone on."""
    import dataclasses

    from drivers.cammegh.codec import GameState
    from drivers.cammegh.sim import CammeghSim, SimTiming

    timing = dataclasses.replace(SimTiming.fast(), no_more_bets=0.05, result=0.05)
    sim = CammeghSim(seed=3, timing=timing, state=GameState.PLACE_BETS)
    try:
        sim._start_game(None, None)
        await sim.wait_state(GameState.NO_MORE_BETS)
        sim.inject("component_fault", code=5)
        await asyncio.sleep(0.5)  # ten times what the result would have taken
        assert sim.results == [] and sim.state in (GameState.NO_MORE_BETS, GameState.CLOSE_TABLE)
    finally:
        await sim.close()
