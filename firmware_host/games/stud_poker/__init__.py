"""Stud poker with a progressive jackpot: Despacho Regulamentar Externo 61/2004.

One 52-card deck (art. 1 1)); seven player places and the croupier (art. 2 1)).
Each place bets an ante, may add a jackpot bet before the first card (art. 6 2)-3)),
and after seeing its five cards folds (losing the ante, art. 6 7)) or raises exactly
twice the ante (art. 6 6)). The croupier's hand must hold at least ace-king to open
the players' hands (art. 9 1)); otherwise antes are paid 1:1 and raises returned
(art. 9 2)). A qualifying croupier's higher hand takes ante and raise (art. 9 4));
a higher player hand is paid 1:1 on the ante and by the art. 9 5) table on the
raise (royal flush 50 to 100 as authorised, art. 13; four of a kind, straight flush
and royal flush limited by the house's maximum per game).

- ``hands``: the order of five-card hands (art. 4, 8) and the croupier's qualification.
- ``rules``: the pay table and the house options.
- ``deal``: the game card by card and the places' decisions (:class:`StudDeal`).
- ``simulate``: the seeded, pure simulation behind the house edge.
- ``game``: the :class:`~firmware_host.games.base.Game`: bets, settlement with the
  progressive jackpot (art. 10, 11: :mod:`firmware_host.games.jackpot`), math.

See ``docs/rules/stud-poker.md``.
"""

from .deal import SeatHand, StudDeal, StudOutcome
from .game import GAME, StudPoker
from .rules import StudPokerRules

__all__ = ["GAME", "SeatHand", "StudDeal", "StudOutcome", "StudPoker", "StudPokerRules"]
