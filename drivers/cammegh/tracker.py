"""From decoded SS2 lines to events (sans-I/O): states, results, the exception rules.

:class:`WheelTracker` is fed every decoded frame with the time it arrived (``now``,
seconds on any monotonic origin: the live driver passes its clock, ``tablectl
decode`` the capture's timestamps) and returns the events to emit. It is the whole
behaviour of the driver minus I/O, so the real capture can be replayed through it.

Results [ref §4.1, §4.2, §12.7]. The protocol has no checksum, and a byte
substituted inside a number leaves a valid line showing another number; what it
offers instead is repetition: the bare winning-number line just before the first
state-5 line, then the ``win`` field of every status line until the next result
(the rest of state 5, and the next game's states 1-4, spin + 1). So:

- a result is started only by a state-5 status line, never by the bare number
  line (a torn status line such as ``1`` looks exactly like one);
- it is emitted once ``RESULT_LINES`` (3) lines carry it: the bare line received
  just before its first state-5 line (the previous status line showing the same
  spin) and the next status line, or, the bare line lost, the next two status
  lines. A wrong result therefore needs three lines corrupted to the same number;
- any line in that window that shows another number (the bare line included)
  disputes the spin: no result is taken (``RESULT_DISPUTED``), the round waits for
  one entered by hand or is voided. Two later lines agreeing on another number
  than a result already taken raise ``RESULT_CONTRADICTED``;
- one result per spin: after a result (or a dispute), no other is taken until two
  consecutive status lines show another spin (the next game), and never another for
  the same spin number unless a mains power cycle (``RESULT_LINES`` lines with no
  result since power-on) started the count again;
- never late: the third line may be the next game's first line (its ``win`` field
  repeats the last winning number, its spin is one more), and the result then comes
  before that line's state change; once a state change of another spin has been
  emitted, the spin's number is no longer taken (the round logic voids a round when
  the wheel shows another spin, so a result after it would land on the next round);
- lines lost between two runs of the host (a capture's sessions): :meth:`hand_over`
  gives the next run's tracker the number still gathering its lines and what the
  wheel's own count says (the last spin taken), so the next game's first line, read
  by the next run, completes it as it would have on one stream.

State changes are taken from a single valid line (bets must close at the first
state-4 line). Warning flags count once seen on ``confirm_lines`` consecutive
lines, then the rules of :mod:`drivers.cammegh.policy` apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .codec import (
    STATE_NAMES,
    Direction,
    FaultPacket,
    Frame,
    GameState,
    Garbled,
    Status,
    WarningFlag,
    WinningLine,
    flag_names,
    next_spin,
    pocket_text,
)
from .events import (
    GameStateChanged,
    GameVoided,
    WarningCleared,
    WheelEvent,
    WheelFault,
    WheelWarning,
    WinningNumber,
)
from .policy import Action, PolicySettings, Rule, rule_for

__all__ = ["RESULT_LINES", "WheelTracker"]

_IN_GAME = (2, 3, 4)

#: Lines that must carry a number, with none showing another, before it is a result:
#: the bare line and two status lines, or three status lines. Two were not enough:
#: one substituted digit in the bare line and one in the next status line can agree
#: (hypothesis found bare ``20`` + ``*X;5;001;20;...`` for a wheel showing 10, its
#: first state-5 line garbled in between).
RESULT_LINES = 3


@dataclass
class _Candidate:
    """A number shown by a state-5 line, gathering the lines that carry it."""

    first: Status  # the first state-5 line of the spin (win is not None)
    bare: WinningLine | None  # the bare line just before it, if it agreed
    lines: list[bytes]  # raw lines carrying the number, in order (the evidence)

    @property
    def spin(self) -> int:
        return self.first.spin

    @property
    def number(self) -> int:
        assert self.first.win is not None
        return self.first.win

    def carries(self, st: Status) -> bool | None:
        """Whether ``st`` shows this result (True), another number where it should show
        this one (False), or says nothing about it (None: another spin, a power cycle).

        The ``win`` field changes only on 4 -> 5 [ref §4.1 obs]: from this spin's state 5
        it repeats the number in state 5, in 6 and 1 of the same spin (the wheel stopped
        after the result) and in the next game's states before its own result."""
        if st.win is None:  # no result since power-on: a mains power cycle
            return None
        same = st.spin == self.spin and int(st.state) in (5, 6, 1)
        following = st.spin == next_spin(self.spin) and int(st.state) != 5
        if not (same or following):
            return None
        return st.win == self.number


