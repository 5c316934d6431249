"""Keep docs/ true: every bet type of every game and every configuration key is documented."""

import re
from pathlib import Path

import pytest

from firmware_host.config import LIMIT_SPECS, TABLE_SPECS
from firmware_host.games import available_games, get_game
from firmware_host.games.options import describe

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("game_id", available_games())
def test_every_bet_type_is_in_the_game_doc(game_id: str) -> None:
    doc = ROOT / "docs" / "rules" / f"{game_id}.md"
    assert doc.exists(), f"{doc} is missing"
    text = doc.read_text()
    game = get_game(game_id)
    for bt in game.bet_types(game.default_rules()):
        assert f"`{bt.name}`" in text, f"{game_id}: bet type {bt.name} is not documented"
    for opt in describe(game.rules_type):
        key = opt["key"].split(".", 1)[1]
        assert key in text, f"{game_id}: option {opt['key']} is not documented"


def test_config_keys_are_documented() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text()
    for section, specs in (("table", TABLE_SPECS), ("limits", LIMIT_SPECS)):
        block = text.split(f"## `[{section}]`", 1)[1]
        for key in specs:
            assert re.search(rf"`{key}`", block), (
                f"[{section}] {key} is not in docs/configuration.md"
            )


def test_every_registered_section_key_is_documented() -> None:
    from firmware_host.auth.policy import AUTH_SPECS
    from firmware_host.console import CONSOLE_SPECS
    from firmware_host.daemon_settings import DAEMON_SPECS
    from firmware_host.face.board import STATISTICS_SPECS
    from firmware_host.integrity.settings import INTEGRITY_SPECS
    from firmware_host.integrity.software import SOFTWARE_SPECS
    from firmware_host.journal import JOURNAL_SPECS
    from firmware_host.mqtt import MQTT_SPECS
    from firmware_host.table.bets import BETS_SPECS
    from firmware_host.table.jackpot import JACKPOT_SPECS
    from firmware_host.table.witness_settings import WITNESS_SPECS

    text = (ROOT / "docs" / "configuration.md").read_text()
    for section, specs in (
        ("mqtt", MQTT_SPECS),
        ("journal", JOURNAL_SPECS),
        ("console", CONSOLE_SPECS),
        ("jackpot", JACKPOT_SPECS),
        ("daemon", DAEMON_SPECS),
        ("statistics", STATISTICS_SPECS),
        ("auth", AUTH_SPECS),
        ("bets", BETS_SPECS),
        ("software", SOFTWARE_SPECS),
        ("integrity", INTEGRITY_SPECS),
        ("witness", WITNESS_SPECS),
    ):
        assert f"## `[{section}]`" in text, section
        block = text.split(f"## `[{section}]`", 1)[1].split("\n## ", 1)[0]
        for key in specs:
            assert f"`{key}`" in block, f"[{section}] {key} is not in docs/configuration.md"
