"""``tablectl view``: a read-only web page of one table or a pit of tables.

It follows the tables over MQTT as any floor display would (its own client,
subscribe only, never a request), keeps what each table's retained topics say
(``state``, ``board``, ``stats``, ``jackpot``, ``devices/<name>``) and the last rounds
and events it hears, and serves a page (plain HTML, CSS and JavaScript shipped in this
package: no build step, nothing fetched from elsewhere) that draws them as the table's
board looks, updated live by server-sent events.

What it keeps is bounded and taken from each table only (issue 29): the tables it is
told to follow (ids, prefixes), a documented cap of tables, of rounds and events per
table and of bytes per message and per table, a payload's ``table_id`` agreeing with its
topic, and, given the tables' public keys, only what each table signed
(``docs/view.md``, "Bounded, and each table's own word").

It is a separate process (or, in the demo, a subscriber inside the demo's process):
the table daemon never imports it and never waits for it.

- :mod:`tableview.caps`: what the view keeps at most;
- :mod:`tableview.model`: the pit as the page sees it, from the MQTT messages;
- :mod:`tableview.trust`: the tables' public keys (``--key``, ``--registry``);
- :mod:`tableview.server`: the MQTT subscriber and the aiohttp web server;
- :mod:`tableview.cli`: the ``view`` subcommand;
- :mod:`tableview.kiosk`: the browser showing the board on the Pi's own screen, kept
  showing it (``python -m tableview.kiosk``, ``systemd/tablectl-board.service``).
"""
