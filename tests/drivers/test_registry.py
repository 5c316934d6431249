"""``[devices.<name>]`` sections: validation through the config loader, and create_driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.cammegh.driver import CammeghDriver
from drivers.gpio_wheel.driver import GpioWheelDriver
from drivers.keypad.driver import KeypadDriver
from drivers.registry import DeviceConfig, create_driver, declarations, validate_devices
from firmware_host.cli import main
from firmware_host.config import ConfigInvalid, validate_document

WHEEL = {"driver": "cammegh-ss2", "port": "/dev/serial/by-id/usb-FTDI_FT232R-if00-port0"}
GPIO_WHEEL = {"driver": "gpio-wheel", "index_pin": 5, "index_b_pin": 6, "ball_pin": 13}
KEYPAD = {"driver": "keypad-gpio", "pins": {"1": 17, "2": 27, "3": 22, "4": 23, "confirm": 24}}


def doc(devices: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "table": {"id": "t1", "game": "roulette"}, "devices": devices}


def errors_of(devices: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigInvalid) as info:
        validate_document(doc(devices))
    return info.value.errors


def test_my_drivers_are_registered() -> None:
    assert {"cammegh-ss2", "gpio-wheel", "keypad-gpio"} <= set(declarations())


def test_valid_sections_and_defaults() -> None:
    # a keypad cannot serve a roulette table (Game.device_kinds): its section is kept disabled
    keypad = {**KEYPAD, "enabled": False}
    cfg = validate_document(doc({"wheel": WHEEL, "keypad": keypad, "spare": {**GPIO_WHEEL}}))
    devices = cfg.section("devices")
    wheel = devices["wheel"]
    assert isinstance(wheel, DeviceConfig) and wheel.driver == "cammegh-ss2" and wheel.enabled
    assert (wheel.kind, devices["keypad"].kind) == ("wheel", "keypad")  # as declared
    assert wheel.settings["baud"] == 9600 and wheel.settings["no_ball_grace_ms"] == 5000
    assert devices["spare"].settings["direction"] == "auto"


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ({"driver": "nope"}, "devices.d.driver: unknown driver 'nope'"),
        ({"port": "x"}, "devices.d.driver: required"),
        ({"driver": "cammegh-ss2"}, "devices.d.port: required key is missing"),
        ({**WHEEL, "baud": "fast"}, "devices.d.baud: expected an integer"),
        ({**WHEEL, "bogus": 1}, "devices.d.bogus: unknown key"),
        ({**WHEEL, "pockets": 36}, "devices.d.pockets: 36 is not one of"),
        # the vendor's grace periods are minimums (integration guide 4.1)
        ({**WHEEL, "no_ball_grace_ms": 1000}, "devices.d.no_ball_grace_ms: 1000 is outside"),
        ({**GPIO_WHEEL, "index_b_pin": None}, "devices.d.index_b_pin: expected an integer"),
        ({k: v for k, v in GPIO_WHEEL.items() if k != "index_b_pin"}, "devices.d.direction: 'auto' needs"),
        ({**GPIO_WHEEL, "min_rpm": 70, "max_rpm": 60}, "devices.d.min_rpm: must be below"),
        ({**KEYPAD, "pins": {"x": 4}}, "devices.d.pins.x: unknown key"),
        ({**KEYPAD, "pins": {"1": 4, "2": 4}}, "devices.d.pins.2: GPIO4 is also pins.1"),
    ],
)  # fmt: skip
def test_bad_sections_name_the_key(section: dict[str, Any], fragment: str) -> None:
    errs = errors_of({"d": section})
    assert any(e.startswith(fragment) for e in errs), errs


def test_device_names_and_pin_conflicts() -> None:
    errs = errors_of({"bad/name": WHEEL})
    assert any("device name" in e for e in errs)
    errs = errors_of({"wheel": GPIO_WHEEL, "keypad": {**KEYPAD, "pins": {"1": 13}}})
    assert any(e.startswith("devices.keypad.pins.1: GPIO13 is already used by") for e in errs)
    # a disabled device does not claim its pins
    ok = validate_devices(
        {"wheel": GPIO_WHEEL, "keypad": {**KEYPAD, "pins": {"1": 13}, "enabled": False}},
        "devices",
        errs := [],
    )
    assert not errs and not ok["keypad"].enabled


async def test_create_driver_builds_each_class() -> None:
    factory = MockFactory()
    assert isinstance(create_driver("wheel", WHEEL), CammeghDriver)
    gw = create_driver("gw", GPIO_WHEEL, pin_factory=factory)
    assert isinstance(gw, GpioWheelDriver) and gw.pin_factory is factory
    kp = create_driver("kp", KEYPAD, pin_factory=factory)
    assert isinstance(kp, KeypadDriver)
    await kp.start()
    assert set(kp.keys) == {"1", "2", "3", "4", "confirm"}
    await kp.stop()
    with pytest.raises(ConfigInvalid):
        create_driver("wheel", {"driver": "cammegh-ss2"})


def test_check_config_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.toml"
    good.write_text(
        'version = 1\n[table]\nid = "r1"\ngame = "roulette"\n'
        '[devices.wheel]\ndriver = "cammegh-ss2"\nport = "/dev/ttyUSB0"\n'
    )
    assert main(["check-config", str(good)]) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text() + "baud = 9601.5\n")
    assert main(["check-config", str(bad)]) == 1
    captured = capsys.readouterr()
    assert "devices.wheel.baud" in captured.out + captured.err


def test_every_driver_key_is_in_docs_drivers_md() -> None:
    """docs/drivers.md lists each driver's keys under its own heading (STYLE: docs kept true)."""
    from drivers.registry import driver_class

    text = (Path(__file__).resolve().parents[2] / "docs" / "drivers.md").read_text()
    for name in declarations():
        assert f"### `{name}`" in text, f"no section for {name} in docs/drivers.md"
        block = text.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for key in driver_class(name).SETTINGS:
            assert f"| `{key}` |" in block, f"{name}: key {key} is not in docs/drivers.md"
