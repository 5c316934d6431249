"""The reflink drivers in the device registry: sections validated with paths, drivers built."""

from __future__ import annotations

from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from drivers.board.driver import BoardDriver, GpioBoardDriver
from drivers.registry import create_driver, validate_devices
from drivers.shaker.driver import ShakerDriver
from drivers.shoe.driver import ShoeDriver, UsbShoeDriver
from drivers.sign.driver import SignDriver
from firmware_host.assembly import assembly_problems
from firmware_host.config import ConfigInvalid, validate_document

SECTIONS: dict[str, tuple[dict[str, object], type[Any]]] = {
    "shoe": ({"driver": "shoe-ref", "port": "/dev/ttyUSB1", "decks": 8}, ShoeDriver),
    "shoe2": ({"driver": "shoe-ref-usb", "usb": "usb:1209:5348:SHOE1"}, UsbShoeDriver),
    "shaker": (
        {
            "driver": "shaker-ref",
            "port": "socket://127.0.0.1:7002",
            "dice": 3,
            "dome_pin": 17,
            "bell_pin": 27,
        },
        ShakerDriver,
    ),
    "board": (
        {"driver": "board-ref", "port": "/dev/ttyRS485", "address": 3, "layout": "sicbo"},
        BoardDriver,
    ),
    "lamps": (
        {"driver": "board-gpio", "pins": [5, 6, 13, 19], "layout": "fantan"},
        GpioBoardDriver,
    ),
    "sign": (
        {"driver": "sign-ref", "port": "loop://", "currency": "HKD", "label": "JACKPOT"},
        SignDriver,
    ),
}


def test_every_reflink_driver_validates_and_builds() -> None:
    errors: list[str] = []
    devices = validate_devices({k: v for k, (v, _) in SECTIONS.items()}, "devices", errors)
    assert errors == []
    for name, (_, cls) in SECTIONS.items():
        drv = create_driver(name, devices[name], pin_factory=MockFactory())
        assert isinstance(drv, cls)
        assert drv.name == name


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ({"driver": "shoe-ref"}, "devices.x.port: required"),
        ({"driver": "shoe-ref", "port": "p", "decks": 13}, "devices.x.decks"),
        (
            {"driver": "shoe-ref", "port": "p", "baud_rate": 9600},
            "devices.x.baud_rate: unknown key",
        ),
        ({"driver": "shoe-ref-usb", "usb": "usb:zz:01"}, "devices.x.usb"),
        ({"driver": "shaker-ref", "port": "p", "dice": 5}, "devices.x.dice"),
        ({"driver": "board-ref", "port": "p", "layout": " "}, "devices.x.layout"),
        (
            {"driver": "board-ref", "port": "p", "layout": "sicbo", "lamps": {"a": -1}},
            "devices.x.lamps",
        ),
        (
            {"driver": "board-ref", "port": "p", "layout": "sicbo", "address": 255},
            "devices.x.address",
        ),
        ({"driver": "sign-ref", "port": "p", "currency": "mop"}, "devices.x.currency"),
    ],
)
def test_bad_sections_name_the_key(section: dict[str, object], fragment: str) -> None:
    errors: list[str] = []
    validate_devices({"x": section}, "devices", errors)
    assert any(fragment in e for e in errors), errors
    with pytest.raises(ConfigInvalid):
        create_driver("x", section)


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ({"driver": "board-ref", "port": "p", "layout": "craps"}, "devices.x.layout"),
        (
            {"driver": "board-ref", "port": "p", "layout": "sicbo", "lamps": {"no-such-area": 1}},
            "devices.x.lamps",
        ),
    ],
)
def test_a_board_the_game_cannot_use_is_refused_naming_the_key(
    section: dict[str, object], fragment: str
) -> None:
    """A board's layout and its lamp map's areas are the game's (``Game.display.board``):
    the table refuses them (``tablectl check-config``, the daemon's start), naming the key."""
    table = {"id": "t", "game": "sicbo", "result_source": "manual"}
    cfg = validate_document({"table": table, "devices": {"x": section}})
    problems = assembly_problems(cfg)
    assert any(p.startswith(fragment) for p in problems), problems


def test_two_devices_cannot_share_a_gpio_pin() -> None:
    errors: list[str] = []
    validate_devices(
        {
            "shaker": {"driver": "shaker-ref", "port": "p", "bell_pin": 5},
            "lamps": {"driver": "board-gpio", "pins": [5, 6], "layout": "fantan"},
        },
        "devices",
        errors,
    )
    assert any("GPIO5" in e for e in errors), errors
