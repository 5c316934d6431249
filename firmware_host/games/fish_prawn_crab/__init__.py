"""Fish-prawn-crab: Despacho Regulamentar Externo 59/2004 (``game``: bets on three figure dice, settlement)."""

from .game import GAME, FishPrawnCrab, FishPrawnCrabRules

__all__ = ["GAME", "FishPrawnCrab", "FishPrawnCrabRules"]
