"""The settings of an ingest worker (:class:`IngestSettings`) and its counters
(:class:`WorkerStats`), apart from the worker itself (``flooringest.worker``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class IngestSettings:
    host: str = "127.0.0.1"
    port: int = 1883
    username: str | None = None
    password: str | None = None
    prefix: str = "casino"
    #: The shared subscription's group: the workers that split the load.
    group: str = "floor-ingest"
    #: Whether the session takes the rounds through the group's shared subscription
    #: (several workers split them) or a plain one (``--subscription plain``: a floor
    #: with one worker). A restarted mosquitto (2.0.11) keeps an offline session's plain
    #: subscription and queues the rounds published before the worker is back; what
    #: comes for a shared one before a member of the group is back is dropped, and
    #: repaired only by the duties' replay (docs/floor.md). Plain with several workers:
    #: each gets every round (duplicates, dropped by the store).
    shared: bool = True
    #: This worker's name: its MQTT client id is ``<group>-<worker>`` (a restarted
    #: worker must keep it, to get its session's unacknowledged messages back).
    worker: str = "w1"
    db: str = "floor.sqlite3"
    #: The most messages in one transaction, and how long the first waits for more.
    batch_max: int = 200
    batch_wait_s: float = 0.005
    #: MQTT 5 Receive Maximum: unacknowledged messages the broker may send at once.
    receive_maximum: int = 1000
    session_expiry_s: int = 7 * 24 * 3600
    #: The duties: how often, the lease, the grace before a gap is repaired, how often
    #: a replay is asked again, how often the lag is published.
    duty_interval_s: float = 0.5
    lease_s: float = 5.0
    gap_grace_s: float = 2.0
    replay_retry_s: float = 10.0
    lag_interval_s: float = 2.0
    #: Signs replay requests and the floor's records (None: requests unsigned, for
    #: tables with ``signatures = false``; no record published).
    signer: Any = None
    #: A registry file (``flooringest.registry``) imported into the database at start
    #: and whenever it changes; None: the database's registry alone.
    registry_file: str | None = None
    #: How often every worker reads the database's registry again (a new table known
    #: without a restart).
    registry_refresh_s: float = 2.0
    #: Quarantined messages kept per table and code by this worker (the unverified
    #: kinds: unknown table, bad signature...); beyond, only counted. A table's own
    #: signed rounds (SEQ_NOT_ANNOUNCED, CHAIN_NOT_ADVANCING) are always kept.
    quarantine_keep: int = 1000
    quarantine_keep_total: int = 20000
    #: How often the quarantine's log summary is written (the first message of each
    #: table and code is logged at once).
    log_summary_s: float = 60.0
    #: How often the duty holder saves what the tables announced (the answers to its
    #: replay requests are saved at once).
    announce_save_s: float = 10.0
    #: A file to append ``round_id <tab> commit time`` to after each commit (the
    #: benchmark's publish -> committed latency; time.time(), after COMMIT returned).
    latency_log: str | None = None
    #: A JSON file this worker rewrites every second with its counters and the CPU
    #: time of its signature checks (the benchmark's verification share).
    stats_file: str | None = None
    #: Whether each connection of the session opens a live lane (``livelane.py``): the
    #: rounds published now, taken ahead of what the broker queued for the session.
    live_lane: bool = True
    #: Seconds between two progress lines in the log (``floor-ingest run --progress``;
    #: 0: none).
    progress_s: float = 0.0

    @property
    def client_id(self) -> str:
        return f"{self.group}-{self.worker}"

    @property
    def subscription(self) -> str:
        """The session's filter for the rounds."""
        return self.shared_subscription if self.shared else self.plain_subscription

    @property
    def shared_subscription(self) -> str:
        return f"$share/{self.group}/{self.prefix}/tables/+/rounds"

    @property
    def plain_subscription(self) -> str:
        return f"{self.prefix}/tables/+/rounds"

    @property
    def lag_topic(self) -> str:
        return f"{self.prefix}/floor/ingest/{self.group}/lag"

    @property
    def faults_topic(self) -> str:
        return f"{self.prefix}/floor/ingest/{self.group}/faults"

    def record_topic(self, table: str) -> str:
        return f"{self.prefix}/floor/records/{table}"


@dataclass
class WorkerStats:
    received: int = 0
    stored: int = 0
    duplicates: int = 0
    conflicts: int = 0
    quarantined: int = 0
    quarantine_not_kept: int = 0
    batches: int = 0
    commit_retries: int = 0
    acks: int = 0
    acks_lost: int = 0
    connects: int = 0
    replays_asked: int = 0
    answers: int = 0
    promoted: int = 0
    records_published: int = 0
    duty_rounds: int = 0
    #: CPU seconds: the rounds' signature checks (the hot path), the anchors', states'
    #: and answers' (lazy), and the records' signatures.
    verify_rounds_cpu_s: float = 0.0
    verify_announcements_cpu_s: float = 0.0
    sign_records_cpu_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rejects(self) -> int:  # what floor_rejects counted, before the quarantine
        return int(self.extra.get("rejects", 0))
