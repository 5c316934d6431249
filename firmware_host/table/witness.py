"""A second, independent reading of every result: the witness (issue 32; ``docs/witness.md``).

A table that names a witness (``[witness]``, ``witness_settings.py``) settles a round
only when the reading of its result device (the *primary*, as its procedure submits it)
and the witness's reading agree. :class:`ResultWitness` stands between the procedure and
the round engine (the procedure's :class:`~.procedures.base.ResultSink`):

- each reading, when it comes, is journaled in the audit chain with its raw frames
  (``result_reading``: which reading, the outcome in the game's form, its source, the
  frames in base64);
- both read and agreeing (the game's own ``same_outcome``: a sic bo camera may list the
  dice in another order): the round settles on the primary reading, in one transaction
  with the ``result_witnessed`` chain entry and both readings' frames;
- they disagree, or the witness has not read ``timeout_s`` after the primary: the round
  is **held** (``result_disputed`` on ``events`` and in the chain with both readings and
  their frames, the frames kept against the round, the latched fault ``RESULT_DISPUTED``
  that stops the next round, and the alert ``RESULT_DISPUTED`` held until acknowledged:
  :class:`WitnessHealth`). Nothing is settled; betting stays closed; the procedure
  ignores the device's next game while a result is held;
- a supervisor resolves it with the signed command ``resolve_result`` naming which
  reading stands (two principals where ``[auth] two_person`` lists it): the round
  settles on it (``result_resolved`` in the chain, in the settlement's transaction) and
  the fault clears; or voids the round (``void_round``), which clears it too.

The witness's reading comes as the signed command ``witness_result`` (an ``mqtt``
witness: a principal of its own, verified like any), or from a second device of the
result's kind or the dealer's keypad (its events, :meth:`ResultWitness.on_device_event`).
A reading for a round not closed yet (``WITNESS_TOO_EARLY``), a second one for a round
(``WITNESS_ALREADY_READ``), from a principal that is not the witness
(``NOT_THE_WITNESS``), or for another round (``STALE_ROUND``, before the handler) is
refused and journaled with its answer; a forged one never passes the floor's signature
check. The rules core is asked, never changed: it parses each reading and says whether
two agree.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tablecommon.events.base import DeviceEvent
from tablecommon.events.keypad import KeypadResult
from tablecommon.events.shaker import DiceRead
from tablecommon.events.wheel import WinningNumber

from ..journal import AuditLog, Database, FaultStore, RequestStore
from ..jsonio import JSON, canonical_json
from ..timefmt import iso_utc, utc_now
from .commands import CommandCall, Commands
from .engine import Frame, RoundEngine
from .extension import RoundHistory, TableExtension, TableExtensions
from .phase import Phase
from .reading import RequestError, reason_text
from .roundfault import RoundFault
from .witness_settings import WitnessSettings

log = logging.getLogger(__name__)

__all__ = [
    "FAULT",
    "Reading",
    "ResultWitness",
    "WitnessDevice",
    "WitnessHealth",
    "without_witness",
]

#: The latched fault and the alert of a held result.
FAULT = "RESULT_DISPUTED"
READINGS = ("primary", "witness")

#: ``listener(news, data)``: ``reading``, ``agreed``, ``disputed``, ``resolved``, ``voided``.
Listener = Callable[[str, Mapping[str, JSON]], None]


@dataclass(frozen=True)
class Reading:
    """One reading of a round's result: the outcome in the game's canonical form, where
    it came from, its raw frames, when (wall clock, and monotonic for the lag)."""

    outcome: JSON
    parsed: Any
    source: str
    frames: tuple[Frame, ...]
    at: datetime
    mono: float

    def to_json(self) -> dict[str, JSON]:
        return {
            "outcome": self.outcome,
            "source": self.source,
            "at": iso_utc(self.at),
            "frames": [
                {"device": d, "direction": k, "data": base64.b64encode(b).decode("ascii")}
                for d, k, b in self.frames
            ],
        }


@dataclass
class _Round:
    """The readings of the round in flight, and whether its result is held."""

    round_id: str
    primary: Reading | None = None
    witness: Reading | None = None
    #: Why the result is held (``disagree``, ``timeout``), or None.
    disputed: str | None = None
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


def without_witness(commands: Commands) -> None:
    """A table that names no witness: its commands are refused with ``NO_WITNESS``."""
    for name in ("witness_result", "resolve_result"):
        commands.unavailable(name, "NO_WITNESS", "this table names no witness ([witness])")


class ResultWitness(TableExtension):
    """Holds each result until the witness agrees (see the module docstring).

    ``engine``: the round engine it settles through; ``db``, ``chain``, ``faults``,
    ``approvals``: the journal's parts it writes (one transaction with the settlement,
    the chain's readings, the latched fault, two-person approvals); ``extensions``: it
    follows the rounds (a void ends a held result, a restart clears its fault)."""

    name = "witness"

    def __init__(
        self,
        settings: WitnessSettings,
        engine: RoundEngine,
        *,
        db: Database,
        chain: AuditLog,
        faults: FaultStore,
        approvals: RequestStore,
        extensions: TableExtensions,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self._db, self._chain, self._faults, self._approvals = db, chain, faults, approvals
        self._clock, self._mono = clock, monotonic
        self._round: _Round | None = None
        self._listeners: list[Listener] = []
        extensions.add(self)

    def add_listener(self, listener: Listener) -> None:
        """``listener(news, data)`` after each reading, agreement, dispute, resolution."""
        self._listeners.append(listener)

    def _tell(self, news: str, data: Mapping[str, JSON]) -> None:
        for listener in list(self._listeners):
            try:
                listener(news, data)
            except Exception:  # health and alerts must never stop a result
                log.exception("witness: listener failed on %s", news)

    # -- what the procedure sees (ResultSink) -------------------------------------------
    def holding(self) -> bool:
        """Whether the round in flight has its primary reading and waits for the witness
        or for a supervisor: the device's next game is not a round of it."""
        r = self._round
        cur = self.engine.current
        return (
            r is not None
            and r.primary is not None
            and cur is not None
            and (cur.round_id == r.round_id)
        )

    def held(self) -> dict[str, JSON] | None:
        """The held result, as ``status`` and the console show it, or None."""
        r = self._current()
        if r is None or r.primary is None:
            return None
        return {
            "round_id": r.round_id,
            "disputed": r.disputed,
            "primary": r.primary.outcome,
            "witness": r.witness.outcome if r.witness is not None else None,
        }

    def submit_result(
        self, raw_outcome: JSON, *, source: str, frames: Sequence[Frame] = ()
    ) -> Mapping[str, JSON] | None:
        """The primary reading (the procedure's): held until the witness agrees; None
        (nothing settled yet), or the settled round's payload when the witness had
        already read and agrees."""
        r, reading = self._reading(raw_outcome, source, frames, "a result")
        if r.primary is not None:
            raise RoundFault(
                f"round {r.round_id} already has its reading ({r.primary.source}); it is "
                + ("held for a supervisor" if r.disputed else "waiting for the witness"),
                code="RESULT_HELD",
            )
        with self._undone(r), self._db.transaction("witness_primary"):
            r.primary = reading
            self._journal(r, "primary", reading)
            if r.witness is not None:
                return self._compare(r)
        self._arm(r)
        return None

    # -- the witness's reading -------------------------------------------------------------
    def register_commands(self, commands: Commands) -> None:
        commands.register("resolve_result", self.resolve_command)
        if self.settings.source == "mqtt":
            commands.register("witness_result", self.reading_command)
        else:
            commands.unavailable(
                "witness_result",
                "NOT_THE_WITNESS",
                f"this table's witness is its {self.settings.source} "
                f"devices.{self.settings.device}",
            )

    def reading_command(self, call: CommandCall) -> JSON:
        """``witness_result`` ``{"outcome": ...}``, signed by the witness's principal."""
        who = call.who
        name = who.name if who is not None else call.via
        wanted = self.settings.principal
        if wanted and name != wanted:
            log.warning("witness: reading from %s refused: not the witness %s", name, wanted)
            raise RequestError(
                "NOT_THE_WITNESS",
                f"{name} is not this table's witness ({wanted}): only the witness's readings count",
            )
        if "outcome" not in call.args:
            raise RequestError("MALFORMED_REQUEST", "witness_result needs an 'outcome'")
        evidence = {
            "request_id": call.request_id,
            "principal": name,
            "verified": who.verified if who is not None else False,
            "key": who.key if who is not None else None,
            "round_id": call.round_id,
            "outcome": call.args["outcome"],
        }
        frame: Frame = (self.settings.name, "rx", canonical_json(evidence).encode())
        try:
            return self.witness_reading(call.args["outcome"], call.source, (frame,))
        except Exception as exc:
            log.warning("witness: reading of %s refused: %s", name, exc)
            raise

    def witness_reading(
        self, raw_outcome: JSON, source: str, frames: Sequence[Frame] = ()
    ) -> dict[str, JSON]:
        """The witness's reading of the round in flight: compared with the primary's
        when both are in; kept as evidence when the round is already held."""
        r, reading = self._reading(raw_outcome, source, frames, "the witness's reading", early=True)
        if r.witness is not None:
            raise RoundFault(
                f"the witness already read round {r.round_id} ({r.witness.source}); a reading "
                "is taken once",
                code="WITNESS_ALREADY_READ",
            )
        with self._undone(r), self._db.transaction("witness_reading"):
            r.witness = reading
            self._journal(r, "witness", reading)
            if r.disputed is not None:  # late: evidence for the supervisor, nothing settles
                self._chain.append_event(
                    "result_reading_late", {"round_id": r.round_id, "disputed": r.disputed}
                )
                return {"round_id": r.round_id, "status": "held", "late": True}
            if r.primary is None:
                return {"round_id": r.round_id, "status": "waiting"}
            payload = self._compare(r)
        status = "settled" if payload is not None else "held"
        return {"round_id": r.round_id, "status": status}

    # -- comparing, settling, holding ------------------------------------------------------
    @contextlib.contextmanager
    def _undone(self, r: _Round) -> Iterator[None]:
        """What the block changes of ``r`` (and which round is followed) is undone when
        its transaction does not commit (a full disk, a settlement the rules refuse): the
        memory never says more than the journal."""
        before = dataclasses.replace(r)
        try:
            yield
        except BaseException:
            r.primary, r.witness, r.disputed = before.primary, before.witness, before.disputed
            self._round = r
            self._arm(r)  # still waiting for the witness: its time runs again
            raise

    def _current(self) -> _Round | None:
        cur = self.engine.current
        r = self._round
        if cur is None or r is None or r.round_id != cur.round_id:
            return None
        return r

    def _reading(
        self, raw: JSON, source: str, frames: Sequence[Frame], what: str, *, early: bool = False
    ) -> tuple[_Round, Reading]:
        """The round in flight (betting closed) and ``raw`` parsed as its outcome
        (``early``: a witness's reading while betting is open is ``WITNESS_TOO_EARLY``)."""
        e = self.engine
        cur = e.current
        if cur is None or e.phase is not Phase.CLOSED:
            raise RoundFault(
                f"{what} is taken once betting is closed; the table is in phase {e.phase.value!r}",
                code="WITNESS_TOO_EARLY" if early and e.phase is Phase.OPEN else "WRONG_PHASE",
            )
        parsed = e.game.parse_outcome(e.rules, raw)  # OutcomeError: the game's own code
        r = self._current()
        if r is None:
            self._cancel(self._round)
            r = self._round = _Round(cur.round_id)
        reading = Reading(
            e.game.outcome_json(parsed), parsed, source, tuple(frames), self._clock(), self._mono()
        )
        return r, reading

    def _journal(self, r: _Round, which: str, reading: Reading) -> None:
        self._chain.append_event(
            "result_reading", {"round_id": r.round_id, "reading": which, **reading.to_json()}
        )
        self._tell("reading", {"round_id": r.round_id, "reading": which, **self._lag(r)})

    def _lag(self, r: _Round) -> dict[str, JSON]:
        if r.primary is None or r.witness is None:
            return {}
        return {"lag_ms": round((r.witness.mono - r.primary.mono) * 1000)}

    def _compare(self, r: _Round) -> Mapping[str, JSON] | None:
        """Both readings in (inside the reading's transaction): settle, or hold."""
        assert r.primary is not None and r.witness is not None
        e = self.engine
        if e.game.same_outcome(e.rules, r.primary.parsed, r.witness.parsed):
            self._chain.append_event(
                "result_witnessed",
                {
                    "round_id": r.round_id,
                    "primary": r.primary.outcome,
                    "witness": r.witness.outcome,
                },
            )
            payload = self._settle(r, r.primary)
            self._tell("agreed", {"round_id": r.round_id, **self._lag(r)})
            return payload
        self._dispute(r, "disagree")
        return None

    def _settle(self, r: _Round, stands: Reading) -> Mapping[str, JSON]:
        assert r.primary is not None
        frames = [*r.primary.frames, *(r.witness.frames if r.witness is not None else ())]
        if r.disputed is not None:
            frames = []  # journaled against the round when it was held
        payload = self.engine.submit_result(stands.outcome, source=stands.source, frames=frames)
        self._cancel(r)
        self._round = None
        return payload

    def _arm(self, r: _Round) -> None:
        if r.disputed is not None or r.witness is not None or r.timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous test): expire() by hand
            return
        r.timer = loop.call_later(self.settings.timeout_s, self._expire_soon, r.round_id)

    def _expire_soon(self, round_id: str) -> None:
        try:
            self.expire(round_id)
        except Exception:
            log.exception("witness: holding round %s after the timeout failed", round_id)
            r = self._current()
            if r is not None and r.round_id == round_id:
                r.timer = None
                self._arm(r)  # tried again a timeout later (the journal may write again)

    def expire(self, round_id: str) -> bool:
        """The witness did not read in time: hold the round (True), if it still waits."""
        r = self._current()
        if r is None or r.round_id != round_id or r.primary is None:
            return False
        if r.witness is not None or r.disputed is not None:
            return False
        r.timer = None
        with self._undone(r), self._db.transaction("witness_timeout"):
            self._dispute(r, "timeout")
        return True

    def _dispute(self, r: _Round, why: str) -> None:
        assert r.primary is not None
        r.disputed = why
        self._cancel(r)
        witness = r.witness.to_json() if r.witness is not None else None
        what = (
            f"the witness read {r.witness.outcome}, the primary {r.primary.outcome}"
            if r.witness is not None
            else f"no witness reading {self.settings.timeout_s} s after the primary "
            f"{r.primary.outcome}"
        )
        message = f"round {r.round_id} held: {what}; resolve_result or void_round"
        data: dict[str, JSON] = {
            "round_id": r.round_id,
            "why": why,
            "primary": r.primary.to_json(),
            "witness": witness,
            "timeout_s": self.settings.timeout_s,
        }
        frames = [*r.primary.frames, *(r.witness.frames if r.witness is not None else ())]
        self.engine.record_frames(frames, r.round_id)
        self._faults.set_fault(FAULT, message, {"round_id": r.round_id, "why": why})
        self.engine.report_fault("result_disputed", data)
        log.error("witness: %s", message)
        self._tell("disputed", {**data, "message": message, **self._lag(r)})

    def _cancel(self, r: _Round | None) -> None:
        if r is not None and r.timer is not None:
            r.timer.cancel()
            r.timer = None

    # -- the supervisor's resolution -------------------------------------------------------
    def resolve_command(self, call: CommandCall) -> JSON:
        """``resolve_result`` ``{"reading": "primary" | "witness", "reason": ...}``."""
        reading = call.args.get("reading")
        if reading not in READINGS:
            raise RequestError(
                "MALFORMED_REQUEST", "resolve_result's 'reading' is 'primary' or 'witness'"
            )
        reason = reason_text(call.args.get("reason"), "resolve_result's 'reason'")
        r = self._current()
        if r is None or r.disputed is None:
            raise RoundFault(
                f"round {call.round_id} has no disputed result to resolve",
                code="RESULT_NOT_DISPUTED",
            )
        stands = r.primary if reading == "primary" else r.witness
        if stands is None:
            raise RoundFault(
                "the witness has not read this round: only the primary reading can stand",
                code="NO_WITNESS_READING",
            )
        who = call.operator
        by: list[str] = [who]
        subject = f"{r.round_id}:{reading}"
        if call.two_person:
            by = self._approvals.approve("resolve_result", subject, who, call.request_id or "")
            if len(by) < 2:
                return {"round_id": r.round_id, "resolved": False, "confirmed_by": list(by)}
        data: dict[str, JSON] = {
            "round_id": r.round_id,
            "reading": reading,
            "outcome": stands.outcome,
            "disputed": r.disputed,
            "by": list(by),
            "reason": reason,
        }
        with self._undone(r), self._db.transaction("resolve_result"):
            self._chain.append_event("result_resolved", data)
            if call.two_person:
                self._approvals.clear_approvals("resolve_result", subject)
            if FAULT in {f.code for f in self._faults.active()}:
                self._faults.clear_fault(FAULT, by=call.source, reason=f"{reading}: {reason}")
            payload = self._settle(r, stands)
        self._tell("resolved", data)
        return {
            "round_id": r.round_id,
            "resolved": True,
            "reading": reading,
            "outcome": stands.outcome,
            "status": payload["status"],
            "confirmed_by": list(by),
        }

    # -- following the rounds --------------------------------------------------------------
    def round_voided(self, payload: Mapping[str, JSON]) -> None:
        r = self._round
        if r is None or r.round_id != payload.get("round_id"):
            return
        self._cancel(r)
        self._round = None
        if r.disputed is not None:
            self._clear(f"round {r.round_id} voided")
        self._tell("voided", {"round_id": r.round_id})

    def resumed(self, resolved: Sequence[Mapping[str, JSON]], history: RoundHistory) -> None:
        """After a restart the held round was voided with its bets refunded (nothing is
        held across a restart): its fault clears."""
        self._clear("the table restarted: the round it held was voided")

    def _clear(self, reason: str) -> None:
        if FAULT in {f.code for f in self._faults.active()}:
            self._faults.clear_fault(FAULT, by="witness", reason=reason)


