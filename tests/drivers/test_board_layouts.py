"""A board's lamps: the lamp map of a board's areas, lamp bitmaps, the baccarat road's
entries. Which areas a result lights is the game's (``tests/games/test_describe.py``)."""

from __future__ import annotations

import pytest

from drivers.board.layouts import LayoutError, RoadEntry, bitmap, from_bitmap, lamp_map


def test_unknown_areas_in_a_lamp_map_are_refused() -> None:
    with pytest.raises(LayoutError):
        lamp_map(("1", "2", "3", "4"), {"5": 0})
    assert lamp_map(("1", "2"), {"2": 7}) == {"2": 7}  # a board maps its own lamps


def test_default_lamp_maps_number_the_areas_in_order() -> None:
    m = lamp_map(("small", "big", "odd", "even"))
    assert m == {"small": 0, "big": 1, "odd": 2, "even": 3}
    assert lamp_map(()) == {}


def test_bitmap_layout_and_round_trip() -> None:
    assert bitmap([0, 9]) == bytes([0b00000001, 0b00000010])
    assert bitmap([]) == b""
    assert from_bitmap(bitmap([3, 8, 100])) == [3, 8, 100]


def test_road_entries() -> None:
    assert RoadEntry.parse("Tbp").to_byte() == 0x33
    assert RoadEntry.parse("B").to_byte() == 0x01
    assert RoadEntry.parse("Pp").to_byte() == 0x22
    assert str(RoadEntry.from_byte(0x13)) == "Tb"
    for bad in ["", "X", "Bx"]:
        with pytest.raises(LayoutError):
            RoadEntry.parse(bad)
    for b in (0x00, 0x04, 0x41):
        with pytest.raises(LayoutError):
            RoadEntry.from_byte(b)
