"""The daemon's log, fit for journald and for a terminal.

Under systemd the daemon's standard error is a journal stream (systemd sets
``JOURNAL_STREAM`` to its ``device:inode``): journald stamps every line itself and
reads a ``<N>`` prefix as the line's priority (``SyslogLevelPrefix=``, on by default),
so each line is ``<N>logger: message`` with no timestamp of ours, and ``journalctl -p
warning -u tablectl`` filters by level. Anywhere else (a terminal, a file, a service
whose standard error is not the journal although ``INVOCATION_ID`` says systemd started
it) lines carry an ISO-8601 local timestamp and the level name. ``TABLECTL_LOG_FORMAT``
(``journal`` or ``plain``) overrides the detection.

:class:`RoundLog` gives the daemon's log one info line per round settled or voided;
the reload's line is written by the daemon.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import IO, Any

from .games.money import MoneyRules
from .jsonio import JSON
from .table.extension import TableExtension, TableExtensions
from .textsafe import printable

#: Python levels -> syslog priorities (sd-daemon(3): ``<3>`` error ... ``<7>`` debug).
PRIORITIES = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def priority(levelno: int) -> int:
    """The syslog priority of a Python level (levels between map to the one below)."""
    for level in sorted(PRIORITIES, reverse=True):
        if levelno >= level:
            return PRIORITIES[level]
    return 7


def journal_stream(stream: IO[str], environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``stream`` is the journal stream systemd gave this process: ``JOURNAL_STREAM``
    names its ``device:inode`` (systemd.exec(5)); an inherited variable on another file
    (output redirected by hand) does not count."""
    forced = environ.get("TABLECTL_LOG_FORMAT")
    if forced in ("journal", "plain"):
        return forced == "journal"
    value = environ.get("JOURNAL_STREAM", "")
    dev, _, ino = value.partition(":")
    if not (dev.isdigit() and ino.isdigit()):
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return st.st_dev == int(dev) and st.st_ino == int(ino)


class JournalFormatter(logging.Formatter):
    """``<N>logger: message``, every line of a multi-line record prefixed (journald
    stores each line as its own entry)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        prefix = f"<{priority(record.levelno)}>"
        return "\n".join(prefix + line for line in text.splitlines() or [""])


PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class PlainFormatter(logging.Formatter):
    """ISO-8601 local time with its offset, the level, the logger, the message."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        from datetime import datetime

        return (
            datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")
        )


def setup_logging(level: str = "INFO", stream: IO[str] | None = None) -> logging.Handler:
    """Configure the root logger for ``tablectl run`` (and the other subcommands)."""
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    if journal_stream(stream):
        handler.setFormatter(JournalFormatter("%(name)s: %(message)s"))
    else:
        handler.setFormatter(PlainFormatter(PLAIN_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    return handler


class RoundLog(TableExtension):
    """One info line in the daemon's log per round settled or voided (the event log
    and MQTT carry the whole round; this line is what a technician reads in
    ``journalctl -u tablectl``)."""

    name = "round-log"

    def __init__(self, extensions: TableExtensions, money: MoneyRules) -> None:
        self.money = money
        self.log = logging.getLogger("firmware_host.rounds")
        #: Rounds settled and voided since the daemon started (the progress line).
        self.settled = 0
        self.voided = 0
        extensions.add(self)

    def _totals(self, payload: Mapping[str, JSON]) -> str:
        t = payload.get("totals")
        bets = payload.get("bets")
        n = len(bets) if isinstance(bets, list) else 0
        if not isinstance(t, Mapping):
            return f"{n} bets"
        fmt = self.money.format
        return (
            f"{n} bet{'s' if n != 1 else ''}, stakes {fmt(int(t.get('stakes') or 0))}, "
            f"house {fmt(int(t.get('house_net') or 0))}"
        )

    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        self.settled += 1
        outcome = _compact(payload.get("outcome"))
        self.log.info(
            "round %s settled: %s; %s", payload.get("round_id"), outcome, self._totals(payload)
        )

    def round_voided(self, payload: Mapping[str, JSON]) -> None:
        self.voided += 1
        self.log.info(
            "round %s voided: %s; %s refunded",
            payload.get("round_id"),
            printable(payload.get("void_reason") or ""),  # may come from the floor
            self._totals(payload),
        )


class ProgressLine:
    """``tablectl run --progress``: the table's progress in one line of its log, from
    its status (what ``tablectl status`` shows) and the rounds counted since the
    previous line::

        table roulette-01: progress: phase betting_open (round roulette-01-000012-...);
        rounds settled 12 (+3), voided 0 (+0) since start; 0 to publish; broker
        127.0.0.1:1883 connected; faults none
    """

    def __init__(self, backend: Any, rounds: RoundLog | None) -> None:
        from .progress import Since

        self.backend = backend
        self.rounds = rounds
        self.since = Since()

    def __call__(self) -> str:
        from .cliargs import plain_words

        st = self.backend.status()
        mqtt = st.get("mqtt") or {}
        journal = st.get("journal") or {}
        rnd = f" (round {st['round_id']})" if st.get("round_id") else ""
        settled = self.rounds.settled if self.rounds else 0
        voided = self.rounds.voided if self.rounds else 0
        if not mqtt:
            broker = "no MQTT link"
        elif mqtt.get("connected"):
            broker = f"broker {mqtt.get('broker')} connected"
        else:
            why = plain_words(str(mqtt.get("last_error") or "no connection yet"))
            broker = f"broker {mqtt.get('broker')} NOT connected ({why})"
        return (
            f"table {st.get('table_id')}: progress: phase {st.get('phase')}{rnd}; rounds "
            f"settled {self.since.text('settled', settled)}, voided "
            f"{self.since.text('voided', voided)} since start; "
            f"{journal.get('outbox_pending')} to publish; {broker}; faults "
            f"{', '.join(st.get('faults') or []) or 'none'}"
        )


def _compact(value: JSON, limit: int = 120) -> str:
    import json

    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."
