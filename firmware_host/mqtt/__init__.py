"""The table's link to the casino floor over MQTT: the only package importing aiomqtt.

:class:`FloorLink` implements the contract in ``docs/mqtt.md``, composed of parts that
are none of them a base class of another, each given what it uses when it is made
(``docs/mqtt.md``, "The table's side"): the retained snapshots (``snapshots.py``), the
request queues and the answers waiting (``queues.py``), the outbox pump (``pump.py``)
with its publication window (``window.py``), the outbox's marks (``marks.py``) and the
refused topics' holds, the link's faults (``faults.py``), and the connection
(``connection.py``). The contract:

- Topics live under ``<prefix>/tables/<table_id>/``; a published topic with a
  wildcard or an empty level is refused (:class:`TopicError`).
- One persistent session under a stable client id (``clean_session=False`` on
  MQTT 3.1.1; clean start off and a session expiry on MQTT 5), so the broker keeps
  our subscriptions and queues requests while we are away.
- Availability: the last will is a retained ``state`` saying ``offline``; on every
  connect a retained ``state`` ``online`` is published, and on a clean shutdown a
  retained ``offline`` before DISCONNECT (which cancels the will).
- Snapshots (``state``, ``devices/<name>``, ``jackpot``) are retained and held in
  memory: only the latest value matters, each is republished after every
  reconnect, and a burst of updates costs one publication.
- Rounds and lifecycle events come from the journal's outbox, drained IN ID ORDER
  with QoS 1. An entry is marked published only once the broker has taken it, so a
  broker or network failure loses nothing: unacknowledged entries are sent again
  after the reconnect, and a duplicate is always the same bytes under the same
  ``round_id``. Up to ``max_inflight`` entries are in flight at once; the publisher
  is woken by the journal whenever a commit adds outbox entries, and the round engine
  never waits for it.
- Refusals are seen (issue 14 item 5; issue 28). MQTT 5, the default: a PUBACK with
  a reason code of 0x80 or above (mosquitto's ACL answers 0x87) leaves the entry
  unpublished. A broker may also close the connection after refusing (mosquitto
  2.0.16+, and Debian 12's 2.0.11, with ``max_queued_messages 0``): such an end blames
  none of the entries sent around the refused one; the next outbox entry goes alone
  (after one window of snapshots and answers), nothing else in flight until it is
  proven taken, and :data:`DROPS_TO_FAULT` ends in a row while such a lone entry awaits
  its proof refuse it. MQTT 3.1.1 has no refusal in PUBACK: an entry counts as taken
  only once the connection has outlived its PUBACK (:data:`CONFIRM_AFTER_S`, or a later
  PUBACK), which catches a broker that closes the connection; one that keeps it drops
  a refused publication unseen, so on 3.1.1 the retained ``state`` says ``"refusals":
  "undetectable"`` (``"visible"`` on MQTT 5), as do the console's ``status``, the log
  and ``tablectl check-config``. A PUBACK 0x97 (quota exceeded) or 0x91 is
  back-pressure, not a refusal: no fault, a pause, the entry again. The window never
  exceeds the broker's Receive Maximum (its MQTT 5 CONNACK). A refused SUBSCRIBE
  (SUBACK 0x80, or an MQTT 5 reason code) is retried. Each refusal raises a
  :class:`LinkFault` (``PUBLISH_REFUSED``, ``SUBSCRIBE_REFUSED``): one log line when
  raised and one when cleared, listed in the retained ``state`` (``link_faults``) and
  the console's ``status``; the topic is retried with backoff, and a refused outbox
  entry holds back the entries after it (the floor gets them in order or not yet),
  while everything else keeps flowing.
- Requests on ``bets/request`` and ``commands/request`` (retained and empty messages
  are not requests and are ignored) wait in one bounded queue per topic and are
  handed to the daemon's handler ``(topic, payload) -> response`` one at a time,
  **commands first**: a flood of bets never delays a dealer's command. A request
  larger than :data:`~firmware_host.boundedjson.MAX_REQUEST_BYTES`, or arriving
  when its queue is full, is answered at once without being read (``request_id``
  null: ``REQUEST_TOO_LARGE``, ``TABLE_BUSY``); the handler bounds the rest before
  parsing (``firmware_host/boundedjson.py``). A returned response is published on
  the matching ``.../response`` topic (QoS 1, not retained), after the outbox.
  Responses are NOT journaled by the link: they go through a bounded in-memory
  queue that survives reconnects but not a restart.
- A journal that cannot be read or written (full disk, I/O error) is not a broker
  failure: the connection and its backoff are kept, the outbox waits with its own
  backoff, an entry the broker took whose mark cannot be written is remembered and
  not sent again (at most one publication per entry per connection), and marked
  when the journal writes again.
- Reconnects forever with capped, jittered exponential backoff while the table
  keeps playing and journaling; the backoff starts again from its minimum only
  after a connection that held (:data:`STABLE_CONNECTION_S`), so a broker that
  closes every connection at once is retried ever more slowly, never in a storm.
"""

from ..topics import TopicError, check_topic
from .faults import LinkFault
from .items import LinkStats
from .link import FloorLink
from .retained import BrokerUnreachable, read_retained
from .settings import (
    BACKPRESSURE_CODES,
    CONFIRM_AFTER_S,
    DROPS_TO_FAULT,
    IDLE_POLL_S,
    MAX_INCOMING_QUEUED,
    MAX_QUEUED,
    MAX_RESPONSES_QUEUED,
    MQTT_SPECS,
    READ_BURST,
    REQUEST_PRIORITY,
    REQUEST_TOPICS,
    STABLE_CONNECTION_S,
    Handler,
    MqttSettings,
    Response,
)
from .window import AfterPublication

__all__ = [
    "BACKPRESSURE_CODES",
    "CONFIRM_AFTER_S",
    "DROPS_TO_FAULT",
    "IDLE_POLL_S",
    "MAX_INCOMING_QUEUED",
    "MAX_QUEUED",
    "MAX_RESPONSES_QUEUED",
    "MQTT_SPECS",
    "READ_BURST",
    "REQUEST_PRIORITY",
    "REQUEST_TOPICS",
    "STABLE_CONNECTION_S",
    "AfterPublication",
    "BrokerUnreachable",
    "FloorLink",
    "Handler",
    "LinkFault",
    "LinkStats",
    "MqttSettings",
    "Response",
    "TopicError",
    "check_topic",
    "read_retained",
]
