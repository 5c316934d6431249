"""P'ai Kao de 2 pedras (two-tile pai gow): Portaria 195/92/M.

A set of 32 Chinese dominoes (art. 1 (a)); after the shuffle the set is split in two
halves of 16 tiles, one half per game, so one set serves two consecutive games (art.
2 (a)). Eight places, the banker's included, always receive two tiles each whoever
plays (art. 2 (d), art. 3 (a)). The banker puts his capital on the table and shakes
four dice; counted counter-clockwise from him, the total picks the place served
first; the banker may *not* add or subtract points (art. 2 (b)-(c)). Each place is
compared with the banker's pair by the annex: the combinations first (Chi Chün,
the pairs, Tin/Tei Káu Vóng, Tin/Tei Kóng), then points, the sum of the pips modulo
10, the two Chi Chün tiles counting 3 or 6 each at the holder's choice (art. 6);
equal points go to the hand holding the higher single tile (art. 7); the banker wins
zero against zero and equal combinations (art. 8). Winners pay the house 5% (art. 9).
The table part (dice, service order, capital-bounded settlement, co-banking, banker
rotation) is :mod:`firmware_host.games.banker`.

- ``tiles``: the 32 tiles, the annex's orders, a hand's value (art. 6-8).
- ``rules``: the table and its house options.
- ``deal``: the game tile by tile (:class:`PaiKaoDeal`) and the dealt game.
- ``game``: the :class:`~firmware_host.games.base.Game`: outcome, settlement, math.

Tile notation (input and output, ``docs/rules/paikao.md``): the two halves' pips,
lower first, joined by a slash: ``"6/6"`` (Tin), ``"1/1"`` (Tei), ``"2/4"``,
``"1/2"``. On input the halves may come in either order (``"4/2"`` is ``"2/4"``).

Decisions where the text is silent (see ``docs/rules/paikao.md``):

- Equal points with single tiles of equal rank (art. 7 speaks of "a pedra de valor
  mais elevado", one tile): only the higher tile of each hand is compared; equal
  rank (the same tile, or the two tiles of one annex rank, e.g. 4/5 and 3/6) is an
  equal combination and the banker wins (art. 8).
- Zero against zero goes to the banker whatever the tiles (art. 8 says so before
  art. 7's high tile could apply).
- The holder's choice of 3 or 6 for a Chi Chün tile is always the one that scores
  more; since points come before the high tile, no other choice can ever help.
"""

from .deal import PaiKaoDeal, PaiKaoOutcome
from .game import GAME, PaiKao
from .rules import PaiKaoRules
from .tiles import FULL_SET, Tile

__all__ = ["FULL_SET", "GAME", "PaiKao", "PaiKaoDeal", "PaiKaoOutcome", "PaiKaoRules", "Tile"]
