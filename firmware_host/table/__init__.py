"""The table: one table's rounds, driven by its devices and its floor.

- :mod:`.engine`: the round engine (phases, bets, results, voids; journaled);
- :mod:`.phase`: the phases of a round;
- :mod:`.procedures`: the regulation's procedure of each game, chosen by the device
  kind that carries the game's result;
- :mod:`.floor`: ``bets/request`` and ``commands/request`` answered;
- :mod:`.jackpot`: the stud poker progressive jackpot made durable, and its display;
- :mod:`.extension`: the extension point (what follows the rounds: the retained state,
  the jackpot display, the result board next);
- :mod:`.state`: the retained ``state`` snapshot and the latched faults that stop play;
- :mod:`.floorcheck`: at start-up, the journal compared with what the table last
  published (``JOURNAL_BEHIND_FLOOR``, ``JOURNAL_UNCHECKED``).
"""
