"""Blackjack ("Black Jack" or "Vinte e um"): Despacho Regulamentar Externo 56/2004.

- ``rules``: the pay table the text fixes, the house options (art. 21), a hand's points.
- ``deal``: the round as a pure state machine fed the cards and the players'
  decisions (:class:`BlackjackDeal`), and the replay of a recorded round.
- ``verdicts``: what each bet wins; who decides for a shared place (art. 20).
- ``game``: the :class:`~firmware_host.games.base.Game`: bet types, outcome,
  settlement and the house edge.
- ``simulate``: the seeded basic-strategy simulation behind the house edge; its random
  number generator comes from the caller (the rules core holds none).

See ``docs/rules/blackjack.md``.
"""

from .deal import BlackjackDeal
from .game import GAME, Blackjack
from .rules import BlackjackRules

__all__ = ["GAME", "Blackjack", "BlackjackDeal", "BlackjackRules"]
