"""Requests refused before they are authorised, counted instead of journaled (issue 29).

A request that cannot be read, is not signed, is signed badly, comes from an unknown
principal or for another table, is stale or from the future, or asks for what its
principal's roles do not permit (``NOT_PERMITTED``) did nothing and proves nothing
about anyone: journaling its answer row by row would let the lowest role (or anyone
on the floor network) grow the journal, and wear the SD card, as fast as it can send.
So such a refusal is answered, never journaled, and *counted* here:

- per principal (the verified one; for a refusal of its signature, the name the
  request claims, ``verified: false``; ``unsigned`` when it names none it could; at
  most :data:`MAX_CLAIMED_NAMES` names no principal of the table has, the rest
  ``other``) and per code: a bounded set of counters whatever is sent;
- logged the first time a principal gets a code, then in one summary line a window
  (:data:`WINDOW_S`);
- kept as evidence in bounded form: ONE ``requests_refused`` entry of the audit chain
  per window that had refusals, with every count of the window
  (:meth:`RefusalLedger.flush`, on the table's tick and when the next refusal comes);
- visible: :meth:`RefusalLedger.snapshot` (the counts since start) is in the retained
  ``state`` as ``refused_requests``, refreshed at each window's end.

An authorised request's answer is journaled and replayed on retry as before
(``table/floor.py``); nothing here touches it.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Protocol

from ..journal import StorageError
from ..jsonio import JSON
from ..timefmt import iso_utc, utc_now
from .extension import TableExtension

log = logging.getLogger(__name__)

#: Seconds of one window: at most one chain entry and one summary log line each.
WINDOW_S = 60.0
#: Names no principal of the table has that are counted under their own name; the
#: others are counted as ``other`` (a sender inventing names cannot grow the counters).
MAX_CLAIMED_NAMES = 8
UNSIGNED = "unsigned"
OTHER = "other"

_Key = tuple[str, bool, str]  # principal, verified, code


def _rows(counts: Counter[_Key]) -> list[JSON]:
    return [
        {"principal": p, "verified": v, "code": c, "count": n}
        for (p, v, c), n in sorted(counts.items())
    ]


class RefusalChain(Protocol):
    """Where the counts go (the journal's chain)."""

    def append_event(self, kind: str, data: JSON = ...) -> object: ...


class RefusalLedger(TableExtension):
    """Counts of the requests refused before authorisation (see the module docstring)."""

    name = "refusals"

    def __init__(
        self,
        chain: RefusalChain,
        *,
        known: Iterable[str] = (),
        clock: Callable[[], datetime] = utc_now,
        window_s: float = WINDOW_S,
    ) -> None:
        self.chain = chain
        self.known = frozenset(known)
        self.clock = clock
        self.window_s = window_s
        self.since = clock()
        self.totals: Counter[_Key] = Counter()
        self.total = 0
        self._window: Counter[_Key] = Counter()
        self._window_since: datetime | None = None
        self._claimed: set[str] = set()
        self._logged: set[tuple[str, str]] = set()
        #: Called after each window is flushed (the retained state refreshes).
        self.listeners: list[Callable[[], None]] = []

    def _who(self, name: str | None, verified: bool) -> tuple[str, bool]:
        if name is None:
            return UNSIGNED, False
        if name in self.known:
            return name, verified
        if name in self._claimed or len(self._claimed) < MAX_CLAIMED_NAMES:
            self._claimed.add(name)
            return name, False
        return OTHER, False

    def count(self, name: str | None, verified: bool, code: str) -> None:
        """One refused request: from ``name`` (None: none could be read), ``verified``
        by its signature or only claimed, refused with ``code``."""
        now = self.clock()
        self._flush_due(now)
        who, ok = self._who(name, verified)
        key = (who, ok, code)
        if self._window_since is None:
            self._window_since = now
        self._window[key] += 1
        self.totals[key] += 1
        self.total += 1
        if (who, code) not in self._logged:
            self._logged.add((who, code))
            log.warning(
                "floor request refused %s (%s %s); more of these are counted, not journaled, "
                "and summarised every %d s",
                code,
                "from" if ok else "claiming to be",
                who,
                self.window_s,
            )

    def tick(self) -> None:
        self._flush_due(self.clock())

    def _flush_due(self, now: datetime) -> None:
        since = self._window_since
        if since is not None and (now - since).total_seconds() >= self.window_s:
            self.flush(now)

    def flush(self, now: datetime | None = None) -> bool:
        """Journal the window's counts as one ``requests_refused`` chain entry (nothing
        when the window is empty); False when the journal cannot write now (the counts
        stay for the next try)."""
        if not self._window or self._window_since is None:
            return True
        until = now or self.clock()
        total = sum(self._window.values())
        data: dict[str, JSON] = {
            "since": iso_utc(self._window_since),
            "until": iso_utc(until),
            "total": total,
            "counts": _rows(self._window),
        }
        try:
            self.chain.append_event("requests_refused", data)
        except StorageError:
            return False  # the guard logged the fault once; the counts are kept
        top = ", ".join(f"{p} {c} {n}" for (p, _, c), n in self._window.most_common(5))
        log.warning(
            "%d floor requests refused before authorisation since %s (%s)",
            total,
            data["since"],
            top,
        )
        self._window.clear()
        self._window_since = None
        for cb in list(self.listeners):
            cb()
        return True

    def snapshot(self) -> dict[str, JSON]:
        """The counts since the table started (the retained ``state``)."""
        return {"since": iso_utc(self.since), "total": self.total, "by": _rows(self.totals)}