@dataclass
class _FlagEpisode:
    since: float  # time of the first line of the episode
    lines: int = 0  # consecutive lines with the bit set
    clear_lines: int = 0  # consecutive lines without it (while still confirmed)
    confirmed: bool = False
    done: set[tuple[int, str]] = field(default_factory=set)  # (state, action) already acted on


class WheelTracker:
    """States, results and exception handling of one wheel, from its lines."""

    def __init__(
        self,
        device: str = "",
        *,
        policy: PolicySettings | None = None,
        pockets: int = 37,
    ) -> None:
        self.device = device
        self.policy = policy or PolicySettings()
        self.pockets = pockets
        self.last: Status | None = None
        self.state_since = 0.0
        # results
        self.armed = True
        self.done_spin: int | None = None  # spin of the last result taken (or disputed)
        self.no_result_lines = 0  # consecutive status lines showing no result (win "  ")
        self.bare: WinningLine | None = None  # bare line since the previous status line
        self.candidate: _Candidate | None = None  # a number gathering its lines
        self.missing: Status | None = None  # a dropped candidate's first line
        self.watch: _Candidate | None = None  # the result taken, checked by later lines
        self.contradiction: int | None = None  # another number on the previous line
        self.last_result: WinningNumber | None = None
        # game in progress
        self.game_open = False
        self.void_reason = ""
        # flags
        self.episodes: dict[WarningFlag, _FlagEpisode] = {}
        self.confirmed_flags = 0
        self.fault: tuple[str, str] | None = None  # (code, message) while a flag says FAULT
        # counters
        self.status_lines = 0
        self.results = 0
        self.unconfirmed = 0  # state-5 lines whose number never gathered its lines
        self.disputed = 0  # spins whose lines disagreed (no result taken)
        self.anomalies = 0

    # ------------------------------------------------------------------ input
    def feed(self, frame: Frame | Garbled, now: float) -> list[WheelEvent]:
        """Take one decoded frame; return the events it causes."""
        if isinstance(frame, Status):
            return self._status(frame, now)
        if isinstance(frame, WinningLine):
            self.bare = frame
            return []
        if isinstance(frame, FaultPacket):
            return [
                WheelFault(
                    device=self.device, raw=frame.raw, code=frame.code, meaning=frame.meaning
                )
            ]
        return []

    def end(self) -> list[WheelEvent]:
        """The input ends (a capture; a live link never ends: a result waits across a
        reconnect). A number still gathering its lines is reported as
        ``RESULT_UNCONFIRMED``, never taken; one already given up and not yet reported,
        as ``RESULT_MISSING``."""
        out: list[WheelEvent] = [self._missing(self.last)] if self.missing and self.last else []
        cand, self.candidate = self.candidate, None
        if cand is None or self.last is None:
            return out
        self.anomalies += 1
        return [
            *out,
            self._warning(
                self.last,
                "RESULT_UNCONFIRMED",
                f"the input ends before the result of spin {cand.spin} was confirmed "
                f"({pocket_text(cand.number)} on {len(cand.lines)} of the {RESULT_LINES} "
                "lines it needs): enter it by hand",
                Action.WARN,
                "suggested",
            ),
        ]

    def hand_over(self, successor: WheelTracker) -> list[WheelEvent]:
        """This run of the host stops and ``successor`` reads the same wheel next (the
        next session of a capture; lines between them were lost). What the wheel itself
        counts goes on: the number still gathering its lines, the last spin taken (one
        result per spin) and the lines without a result (a power cycle). What the host
        measured starts again in ``successor``: the previous line, states and their
        times, flags, the game it had open.

        The number then needs its lines as on one stream: the successor's first status
        line may complete it (the same spin's state 5, 6 or 1, or the next game, spin + 1,
        in a state before its own result, showing that number), before that line's state
        change; any other first line leaves it unconfirmed (``RESULT_MISSING``). Returns
        the reports of this run (a number given up and not yet reported)."""
        out: list[WheelEvent] = [self._missing(self.last)] if self.missing and self.last else []
        successor.candidate, self.candidate = self.candidate, None
        successor.done_spin, successor.armed = self.done_spin, self.armed
        successor.no_result_lines = self.no_result_lines
        return out

    # ------------------------------------------------------------------ status lines
    def _status(self, st: Status, now: float) -> list[WheelEvent]:
        prev = self.last
        self.status_lines += 1
        # First the result: a line of the next game may be the one that completes the
        # previous spin's result, which then comes before that game's state change.
        out = self._result(prev, st)
        if prev is None or prev.state != st.state:
            out.append(
                GameStateChanged(
                    device=self.device,
                    raw=st.raw,
                    state=int(st.state),
                    state_name=STATE_NAMES[int(st.state)],
                    previous=int(prev.state) if prev is not None else 0,
                    spin=st.spin,
                    speed=st.speed,
                    direction=Direction(st.direction).label,
                )
            )
            self.state_since = now
            out += self._transition(prev, st)
            cand = self.candidate
            if cand is not None and cand.spin != st.spin:
                # The wheel is shown on another spin: the round logic voids the round of
                # the candidate's spin now, so its number must not come after this.
                self.candidate = None
                self.unconfirmed += 1
                if self.missing is None:
                    self.missing = cand.first
        out += self._flags(st, now)
        self.last = st
        self.bare = None
        return out

    def _transition(self, prev: Status | None, st: Status) -> list[WheelEvent]:
        out: list[WheelEvent] = []
        state = int(st.state)
        if state == GameState.PLACE_BETS:
            self.game_open, self.void_reason = True, ""  # a new game (or a re-spin after *R)
        elif state in _IN_GAME and not self.game_open and not self.void_reason:
            self.game_open = True  # joined a game already under way
        if self.game_open and prev is not None and state in (1, 6):
            out += self._void(
                st,
                "WHEEL_STOPPED",
                f"the wheel went to state {state} ({STATE_NAMES[state]}) before a result",
                "suggested",
            )
        if state == GameState.NO_BALL_IN_TRACK and self.game_open:
            out += self._void(
                st, "NO_BALL_IN_TRACK", "ball not detected in the ball track", "suggested"
            )
        if state in (1, 5, 6):
            self.game_open = False  # 5: the game reached its result
        return out

    def _void(
        self, st: Status, reason: str, message: str, source: str, restart: bool = False
    ) -> list[WheelEvent]:
        if self.void_reason or not (self.game_open or int(st.state) in _IN_GAME):
            return []
        self.void_reason = reason
        return [
            GameVoided(
                device=self.device,
                raw=st.raw,
                spin=st.spin,
                reason=reason,
                message=message,
                restart_required=restart,
                source=source,
            )
        ]

    # ------------------------------------------------------------------ results
    def _result(self, prev: Status | None, st: Status) -> list[WheelEvent]:
        out = self._check_taken(st)
        key = (int(st.state), st.spin)
        two_alike = prev is not None and (int(prev.state), prev.spin) == key
        self.no_result_lines = self.no_result_lines + 1 if st.win is None else 0
        if self.no_result_lines >= RESULT_LINES:
            # A mains power cycle (no result since power-on): the spin count starts
            # again. RESULT_LINES lines, not two: two lines with the win digit
            # substituted by a space gave the spin a second result (the search).
            self.done_spin = None
        if not self.armed and two_alike and st.spin != self.done_spin:
            # Two consecutive lines of another spin. Not another state of the same spin:
            # two lines with the state digit substituted alike re-armed it, and the
            # spin's next lines gave its result twice (found by the substitution search).
            self.armed = True
        if not self.armed:
            return out
        cand = self.candidate
        if cand is not None:
            carried = cand.carries(st)
            if carried is True:
                cand.lines.append(st.raw)
                if len(cand.lines) >= RESULT_LINES:
                    return out + self._take(cand, st)
                if st.spin == cand.spin:
                    return out
                # The next game's first line, and the number still short of its lines:
                # the round logic voids a round once the wheel shows the next spin
                # (table/procedures/wheel.py), so a result after it would land on the
                # next round. It can complete the result on this line (emitted before
                # the state change), never later.
                self.candidate = None
                self.unconfirmed += 1
                self.missing = cand.first
                return out
            if carried is False:
                return out + self._dispute(cand, st, f"status line {st.raw.decode()!r}")
            result_line = int(st.state) == 5
            if (result_line and not two_alike) or (not result_line and st.spin != cand.spin):
                return out  # one line of another spin, a power cycle: nothing about it
            # this spin before its result (its first "state-5" line was a corrupted
            # state-4 line), or another spin's result: the number never gathered its lines
            self.candidate = None
            self.unconfirmed += 1
            if self.missing is None:
                self.missing = cand.first
        if st.state != GameState.WINNING_NUMBER:
            if self.missing is not None and two_alike and st.spin != self.missing.spin:
                out.append(self._missing(st))
            return out
        if st.win is None:
            self.anomalies += 1  # state 5 without a number: nothing to take
            return out
        if st.spin == self.done_spin:
            # One result per spin, also when two lines with the spin field substituted
            # alike re-armed the tracker; only a power cycle clears it.
            return out
        if self.missing is not None and self.missing.spin != st.spin:
            out.append(self._missing(st))
        bare = self.bare if prev is not None and prev.spin == st.spin else None
        cand = self.candidate = _Candidate(st, None, [st.raw])
        if bare is not None:
            if bare.number != st.win:
                return out + self._dispute(cand, st, f"winning-number line {bare.raw.decode()!r}")
            cand.bare = bare
            cand.lines.insert(0, bare.raw)
        return out

    def _missing(self, st: Status) -> WheelWarning:
        miss, self.missing = self.missing, None
        assert miss is not None
        self.anomalies += 1
        return self._warning(
            st,
            "RESULT_MISSING",
            f"the wheel left state 5 of spin {miss.spin} without a confirmed result "
            f"(a line showed {pocket_text(miss.win or 0)}): enter it by hand",
            Action.WARN,
            "suggested",
        )

    def _dispute(self, cand: _Candidate, st: Status, other: str) -> list[WheelEvent]:
        """Lines that should carry one number disagree: no result for this spin."""
        self.candidate = self.missing = None
        self.armed, self.done_spin = False, cand.spin
        self.disputed += 1
        self.anomalies += 1
        return [
            self._warning(
                st,
                "RESULT_DISPUTED",
                f"spin {cand.spin}: status line {cand.first.raw.decode()!r} shows "
                f"{pocket_text(cand.number)} but {other} does not; no result is taken "
                "(a corrupted line cannot be told from the right one): enter it by hand "
                "or void the round",
                Action.WARN,
                "suggested",
            )
        ]

    def _take(self, cand: _Candidate, st: Status) -> list[WheelEvent]:
        self.candidate = self.missing = None
        self.armed, self.done_spin = False, cand.spin
        first, number = cand.first, cand.number
        if number >= self.pockets:
            self.anomalies += 1
            return [
                self._warning(
                    st,
                    "RESULT_OUT_OF_RANGE",
                    f"result {pocket_text(number)} does not exist on a {self.pockets}-pocket wheel",
                    Action.FAULT,
                    "suggested",
                )
            ]
        self.watch, self.contradiction = cand, None
        ev = WinningNumber(
            device=self.device,
            raw=b"\n".join(cand.lines),
            number=number,
            pocket=pocket_text(number),
            spin=first.spin,
            direction=Direction(first.direction).label,
            speed=first.speed,
            confirmed_by="line" if cand.bare is not None else "status",
            void_reason=self.void_reason,
        )
        self.results += 1
        self.last_result = ev
        return [ev]

    def _check_taken(self, st: Status) -> list[WheelEvent]:
        """Later lines of a result already taken: two in a row showing one other number
        mean the result was wrong (three lines corrupted alike) or the link is bad."""
        watch = self.watch
        if watch is None:
            return []
        carried = watch.carries(st)
        if carried is None:
            if int(st.state) == 5 and st.spin != watch.spin:
                self.watch = None  # the next result: its own lines take over
            self.contradiction = None
            return []
        if carried:
            self.contradiction = None
            return []
        if self.contradiction != st.win:
            self.contradiction = st.win
            return []
        self.watch = self.contradiction = None
        self.anomalies += 1
        return [
            self._warning(
                st,
                "RESULT_CONTRADICTED",
                f"spin {watch.spin} was taken as {pocket_text(watch.number)}, but two "
                f"later lines show {pocket_text(st.win or 0)}: check the wheel and the "
                "round's frames",
                Action.FAULT,
                "suggested",
            )
        ]

    # ------------------------------------------------------------------ flags
    def _warning(
        self, st: Status, code: str, message: str, action: Action, source: str
    ) -> WheelWarning:
        return WheelWarning(
            device=self.device,
            raw=st.raw,
            code=code,
            message=message,
            flags=int(st.flags),
            flag_names=flag_names(int(st.flags)),
            state=int(st.state),
            spin=st.spin,
            action=action.value,
            source=source,
        )

    def _flags(self, st: Status, now: float) -> list[WheelEvent]:
        if not st.flags and not self.episodes and not self.confirmed_flags:
            self.fault = None  # what the loop below comes to on a clean line (most lines)
            return []
        out: list[WheelEvent] = []
        need = self.policy.confirm_lines
        for bit in WarningFlag:
            ep = self.episodes.get(bit)
            if st.flags & bit:
                if ep is None:
                    ep = self.episodes[bit] = _FlagEpisode(since=now)
                ep.lines += 1
                ep.clear_lines = 0
                if ep.lines >= need:
                    ep.confirmed = True
                if ep.confirmed:
                    out += self._apply(bit, ep, st, now)
            elif ep is not None:
                ep.lines = 0
                ep.clear_lines += 1
                if not ep.confirmed or ep.clear_lines >= need:
                    del self.episodes[bit]
        confirmed = 0
        for bit, ep in self.episodes.items():
            if ep.confirmed:
                confirmed |= bit
        if confirmed != self.confirmed_flags:
            if confirmed & ~self.confirmed_flags == 0:  # only bits went away
                out.append(
                    WarningCleared(
                        device=self.device,
                        raw=st.raw,
                        flags=confirmed,
                        previous=self.confirmed_flags,
                        state=int(st.state),
                        spin=st.spin,
                    )
                )
            self.confirmed_flags = confirmed
        if self.fault is not None and not any(
            ep.confirmed and rule_for(bit, int(st.state)).action is Action.FAULT
            for bit, ep in self.episodes.items()
        ):
            self.fault = None
        return out

    def _apply(
        self, bit: WarningFlag, ep: _FlagEpisode, st: Status, now: float
    ) -> list[WheelEvent]:
        state = int(st.state)
        rule: Rule = rule_for(bit, state)
        action = rule.action
        if rule.grace is not None:
            grace = float(getattr(self.policy, rule.grace))
            start = self.state_since if rule.grace_from == "state" else ep.since
            if now - start < grace:
                action = rule.action
                if (state, "grace") in ep.done:
                    return []
                ep.done.add((state, "grace"))
                return [self._warning(st, bit.name or "", rule.text, action, rule.source)]
            assert rule.after_grace is not None
            action = rule.after_grace
            tag = "after_grace"
        else:
            tag = action.value
        if (state, tag) in ep.done:
            return []
        ep.done.add((state, tag))
        code = bit.name or ""
        if rule.grace is not None:
            code += "_PERSISTS"
        text = rule.text
        if rule.grace is not None:
            text += f" (lasted {now - (self.state_since if rule.grace_from == 'state' else ep.since):.1f} s)"
        out: list[WheelEvent] = [self._warning(st, code, text, action, rule.source)]
        if action is Action.FAULT:
            self.fault = (bit.name or "FAULT", rule.text)
        if action is Action.VOID or (action is Action.FAULT and rule.void):
            out += self._void(st, bit.name or "", rule.text, rule.source, rule.restart)
        return out

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> dict[str, object]:
        st = self.last
        return {
            "state": int(st.state) if st else None,
            "state_name": STATE_NAMES[int(st.state)] if st else None,
            "spin": st.spin if st else None,
            "last_win": pocket_text(st.win) if st and st.win is not None else None,
            "flags": int(st.flags) if st else 0,
            "confirmed_flags": flag_names(self.confirmed_flags),
            "speed_rpm_x10": st.speed if st else None,
            "direction": Direction(st.direction).label if st else None,
            "game_open": self.game_open,
            "void_reason": self.void_reason,
            "last_result": self.last_result.to_json() if self.last_result else None,
            "results": self.results,
            "status_lines": self.status_lines,
            "unconfirmed_result_lines": self.unconfirmed,
            "disputed_results": self.disputed,
            "anomalies": self.anomalies,
        }