class WitnessDevice(TableExtension):
    """A ``device`` or ``keypad`` witness: its result events are the witness's readings
    (a second wheel's winning number, a second shaker's dice, the keypad's confirmed
    number). A reading made while betting is open (the dice under the dome) is taken
    when betting closes; one refused is a ``witness_refused`` fault on ``events``."""

    name = "witness-device"

    def __init__(self, witness: ResultWitness, extensions: TableExtensions) -> None:
        self.witness = witness
        self.settings = witness.settings
        #: A reading made while betting was open: taken when betting closes.
        self._sealed: tuple[JSON, str, tuple[Frame, ...]] | None = None
        extensions.add(self)

    async def on_device_event(self, device: str, event: DeviceEvent) -> None:
        """A ``device`` or ``keypad`` witness: its result events are its readings."""
        s = self.settings
        if s.source == "mqtt" or device != s.device:
            return
        raw: JSON = None
        match event:
            case WinningNumber() if s.source == "device" and not event.void_reason:
                raw = {"number": event.number}
            case DiceRead() if s.source == "device" and event.valid:
                raw = {"dice": list(event.dice)}
            case KeypadResult() if s.source == "keypad":
                raw = {"number": event.value}
        if raw is None:
            return
        frames: tuple[Frame, ...] = ((device, "rx", event.raw),) if event.raw else ()
        if self.witness.engine.phase is Phase.OPEN and s.source == "device":
            self._sealed = (raw, device, frames)  # read under the dome: taken at the close
            return
        self._device_reading(raw, device, frames)

    def _device_reading(self, raw: JSON, device: str, frames: tuple[Frame, ...]) -> None:
        try:
            self.witness.witness_reading(raw, device, frames)
        except Exception as exc:
            code = getattr(exc, "code", type(exc).__name__)
            log.warning("witness: reading of %s refused: %s", device, exc)
            self.witness.engine.report_fault(
                "witness_refused",
                {"device": device, "outcome": raw, "code": code, "message": str(exc)},
            )

    def phase_changed(self, phase: Phase, rnd: Any) -> None:
        sealed, self._sealed = self._sealed, None
        if phase is Phase.CLOSED and sealed is not None:
            raw, device, frames = sealed
            self._device_reading(raw, device, frames)


