"""Roulette: Despacho Regulamentar Externo 60/2004 (``game``: the wheel, bets, settlement;
the wheel's pocket order is the shared fact ``tablecommon.wheel.WHEEL_ORDER``)."""

from tablecommon.wheel import WHEEL_ORDER

from .game import GAME, Roulette, RouletteOutcome, RouletteRules

__all__ = ["GAME", "WHEEL_ORDER", "Roulette", "RouletteOutcome", "RouletteRules"]
