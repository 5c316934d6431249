"""Super Pan 9 (九家樂): Portaria 261/96/M.

One 52-card deck, shuffled for every game (art. 1 1), art. 2 1)). The banker, one of
the players, puts his capital on the table, declares how many points he adds to or
subtracts from the dice, and shakes four dice; counted counter-clockwise from him,
the total (with his declaration) picks the place that receives the first two cards,
and every place then receives two cards in a row, right to left (art. 2 2)-3)).
Each place is compared with the banker's two cards: points are the sum of the card
values modulo 10, picture cards and tens counting zero and the ace one (art. 6);
the higher point wins; equal points go to the hand with the higher card (art. 7 2));
when points and cards are equal the banker wins (art. 8). Winners pay the house 5%
(art. 9). The table part (dice, service order, capital-bounded settlement,
co-banking, banker rotation) is :mod:`firmware_host.games.banker`.

- ``rules``: the house options and the order of hands (art. 6-8).
- ``deal``: the game card by card (:class:`SuperPan9Deal`) and the dealt game.
- ``game``: the :class:`~firmware_host.games.base.Game`: outcome, settlement, math.

Decisions where the text is silent (see ``docs/rules/super-pan-9.md``):

- Equal points and equal highest cards (art. 7 2) Chinese: "以其中最大之一張牌之大小決定
  贏輸", the single largest card decides): with ``rules.super-pan-9.equal_high_card =
  "next-card"`` (default) the other card decides, and only when both cards are of the
  same rank does art. 8 give the game to the banker (the Portuguese text speaks of
  "as cartas de valor mais elevado" and art. 8 of "valor individual das cartas ...
  iguais"); with ``"banker"`` the banker wins as soon as the largest cards are equal.
  Suits never count. The two readings differ only when both hands hold two cards of
  value zero (tens and pictures), e.g. K-Q against K-J.
- Every place of the table (``rules.super-pan-9.places``) receives cards, whether
  anybody bets on it or not (as 195/92/M art. 2 (d) says for P'ai Kao), so the dice
  count is the same whoever plays.
"""

from .deal import SuperPan9Deal, SuperPan9Outcome
from .game import GAME, SuperPan9
from .rules import SuperPan9Rules

__all__ = ["GAME", "SuperPan9", "SuperPan9Deal", "SuperPan9Outcome", "SuperPan9Rules"]
