"""Super Pan 9: Portaria 261/96/M."""

from .game import GAME, SuperPan9, SuperPan9Deal, SuperPan9Outcome, SuperPan9Rules

__all__ = ["GAME", "SuperPan9", "SuperPan9Deal", "SuperPan9Outcome", "SuperPan9Rules"]
