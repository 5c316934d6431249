"""The reference floor ingest (``tablectl floor-ingest``, issue 18): the floor's side of
the ``rounds`` topic, kept in a database exactly once.

Several workers share one MQTT 5 shared subscription (``$share/<group>/<prefix>/tables/
+/rounds``) with persistent sessions; each commits a batch of rounds to the database
(PostgreSQL through asyncpg, or SQLite, the embedded default) and only then sends the
PUBACKs (paho's ``manual_ack``): a worker that dies before its commit leaves the
messages unacknowledged, and the broker delivers them again. Rounds are keyed by
``round_id`` and by ``(table_id, seq)``: a redelivery is a duplicate, counted and
dropped; two different payloads under one key are a conflict, kept aside and reported.
One worker at a time (a lease in the database) runs the duties: per-table sequence
tracking (``last_seq``, contiguous seq, gaps), the repair of gaps with the table's
signed ``replay_rounds`` command, the check of each round's chain anchor
(:mod:`flooringest.anchor`), and the retained lag topic.

The table daemon (``firmware_host``) never imports this package (a test checks);
it uses ``firmware_host`` only for the signer of its replay requests.
"""
