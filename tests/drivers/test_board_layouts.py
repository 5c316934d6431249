"""Which areas a lit board shows as winning (display only; settlement is the rules core's).

Expected sets are written out by hand from the articles.
"""

from __future__ import annotations

import itertools

import pytest

from drivers.board.layouts import (
    LAYOUTS,
    LayoutError,
    RoadEntry,
    bitmap,
    fpc_areas,
    from_bitmap,
    lamp_map,
    sicbo_areas,
)

SICBO = {
    # 57/2004 art. 7: a triple takes small and big; no total area for 3 (art. 5 6): 4..17)
    (1, 1, 1): {"odd", "single-1", "double-1", "triple-1", "any-triple"},
    (6, 6, 6): {"even", "single-6", "double-6", "triple-6", "any-triple"},
    # art. 5 1), 3), 6), 9), 11), 12)
    (2, 2, 5): {
        "small",
        "odd",
        "single-2",
        "single-5",
        "double-2",
        "total-9",
        "combo-2-5",
        "pair-single-2-5",
    },
    # art. 5 10) three dice specified, 13) four numbers (three of the four shown)
    (1, 2, 3): {
        "small",
        "even",
        "single-1",
        "single-2",
        "single-3",
        "total-6",
        "combo-1-2",
        "combo-1-3",
        "combo-2-3",
        "three-1-2-3",
        "four-1-2-3-4",
        "four-1-2-3-5",
        "four-1-2-3-6",
    },
    (4, 6, 5): {
        "big",
        "odd",
        "single-4",
        "single-5",
        "single-6",
        "total-15",
        "combo-4-5",
        "combo-4-6",
        "combo-5-6",
        "three-4-5-6",
        "four-1-4-5-6",
        "four-2-4-5-6",
        "four-3-4-5-6",
    },
}


@pytest.mark.parametrize(("dice", "want"), SICBO.items())
def test_sicbo_winning_areas_57_2004_art_5_and_7(
    dice: tuple[int, int, int], want: set[str]
) -> None:
    assert set(sicbo_areas(dice)) == want


FPC = {
    # 59/2004 art. 1: 1 fish red, 2 prawn green, 3 gourd blue, 4 coin blue, 5 crab green, 6 rooster red
    # art. 7: three alike take small and big
    (1, 1, 1): {"fish", "three-red", "any-three-colour", "triple-fish", "any-triple"},
    # art. 5 4), 5): exactly one / exactly two of the colour
    (3, 4, 2): {"small", "prawn", "gourd", "coin", "one-green", "two-blue", "total-9"},
    (1, 6, 5): {"big", "fish", "crab", "rooster", "two-red", "one-green", "total-12"},
    # art. 5 7): three of one colour without three alike
    (3, 4, 4): {"big", "gourd", "coin", "three-blue", "any-three-colour", "total-11"},
}


@pytest.mark.parametrize(("dice", "want"), FPC.items())
def test_fish_prawn_crab_winning_areas_59_2004_art_5_and_7(
    dice: tuple[int, int, int], want: set[str]
) -> None:
    assert set(fpc_areas(dice)) == want


@pytest.mark.parametrize("dice", list(itertools.product(range(1, 7), repeat=3)))
def test_every_throw_lights_known_areas_and_one_of_small_big_unless_a_triple(
    dice: tuple[int, int, int],
) -> None:
    for areas, layout in ((sicbo_areas(dice), "sicbo"), (fpc_areas(dice), "fish-prawn-crab")):
        assert set(areas) <= set(LAYOUTS[layout])
        assert len(areas) == len(set(areas))
        triple = len(set(dice)) == 1
        assert ("small" in areas) + ("big" in areas) == (0 if triple else 1)
        if not triple:
            assert ("small" in areas) == (sum(dice) <= 10)


def test_bad_dice_and_unknown_layouts_are_refused() -> None:
    for bad in [(0, 1, 2), (1, 2), (1, 2, 7), (1, 2, True)]:
        with pytest.raises(LayoutError):
            sicbo_areas(bad)
    with pytest.raises(LayoutError):
        lamp_map("craps")
    with pytest.raises(LayoutError):
        lamp_map("fantan", {"5": 0})


def test_default_lamp_maps_number_the_areas_in_order() -> None:
    m = lamp_map("sicbo")
    assert m["small"] == 0 and m["big"] == 1 and m["odd"] == 2 and m["even"] == 3
    assert lamp_map("roulette")["17"] == 17
    assert sorted(m.values()) == list(range(len(m)))


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
