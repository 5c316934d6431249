"""P'ai Kao de 2 pedras: Portaria 195/92/M."""

from .game import FULL_SET, GAME, PaiKao, PaiKaoDeal, PaiKaoOutcome, PaiKaoRules, Tile

__all__ = ["FULL_SET", "GAME", "PaiKao", "PaiKaoDeal", "PaiKaoOutcome", "PaiKaoRules", "Tile"]
