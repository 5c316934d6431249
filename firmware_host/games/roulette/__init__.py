"""Roulette: Despacho Regulamentar Externo 60/2004 (``game``: the wheel, bets, settlement)."""

from .game import GAME, WHEEL_ORDER, Roulette, RouletteOutcome, RouletteRules

__all__ = ["GAME", "WHEEL_ORDER", "Roulette", "RouletteOutcome", "RouletteRules"]
