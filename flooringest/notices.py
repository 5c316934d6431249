"""What the worker holding the duties publishes for the floor: the signed record of each
table (retained, ``<prefix>/floor/records/<table>``), and the lag and faults documents
(retained): a part of :class:`flooringest.worker.IngestWorker`, composed.

**Records in flight, bounded.** paho reads, in one call of ``loop_read``, as many
packets as it has publications of its own not yet acknowledged (``len(_out_messages)``,
its queue included). A duty round used to publish at once the record of every table
whose stored round changed: a thousand during a drain, and their PUBACKs come back on
the session's connection *behind* the rounds the broker queued for the worker. paho's
count stayed in the thousands, each read of the session's socket took thousands of
rounds in one go, seconds long, and the event loop was blocked meanwhile: the live
lane's socket was not read, and its rounds came in bursts two seconds apart (issue 36:
the drain benchmark's 2 s p99 from 5 to 20 s after an ingest's return). At most
:data:`RECORDS_IN_FLIGHT` are now in flight; the others go at the next duty rounds,
each with its table's newest stored round then.
"""

from __future__ import annotations

import json
import logging
import time
from itertools import islice
from typing import Any

import aiomqtt

from firmware_host.timefmt import iso_utc, utc_now

from .messages import record_message
from .settings import IngestSettings, WorkerStats
from .store import Store
from .wire import FAULTS_SCHEMA_VERSION, _iso

log = logging.getLogger("flooringest")

#: The duty holder's publications not yet acknowledged by the broker, at most, before it
#: publishes more records (a read of the session's socket takes up to this many packets
#: more in one go). A duty round (0.5 s) of a steady floor of 6,000 tables changes
#: about 170 tables' records.
RECORDS_IN_FLIGHT = 200


class FloorNotices:
    """The records and the lag and faults documents of one worker (while it holds the
    duties); :meth:`again` when they must all be published again."""

    def __init__(self, settings: IngestSettings, stats: WorkerStats) -> None:
        self.s, self.stats = settings, stats
        #: Records published (table -> seq) on the current connection.
        self.records: dict[str, int] = {}
        self._faults_sent: Any = None

    def again(self) -> None:
        """Everything published again (the duties regained)."""
        self.records.clear()
        self._faults_sent = None

    async def publish_records(
        self, client: aiomqtt.Client | None, store: Store, last: dict[str, int]
    ) -> int:
        """The record of each table whose highest stored round changed, signed with the
        ingest's key, as many as :data:`RECORDS_IN_FLIGHT` allows; how many."""
        signer = self.s.signer
        if client is None or signer is None:
            return 0
        paho = client._client
        room = RECORDS_IN_FLIGHT - len(paho._out_messages)
        if room <= 0:
            return 0
        changed = ((t, q) for t, q in last.items() if self.records.get(t) != q)
        rows = await store.records(self.records, dict(islice(changed, room)))
        at = iso_utc(utc_now())
        t0 = time.process_time()
        for tid, seq, rid, cseq, chead in rows:
            raw = record_message(signer.key, signer.principal, tid, seq, rid, cseq, chead, at)
            # Not awaited one by one: paho queues them (QoS 1), in order.
            paho.publish(self.s.record_topic(tid), raw, qos=1, retain=True)
            self.records[tid] = seq
            self.stats.records_published += 1
        self.stats.sign_records_cpu_s += time.process_time() - t0
        return len(rows)

    async def publish_lag(self, client: aiomqtt.Client | None, store: Store) -> None:
        """The lag document, and the faults document when it changed."""
        if client is None:
            return
        lag = await store.lag()
        lag["group"] = self.s.group
        lag["published_by"] = self.s.worker
        await client.publish(self.s.lag_topic, json.dumps(lag), qos=1, retain=True)
        faults = [
            {**f, "first_seen": _iso(f["first_seen"]), "last_seen": _iso(f["last_seen"])}
            for f in lag["faults"]
        ]
        if (faults, lag["quarantined"]) == self._faults_sent:
            return
        doc = {
            "schema_version": FAULTS_SCHEMA_VERSION,
            "group": self.s.group,
            "at": iso_utc(utc_now()),
            "published_by": self.s.worker,
            "open": faults,
            "open_total": lag["faults_open"],
            "quarantined": lag["quarantined"],
        }
        await client.publish(self.s.faults_topic, json.dumps(doc), qos=1, retain=True)
        kinds = {(f["table_id"], f["code"]) for f in faults}
        before = {(f["table_id"], f["code"]) for f in (self._faults_sent or ([], {}))[0]}
        if kinds != before:  # logged when a fault opens or closes, not at each count
            log.warning(
                "floor-ingest %s: floor faults open: %s", self.s.worker,
                ", ".join(f"{f['table_id']} {f['code']} x{f['count']}" for f in faults[:10])
                or "none",
            )  # fmt: skip
        self._faults_sent = (faults, lag["quarantined"])
