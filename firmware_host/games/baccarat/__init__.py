"""Baccarat: Despacho Regulamentar Externo 55/2004."""

from .game import GAME, Baccarat, BaccaratDeal, BaccaratOutcome, BaccaratRules

__all__ = ["GAME", "Baccarat", "BaccaratDeal", "BaccaratOutcome", "BaccaratRules"]
