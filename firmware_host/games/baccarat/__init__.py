"""Baccarat (Bacará): Despacho Regulamentar Externo 55/2004.

Card values (art. 5): tens and faces count 0, the others their face value, totals
modulo 10. Two cards each, player first, alternately (art. 7 1)); at most one
more card each, player first, by the table of art. 9. The higher total wins (art.
11); equal totals are a tie (art. 12). Bets (art. 13): player and banker 1:1, the
banker's winnings less 5% commission (art. 17 1), art. 18); tie 8:1 (art. 17 2));
player pair and banker pair 11:1 when the side's first two cards have the same rank
(J-J is a pair, J-Q is not; art. 13 4), art. 17 3)).

- ``rules``: the pay table, the house options (art. 19), the burn and the last coup.
- ``deal``: the coup card by card (:class:`BaccaratDeal`), the drawing rules (art. 9)
  and the corrections of art. 10.
- ``game``: the :class:`~firmware_host.games.base.Game`: bets, settlement, exact math.

Decisions where the text is silent are listed in ``docs/rules/baccarat.md``.
"""

from .deal import BaccaratDeal, BaccaratOutcome
from .game import GAME, Baccarat
from .rules import BaccaratRules

__all__ = ["GAME", "Baccarat", "BaccaratDeal", "BaccaratOutcome", "BaccaratRules"]
