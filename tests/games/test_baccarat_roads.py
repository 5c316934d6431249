"""Baccarat scoreboard roads (issue 16 item 2).

55/2004 says nothing of scoreboards; the roads follow the conventions published for
casino scoreboards, cited here where each is checked:

- [WOO] Wizard of Odds, "Baccarat Score Boards" (wizardofodds.com/games/baccarat/
  appendix/1/, drawn from the Venetian's signs): the bead plate starts in the upper
  left corner and goes down the column to the bottom row, then back to the top one
  column right; on the big road a tie is a green line through the previous player or
  banker win, pairs are dots.
- [QIU] "Baccarat Scoreboards" (138qiu.com/statistics/roads-of-baccarat/): the big
  road is six rows deep; a change of winner starts a new column; a streak of seven or
  more extends horizontally (the dragon tail).
- [SIK] "Baccarat game rules: five road rules" (sikwin.in/sikwin-casino-baccarat-game-
  rules-five-road-rules/): the pearl road has 6 rows; the big eye boy's reference
  point starts at the second row of the second column of the big road, or, if there is
  no outcome there, at the third column's first row; the small road at the second row
  of the third column; "even" (same lengths) and the "straight drop" are red.

None of these pages prints a shoe's coups with all five roads as text, so the worked
shoes below were read by hand with those rules (each step written out), never taken
from the code under test; the property tests check the same rules on random shoes
with an independent formulation (occupied cells, not column lengths).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.games.roads import (
    DERIVED,
    ROWS,
    Coup,
    bead_plate,
    grid,
    roads,
)


def shoe(text: str) -> list[Coup]:
    return [Coup.parse(t) for t in text.split()]


def cells(marks: object) -> list[tuple[int, int, str]]:
    return [(m.x, m.y, getattr(m, "colour", None) or m.winner) for m in marks]  # type: ignore[attr-defined]


R, B = "red", "blue"


# -- worked shoes -----------------------------------------------------------------------
def test_a_worked_shoe_big_road_and_the_three_derived_roads() -> None:
    # Coups: B B P P P B P B B B. Big road columns (by hand): B B | P P P | B | P | B B B.
    r = roads(shoe("B B P P P B P B B B"))
    assert [(c.winner, c.col, c.row) for c in r.big_road] == [
        ("B", 0, 0), ("B", 0, 1),
        ("P", 1, 0), ("P", 1, 1), ("P", 1, 2),
        ("B", 2, 0), ("P", 3, 0),
        ("B", 4, 0), ("B", 4, 1), ("B", 4, 2),
    ]  # fmt: skip
    # Big eye boy [SIK]: starts at column 2 row 2 (the 4th coup, P at col 1 row 1).
    #  P(1,1): column 0 has a mark in row 1 -> red
    #  P(1,2): column 0 has none in row 2 but one in row 1 -> blue
    #  B(2,0): new column: columns 1 (3) and 0 (2) differ -> blue
    #  P(3,0): columns 2 (1) and 1 (3) differ -> blue
    #  B(4,0): columns 3 (1) and 2 (1) equal -> red
    #  B(4,1): column 3 has nothing in row 1, a mark in row 0 -> blue
    #  B(4,2): column 3 has nothing in rows 2 and 1 (straight drop) -> red
    assert [m.colour for m in r.big_eye_boy] == [R, B, B, B, R, B, R]
    # Small road: starts at column 3 row 2 [SIK]; column 2 has one mark, so the first
    # mark of column 4 (P at col 3): columns 2 (1) and 0 (2) differ -> blue;
    #  B(4,0): columns 3 (1) and 1 (3) differ -> blue; B(4,1): column 2 has no row 1
    #  but a row 0 -> blue; B(4,2): column 2 has neither row 2 nor 1 -> red
    assert [m.colour for m in r.small_road] == [B, B, B, R]
    # Cockroach pig: column 3 has one mark -> first mark of column 5 (B at col 4):
    #  columns 3 (1) and 0 (2) differ -> blue; B(4,1): column 1 has row 1 -> red;
    #  B(4,2): column 1 has row 2 -> red
    assert [m.colour for m in r.cockroach_pig] == [B, R, R]
    # Drawn: a colour change starts a new column, like the big road.
    assert cells(r.big_eye_boy) == [
        (0, 0, R), (1, 0, B), (1, 1, B), (1, 2, B), (2, 0, R), (3, 0, B), (4, 0, R),
    ]  # fmt: skip
    assert cells(r.cockroach_pig) == [(0, 0, B), (1, 0, R), (1, 1, R)]


def test_the_big_eye_boy_starts_at_the_third_column_when_the_second_has_one_mark() -> None:
    # [SIK]: no outcome in the second column's second row -> the third column's first row.
    # B B | P | B: the first mark is for B at column 2: columns 1 (1) and 0 (2) differ.
    r = roads(shoe("B B P B"))
    assert [m.colour for m in r.big_eye_boy] == [B]
    assert r.small_road == () and r.cockroach_pig == ()
    # B | P | B | P (a chop): each new column compares two columns of one mark -> red.
    assert [m.colour for m in roads(shoe("B P B P")).big_eye_boy] == [R, R]


def test_a_tie_is_marked_on_the_last_cell_and_changes_no_column() -> None:
    # [WOO]: a tie is a line through the previous player or banker win.
    r = roads(shoe("T B T T P Tb P"))
    assert r.leading_ties == 1  # before any win: drawn on the first cell
    assert [(c.winner, c.ties) for c in r.big_road] == [("B", 2), ("P", 1), ("P", 0)]
    assert [(c.col, c.row) for c in r.big_road] == [(0, 0), (1, 0), (1, 1)]
    # the bead plate keeps every coup, ties and their pairs included
    assert [str(c.coup) for c in r.bead_plate] == ["T", "B", "T", "T", "P", "Tb", "P"]
    assert r.counts() == {
        "coups": 7, "banker": 1, "player": 2, "tie": 4, "banker_pair": 1, "player_pair": 0,
    }  # fmt: skip


def test_the_bead_plate_goes_down_six_then_right() -> None:
    # [WOO], [SIK]: top to bottom, six rows, then the next column.
    plate = bead_plate(shoe("B P T B P T B P"))
    assert [(c.x, c.y) for c in plate] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 0), (1, 1),
    ]  # fmt: skip


def test_the_dragon_tail_turns_right_at_the_bottom_and_under_a_tail() -> None:
    # [QIU]: seven or more in a row extend horizontally along the bottom row.
    r = roads(shoe("B B B B B B B B P P P P P P P"))
    where = [(c.winner, c.x, c.y) for c in r.big_road]
    assert where[:8] == [("B", 0, y) for y in range(6)] + [("B", 1, 5), ("B", 2, 5)]
    # The player column starts right of the banker column; its 6th cell would be
    # (1, 5), taken by the banker's tail: it turns right one row higher.
    assert where[8:] == [("P", 1, y) for y in range(5)] + [("P", 2, 4), ("P", 3, 4)]
    # logical rows keep counting past the sixth (the derived roads read those)
    assert [c.row for c in r.big_road[:8]] == list(range(8))


def test_predictions_are_the_mark_the_next_coup_would_add() -> None:
    # B B P P P B P B B B (the worked shoe): next B goes to column 4 row 3, column 3
    # (one mark) has neither row 3 nor 2 -> red on the big eye boy; column 2 (one mark)
    # -> red on the small road; column 1 (three marks) has no row 3 but a row 2 ->
    # blue on the cockroach pig. Next P starts column 5: columns 4 (3) and 3 (1) differ
    # -> blue; 4 (3) and 2 (1) -> blue; 4 (3) and 1 (3) -> red.
    r = roads(shoe("B B P P P B P B B B"))
    assert r.predictions == {
        "B": {"big_eye_boy": R, "small_road": R, "cockroach_pig": B},
        "P": {"big_eye_boy": B, "small_road": B, "cockroach_pig": R},
    }
    # Before a road starts it predicts nothing.
    assert roads(shoe("B")).predictions["B"] == {
        "big_eye_boy": None,
        "small_road": None,
        "cockroach_pig": None,
    }


def test_a_new_shoe_starts_every_road_empty() -> None:
    r = roads([])
    assert (r.bead_plate, r.big_road, r.big_eye_boy, r.leading_ties) == ((), (), (), 0)


def test_grid_renders_a_road_as_text_rows() -> None:
    r = roads(shoe("B B P"))
    g = grid([(c.x, c.y, c.winner) for c in r.big_road])
    assert len(g) == ROWS
    assert g[0] == ["B", "P"] and g[1] == ["B", None] and g[2] == [None, None]


def test_a_published_outcome_is_read_as_a_coup() -> None:
    c = Coup.from_outcome({"winner": "tie", "banker_pair": True, "player_pair": False})
    assert str(c) == "Tb"


# -- properties -------------------------------------------------------------------------
coups = st.lists(
    st.builds(
        Coup,
        st.sampled_from(["B", "B", "B", "P", "P", "P", "T"]),
        st.booleans(),
        st.booleans(),
    ),
    max_size=90,
)


def expected_colours(cols: list[int], k: int) -> list[str]:
    """Derived road ``k`` from occupied logical cells (an independent formulation of the
    published rules, not the lengths the code compares)."""
    occupied = {(c, r) for c, n in enumerate(cols) for r in range(n)}
    out = []
    for c, n in enumerate(cols):
        for r in range(n):
            if r == 0:
                if c >= k + 1:
                    a = sum((c - 1, i) in occupied for i in range(91))
                    b = sum((c - 1 - k, i) in occupied for i in range(91))
                    out.append(R if a == b else B)
            elif c >= k:
                here, above = (c - k, r) in occupied, (c - k, r - 1) in occupied
                out.append(R if here or not above else B)
    return out


@settings(max_examples=300, deadline=None)
@given(coups)
def test_roads_properties(shoe_coups: list[Coup]) -> None:
    r = roads(shoe_coups)
    wins = [c for c in shoe_coups if c.winner != "T"]
    # the bead plate has every coup, six rows, in order
    assert [c.coup for c in r.bead_plate] == shoe_coups
    assert all(c.y < ROWS and c.x * ROWS + c.y == c.index for c in r.bead_plate)
    # the big road has every win once, and every tie once (on a cell or leading)
    assert [c.winner for c in r.big_road] == [c.winner for c in wins]
    assert sum(c.ties for c in r.big_road) + r.leading_ties == len(shoe_coups) - len(wins)
    # columns: one winner each, consecutive rows, a change of winner = a new column
    lengths: list[int] = []
    for prev, cur in zip((None, *r.big_road), r.big_road, strict=False):
        if prev is None or prev.winner != cur.winner:
            assert cur.row == 0 and cur.col == len(lengths)
            lengths.append(1)
        else:
            assert (cur.col, cur.row) == (prev.col, prev.row + 1)
            lengths[-1] += 1
            # down while it can, then right for good (the dragon tail)
            assert (cur.x, cur.y) in ((prev.x, prev.y + 1), (prev.x + 1, prev.y))
            if cur.x == prev.x + 1 and cur.row > 1:
                before = r.big_road[r.big_road.index(cur) - 2]
                assert before.y == prev.y or before.x == prev.x  # never back down
    for road in (r.big_road, *(r.derived(n) for n in DERIVED)):
        spots = [(c.x, c.y) for c in road]
        assert len(set(spots)) == len(spots), "two marks drawn on one cell"
        assert all(0 <= y < ROWS for _, y in spots)
    for name, k in DERIVED.items():
        assert [m.colour for m in r.derived(name)] == expected_colours(lengths, k), name
        # the road starts at column k row 1, or at column k + 1 row 0 [SIK]
        marks = r.derived(name)
        if marks:
            first = [(c.col, c.row) for c in r.big_road][len(r.big_road) - len(marks)]
            assert first == ((k, 1) if lengths[k] >= 2 else (k + 1, 0))
    # a tie changes no derived road
    no_ties = roads(wins)
    for name in DERIVED:
        assert no_ties.derived(name) == r.derived(name)
    # the predictions are what the next banker or player coup adds
    for side in ("B", "P"):
        after = roads([*shoe_coups, Coup(side)])  # type: ignore[arg-type]
        for name in DERIVED:
            grew = len(after.derived(name)) > len(r.derived(name))
            want = after.derived(name)[-1].colour if grew else None
            assert r.predictions[side][name] == want
