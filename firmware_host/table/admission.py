"""Bet admission: the bets of the round in flight, apart from the round's lifecycle.

The round engine (``engine.py``) opens, closes, settles and voids rounds; the
:class:`BetDesk` it composes takes their bets: a bet placed by the floor (validated by
the rules core, held to the game's own admission rules and the table's caps, journaled
with its principal), a bet cancelled by whoever placed it, a bet a player's decision
creates after betting closed, and the bets in play, kept beside the journal (which
stays the record) so that a result is settled without reading them back.

Nothing here names a game. What a game alone refuses is an :data:`AdmissionRule`
registered by whoever builds the table: given the parsed bet and the round in flight,
None or a :class:`Refusal` (a stable code and its message). The stud poker table's
progressive jackpot registers one (``JackpotController.admit``: a seat whose jackpot
bet a void game carried may not place a second one, 61/2004 art. 11 1), 4)); a test
checks that this module and the engine name no game's bet type.

Every answer is a :class:`~.bets.BetAnswer`; placing and cancelling never raise for bad
input. A storage fault refuses the bet with its code (``DISK_FULL``, ``JOURNAL_IO``);
a transaction that rolls back after a change here makes the desk read the bets in play
from the journal again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..games.base import Bet, Game, Limits
from ..games.errors import BetError
from ..journal import (
    BetConflict,
    BetNotFound,
    BetStore,
    Database,
    PhaseNotAllowed,
    RoundFinished,
    RoundRecord,
    RoundStore,
    StorageError,
)
from ..jsonio import JSON
from .bets import BetAnswer, BetCaps, answer_again, pruned
from .phase import Phase
from .roundfault import RoundFault, writing

__all__ = ["AdmissionRule", "BetDesk", "Refusal", "RoundInFlight"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a game refuses a bet the rules core found valid: a stable code and a message
    for people (answered ``rejected`` on ``bets/response``)."""

    code: str
    message: str


#: A game's own admission rule: given the parsed bet and the round in flight, None (the
#: rule lets it in) or the :class:`Refusal`. Run after the rules core parsed the bet and
#: before the table's caps; it must not write (the bet may still be refused).
AdmissionRule = Callable[[Bet, RoundRecord], Refusal | None]


class RoundInFlight(Protocol):
    """What the desk reads of the round engine: the round in flight and its phase."""

    @property
    def current(self) -> RoundRecord | None: ...

    @property
    def phase(self) -> Phase: ...


