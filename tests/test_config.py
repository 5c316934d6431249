"""Table configuration: every error at once with its path, unknown keys refused,
every example in config/ valid."""

from pathlib import Path

import pytest

from firmware_host.cli import main
from firmware_host.config import ConfigInvalid, load_config, validate_document

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "config").glob("*.toml"))

BROKEN = """\
version = 1
[table]
id = "bad/table#"
game = "sicbo"
currency = "mop"
payable_unit = 0
colour = "red"

[limits]
min_stake = 500
max_stake = 100

[limits.bet_types.straight]
max = 5

[pay_table.sicbo]
total_5 = 31
total_6 = "16"
total_7 = 12

[rules.roulette]
zero_combinations = true

[mqtt_typo]
host = "x"
"""


def test_examples_exist_for_each_game_here() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"roulette", "sicbo", "fish-prawn-crab", "fantan"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_is_valid(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(path)]) == 0
    assert "ok" in capsys.readouterr().out


def test_broken_file_lists_every_error_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "broken.toml"
    f.write_text(BROKEN)
    assert main(["check-config", str(f)]) == 1
    out = capsys.readouterr().out
    expected = [
        "table.id: must be 1-64 characters",
        "table.currency: must be a 3-letter ISO 4217 code",
        "table.payable_unit: 0 is outside the allowed range 1..1000000000",
        "table.colour: unknown key",
        "limits: min_stake 500 is above max_stake 100",
        "limits.bet_types.straight: sicbo has no bet type 'straight'",
        "pay_table.sicbo.total_5: 31 is outside the authorised range 18..30 (57/2004 art. 6 6) (2))",
        "pay_table.sicbo.total_6: expected an integer, got '16'",
        "pay_table.sicbo.total_7: unknown key",
        "rules.roulette: this table plays 'sicbo'; remove this section",
        "mqtt_typo: unknown section",
    ]
    for e in expected:
        assert f"{f}: {e}" in out, e
    assert f"{len(expected)} error(s)" in out


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigInvalid, match="cannot read"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[table\nid=")
    with pytest.raises(ConfigInvalid, match="not valid TOML"):
        load_config(bad)


def test_floats_refused_for_money_and_versions_checked() -> None:
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(
            {"version": 99, "table": {"id": "t", "game": "roulette"}, "limits": {"min_stake": 25.0}}
        )
    text = "\n".join(exc.value.errors)
    assert "version: 99 is newer" in text
    assert "limits.min_stake: expected an integer, got 25.0" in text


def test_defaults_fill_in() -> None:
    cfg = validate_document({"table": {"id": "t1", "game": "fantan"}})
    assert cfg.money.payable_unit == 1 and cfg.money.currency == "MOP"
    assert cfg.limits.min_stake == 1


def test_production_example_is_valid_once_its_files_exist(tmp_path: Path) -> None:
    """config/production/roulette-01.toml names TLS and password files under /etc/tablectl."""
    text = (ROOT / "config" / "production" / "roulette-01.toml").read_text()
    text = text.replace("/etc/tablectl/", f"{tmp_path}/")
    for name in ("tls/ca.crt", "tls/roulette-01.crt", "tls/roulette-01.key", "mqtt-password"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    f = tmp_path / "table.toml"
    f.write_text(text)
    cfg = load_config(f)
    assert cfg.section("mqtt").tls and cfg.section("console").operators["tech1"].startswith(
        "pbkdf2_sha256$"
    )
    assert set(cfg.section("devices")) == {"wheel"}


def test_older_versions_are_migrated_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of an older format version is upgraded step by step before validation."""
    import firmware_host.config as config

    def v1_to_v2(doc: dict) -> dict:  # e.g. a key renamed in format 2
        doc = dict(doc)
        table = dict(doc["table"])
        table["payable_unit"] = table.pop("chip", 1)
        doc["table"] = table
        return doc

    monkeypatch.setattr(config, "CURRENT_VERSION", 2)
    monkeypatch.setitem(config.MIGRATIONS, 1, v1_to_v2)
    cfg = validate_document({"version": 1, "table": {"id": "t", "game": "fantan", "chip": 100}})
    assert cfg.version == 2 and cfg.money.payable_unit == 100
    with pytest.raises(ConfigInvalid, match="version: 3 is newer"):
        validate_document({"version": 3, "table": {"id": "t", "game": "fantan"}})


# -- issue 12 point 7: what must be refused ----------------------------------------------


def test_a_bet_type_maximum_above_the_table_maximum_is_refused() -> None:
    # A per-bet-type limit narrows the table's; one above max_stake would let a bet type
    # take more than the table says it takes.
    with pytest.raises(ConfigInvalid) as exc:
        validate_document(
            {"table": {"id": "t", "game": "roulette"},
             "limits": {"max_stake": 100000, "bet_types": {"straight": {"max": 200000}}}}
        )  # fmt: skip
    assert exc.value.errors == [
        "limits.bet_types.straight.max: 200000 is above the table maximum limits.max_stake "
        "100000; raise max_stake and give the other bet types their own max"
    ]


def test_a_table_file_without_version_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "table.toml"
    f.write_text('[table]\nid = "t1"\ngame = "fantan"\n')
    with pytest.raises(ConfigInvalid) as exc:
        load_config(f)
    assert exc.value.errors == [
        "version: required key is missing (the configuration format version; this software "
        "writes version = 1)"
    ]
    f.write_text('version = 1\n[table]\nid = "t1"\ngame = "fantan"\n')
    assert load_config(f).version == 1


def test_a_device_the_game_cannot_use_is_refused() -> None:
    # A wheel on a sic bo table: the game's device kinds (Game.device_kinds) are a shaker
    # and a result board (each driver declares its kind: drivers.registry.kind_of).
    wheel = {"driver": "cammegh-ss2", "port": "/dev/null"}
    with pytest.raises(ConfigInvalid) as exc:
        validate_document({"table": {"id": "t", "game": "sicbo"}, "devices": {"wheel": wheel}})
    assert exc.value.errors == [
        "devices.wheel: a wheel (cammegh-ss2) cannot serve a sicbo table; its devices are of "
        "kind board, shaker (remove the section or set enabled = false)"
    ]
    # kept but not started: accepted, as on a roulette table
    validate_document(
        {"table": {"id": "t", "game": "sicbo"}, "devices": {"wheel": {**wheel, "enabled": False}}}
    )
    validate_document({"table": {"id": "t", "game": "roulette"}, "devices": {"wheel": wheel}})
