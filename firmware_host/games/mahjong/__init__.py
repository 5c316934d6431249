"""Mah-jong: Portaria 135/91/M, (a) conventional (136 tiles) and (b) simplified (112).

- ``tiles``: the two sets (art. 2) and the tile notation.
- ``declared``: the declared win, mah-jong's outcome, and its validation.
- ``decompose``: is a hand complete (art. 4), every reading of it.
- ``patterns``: the fan of art. 6, one test per pattern; the best reading.
- ``payments``: art. 7 (banker double), art. 8 (commission), art. 9 (capital), art. 10
  (liability, false win).
- ``sequence``: the games of a session and the wall's opening (art. 3), art. 5 priority.
- ``rules``: the house options (variant, stake levels' amounts, liability reading).
- ``game``: the :class:`~firmware_host.games.base.Game`.

See ``docs/rules/mahjong.md``.
"""

from .game import GAME, Mahjong
from .rules import MahjongRules

__all__ = ["GAME", "Mahjong", "MahjongRules"]
