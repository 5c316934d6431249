"""Tracked configuration reads (issue 13, as Klipper does): an option set in the file
that nothing on the table reads is an error naming its section and option, at start-up
and in ``tablectl check-config``; a production configuration that needs GPIO pins on a
machine without them is an error too, never a silent fallback to mock pins."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.gpio import gpio_unavailable
from firmware_host.assembly import assembly_problems, read_plan
from firmware_host.cli import main
from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.daemon import TableDaemon

KEYPAD = {"driver": "keypad-gpio", "pins": {"1": 5, "2": 6, "3": 13, "4": 19, "confirm": 26}}
NO_GPIO = gpio_unavailable() is not None


#: A device that reads each game's results (no silent manual table, issue 14).
READERS: dict[str, dict[str, object]] = {
    "roulette": {"wheel": {"driver": "cammegh-ss2", "port": "/dev/null"}},
    "stud-poker": {"shoe": {"driver": "shoe-ref", "port": "/dev/null"}},
}


def doc(game: str = "roulette", **sections: object) -> dict[str, object]:
    return {"version": 1, "table": {"id": "t-1", "game": game}, "devices": READERS.get(game, {}),
            **sections}  # fmt: skip


def test_a_jackpot_section_on_a_table_without_a_jackpot_is_never_read() -> None:
    cfg = validate_document(doc("roulette", jackpot={"meter_max": 5000000, "display_ms": 500}))
    assert assembly_problems(cfg) == [
        "jackpot.display_ms: set, but nothing on this table reads it (remove it; is it in "
        "the right section, and does this table use that section?)",
        "jackpot.meter_max: set, but nothing on this table reads it (remove it; is it in "
        "the right section, and does this table use that section?)",
    ]
    with pytest.raises(ConfigInvalid) as exc:
        TableDaemon(cfg)
    assert [e.split(":")[0] for e in exc.value.errors] == [
        "jackpot.display_ms",
        "jackpot.meter_max",
    ]


def test_the_same_section_is_read_where_the_game_offers_a_jackpot() -> None:
    cfg = validate_document(
        doc(
            "stud-poker",
            pay_table={"stud-poker": {"jackpot_offered": True}},
            jackpot={"meter_max": 50000000, "display_ms": 500},
        )
    )
    plan = read_plan(cfg)
    assert plan.problems == ()
    assert plan.jackpot is not None and plan.jackpot.meter_max == 50000000
    assert plan.jackpot.display_ms == 500


def test_every_option_of_every_section_the_daemon_uses_is_read() -> None:
    cfg = validate_document(
        doc(
            "fantan",
            daemon={"watchdog_check": False, "simulated": True},
            journal={"raw_frame_rounds": 50},
            console={"max_tries": 3},
            mqtt={"host": "127.0.0.1"},
            devices={"keypad": KEYPAD},
        )
    )
    assert cfg.options >= {"daemon.watchdog_check", "daemon.simulated", "devices.keypad"}
    plan = read_plan(cfg)
    assert plan.problems == ()
    assert plan.watchdog_check is False and plan.simulated is True


def test_auto_open_and_jackpot_display_ms_are_gone() -> None:
    # They were validated and documented but never read; now a file that sets them is
    # told so (unknown key), instead of silently doing nothing.
    for key in ("auto_open", "jackpot_display_ms"):
        with pytest.raises(ConfigInvalid) as exc:
            validate_document(doc(daemon={key: True if key == "auto_open" else 1000}))
        assert any(e.startswith(f"daemon.{key}: unknown key") for e in exc.value.errors)


def test_check_config_reports_unread_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "t.toml"
    f.write_text('version = 1\n[table]\nid = "t-1"\ngame = "sicbo"\n[jackpot]\nsign = "sign"\n')
    assert main(["check-config", str(f)]) == 1
    out = capsys.readouterr().out
    assert f"{f}: jackpot.sign: set, but nothing on this table reads it" in out


@pytest.mark.skipif(not NO_GPIO, reason="this machine has GPIO")
def test_gpio_missing_is_an_error_unless_the_table_is_simulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    production = validate_document(doc("fantan", devices={"keypad": KEYPAD}))
    (problem,) = assembly_problems(production)
    assert problem.startswith("devices.keypad: driver 'keypad-gpio' needs GPIO pins, and this")
    assert "[daemon] simulated = true" in problem
    with pytest.raises(ConfigInvalid):
        TableDaemon(production)
    f = tmp_path / "t.toml"
    f.write_text(
        'version = 1\n[table]\nid = "t-1"\ngame = "fantan"\n[devices.keypad]\n'
        'driver = "keypad-gpio"\npins = { "1" = 5, "2" = 6, "3" = 13, "4" = 19, confirm = 26 }\n'
    )
    assert main(["check-config", str(f)]) == 1
    assert "needs GPIO pins" in capsys.readouterr().out
    # a simulated table runs on mock pins; a caller may bring its own pins (tests)
    simulated = validate_document(
        doc("fantan", devices={"keypad": KEYPAD}, daemon={"simulated": True})
    )
    assert assembly_problems(simulated) == []
    TableDaemon(production, pin_factory=MockFactory())


def test_gpio_unavailable_says_why(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.write_bytes(b"QEMU Virtual Machine")
    assert gpio_unavailable(str(model), str(tmp_path)) == "not a Raspberry Pi"
    model.write_bytes(b"Raspberry Pi 5 Model B Rev 1.0\x00")
    assert "gpiochip" in (gpio_unavailable(str(model), str(tmp_path)) or "")


def test_auto_pin_factory_never_falls_back_to_mock_pins(monkeypatch: pytest.MonkeyPatch) -> None:
    from drivers.gpio import is_raspberry_pi, make_pin_factory

    if is_raspberry_pi():
        pytest.skip("a Raspberry Pi picks its own pins")
    monkeypatch.delenv("GPIOZERO_PIN_FACTORY", raising=False)
    with pytest.raises(ValueError, match="no GPIO pins here"):
        make_pin_factory("auto")


async def test_a_gpio_driver_started_without_pins_refuses() -> None:
    from drivers.base import DriverError
    from drivers.registry import create_driver

    drv = create_driver("keypad", KEYPAD)
    with pytest.raises(DriverError, match="no GPIO pin factory"):
        await drv.start()


def test_settings_the_caller_overrides_still_count_as_read(tmp_path: Path) -> None:
    from firmware_host.mqtt import MqttSettings

    cfg = validate_document(
        doc(
            "fantan",
            mqtt={"host": "floor.example", "port": 8883},
            devices={"keypad": KEYPAD},
            daemon={"simulated": True},
        )
    )
    plan = read_plan(cfg, mqtt=MqttSettings(host="127.0.0.1", port=1883), state_dir=tmp_path)
    assert plan.problems == () and plan.mqtt.host == "127.0.0.1"
