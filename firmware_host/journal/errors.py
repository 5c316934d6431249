"""The journal's errors: each with a stable ``code`` that tests and responses match."""

from __future__ import annotations

from ..games.errors import CodedError


class JournalError(CodedError, RuntimeError):
    """Base of the journal's errors; ``code`` is stable (tests and responses match it)."""

    code = "JOURNAL_ERROR"


class RoundNotFound(JournalError, LookupError):
    code = "ROUND_NOT_FOUND"


class RoundExists(JournalError):
    code = "ROUND_EXISTS"


class RoundInFlight(JournalError):
    """A new round was opened while another round of the same table is unfinished."""

    code = "ROUND_IN_FLIGHT"


class RoundFinished(JournalError):
    """The round is already settled or voided: it can never be settled or voided again."""

    code = "ROUND_FINISHED"


class PhaseNotAllowed(JournalError):
    """The round is not in one of the phases the operation requires (bets after close)."""

    code = "ROUND_PHASE"


class BetConflict(JournalError):
    """The bet id is already used in this round by a bet with different content."""

    code = "BET_DUPLICATE_ID"


class BetNotFound(JournalError, LookupError):
    code = "BET_NOT_FOUND"


class JackpotHitConflict(JournalError):
    code = "JACKPOT_HIT_CONFLICT"


class JackpotHitNotFound(JournalError, LookupError):
    code = "JACKPOT_HIT_NOT_FOUND"


class FaultNotFound(JournalError, LookupError):
    code = "FAULT_NOT_ACTIVE"


class JournalCorrupt(JournalError):
    """The file fails SQLite's integrity check or has a schema this software cannot read."""

    code = "JOURNAL_CORRUPT"


class StorageError(JournalError):
    """The storage under the journal failed a read or a write (the file itself may be
    fine): nothing was changed. A :class:`~.storage.StorageGuard` latches it until a
    write succeeds again."""

    code = "JOURNAL_IO"


class JournalFull(StorageError):
    """The filesystem holding the journal is full (SQLITE_FULL)."""

    code = "DISK_FULL"


class JournalIOError(StorageError):
    """A read or write of the journal failed with an I/O error (SQLITE_IOERR), or the
    filesystem went read-only under it (SQLITE_READONLY, e.g. remounted after errors)."""

    code = "JOURNAL_IO"
