"""The stud poker progressive jackpot, 61/2004 art. 10 and 11: eligibility,
contributions, fixed sums and shares of the pool, order of payment, reset to the
seed, and jackpot bets carried over a void game."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.config import ConfigInvalid, validate_document
from firmware_host.games import jackpot as jp
from firmware_host.games.errors import ConfigError

PARAMS = jp.JackpotParams(
    stake=100,
    contribution_rate=Fraction(1, 2),
    seed=100_000,
    royal_flush_fixed=50_000,
    straight_flush_fixed=5_000,
    four_of_a_kind_fixed=2_500,
    full_house_fixed=1_000,
    flush_fixed=500,
)


def state(pool: int, params: jp.JackpotParams = PARAMS) -> jp.JackpotState:
    return jp.JackpotState(params, pool)


def bets(*seats: int, stake: int = 100) -> list[jp.JackpotBet]:
    return [jp.JackpotBet(s, stake, f"j{s}") for s in seats]


def paid(r: jp.JackpotRound) -> list[tuple[int, str, int]]:
    return [(p.seat, p.hand, p.prize) for p in r.payments]


def test_contributions_are_exact_and_carried_to_the_next_round_art_10() -> None:
    params = jp.JackpotParams(**{**_fields(PARAMS), "contribution_rate": Fraction(1, 3)})
    s = state(1_000, params)
    total_credited = 0
    for _ in range(3):
        r = jp.settle_round(s, bets(1), {})
        total_credited += r.credited
        s = r.state
    # 3 x 100 / 3 = 100 exactly, credited 33 + 33 + 34: nothing lost, nothing invented
    assert total_credited == 100 and s.residue == 0 and s.pool == 1_100


def _fields(p: jp.JackpotParams) -> dict:
    return {f: getattr(p, f) for f in p.__dataclass_fields__}


def test_royal_flush_takes_the_whole_pool_or_the_fixed_sum_whichever_is_larger_art_10_2_1() -> None:
    r = jp.settle_round(state(200_000), bets(1), {1: "royal_flush"})
    assert paid(r) == [(1, "royal_flush", 200_050)]  # the pool with this round's contribution
    # art. 10 8): nothing left: the pool restarts from the seed
    assert r.state.pool == PARAMS.seed and r.seeded == PARAMS.seed
    small = jp.JackpotParams(**{**_fields(PARAMS), "seed": 10_000})
    r = jp.settle_round(state(20_000, small), bets(1), {1: "royal_flush"})
    assert paid(r) == [(1, "royal_flush", 50_000)]  # the fixed sum is larger
    p = r.payments[0]
    assert (p.from_pool, p.house_funded, p.basis) == (20_050, 29_950, "fixed")


def test_straight_flush_takes_a_tenth_of_the_pool_or_the_fixed_sum_art_10_2_2() -> None:
    r = jp.settle_round(state(200_000), bets(2), {2: "straight_flush"})
    assert paid(r) == [(2, "straight_flush", 20_005)]  # 10% of 200,050
    assert r.state.pool == 200_050 - 20_005
    r = jp.settle_round(state(30_000), bets(2), {2: "straight_flush"})
    assert paid(r) == [(2, "straight_flush", 5_000)]  # fixed 5,000 > 3,005


@pytest.mark.parametrize(
    ("hand", "amount"),
    [("four_of_a_kind", 2_500), ("full_house", 1_000), ("flush", 500)],  # art. 10 2) (3)-(5)
)
def test_fixed_sums_art_10_2_3_to_5(hand: str, amount: int) -> None:
    r = jp.settle_round(state(200_000), bets(3), {3: hand})
    assert paid(r) == [(3, hand, amount)]
    assert r.state.pool == 200_050 - amount  # art. 10 8): the pool is reduced by the payment


def test_other_hands_win_nothing_and_only_bettors_are_paid_art_10_1() -> None:
    r = jp.settle_round(state(200_000), bets(1), {1: "straight", 2: "flush"})
    assert r.payments == ()
    assert r.state.pool == 200_050


def test_hands_are_paid_left_to_right_from_the_croupiers_left_art_10_4() -> None:
    r = jp.settle_round(
        state(200_000), bets(1, 4, 6), {6: "flush", 1: "full_house", 4: "straight_flush"}
    )
    assert [p.seat for p in r.payments] == [1, 4, 6]
    # each payment sees the pool the previous one left (art. 10 8))
    assert r.payments[1].pool_before == r.payments[0].pool_after
    assert r.payments[1].prize == (200_150 - 1_000) // 10


def test_several_royal_flushes_share_the_prize_art_10_5() -> None:
    r = jp.settle_round(
        state(200_000), bets(2, 5, 7), {2: "royal_flush", 5: "royal_flush", 7: "royal_flush"}
    )
    prizes = [p.prize for p in r.payments]
    assert sum(prizes) == 200_150  # the whole pool (larger than the fixed sum), shared
    assert prizes == [66_718, 66_716, 66_716]  # odd units to the first from the left
    assert all(p.shared_by == 3 for p in r.payments)
    assert r.state.pool == PARAMS.seed


def test_several_straight_flushes_each_take_a_tenth_art_10_6() -> None:
    r = jp.settle_round(state(1_000_000), bets(1, 2), {1: "straight_flush", 2: "straight_flush"})
    first, second = r.payments
    assert first.prize == 1_000_100 // 10
    assert second.prize == (1_000_100 - first.prize) // 10  # of the pool as it then stands


def test_straight_flushes_are_paid_before_a_royal_flush_art_10_7() -> None:
    r = jp.settle_round(
        state(1_000_000), bets(1, 3, 5), {1: "royal_flush", 3: "flush", 5: "straight_flush"}
    )
    assert [(p.seat, p.hand) for p in r.payments] == [
        (5, "straight_flush"),
        (1, "royal_flush"),
        (3, "flush"),
    ]
    assert r.payments[0].prize == 1_000_150 // 10
    assert r.payments[1].prize == 1_000_150 - r.payments[0].prize  # the royal takes the rest


def test_pool_restarts_from_the_seed_only_when_exhausted_art_10_8() -> None:
    # the letter of art. 10 8): a partial payment may leave less than the seed
    r = jp.settle_round(state(100_000), bets(1), {1: "four_of_a_kind"})
    assert r.state.pool == 100_050 - 2_500 and r.seeded == 0
    # house option: top the pool up to the seed whenever a payment leaves less
    below = jp.JackpotParams(**{**_fields(PARAMS), "reset_rule": "below_seed"})
    r = jp.settle_round(state(100_000, below), bets(1), {1: "four_of_a_kind"})
    assert r.state.pool == PARAMS.seed and r.seeded == 2_500 - 50


def test_a_payment_larger_than_the_pool_empties_it_and_restarts_art_10_8() -> None:
    r = jp.settle_round(state(400), bets(1), {1: "full_house"})
    p = r.payments[0]
    # the pool (400 + 50 contributed) pays what it holds; the house pays the rest
    assert (p.prize, p.from_pool, p.house_funded) == (1_000, 450, 550)
    assert (p.pool_after, p.seeded, r.state.pool) == (PARAMS.seed, PARAMS.seed, PARAMS.seed)


def test_void_game_carries_the_jackpot_bets_to_the_next_game_art_11_1_and_4() -> None:
    s = jp.void_round(state(200_000), bets(2, 5))
    assert s.pool == 200_000  # nothing credited for a void game
    assert [b.seat for b in s.carried] == [2, 5]
    # next game: only place 2 is dealt; its carried bet plays, place 5's waits
    playing, still = jp.round_bets(s, [], seats_dealt=[2, 3])
    assert [b.seat for b in playing] == [2] and [b.seat for b in still] == [5]
    r = jp.settle_round(s, playing, {2: "flush"})
    assert paid(r) == [(2, "flush", 500)]
    assert [b.seat for b in r.state.carried] == [5]
    with pytest.raises(jp.JackpotError) as exc:
        jp.round_bets(s, bets(2), seats_dealt=[2])
    assert exc.value.code == "JACKPOT_ALREADY_CARRIED"
    s2, refunded = jp.release_carried(r.state, 5)
    assert s2.carried == () and [b.seat for b in refunded] == [5]


def test_wrong_stake_and_duplicates_are_refused() -> None:
    with pytest.raises(jp.JackpotError) as exc:
        jp.settle_round(state(1), bets(1, stake=99), {})
    assert exc.value.code == "JACKPOT_STAKE"
    with pytest.raises(jp.JackpotError) as exc:
        jp.settle_round(state(1), bets(1) + bets(1), {})
    assert exc.value.code == "JACKPOT_DUPLICATE"


def test_reserved_fields_keep_neutral_values() -> None:
    with pytest.raises(jp.JackpotError) as exc:
        jp.JackpotState(PARAMS, 1, meter_max=10)
    assert exc.value.code == "JACKPOT_RESERVED"
    assert state(5).to_json()["meter_max"] is None


def test_params_are_checked() -> None:
    with pytest.raises(ConfigError):
        jp.JackpotParams(**{**_fields(PARAMS), "flush_fixed": 50})  # below the stake
    with pytest.raises(ConfigError):
        jp.JackpotParams(**{**_fields(PARAMS), "contribution_rate": Fraction(3, 2)})
    with pytest.raises(ConfigInvalid) as ci:
        validate_document(
            {
                "version": 1,
                "table": {"id": "s", "game": "stud-poker"},
                "pay_table": {"stud-poker": {"jackpot_stake": 100_000}},
            }
        )
    assert "below the jackpot stake" in str(ci.value)
    with pytest.raises(ConfigInvalid) as ci:
        validate_document(
            {
                "version": 1,
                "table": {"id": "s", "game": "stud-poker"},
                "pay_table": {"stud-poker": {"jackpot_contribution_rate": 0.5}},
            }
        )
    assert "floats are refused" in str(ci.value)


# -- properties ---------------------------------------------------------------------------

hand_st = st.sampled_from([*jp.JACKPOT_HANDS, "straight", "one_pair", None])
params_st = st.builds(
    jp.JackpotParams,
    stake=st.just(100),
    contribution_rate=st.fractions(0, 1, max_denominator=1000),
    seed=st.integers(0, 100_000),
    royal_flush_fixed=st.integers(100, 200_000),
    straight_flush_fixed=st.integers(100, 20_000),
    four_of_a_kind_fixed=st.integers(100, 5_000),
    full_house_fixed=st.integers(100, 2_000),
    flush_fixed=st.integers(100, 1_000),
    reset_rule=st.sampled_from(jp.RESET_RULES),
)
round_st = st.tuples(
    st.dictionaries(st.integers(1, 7), hand_st, max_size=7),
    st.sets(st.integers(1, 7), max_size=7),
    st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(params_st, st.integers(0, 1_000_000), st.lists(round_st, max_size=12))
def test_pool_accounting_invariants(params, pool, rounds) -> None:
    """Pool after = pool before + contributions - payments from the pool + seed added;
    never negative; never below the seed right after a reset (art. 10 8))."""
    s = jp.JackpotState(params, pool)
    for hands, seats, void in rounds:
        new = bets(*sorted(seats))
        if void:
            s = jp.void_round(
                s,
                [
                    b
                    for b in new
                    if b not in s.carried and b.seat not in {c.seat for c in s.carried}
                ],
            )
            continue
        new = [b for b in new if b.seat not in {c.seat for c in s.carried}]
        playing, _ = jp.round_bets(s, new, seats_dealt=range(1, 8))
        r = jp.settle_round(s, playing, hands)
        paid_from_pool = sum(p.from_pool for p in r.payments)
        assert r.state.pool == r.pool_before + r.credited - paid_from_pool + r.seeded
        assert r.state.pool >= 0
        for i, p in enumerate(r.payments):
            assert p.prize == p.from_pool + p.house_funded and p.house_funded >= 0
            assert p.pool_after >= 0
            # art. 10 8): the restart comes once, after the game's last prize
            assert p.seeded == 0 or i == len(r.payments) - 1
            assert p.pool_after == p.pool_before - p.from_pool + p.seeded
            if i:
                assert p.pool_before == r.payments[i - 1].pool_after
            if p.seeded:
                assert p.pool_after >= params.seed
            if p.hand == "straight_flush":  # art. 10 2) (2): 10% of the pool as it stands
                assert p.prize == max(p.pool_before // 10, params.straight_flush_fixed)
            if p.hand in ("four_of_a_kind", "full_house", "flush"):
                assert p.prize == params.fixed(p.hand)
            else:
                assert p.prize >= params.fixed(p.hand) or p.shared_by > 1
        assert len(r.payments) == sum(
            1
            for seat, h in hands.items()
            if h in jp.JACKPOT_HANDS and seat in {b.seat for b in playing}
        )
        # exactness: what was credited plus the residue is every contribution
        assert r.credited + r.state.residue == s.residue + params.contribution_rate * 100 * len(
            playing
        )
        s = r.state


@settings(max_examples=100, deadline=None)
@given(
    params_st,
    st.integers(0, 10**9),
    st.fractions(0, 1, max_denominator=997).filter(lambda f: f < 1),
    st.lists(st.integers(1, 7), unique=True, max_size=7),
    st.integers(0, 10**4),
)
def test_state_round_trips_through_json(params, pool, residue, seats, hits) -> None:
    s = jp.JackpotState(params, pool, residue, tuple(bets(*seats)), hits)
    assert jp.JackpotState.from_json(s.to_json()) == s


# -- several prizes in one game: order of art. 10 4)-7), one restart of art. 10 8) -----------
# The audit's table: the defaults of [pay_table.stud-poker] (seed and royal fixed sum
# 10,000,000, straight flush 500,000, flush 50,000; stake 1,000, half to the pool).

AUDIT = jp.JackpotParams(
    stake=1_000,
    contribution_rate=Fraction(1, 2),
    seed=10_000_000,
    royal_flush_fixed=10_000_000,
    straight_flush_fixed=500_000,
    four_of_a_kind_fixed=100_000,
    full_house_fixed=75_000,
    flush_fixed=50_000,
)


def game(pool: int, hands: dict[int, str], params: jp.JackpotParams = AUDIT) -> jp.JackpotRound:
    return jp.settle_round(state(pool, params), bets(*hands, stake=params.stake), hands)


def test_two_royals_on_a_pool_below_the_fixed_sum_art_10_5_and_8() -> None:
    # Art. 10 5): they share the larger of the pool and the fixed sum: 10,000,000 / 2.
    # Art. 10 8): once paid, the emptied pool restarts at the minimum, 10,000,000 (it
    # once ended at 5,000,000: the second share was taken out of the fresh seed).
    r = game(0, {2: "royal_flush", 6: "royal_flush"})
    pool = 0 + 2 * 500  # this game's contributions
    assert paid(r) == [(2, "royal_flush", 5_000_000), (6, "royal_flush", 5_000_000)]
    assert sum(p.from_pool for p in r.payments) == pool
    assert sum(p.house_funded for p in r.payments) == 10_000_000 - pool
    assert r.state.pool == 10_000_000 and r.seeded == 10_000_000
    assert [p.seeded for p in r.payments] == [0, 10_000_000]


def test_two_royals_on_a_pool_above_the_fixed_sum_art_10_5_and_8() -> None:
    r = game(30_000_000, {2: "royal_flush", 6: "royal_flush"})
    pool = 30_000_000 + 1_000
    assert paid(r) == [(2, "royal_flush", pool // 2), (6, "royal_flush", pool // 2)]
    assert sum(p.house_funded for p in r.payments) == 0
    assert r.state.pool == 10_000_000


def test_a_royal_and_a_straight_flush_pool_above_the_fixed_sums_art_10_7() -> None:
    # Art. 10 7): the straight flush first, 10% of the pool; the royal then takes the rest.
    r = game(30_000_000, {1: "royal_flush", 4: "straight_flush"})
    pool = 30_000_000 + 1_000
    sf = pool // 10
    assert paid(r) == [(4, "straight_flush", sf), (1, "royal_flush", pool - sf)]
    assert r.state.pool == 10_000_000


def test_a_royal_and_a_straight_flush_pool_below_the_fixed_sums_art_10_7() -> None:
    r = game(2_000_000, {1: "royal_flush", 4: "straight_flush"})
    pool = 2_000_000 + 1_000
    # 10% is 200,100 < 500,000: the fixed sum; the royal's 10,000,000 beats what is left
    assert paid(r) == [(4, "straight_flush", 500_000), (1, "royal_flush", 10_000_000)]
    royal = r.payments[1]
    assert (royal.from_pool, royal.house_funded) == (pool - 500_000, 10_000_000 - pool + 500_000)
    assert r.state.pool == 10_000_000


def test_several_straight_flushes_pool_above_the_fixed_sum_art_10_6() -> None:
    # Art. 10 6): each 10% of the pool or the fixed sum; paid left to right (art. 10 4)),
    # each from the pool the one before left (docs/rules/stud-poker.md).
    r = game(30_000_000, {2: "straight_flush", 5: "straight_flush"})
    pool = 30_000_000 + 1_000
    first = pool // 10
    second = (pool - first) // 10
    assert paid(r) == [(2, "straight_flush", first), (5, "straight_flush", second)]
    assert r.state.pool == pool - first - second and r.seeded == 0


def test_several_straight_flushes_pool_below_the_fixed_sum_art_10_6() -> None:
    r = game(2_000_000, {2: "straight_flush", 5: "straight_flush"})
    pool = 2_000_000 + 1_000
    assert paid(r) == [(2, "straight_flush", 500_000), (5, "straight_flush", 500_000)]
    assert r.state.pool == pool - 1_000_000 and r.seeded == 0


def test_a_straight_flush_after_the_pool_is_emptied_gets_its_fixed_sum_art_10_2_2_and_8() -> None:
    # Four of a kind at place 1 empties a pool of 50,000; the straight flush at place 3
    # then takes the larger of 10% of what is left (nothing) and 500,000, not 10% of a
    # seed put back in the middle of the game (once 1,000,000: an overpayment).
    r = game(50_000, {1: "four_of_a_kind", 3: "straight_flush"})
    assert paid(r) == [(1, "four_of_a_kind", 100_000), (3, "straight_flush", 500_000)]
    assert r.payments[1].from_pool == 0 and r.payments[1].house_funded == 500_000
    assert r.state.pool == 10_000_000


def test_a_flush_after_a_royal_is_paid_before_the_restart_art_10_8() -> None:
    # The royal takes the pool; the flush's 50,000 is the house's; then the restart: the
    # pool stands at the minimum, not 50,000 below it (once 9,950,000).
    r = game(20_000_000, {1: "royal_flush", 5: "flush"})
    assert paid(r) == [(1, "royal_flush", 20_001_000), (5, "flush", 50_000)]
    assert r.payments[1].house_funded == 50_000
    assert r.state.pool == 10_000_000


def test_below_seed_tops_up_once_after_the_game_art_10_8() -> None:
    below = jp.JackpotParams(**{**_fields(AUDIT), "reset_rule": "below_seed"})
    r = game(10_100_000, {1: "straight_flush", 2: "flush"}, below)
    pool = 10_100_000 + 1_000
    sf = pool // 10
    assert paid(r) == [(1, "straight_flush", sf), (2, "flush", 50_000)]
    assert r.state.pool == 10_000_000 and r.seeded == 10_000_000 - (pool - sf - 50_000)
