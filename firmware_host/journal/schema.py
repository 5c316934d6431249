"""The journal's SQLite schema and its migrations.

The file's schema level is ``PRAGMA user_version``; :class:`~.connection.Connection`
upgrades an older file with :data:`DB_MIGRATIONS` when it is opened and refuses a newer
one. This level (:data:`DB_SCHEMA_VERSION`) is the layout of the SQLite file only,
not the ``schema_version`` carried by published payloads.
"""

from __future__ import annotations

_SCHEMA_V1 = """
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE rounds (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  round_id TEXT NOT NULL UNIQUE,
  table_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  game TEXT NOT NULL,
  rules TEXT NOT NULL,
  phase TEXT NOT NULL,
  status TEXT CHECK (status IN ('settled', 'void')),
  void_reason TEXT,
  outcome TEXT,
  timestamps TEXT NOT NULL,
  opened_at TEXT NOT NULL,
  finished_at TEXT,
  summary TEXT,
  detail TEXT NOT NULL DEFAULT 'full' CHECK (detail IN ('full', 'no_frames', 'summary')),
  UNIQUE (table_id, seq),
  CHECK ((status IS NULL) = (finished_at IS NULL))
) STRICT;
CREATE INDEX rounds_in_flight ON rounds(id) WHERE status IS NULL;
CREATE INDEX rounds_finished ON rounds(id) WHERE status IS NOT NULL;
CREATE INDEX rounds_detail ON rounds(detail, id);

CREATE TABLE bets (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  round_id TEXT NOT NULL REFERENCES rounds(round_id),
  bet_id TEXT NOT NULL,
  seat INTEGER NOT NULL,
  bet_type TEXT NOT NULL,
  selection TEXT NOT NULL,
  stake INTEGER NOT NULL CHECK (stake > 0),
  status TEXT NOT NULL CHECK (status IN ('placed', 'cancelled')),
  placed_at TEXT NOT NULL,
  cancelled_at TEXT,
  UNIQUE (round_id, bet_id)
) STRICT;

CREATE TABLE raw_frames (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  round_id TEXT REFERENCES rounds(round_id),
  device TEXT NOT NULL,
  direction TEXT NOT NULL CHECK (direction IN ('rx', 'tx')),
  data BLOB NOT NULL,
  at TEXT NOT NULL
) STRICT;
CREATE INDEX raw_frames_round ON raw_frames(round_id);

CREATE TABLE settlements (
  round_id TEXT PRIMARY KEY REFERENCES rounds(round_id),
  status TEXT NOT NULL CHECK (status IN ('settled', 'void')),
  payload TEXT NOT NULL,
  outbox_id INTEGER NOT NULL,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  payload BLOB NOT NULL,
  qos INTEGER NOT NULL CHECK (qos IN (0, 1, 2)),
  retain INTEGER NOT NULL CHECK (retain IN (0, 1)),
  round_id TEXT,
  created_at TEXT NOT NULL,
  published_at TEXT
) STRICT;
CREATE INDEX outbox_pending ON outbox(id) WHERE published_at IS NULL;

CREATE TABLE jackpot (
  name TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  round_id TEXT,
  updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE jackpot_hits (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hit_id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  round_id TEXT,
  amount INTEGER NOT NULL CHECK (amount >= 0),
  details TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  paid_at TEXT,
  payment TEXT
) STRICT;
CREATE INDEX jackpot_hits_unpaid ON jackpot_hits(id) WHERE paid_at IS NULL;

CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  kind TEXT NOT NULL,
  data TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
) STRICT;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;

CREATE TABLE faults (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  data TEXT NOT NULL,
  set_at TEXT NOT NULL,
  cleared_at TEXT,
  cleared_by TEXT,
  clear_reason TEXT
) STRICT;
CREATE UNIQUE INDEX faults_active ON faults(code) WHERE cleared_at IS NULL;
"""

#: Issue 14: the floor's requests answered exactly once. ``requests`` keeps the answer
#: to every request by ``(principal, request_id)``, written in the transaction of the
#: change it answers (``requests.py``); ``approvals`` the first confirmations of what
#: needs two different principals (a jackpot payment); ``bets.principal`` who placed
#: a bet (only they may cancel it).
_REQUESTS_V2 = """
CREATE TABLE requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  principal TEXT NOT NULL,
  request_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  digest TEXT NOT NULL,
  round_id TEXT,
  verified INTEGER NOT NULL CHECK (verified IN (0, 1)),
  answer TEXT NOT NULL,
  at TEXT NOT NULL,
  UNIQUE (principal, request_id)
) STRICT;
CREATE INDEX requests_at ON requests(at);

CREATE TABLE approvals (
  action TEXT NOT NULL,
  subject TEXT NOT NULL,
  principal TEXT NOT NULL,
  request_id TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (action, subject, principal)
) STRICT;

ALTER TABLE bets ADD COLUMN principal TEXT;
"""

