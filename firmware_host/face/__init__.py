"""The table's face: what people see of it.

- :mod:`~firmware_host.face.state`: what the result board shows, as plain data and pure
  transitions (betting open, closed, result, void, new shoe; rebuilt from the journal);
- :mod:`~firmware_host.face.stats`: roulette, fantan and dice statistics of the last
  rounds, pure;
- :mod:`~firmware_host.face.board`: the two table extensions that follow the rounds
  (:class:`~firmware_host.face.board.ResultBoard`: the ``board`` topic and the board
  devices, never awaited by play; :class:`~firmware_host.face.board.TableStatistics`:
  the ``stats`` topic).

The baccarat roads are rules-core code (``firmware_host/games/roads.py``).
The web view of a table (``tablectl view``) is the separate ``tableview`` package,
which the runtime never imports: it reads these topics over MQTT.
"""