class WitnessHealth:
    """The witness's health on the retained ``devices/<name>`` and the dispute's alert.

    ``state``: ``online`` while the witness reads in time, ``offline`` once it missed a
    reading (until its next), ``fault`` while a result it disagreed with is held; in
    ``witness``: its source, readings, agreements, disagreements, timeouts, the
    disagreement rate (disagreements over comparisons), the lag of its last reading
    after the primary's and their mean (ms), the last reading's time."""

    def __init__(
        self,
        witness: ResultWitness,
        *,
        raise_alert: Callable[..., Any],
        publish: Callable[[str, Mapping[str, JSON]], None],
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = witness.settings
        self._raise_alert = raise_alert
        self._publish = publish
        self._clock = clock
        self.counts = {"readings": 0, "agreed": 0, "disagreed": 0, "timeouts": 0, "resolved": 0}
        self._lags: list[int] = []
        self.state, self.code, self.message = "offline", "NO_READING_YET", "no reading yet"
        self._since = clock()
        self._last_reading: datetime | None = None
        witness.add_listener(self.heard)
        self.publish()  # stored by the link, published once it connects

    def heard(self, news: str, data: Mapping[str, JSON]) -> None:
        c = self.counts
        if news == "reading" and data.get("reading") == "witness":
            c["readings"] += 1
            self._last_reading = self._clock()
            if self.state == "offline":
                self._set("online", "", "")
        lag = data.get("lag_ms")
        if news in ("agreed", "disputed") and isinstance(lag, int):
            self._lags = [*self._lags[-99:], lag]
        if news == "agreed":
            c["agreed"] += 1
            self._set("online", "", "")
        elif news == "disputed":
            timeout = data.get("why") == "timeout"
            c["timeouts" if timeout else "disagreed"] += 1
            code, message = FAULT, str(data.get("message", ""))
            self._set("offline" if timeout else "fault", code, message)
            self._raise_alert(
                FAULT,
                message,
                subject=str(data.get("round_id", "")),
                evidence={k: data[k] for k in ("why", "primary", "witness") if k in data},
            )
        elif news in ("resolved", "voided"):
            c["resolved"] += news == "resolved"
            if self.state == "fault":
                self._set("online", "", "")
        self.publish()

    def _set(self, state: str, code: str, message: str) -> None:
        if state != self.state:
            self._since = self._clock()
        self.state, self.code, self.message = state, code, message

    def snapshot(self) -> dict[str, JSON]:
        c = self.counts
        compared = c["agreed"] + c["disagreed"]
        return {
            "kind": "witness",
            "state": self.state,
            "code": self.code,
            "message": self.message,
            "since": iso_utc(self._since),
            "witness": {
                "source": self.settings.source,
                **c,
                "disagreement_rate": round(c["disagreed"] / compared, 4) if compared else None,
                "lag_ms": self._lags[-1] if self._lags else None,
                "mean_lag_ms": round(sum(self._lags) / len(self._lags)) if self._lags else None,
                "last_reading_at": iso_utc(self._last_reading) if self._last_reading else None,
            },
        }

    def publish(self) -> None:
        try:
            self._publish(self.settings.name, self.snapshot())
        except Exception:  # a snapshot must never stop a result
            log.exception("witness: devices/%s not published", self.settings.name)
