"""The round engine: one table's rounds from betting open to settled or void.

Phases (:class:`~firmware_host.table.phase.Phase`): ``open`` (betting open) ->
``closed`` (no more bets) -> ``settled``; or ``void`` from either, every bet refunded.
A result that arrives in the wrong phase is refused with :class:`RoundFault` and never
settled.

The engine is synchronous and is called from the daemon's event loop by the game's
*procedure* (``firmware_host/table/procedures/``), which turns device events and dealer
inputs into engine calls following the regulation's own procedure, and by the floor's
requests. The round's bets are its bet desk's (:attr:`RoundEngine.desk`,
``admission.py``: placed, cancelled, added by a decision, in play), which reads the
round in flight and its phase here; a result settles the bets in play the desk holds. Every change is one journal transaction that also queues the MQTT messages
announcing it, so a lifecycle event is published if and only if the change is
committed. A result is settled in the transaction that records it: the outcome, the
settlement, its outbox entries, the jackpot meter and the raw frames that carried the
result are committed together, before anything is published.

Collaborators come through the constructor: the parts of the journal it writes
through (:class:`~.journaling.RoundJournal`: its database, rounds, bets, raw frames, chain and
outbox, and the rounds' history the extensions rebuild from), the progressive jackpot
(which takes part in each settle and void), what stops play (latched faults), the
table's extensions, told of every committed phase change, settled and voided round,
the game's admission rules and the caps (handed to the desk), and what runs the
settlements ahead (``ahead.py``).

A storage fault (disk full, I/O error: ``firmware_host/journal/storage.py``) changes
nothing: the operation is refused with the fault's code (``DISK_FULL``,
``JOURNAL_IO``); while the fault is latched new bets and rounds are refused up front,
and raw frames and fault reports that cannot be written are skipped (the journal's
guard has logged the fault once).

After a restart, :meth:`RoundEngine.resume` voids every round a crash left unfinished
(refunding every bet, reason recorded): since a result is journaled only with its
settlement, an unfinished round never has a result. Nothing is settled twice: the
journal refuses it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from .. import __version__
from ..collector import collector_held
from ..games.base import Limits
from ..journal import OutboxMessage, RoundRecord, StorageError, new_round_id
from ..jsonio import JSON
from ..schemas import PAYLOAD_SCHEMA_VERSION
from ..table_config import TableConfig
from ..timefmt import iso_utc, utc_now
from .admission import AdmissionRule, BetDesk
from .ahead import Ahead, Runner
from .bets import BetAnswer, BetCaps
from .extension import RoundHistory, TableExtensions
from .jackpot import JackpotController
from .journaling import RoundJournal
from .payload import refunds, round_payload, void_body
from .phase import Phase
from .roundfault import RoundFault, StaleRound, writing

log = logging.getLogger(__name__)

#: A raw device frame: (device, direction, data).
Frame = tuple[str, Literal["rx", "tx"], bytes]

__all__ = [
    "BetAnswer",
    "BetCaps",
    "BetDesk",
    "Frame",
    "Phase",
    "RoundEngine",
    "RoundFault",
    "RoundJournal",
    "StaleRound",
]


class RoundEngine:
    """Rounds of one table, journaled. Not thread-safe: call it from the event loop."""

    def __init__(
        self,
        cfg: TableConfig,
        journal: RoundJournal,
        *,
        jackpot: JackpotController | None = None,
        play_stop: Callable[[], str | None] | None = None,
        extensions: TableExtensions | None = None,
        clock: Callable[[], datetime] = utc_now,
        caps: BetCaps | None = None,
        dealer: Callable[[], str | None] | None = None,
        admission: Sequence[AdmissionRule] = (),
        runner: Runner | None = None,
    ) -> None:
        """``jackpot``: the progressive jackpot, which takes part in every settle and
        void; ``play_stop``: why play is stopped (a latched fault), or None: no round
        opens while it says so; ``extensions``: told of every committed change (after
        the commit: inside a grouped transaction, once it commits); ``caps``: how many
        bets and how much stake a round and a seat may hold; ``dealer``: the dealer on
        duty; ``admission``: the game's own admission rules (:class:`~.admission.BetDesk`);
        ``runner``: what runs the settlements ahead (``table/ahead.py``; None: every
        result settles on its path).

        Rounds a crash left in flight are not the engine's to act on: no result, bet or
        command reaches them (the phase is idle) until :meth:`resume` voids them, which
        the daemon calls once the journal was compared with the floor, and which the
        next :meth:`open_betting` calls first if it was not (a technician let the table
        play without the floor's check)."""
        #: The dealer on duty, in every round payload (``integrity/pace.py``; issue 19).
        self._dealer: Callable[[], JSON] = dealer if dealer is not None else lambda: None
        self.cfg = cfg
        self.game = cfg.game
        self.rules = cfg.rules
        self._db = journal.db
        self._rounds = journal.rounds
        self._journal_bets = journal.bets  # read by a void (what it refunds)
        self._frames = journal.frames
        self._chain = journal.chain
        self._outbox = journal.outbox
        self._history: RoundHistory = journal
        self.jackpot = jackpot
        self._play_stop = play_stop or (lambda: None)
        self.extensions = extensions if extensions is not None else TableExtensions()
        self._clock = clock
        self._current: RoundRecord | None = None
        #: Whether rounds a crash left in flight wait for :meth:`resume`, and whether it ran.
        self._left_in_flight = bool(self._rounds.in_flight(cfg.table_id))
        self._resumed = False
        #: The bets of the round in flight: placed, cancelled, added by a decision, in
        #: play (``admission.py``); it reads the round in flight and its phase here.
        self.desk = BetDesk(
            journal.db,
            journal.bets,
            journal.rounds,
            cfg.game,
            cfg.rules,
            cfg.limits,
            flight=self,
            caps=caps,
            bet_placed=self.extensions.bet_placed,
            admission=admission,
        )
        #: Settlements made while the result is awaited (``ahead.py``).
        self.ahead = Ahead(runner)

    # -- state -----------------------------------------------------------------
    @property
    def current(self) -> RoundRecord | None:
        return self._current

    @property
    def phase(self) -> Phase:
        return Phase(self._current.phase) if self._current else Phase.IDLE

    def get_status(self) -> dict[str, JSON]:
        cur = self._current
        return {
            "table_id": self.cfg.table_id,
            "game": self.cfg.game_id,
            "phase": self.phase.value,
            "round_id": cur.round_id if cur else None,
            "seq": cur.seq if cur else None,
            "version": __version__,
        }

    def set_limits(self, limits: Limits) -> None:
        """New stake limits (SIGHUP reload): they apply to the next bet."""
        self.cfg = dataclasses.replace(self.cfg, limits=limits)
        self.desk.set_limits(limits)

    def _event(
        self, kind: str, data: Mapping[str, JSON] | None = None, round_id: str | None = None
    ) -> OutboxMessage:
        payload: dict[str, JSON] = {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": self.cfg.table_id,
            "event": kind,
            "at": iso_utc(self._clock()),
        }
        rid = (
            round_id
            if round_id is not None
            else (self._current.round_id if self._current else None)
        )
        if rid is not None:
            payload["round_id"] = rid
        if data:
            payload["data"] = dict(data)
        return OutboxMessage("events", payload, qos=1, retain=False, round_id=rid)

    def _notify_phase(self) -> None:
        phase, rnd = self.phase, self._current
        self._db.after_commit(self._later(lambda: self.extensions.phase_changed(phase, rnd)))
        self._db.on_rollback(self._resync)

    def _later(self, hook: Callable[[], None]) -> Callable[[], None]:
        """``hook`` (an extension's), run after the commit through the journal's
        deferrer: in the daemon, once the publisher has written what the commit queued
        (the extensions' work comes after the publication, never before it). Every hook
        goes through the same deferrer (``new_shoe`` and ``resumed`` too), so they keep
        their order."""
        return lambda: self._db.later(hook)

    def _resync(self) -> None:
        """The transaction that held our last change rolled back: take the round in
        flight and its bets from the journal again (the journal is the record)."""
        in_flight = self._rounds.in_flight(self.cfg.table_id)
        self._current = in_flight[-1] if in_flight and not self._left_in_flight else None
        self.desk.forget()
        if self.jackpot is not None:
            self.jackpot.discard()

    # -- the round a request names ------------------------------------------------
    def check_round(self, round_id: object, what: str) -> RoundRecord:
        """The round in progress, if it is ``round_id``; else :class:`StaleRound`
        naming the round in progress (a command for a round that has ended must never
        act on the next one)."""
        cur = self._current
        if not isinstance(round_id, str) or not round_id:
            raise RoundFault(f"{what} must name its round_id", code="MALFORMED_REQUEST")
        if cur is None:
            raise StaleRound(
                f"{what} names round {round_id}; no round is in progress"
                + (f" (the last round was {last})" if (last := self.last_round_id()) else ""),
                None,
            )
        if cur.round_id != round_id:
            raise StaleRound(
                f"{what} names round {round_id}; the round in progress is {cur.round_id} "
                f"(phase {cur.phase})",
                cur.round_id,
            )
        return cur

    def last_round_id(self) -> str | None:
        """The table's latest round, in flight or finished (what opening betting follows)."""
        last = self._rounds.summary(1, table_id=self.cfg.table_id)
        return last[0].round_id if last else None

    def check_follows(self, after_round_id: object, command: str = "open_betting") -> None:
        """Opening betting (and a new shoe) names the round it follows (None on a table
        that never played): a retried open, after its round opened, must not open another;
        a late new shoe must not wipe the roads of a shoe already in play."""
        if after_round_id is not None and not isinstance(after_round_id, str):
            raise RoundFault("after_round_id must be a round id or null", code="MALFORMED_REQUEST")
        last = self.last_round_id()
        if after_round_id != last:
            cur = self._current
            raise StaleRound(
                f"{command} follows round {after_round_id}; the table's last round is "
                f"{last}" + (f", in progress (phase {cur.phase})" if cur else ", finished"),
                cur.round_id if cur else None,
            )

    def report_fault(self, kind: str, data: Mapping[str, JSON]) -> None:
        """Publish a fault on ``events`` (``result_refused``, ``misdeal``,
        ``device_problem``...) against the round in flight, and write it to the event log."""
        log.warning("%s: %s", kind, data)
        with contextlib.suppress(StorageError):  # the storage fault is logged once
            self._outbox.enqueue(self._event(kind, data))
            self._chain.append_event(kind, dict(data))

    def _require(self, phases: Iterable[Phase], what: str) -> RoundRecord:
        allowed = set(phases)
        if self.phase not in allowed:
            raise RoundFault(
                f"cannot {what} in phase {self.phase.value!r} "
                f"(allowed: {', '.join(sorted(p.value for p in allowed))})",
                code="WRONG_PHASE",
            )
        assert self._current is not None or Phase.IDLE in allowed
        return self._current  # type: ignore[return-value]

    # -- dealer / procedure operations -------------------------------------------
    def open_betting(self, *, source: str = "dealer") -> RoundRecord:
        """Start a new round with betting open (art. 3 of each regulation: after the
        previous round has been settled)."""
        self._require([Phase.IDLE], "open betting")
        stopped = self._play_stop()
        if stopped:
            raise RoundFault(stopped, code="PLAY_STOPPED")
        if self._left_in_flight:
            self.resume()  # in the same step as the round that opens
        storage = self._db.storage.blocked()
        if storage is not None:
            raise RoundFault(storage.message, code=storage.code)
        at = self._clock()
        with writing():
            seq = self._rounds.next_seq(self.cfg.table_id)
            round_id = new_round_id(self.cfg.table_id, seq)
            msg = self._event("betting_open", {"source": source, "seq": seq}, round_id)
            self._current = self._rounds.open_round(
                self.cfg.table_id,
                self.cfg.game_id,
                self.game.rules_json(self.rules),
                round_id=round_id,
                seq=seq,
                phase=Phase.OPEN.value,
                at=at,
                outbox=[msg],
            )
        self._notify_phase()
        return self._current

    def close_betting(self, *, source: str = "dealer") -> RoundRecord:
        """No more bets (the bell, the wheel's state 4, a dealer command)."""
        rnd = self._require([Phase.OPEN], "close betting")
        with writing():
            self._current = self._rounds.set_phase(
                rnd.round_id,
                Phase.CLOSED.value,
                at=self._clock(),
                outbox=[self._event("betting_closed", {"source": source})],
            )
        self._notify_phase()
        if self.jackpot is None:  # a jackpot's settle has state: never ahead
            rid = rnd.round_id
            self.ahead.start(
                self.game, self.rules, self.cfg.money, rid, lambda: self.desk.in_play(rid)
            )
        return self._current

    def reopen_betting(self, reason: str, *, source: str = "dealer") -> RoundRecord:
        """A voided throw (dice stacked or tilted, 57/2004 art. 3 3)-4)): the round goes
        back to betting open; bets stay and new bets may be added."""
        rnd = self._require([Phase.CLOSED, Phase.OPEN], "void the throw")
        with writing():
            self._current = self._rounds.set_phase(
                rnd.round_id,
                Phase.OPEN.value,
                at=self._clock(),
                outbox=[self._event("throw_void", {"reason": reason, "source": source})],
            )
        self.ahead.stop()  # bets may be added: the next close starts again
        self._notify_phase()
        return self._current

    def void_spin(self, reason: str, *, source: str = "device") -> RoundRecord:
        """A null spin (60/2004 art. 2 2)-3)): the ball is launched again; the bets stay
        locked (no new bets, art. 3 2)) and the next spin's number decides the round."""
        rnd = self._require([Phase.OPEN, Phase.CLOSED], "void the spin")
        with writing():
            self._current = self._rounds.set_phase(
                rnd.round_id,
                Phase.CLOSED.value,
                at=self._clock(),
                outbox=[self._event("spin_void", {"reason": reason, "source": source})],
            )
        with contextlib.suppress(StorageError):
            self._chain.append_event(
                "spin_void", {"round_id": rnd.round_id, "reason": reason, "source": source}
            )
        self._notify_phase()
        return self._current

    def new_shoe(self, *, source: str, shuffle: int | None = None) -> dict[str, JSON]:
        """A new shoe is in play (the shoe's shuffle, or a command): journaled and
        published on ``events`` (``new_shoe``), then told to the extensions (the roads of
        a result board start again). ``after_seq``: the last round of the old shoe (a
        round in flight belongs to the new one)."""
        cur = self._current
        after = cur.seq - 1 if cur is not None else self._rounds.next_seq(self.cfg.table_id) - 1
        data: dict[str, JSON] = {"source": source, "after_seq": after}
        if shuffle is not None:
            data["shuffle"] = shuffle
        self._chain.append_event("new_shoe", data, outbox=[self._event("new_shoe", data)])
        self._db.later(lambda: self.extensions.new_shoe(data))  # after the hooks before it
        return data

    def record_frames(self, frames: Sequence[Frame], round_id: str | None = None) -> None:
        """Keep raw device frames ``(device, direction, data)`` against ``round_id``, by
        default the current round (game recall)."""
        if round_id is None and self._current is not None:
            round_id = self._current.round_id
        if frames:
            with contextlib.suppress(StorageError):  # frames are evidence, not state
                self._frames.add_many([(round_id, *f) for f in frames])

    def submit_result(
        self,
        raw_outcome: JSON,
        *,
        source: str = "device",
        frames: Sequence[Frame] = (),
    ) -> Mapping[str, JSON]:
        """The round's outcome as read from the hardware: settle it and journal the
        outcome, the settlement, its outbox entries, the jackpot and ``frames``
        ``(device, direction, data)`` (the raw frames that carried the result) in ONE
        transaction.

        Settling is pure and happens first: an outcome that does not fit the round's bets
        (a stud place dealt without an ante...) is refused with nothing journaled and the
        round stays as it was, for the dealer to correct or void. Refused
        (:class:`RoundFault`) unless betting is closed; an impossible outcome raises
        :class:`~firmware_host.games.errors.OutcomeError`.
        """
        rnd = self._require([Phase.CLOSED], "take a result")
        outcome = self.game.parse_outcome(self.rules, raw_outcome)
        canonical = self.game.outcome_json(outcome)
        event = self._event("result", {"outcome": canonical, "source": source})
        with collector_held():
            return self._settle(rnd, outcome, canonical, [event], frames)

    def _settle(
        self,
        rnd: RoundRecord,
        outcome: Any,
        canonical: JSON,
        outbox: Sequence[OutboxMessage] = (),
        frames: Sequence[Frame] = (),
    ) -> Mapping[str, JSON]:
        """Settle ``rnd`` with ``outcome``: one journal transaction."""
        bets = self.desk.in_play(rnd.round_id)
        extras: dict[str, JSON] = {}
        hits: list[Any] = []
        jp_state = None
        theo = None
        jackpot = self.jackpot
        if jackpot is not None:
            share = jackpot.settle(
                self.game, self.rules, outcome, bets, self.cfg.money, rnd.round_id
            )
            assert share.settlement is not None
            settlement, hits, jp_state = share.settlement, share.hits, share.state
            extras.update(share.extras)
            body = settlement.to_json()
        else:
            settlement, body, theo = self.ahead.settle(
                self.game, self.rules, self.cfg.money, rnd.round_id, outcome, bets
            )
        at = self._clock()
        stamps = dict(rnd.timestamps)
        stamps.setdefault("result", iso_utc(at))
        rnd = dataclasses.replace(rnd, timestamps=stamps)
        payload = round_payload(
            self.cfg, rnd, "settled", body, at, extras=extras, dealer=self._dealer(), theo=theo
        )
        try:
            with writing():
                self._rounds.settle_round(
                    rnd.round_id,
                    canonical,
                    payload,
                    jp_state,
                    jackpot_name="progressive",
                    jackpot_hits=hits,
                    outbox=outbox,
                    at=at,
                    raw_frames=frames,
                )
        except BaseException:
            if jackpot is not None:
                jackpot.discard()
            raise
        if jackpot is not None:
            hit = bool(hits)
            self._db.after_commit(lambda: jackpot.committed(hit))
        self._current = None
        # what was computed ahead is freed at the next close (ahead.release), not while
        # the round travels to the floor
        self._db.after_commit(self._later(lambda: self.extensions.round_settled(payload)))
        self._notify_phase()
        return payload

    def void_round(self, reason: str, *, source: str = "dealer") -> Mapping[str, JSON]:
        """Void the round in flight: every bet refunded, the reason recorded and published."""
        rnd = self._require([Phase.OPEN, Phase.CLOSED], "void a round")
        if not reason:
            raise RoundFault("a void needs a reason", code="VOID_NEEDS_REASON")
        return self._void(rnd, reason, source)

    def _void(self, rnd: RoundRecord, reason: str, source: str) -> Mapping[str, JSON]:
        self.ahead.stop()
        with writing():
            bets = self._journal_bets.bets(rnd.round_id, include_cancelled=False)
        refunded = refunds([b.to_bet() for b in bets])
        jackpot = self.jackpot
        jp_state = None
        extras: dict[str, JSON] = {}
        if jackpot is not None:
            # what the jackpot carries to the next game is not refunded (jackpot.void)
            share = jackpot.void([b.to_bet() for b in bets])
            jp_state = share.state
            refunded = [r for r in refunded if r["bet_id"] not in share.carried]
            extras.update(share.extras)
        body = void_body(rnd, refunded)
        at = self._clock()
        payload = round_payload(
            self.cfg, rnd, "void", body, at, void_reason=reason, extras=extras, dealer=self._dealer()
        )
        try:
            with writing():
                self._rounds.void_round(
                    rnd.round_id,
                    reason,
                    payload,
                    at=at,
                    jackpot_state=jp_state,
                    jackpot_name="progressive",
                    events=[("round_void_by", {"round_id": rnd.round_id, "source": source})],
                )
        except BaseException:
            if jackpot is not None:
                jackpot.discard()
            raise
        if jackpot is not None:
            self._db.after_commit(lambda: jackpot.committed(False))
        self._current = None
        self._db.after_commit(self._later(lambda: self.extensions.round_voided(payload)))
        self._notify_phase()
        return payload

    # -- restart -----------------------------------------------------------------
    def resume(self) -> list[Mapping[str, JSON]]:
        """Resolve rounds left in flight by a crash or power loss, then tell the
        extensions (:meth:`~firmware_host.table.extension.TableExtension.resumed`).

        A result is journaled only in the transaction that settles it, so a round in
        flight never has one: each is voided with its bets refunded and the reason
        recorded (published on ``rounds`` like any void). Once per engine: the rounds
        it opens itself are never voided here.
        """
        if self._resumed:
            return []  # a round in flight now is this engine's own: never voided here
        done = []
        for rnd in self._rounds.in_flight(self.cfg.table_id) if self._left_in_flight else ():
            self._current = rnd
            reason = f"controller restarted in phase {rnd.phase!r} before the result was read"
            done.append(self._void(rnd, reason, "restart"))
            log.warning("resumed round %s: void, %s", rnd.round_id, reason)
        self._current = None
        self._left_in_flight, self._resumed = False, True
        self._db.later(lambda: self.extensions.resumed(done, self._history))  # hooks in order
        return done
