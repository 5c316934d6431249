"""What a worker keeps of the messages that fail their check, and what it says of them.

A flood of forgeries must neither fill the database nor the log: per table and code at
most ``quarantine_keep`` messages are kept (``quarantine_keep_total`` per code), the
others only counted; the first of each table and code is logged at once, the others in
a summary every ``log_summary_s`` seconds."""

from __future__ import annotations

import logging
from collections import Counter

from . import messages as m
from .messages import Quarantined, Round
from .settings import IngestSettings, WorkerStats

log = logging.getLogger("flooringest")

#: Distinct (table, code) pairs remembered for the log, at most.
PAIRS_MAX = 10000


class QuarantineGate:
    """The bounded keeping and logging of quarantined messages of one worker."""

    def __init__(self, settings: IngestSettings, stats: WorkerStats) -> None:
        self.s, self.stats = settings, stats
        self._logged: set[tuple[str, str]] = set()
        self._since: Counter[tuple[str, str]] = Counter()
        self._kept: Counter[tuple[str, str]] = Counter()
        self._kept_code: Counter[str] = Counter()

    def keep(self, items: list[Round | Quarantined]) -> list[Round | Quarantined]:
        """``items`` less the quarantined messages beyond what is kept per table and
        code (counted only)."""
        out: list[Round | Quarantined] = []
        for x in items:
            if isinstance(x, Quarantined) and x.code not in m.VERIFIED_CODES:
                key = (x.table_id, x.code)
                if (
                    self._kept[key] >= self.s.quarantine_keep
                    or self._kept_code[x.code] >= self.s.quarantine_keep_total
                ):
                    self.stats.quarantine_not_kept += 1
                    self._count(key)
                    continue
                self._kept[key] += 1
                self._kept_code[x.code] += 1
            out.append(x)
        return out

    def noted(self, quarantined: list[Quarantined]) -> None:
        """Count and log quarantined messages: the first of each table and code at
        once, the others in the periodic summary."""
        for q in quarantined:
            self.stats.quarantined += 1
            if q.code in (m.NOT_JSON, m.NOT_A_ROUND):
                self.stats.extra["rejects"] = self.stats.extra.get("rejects", 0) + 1
            key = (q.table_id, q.code)
            if key not in self._logged and len(self._logged) < PAIRS_MAX:
                self._logged.add(key)
                log.warning(
                    "floor-ingest %s: QUARANTINED %s from table %r (%s, seq %s): %s "
                    "[further ones of this table and code: in the summary every %g s]",
                    self.s.worker, q.code, q.table_id, q.topic, q.seq, q.message,
                    self.s.log_summary_s,
                )  # fmt: skip
            else:
                self._count(key)

    def _count(self, key: tuple[str, str]) -> None:
        if len(self._since) < PAIRS_MAX or key in self._since:
            self._since[key] += 1

    def summary(self) -> None:
        """Log what was quarantined since the last summary (nothing: no line)."""
        if not self._since:
            return
        top = self._since.most_common(10)
        more = len(self._since) - len(top)
        log.warning(
            "floor-ingest %s: quarantined in the last %g s: %s%s",
            self.s.worker,
            self.s.log_summary_s,
            ", ".join(f"{t} {c} x{n}" for (t, c), n in top),
            f" and {more} more table/code pairs" if more > 0 else "",
        )
        self._since.clear()


__all__ = ["QuarantineGate"]