class BetDesk:
    """The bets of one table's round in flight, journaled. Not thread-safe: called from
    the event loop, like the engine that composes it."""

    def __init__(
        self,
        db: Database,
        bets: BetStore,
        rounds: RoundStore,
        game: Game[Any, Any],
        rules: Any,
        limits: Limits,
        *,
        flight: RoundInFlight,
        caps: BetCaps | None = None,
        bet_placed: Callable[[str, Bet], None] | None = None,
        admission: Sequence[AdmissionRule] = (),
    ) -> None:
        """``db``, ``bets``, ``rounds``: the journal's parts it writes and reads (the
        database's transactions and storage guard, the bets, the rounds a retry names);
        ``game``, ``rules``, ``limits``: what parses a bet; ``flight``: the round in
        flight (the engine); ``caps``: how many bets and how much stake a round and a
        seat may hold; ``bet_placed``: told of each bet journaled, inside its
        transaction (the extensions'); ``admission``: the game's own rules, in order."""
        self._db = db
        self._journal_bets = bets
        self._rounds = rounds
        self.game = game
        self.rules = rules
        self.limits = limits
        self._flight = flight
        self.caps = caps or BetCaps()
        self._bet_placed = bet_placed or (lambda round_id, bet: None)
        self.admission = tuple(admission)
        #: The bets in play in one round, as journaled: ``(round_id, {bet_id: Bet})`` in
        #: the order placed; loaded from the journal for any other round (after a
        #: restart, after a rollback).
        self._bets: tuple[str, dict[str, Bet]] | None = None

    def set_limits(self, limits: Limits) -> None:
        """New stake limits (SIGHUP reload): they apply to the next bet."""
        self.limits = limits

    # -- the bets in play ----------------------------------------------------------
    def _of(self, round_id: str) -> dict[str, Bet]:
        if self._bets is None or self._bets[0] != round_id:
            records = self._journal_bets.bets(round_id, include_cancelled=False)
            self._bets = (round_id, {b.bet_id: b.to_bet() for b in records})
        return self._bets[1]

    def in_play(self, round_id: str) -> list[Bet]:
        """The bets in play in ``round_id``, in the order placed: the very objects each
        call while nothing changes them (what a result settles, ``table/ahead.py``)."""
        return list(self._of(round_id).values())

    def bets(self) -> list[Bet]:
        """The bets in play in the round in flight, in the order placed."""
        cur = self._flight.current
        return [] if cur is None else self.in_play(cur.round_id)

    def forget(self) -> None:
        """A transaction rolled back: read the bets in play from the journal again."""
        self._bets = None

    # -- placing ---------------------------------------------------------------------
    def place(
        self, raw: object, *, round_id: str | None = None, principal: str | None = None
    ) -> BetAnswer:
        """Validate and journal a bet. Never raises for bad input: answers rejected.

        ``round_id``: the round the bet is for (the floor always names it; None: the
        round in progress). A bet already journaled under its ``bet_id`` in that round
        is answered as it stands, in every phase, even after the round ended: the same
        content by the same principal ``accepted`` (it will be settled), anything else
        ``BET_ID_CONFLICT``, a cancelled one ``BET_ID_CANCELLED``. A round that is not
        the one in progress takes no new bet (``STALE_ROUND``). ``principal``: who
        places it (only they may cancel it)."""
        bet_id = raw.get("bet_id", "") if isinstance(raw, Mapping) else ""
        bet_id = bet_id if isinstance(bet_id, str) else ""
        if round_id is not None and bet_id:
            named = self._named_round(raw, round_id, bet_id, principal)
            if named is not None:
                return named
        cur, phase = self._flight.current, self._flight.phase
        if phase is not Phase.OPEN or cur is None:
            code = "BETTING_CLOSED" if cur else "NO_ROUND"
            return BetAnswer(
                False,
                bet_id,
                code,
                f"betting is not open (phase {phase.value})",
                cur.round_id if cur else None,
            )
        rid = cur.round_id
        storage = self._db.storage.blocked()
        if storage is not None:
            return BetAnswer(False, bet_id, storage.code, storage.message, rid)
        try:
            bet = self.game.parse_bet(self.rules, raw, self.limits)
        except BetError as exc:
            return BetAnswer(False, bet_id, exc.code, exc.message, rid)
        if not bet.bet_id:
            return BetAnswer(
                False, "", "BET_MISSING_FIELD", "bet_id is required on the floor interface", rid
            )
        for rule in self.admission:
            refused = rule(bet, cur)
            if refused is not None:
                return BetAnswer(False, bet.bet_id, refused.code, refused.message, rid)
        if self._journal_bets.bet(rid, bet.bet_id) is None:
            capped = self.caps.refusal(bet, self.in_play(rid), rid)
            if capped is not None:
                return capped
        return self._journal(bet, rid, principal)

    def _named_round(
        self, raw: object, round_id: str, bet_id: str, principal: str | None
    ) -> BetAnswer | None:
        """The answer a bet naming ``round_id`` gets before anything is parsed: the bet
        as it stands when journaled there, ``ROUND_PRUNED`` or ``STALE_ROUND`` when that
        round is not in progress; None: it is, and the bet is new there."""
        known = self._journal_bets.bet(round_id, bet_id)
        if known is not None:
            return answer_again(self.game, self.rules, known, raw, principal)
        cur = self._flight.current
        if cur is not None and cur.round_id == round_id:
            return None
        gone = pruned(self._rounds, round_id)
        if gone is not None:
            return BetAnswer(False, bet_id, "ROUND_PRUNED", gone, round_id)
        return BetAnswer(
            False,
            bet_id,
            "STALE_ROUND",
            f"the bet is for round {round_id}; "
            + (
                f"the round in progress is {cur.round_id} (phase {cur.phase})"
                if cur
                else "no round is in progress"
            ),
            cur.round_id if cur else None,
        )

    def _journal(self, bet: Bet, rid: str, principal: str | None) -> BetAnswer:
        """Journal a bet admitted in the open round ``rid`` and keep it in play."""
        try:
            # one transaction (or the request's): what the extensions journal of a new
            # bet (a large transaction) commits with it, or neither does
            with self._db.transaction():
                record, created = self._journal_bets.place_bet(
                    rid, bet, phases=[Phase.OPEN.value], principal=principal
                )
                if created:
                    self._bet_placed(rid, record.to_bet())
        except BetConflict as exc:
            return BetAnswer(
                False,
                bet.bet_id,
                "BET_ID_CONFLICT",
                str(exc.args[0]) if exc.args else str(exc),
                rid,
            )
        except (PhaseNotAllowed, RoundFinished) as exc:
            return BetAnswer(
                False, bet.bet_id, "BETTING_CLOSED", str(exc.args[0]) if exc.args else str(exc), rid
            )
        except StorageError as exc:
            return BetAnswer(False, bet.bet_id, exc.code, exc.message, rid)
        if record.status != "placed":
            return BetAnswer(
                False,
                bet.bet_id,
                "BET_ID_CANCELLED",
                f"bet {bet.bet_id!r} was cancelled in round {rid}; a new bet needs a new bet_id",
                rid,
            )
        if record.principal != principal:
            return BetAnswer(
                False,
                bet.bet_id,
                "BET_ID_CONFLICT",
                f"bet id {bet.bet_id!r} is already used in round {rid} by another principal",
                rid,
            )
        self._of(rid)[record.bet_id] = record.to_bet()
        self._db.on_rollback(self.forget)
        return BetAnswer(True, bet.bet_id, round_id=rid, bet=record.to_bet().to_json())

    # -- cancelling ------------------------------------------------------------------
    def cancel(
        self, bet_id: object, *, round_id: str | None = None, principal: str | None = None
    ) -> BetAnswer:
        """Cancel a bet while betting is open; only its ``principal`` may. A bet already
        cancelled is answered ``accepted`` again, in every phase (a retry). ``round_id``:
        the round the bet is in (the floor always names it)."""
        if not isinstance(bet_id, str) or not bet_id:
            return BetAnswer(False, "", "BET_MALFORMED", "cancel needs a bet_id string")
        cur, phase = self._flight.current, self._flight.phase
        rid = round_id if round_id is not None else (cur.round_id if cur else None)
        known = self._journal_bets.bet(rid, bet_id) if rid is not None else None
        if known is not None and known.principal != principal:
            return BetAnswer(
                False,
                bet_id,
                "BET_NOT_OWNER",
                f"bet {bet_id!r} of round {rid} was placed by another principal; only they "
                "may cancel it",
                rid,
            )
        if known is not None and known.status == "cancelled":
            return BetAnswer(True, bet_id, round_id=rid)
        if round_id is not None and (cur is None or cur.round_id != round_id):
            return BetAnswer(
                False,
                bet_id,
                "STALE_ROUND" if known is None else "BETTING_CLOSED",
                f"round {round_id} is not in progress"
                + (f"; the round in progress is {cur.round_id}" if cur else "")
                + ("" if known is None else f": bet {bet_id!r} stands and will be settled"),
                cur.round_id if cur else None,
            )
        if phase is not Phase.OPEN or cur is None:
            return BetAnswer(
                False,
                bet_id,
                "BETTING_CLOSED",
                f"bets cannot be cancelled in phase {phase.value}"
                + ("" if known is None else f": bet {bet_id!r} stands and will be settled"),
                cur.round_id if cur else None,
            )
        rid = cur.round_id
        try:
            self._journal_bets.cancel_bet(rid, bet_id, phases=[Phase.OPEN.value])
        except BetNotFound:
            return BetAnswer(
                False, bet_id, "BET_NOT_FOUND", f"no bet {bet_id!r} in round {rid}", rid
            )
        except (PhaseNotAllowed, RoundFinished) as exc:
            return BetAnswer(False, bet_id, "BETTING_CLOSED", str(exc), rid)
        except StorageError as exc:
            return BetAnswer(False, bet_id, exc.code, exc.message, rid)
        self._of(rid).pop(bet_id, None)
        self._db.on_rollback(self.forget)
        return BetAnswer(True, bet_id, round_id=rid)

    # -- a player's decision ---------------------------------------------------------
    def add_decision(self, raw: Mapping[str, JSON]) -> Bet:
        """A bet created by a player's decision after betting closed (stud raise,
        blackjack double/split/insurance): validated by the rules core, journaled.
        Raises :class:`~.roundfault.RoundFault` (``WRONG_PHASE`` unless betting is
        closed, ``BET_ID_CANCELLED``, a storage fault's code) or the rules core's
        :class:`~firmware_host.games.errors.BetError`."""
        cur, phase = self._flight.current, self._flight.phase
        if phase is not Phase.CLOSED or cur is None:
            raise RoundFault(
                f"cannot add a decision bet in phase {phase.value!r} (allowed: closed)",
                code="WRONG_PHASE",
            )
        bet = self.game.parse_bet(self.rules, raw, self.limits)
        with writing(), self._db.transaction():
            record, created = self._journal_bets.place_bet(
                cur.round_id, bet, phases=[Phase.CLOSED.value]
            )
            if created:
                self._bet_placed(cur.round_id, record.to_bet())
        if record.status != "placed":
            raise RoundFault(
                f"bet {bet.bet_id!r} was cancelled in round {cur.round_id}", code="BET_ID_CANCELLED"
            )
        self._of(cur.round_id)[record.bet_id] = record.to_bet()
        self._db.on_rollback(self.forget)
        return bet
