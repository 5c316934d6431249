"""The progressive jackpot made durable (issue: daemon item 5; 61/2004 art. 10-11):
meter identity, maximum and overflow, parameters after the next hit, two-step hits,
void deals carrying jackpot bets, restart."""

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_host.config import load_config
from firmware_host.games import jackpot as jp
from firmware_host.journal import Journal
from firmware_host.table.engine import RoundEngine
from firmware_host.table.jackpot import (
    JackpotController,
    Meter,
    adjust_meter,
    apply_meter,
    new_meter,
)

ROOT = Path(__file__).resolve().parents[2]
CFG = load_config(ROOT / "config" / "stud-poker.toml")
PARAMS = CFG.rules.jackpot_params()

ROYAL = ["AS", "KS", "QS", "JS", "TS"]
STRAIGHT_FLUSH = ["9H", "8H", "7H", "6H", "5H"]
NOTHING = ["2C", "5D", "9S", "JH", "3C"]
NOTHING2 = ["3D", "6C", "8S", "TD", "2H"]
DEALER_AK = ["AD", "KC", "7C", "4S", "2S"]


def engine(tmp_path: Path, meter_max: int | None = None) -> RoundEngine:
    return engine_of(Journal(tmp_path / "j.sqlite3"), meter_max)


def engine_of(j: Journal, meter_max: int | None = None) -> RoundEngine:
    return RoundEngine(
        CFG, j, jackpot=JackpotController(j.jackpot, j.db, PARAMS, meter_max=meter_max)
    )


def play(e: RoundEngine, hands: dict[int, list[str]], jackpot_seats: set[int], tag: str) -> dict:
    e.open_betting()
    for seat in hands:
        assert e.desk.place(
            {"bet_id": f"{tag}a{seat}", "seat": seat, "bet_type": "ante", "stake": 10000}
        ).accepted
        if seat in jackpot_seats:
            ans = e.desk.place(
                {"bet_id": f"{tag}j{seat}", "seat": seat, "bet_type": "jackpot", "stake": 2000}
            )
            assert ans.accepted, ans
    e.close_betting()
    for seat in hands:
        e.desk.add_decision(
            {"bet_id": f"{tag}r{seat}", "seat": seat, "bet_type": "raise", "stake": 20000}
        )
    outcome = {
        "dealer": DEALER_AK,
        "seats": {str(s): {"cards": c, "action": "raise"} for s, c in hands.items()},
    }
    return dict(e.submit_result(outcome))


def test_contributions_grow_the_pool_exactly(tmp_path: Path) -> None:
    # 61/2004 art. 10: each jackpot bet contributes the configured rate of its stake.
    e = engine(tmp_path)
    before = e.jackpot.meter.pool
    p = play(e, {1: NOTHING, 2: NOTHING2}, {1, 2}, "r1")
    assert e.jackpot.meter.pool == before + 2 * 2000 * 7 // 10
    assert p["jackpot"]["credited"] == 2800 and p["jackpot"]["hits"] == []
    assert e.jackpot.meter.balanced()


def test_royal_hit_is_recorded_then_paid_in_two_steps(tmp_path: Path) -> None:
    # art. 10 2) (1): a royal flush takes the whole pool (or the fixed sum).
    e = engine(tmp_path)
    pool = e.jackpot.meter.pool
    p = play(e, {3: ROYAL}, {3}, "r1")
    (hit,) = p["jackpot"]["hits"]
    assert hit["hand"] == "royal_flush" and hit["prize"] == max(
        pool + 1400, PARAMS.royal_flush_fixed
    )
    assert [h.hit_id for h in e.jackpot.store.unpaid_hits()] == [hit["hit_id"]]
    assert e.jackpot.meter.pool == PARAMS.seed  # art. 10 8): restarts at the seed
    first = e.jackpot.confirm_payment(hit["hit_id"], who="attendant")
    again = e.jackpot.confirm_payment(hit["hit_id"], who="attendant")
    assert first["already"] is False and again["already"] is True
    assert e.jackpot.store.unpaid_hits() == []
    assert e.jackpot.meter.balanced()


def test_parameters_change_after_the_next_hit(tmp_path: Path) -> None:
    e = engine(tmp_path)
    e.jackpot.set_param("contribution_rate", "1/2", reason="new promotion", who="alice")
    play(e, {1: NOTHING}, {1}, "r1")
    assert e.jackpot.meter.state.params.contribution_rate == PARAMS.contribution_rate  # not yet
    play(e, {1: STRAIGHT_FLUSH}, {1}, "r2")  # a hit
    assert str(e.jackpot.meter.state.params.contribution_rate) == "1/2"
    assert e.jackpot.meter.pending is None
    before = e.jackpot.meter.pool
    play(e, {1: NOTHING}, {1}, "r3")
    assert e.jackpot.meter.pool == before + 1000


