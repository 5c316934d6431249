"""Cussec / sic bo: Despacho Regulamentar Externo 57/2004 (``game``: bets on three dice, settlement)."""

from .game import GAME, Sicbo, SicboRules

__all__ = ["GAME", "Sicbo", "SicboRules"]
