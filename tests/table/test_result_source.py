"""Issue 14 item 7: no silent manual table. A roulette table whose wheel is disabled or
misnamed once became a manual table quietly: check-config said ok and a `result` from
anyone settled the spin. Now such a table is refused unless it says, in so many words,
that people enter its results, which then needs signed requests and someone allowed to
enter them; and the retained state shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmware_host.auth import generate
from firmware_host.cli import main
from firmware_host.config import ConfigInvalid, load_config, validate_document
from firmware_host.console import hash_pin
from firmware_host.daemon import TableDaemon
from firmware_host.table.extension import TableExtensions
from firmware_host.table.state import LatchedFaults, TableState

ROULETTE = """\
version = 1
[table]
id = "r-1"
game = "roulette"
"""
WHEEL = '[devices.wheel]\ndriver = "cammegh-ss2"\nport = "/dev/null"\n'


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    f = tmp_path / "t.toml"
    f.write_text(text)
    rc = main(["check-config", str(f)])
    return rc, capsys.readouterr().out


def test_a_roulette_table_with_its_wheel_disabled_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = check(tmp_path, ROULETTE + WHEEL + "enabled = false\n", capsys)
    assert rc == 1
    assert "a roulette table reads its results from a wheel, and devices.wheel is disabled" in out
    assert 'table.result_source = "manual"' in out
    with pytest.raises(ConfigInvalid, match=r"devices\.wheel is disabled"):
        TableDaemon(load_config(tmp_path / "t.toml"))


def test_a_roulette_table_whose_wheel_is_missing_or_misnamed_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = check(tmp_path, ROULETTE, capsys)
    assert rc == 1 and "no [devices.<name>] section has a wheel driver" in out
    # a wheel under a driver name that is not a wheel's
    misnamed = ROULETTE + '[devices.wheel]\ndriver = "cammegh-ss3"\nport = "/dev/null"\n'
    rc, out = check(tmp_path, misnamed, capsys)
    assert rc == 1 and "devices.wheel" in out
    rc, out = check(tmp_path, ROULETTE + WHEEL, capsys)
    assert rc == 0, out


def test_manual_results_need_signed_requests_and_someone_allowed_to_enter_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manual = ROULETTE + 'result_source = "manual"\n'
    rc, out = check(tmp_path, manual + "[auth]\nsignatures = false\n", capsys)
    assert rc == 1 and "results entered by people need signed requests" in out
    _, pos = generate("pos", tmp_path)
    floor_only = f'[auth.principals.pos]\nkeys = ["{pos}"]\nroles = ["floor_system"]\n'
    rc, out = check(tmp_path, manual + floor_only, capsys)
    assert rc == 1 and "no principal of [auth.principals] may enter a result" in out
    _, dealer = generate("dealer", tmp_path)
    with_dealer = (
        floor_only + f'[auth.principals.dealer]\nkeys = ["{dealer}"]\nroles = ["dealer"]\n'
    )
    rc, out = check(tmp_path, manual + with_dealer, capsys)
    assert rc == 0, out
    # or a console operator, who logs in with a PIN at the table itself (on record);
    # signatures still cannot be off on a manual table
    console = f'[console.operators.tech1]\npin_hash = "{hash_pin("4821")}"\n'
    rc, out = check(tmp_path, manual + floor_only + console, capsys)
    assert rc == 0, out
    rc, out = check(tmp_path, manual + "[auth]\nsignatures = false\n" + console, capsys)
    assert rc == 1 and "results entered by people need signed requests" in out
    # one source of results, never two
    rc, out = check(tmp_path, manual + with_dealer + WHEEL, capsys)
    assert rc == 1 and 'result_source: "manual", but devices.wheel (a wheel) reads' in out
    # a key file that cannot be read is refused
    rc, out = check(tmp_path, manual + with_dealer.replace(str(dealer), "/nonexistent.pub"), capsys)
    assert rc == 1 and "auth.principals.dealer.keys" in out and "cannot read" in out


def test_check_config_warns_about_running_without_signatures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = check(tmp_path, ROULETTE + WHEEL + "[auth]\nsignatures = false\n", capsys)
    assert rc == 0
    assert "warning: auth.signatures = false: floor requests are NOT authenticated" in out


def test_a_game_without_a_result_device_is_manual_and_cannot_say_device() -> None:
    cfg = validate_document({"table": {"id": "m", "game": "mahjong"}})
    assert cfg.result_source == "manual"
    with pytest.raises(ConfigInvalid, match="mahjong has no result device"):
        validate_document({"table": {"id": "m", "game": "mahjong", "result_source": "device"}})


def test_the_retained_state_shows_the_result_source_and_the_signatures() -> None:
    published: list[dict] = []

    class NoFaults:
        def active(self) -> list:
            return []

    state = TableState(
        TableExtensions(),
        publish=lambda **f: published.append(f),
        game_id="roulette",
        faults=LatchedFaults(NoFaults()),
        auth="unsigned",
        result_source="manual",
        last_round=lambda: "r-1-000007-0badcafe",
    )
    state.refresh()
    assert published[-1]["auth"] == "unsigned"
    assert published[-1]["result_source"] == "manual"
    assert published[-1]["last_round_id"] == "r-1-000007-0badcafe"