def test_maximum_diverts_to_overflow_and_refills_after_a_hit(tmp_path: Path) -> None:
    e = engine(tmp_path, meter_max=PARAMS.seed + 2000)
    for i in range(3):
        play(e, {1: NOTHING, 2: NOTHING2}, {1, 2}, f"r{i}")
    m = e.jackpot.meter
    assert m.pool == PARAMS.seed + 2000 and m.overflow == 3 * 2800 - 2000
    play(e, {1: ROYAL}, {1}, "hit")
    m = e.jackpot.meter
    # The royal takes the whole pool (S + 2000 + this round's 1400); the pool restarts at
    # the seed, the 6400 of overflow flows back, and the maximum caps it again.
    assert m.pool == PARAMS.seed + 2000 and m.overflow == 6400 - 2000
    assert m.balanced()


def test_void_deal_carries_jackpot_bets_to_the_next_game(tmp_path: Path) -> None:
    # 61/2004 art. 11 1), 4): a voided deal's jackpot bets play in the next game.
    e = engine(tmp_path)
    e.open_betting()
    e.desk.place({"bet_id": "a1", "seat": 1, "bet_type": "ante", "stake": 10000})
    e.desk.place({"bet_id": "j1", "seat": 1, "bet_type": "jackpot", "stake": 2000})
    e.close_betting()
    v = e.void_round("misdeal: two cards exposed")
    assert [b["bet_type"] for b in v["bets"]] == ["ante"]
    assert [b["bet_id"] for b in v["jackpot"]["carried"]] == ["j1"]
    assert [b.bet_id for b in e.jackpot.meter.state.carried] == ["j1"]
    e.open_betting()
    e.desk.place({"bet_id": "a2", "seat": 1, "bet_type": "ante", "stake": 10000})
    e.close_betting()
    e.desk.add_decision({"bet_id": "r2", "seat": 1, "bet_type": "raise", "stake": 20000})
    p = e.submit_result(
        {"dealer": DEALER_AK, "seats": {"1": {"cards": STRAIGHT_FLUSH, "action": "raise"}}}
    )
    assert [h["bet_id"] for h in p["jackpot"]["hits"]] == ["j1"]
    assert e.jackpot.meter.state.carried == ()


def test_state_survives_restart(tmp_path: Path) -> None:
    first = Journal(tmp_path / "j.sqlite3")
    e = engine_of(first)
    play(e, {1: NOTHING}, {1}, "r1")
    pool = e.jackpot.meter.pool
    first.close()
    j = Journal(tmp_path / "j.sqlite3")
    c = JackpotController(j.jackpot, j.db, PARAMS)
    assert c.meter.pool == pool and c.meter.balanced()


def test_adjustment_never_makes_the_pool_negative() -> None:
    m = new_meter(PARAMS)
    with pytest.raises(ValueError):
        adjust_meter(m, -(m.pool + 1))
    assert adjust_meter(m, -m.pool).pool == 0


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rounds=st.lists(
        st.tuples(st.integers(0, 7), st.sampled_from(["nothing", "flush", "sf", "royal"])),
        min_size=1,
        max_size=25,
    ),
    meter_max=st.one_of(st.none(), st.integers(PARAMS.seed, PARAMS.seed * 3)),
)
def test_meter_identity_holds_over_any_sequence(rounds, meter_max) -> None:
    """pool + overflow == initial seed + credited - paid from pool + seeded + adjusted; never negative."""
    m = new_meter(PARAMS, meter_max)
    for n_bets, best in rounds:
        bets = [jp.JackpotBet(s, PARAMS.stake, f"b{s}") for s in range(1, n_bets + 1)]
        hands = {s: None for s in range(1, n_bets + 1)}
        if bets and best != "nothing":
            hands[1] = {"flush": "flush", "sf": "straight_flush", "royal": "royal_flush"}[best]
        jr = jp.settle_round(m.state, bets, hands)
        m = apply_meter(m, jr)
        assert m.pool >= 0 and m.overflow >= 0
        assert meter_max is None or m.pool <= meter_max
        assert m.balanced()
        assert Meter.from_json(m.to_json()) == replace(m)
