"""Fantan: Despacho Regulamentar Externo 58/2004 (``game``: the buttons' count, bets, settlement)."""

from .game import GAME, Fantan, FantanOutcome, FantanRules

__all__ = ["GAME", "Fantan", "FantanOutcome", "FantanRules"]