# Version 3 (issue 15): the audit chain covers every row that moves money and every
# answered request (``chain.py``): rows written before it have no chain entry of their
# own. Record where they end, so that ``tablectl audit verify`` reports them as written
# before the chain covered them instead of as rows slipped in behind the journal's
# back. (The first keyed chain entry copies this record; it is read from there, under
# the key.)
_CHAIN_COVERS_ROWS = """
INSERT OR REPLACE INTO meta (key, value) SELECT 'uncovered_before', json_object(
  'rounds', (SELECT COALESCE(MAX(id), 0) FROM rounds),
  'bets', (SELECT COALESCE(MAX(id), 0) FROM bets),
  'jackpot_hits', (SELECT COALESCE(MAX(id), 0) FROM jackpot_hits),
  'faults', (SELECT COALESCE(MAX(id), 0) FROM faults),
  'requests', (SELECT COALESCE(MAX(id), 0) FROM requests),
  'jackpot', json((SELECT json_group_array(name) FROM jackpot))
);
"""

# Version 4 (issue 19): integrity alerts held until an operator acknowledges them
# (``alerts.py``); their raising, acknowledgement and clearing are events of the audit
# chain.
#: Issue 19: integrity alerts held until an operator acknowledges them (``alerts.py``);
#: their raising, acknowledgement and clearing are events of the audit chain.
_ALERTS_V4 = """
CREATE TABLE alerts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  code TEXT NOT NULL,
  subject TEXT NOT NULL,
  severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  message TEXT NOT NULL,
  evidence TEXT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  count INTEGER NOT NULL CHECK (count >= 1),
  condition INTEGER NOT NULL CHECK (condition IN (0, 1)),
  acknowledged_at TEXT,
  acknowledged_by TEXT,
  ack_reason TEXT,
  cleared_at TEXT
) STRICT;
CREATE UNIQUE INDEX alerts_open ON alerts(code, subject) WHERE cleared_at IS NULL;
"""

# Version 5 (issue 20): the outbox's "published" marks in a table of their own. Marking
# an entry in its own row (``UPDATE outbox SET published_at``) made SQLite write the
# whole record again, payload and overflow pages included: every published round
# cost a third copy of its payload in the WAL (and on the card at the checkpoint) and
# a drained backlog spent most of its time there. A mark is now one small row keyed by
# the entry's id. ``outbox`` stays readable as before (a view with ``published_at``),
# so queries and tools that read it need no change; the journal writes the tables.
# Also an index of each table's rounds in journal order: a table's latest round (read
# at every phase change) was found by sorting all its rounds, kept forever.
_OUTBOX_MARKS_V5 = """
CREATE TABLE outbox_published (
  id INTEGER PRIMARY KEY,
  published_at TEXT NOT NULL
) STRICT;
INSERT INTO outbox_published (id, published_at)
  SELECT id, published_at FROM outbox WHERE published_at IS NOT NULL;
DROP INDEX outbox_pending;
ALTER TABLE outbox DROP COLUMN published_at;
ALTER TABLE outbox RENAME TO outbox_entries;
CREATE VIEW outbox AS
  SELECT e.id, e.topic, e.payload, e.qos, e.retain, e.round_id, e.created_at, p.published_at
  FROM outbox_entries e LEFT JOIN outbox_published p ON p.id = e.id;
CREATE INDEX rounds_table ON rounds(table_id, id);
"""

#: ``DB_MIGRATIONS[n]`` upgrades a journal from schema version ``n`` to ``n + 1``.
#: Version 0 is an empty file. Append, never edit, once a version has shipped.
DB_MIGRATIONS: tuple[str, ...] = (
    _SCHEMA_V1,
    _REQUESTS_V2,
    _CHAIN_COVERS_ROWS,
    _ALERTS_V4,
    _OUTBOX_MARKS_V5,
)
#: The SQLite layout this software writes (``PRAGMA user_version`` of an up-to-date file).
DB_SCHEMA_VERSION = len(DB_MIGRATIONS)
