"""Stud poker with a progressive jackpot: Despacho Regulamentar Externo 61/2004."""

from .game import GAME, SeatHand, StudDeal, StudOutcome, StudPoker, StudPokerRules

__all__ = ["GAME", "SeatHand", "StudDeal", "StudOutcome", "StudPoker", "StudPokerRules"]
