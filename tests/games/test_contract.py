"""The contract every game of the rules core keeps with the daemon and the journal."""

import pytest

from firmware_host.games import available_games, get_game
from firmware_host.games.base import DiscreteGame
from firmware_host.games.errors import OutcomeError


def sample_outcomes(game) -> list:
    rules = game.default_rules()
    if isinstance(game, DiscreteGame):
        return [o for o, _ in game.outcome_space(rules)][:400]
    samples = getattr(game, "sample_outcomes", None)
    return list(samples(rules)) if samples else []


@pytest.mark.parametrize("game_id", available_games())
def test_published_outcome_parses_back_to_the_same_outcome(game_id: str) -> None:
    """The journal stores ``outcome_json``; a restart parses it back and settles."""
    game = get_game(game_id)
    rules = game.default_rules()
    outcomes = sample_outcomes(game)
    if not outcomes:
        pytest.skip(f"{game_id} offers no sample outcomes")
    for o in outcomes:
        published = game.outcome_json(o)
        assert game.outcome_json(game.parse_outcome(rules, published)) == published


@pytest.mark.parametrize("game_id", ["roulette", "sicbo", "fish-prawn-crab", "fantan"])
def test_inconsistent_derived_fields_are_refused(game_id: str) -> None:
    game = get_game(game_id)
    rules = game.default_rules()
    published = dict(game.outcome_json(sample_outcomes(game)[1]))
    key = next(k for k in ("colour", "total", "buttons") if k in published or k == "buttons")
    published[key] = "bogus" if key == "colour" else 99
    with pytest.raises(OutcomeError):
        game.parse_outcome(rules, published)


def test_every_game_is_registered() -> None:
    assert set(available_games()) >= {"roulette", "sicbo", "fish-prawn-crab", "fantan"}
