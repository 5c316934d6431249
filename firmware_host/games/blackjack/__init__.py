"""Blackjack (Vinte e um): Despacho Regulamentar Externo 56/2004."""

from .game import GAME, Blackjack, BlackjackDeal, BlackjackRules

__all__ = ["GAME", "Blackjack", "BlackjackDeal", "BlackjackRules"]
