"""The table: one table's rounds, driven by its devices and its floor.

- :mod:`.engine`: the round engine (phases, bets, results, voids; journaled);
- :mod:`.procedures`: the regulation's procedure of each game, chosen by the device
  kind that carries the game's result;
- :mod:`.floor`: ``bets/request`` and ``commands/request`` answered;
- :mod:`.jackpot`: the stud poker progressive jackpot made durable.
"""
