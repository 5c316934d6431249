"""From decoded SS2 lines to events (sans-I/O): states, results, the exception rules.

:class:`WheelTracker` is fed every decoded frame with the time it arrived (``now``,
seconds on any monotonic origin: the live driver passes its clock, ``tablectl
decode`` the capture's timestamps) and returns the events to emit. It is the whole
behaviour of the driver minus I/O, so the real capture can be replayed through it.

Results [ref §4.1, §4.2, §12.7]:

- a result is taken only from a state-5 status line, never from the bare number
  line (a torn status line such as ``1`` looks exactly like one);
- it must be confirmed before it is emitted: either the bare winning-number line
  received just before it (since the previous status line) carries the same
  number and the previous status line shows the same spin number (it only changes
  on 5 -> 2), or the next status line repeats it (same spin, same number). A single
  line with a substituted digit can therefore not produce a result;
- one result per spin: after a result is emitted, no other is taken until two
  consecutive status lines show another (state, spin) — the next game, or the
  same spin number after a power cycle or a spin-counter wrap (256 -> 1).

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

__all__ = ["WheelTracker"]

_IN_GAME = (2, 3, 4)


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
        self.accepted: tuple[int, int] | None = None  # (spin, number) of the last result
        self.bare: WinningLine | None = None  # bare line since the previous status line
        self.pending: Status | None = None  # a state-5 line waiting for its confirmation
        self.missing: Status | None = None  # first unconfirmed state-5 line of this game
        self.pending_bare: WinningLine | None = None  # the bare line before ``pending``
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
        self.unconfirmed = 0  # state-5 lines that had to wait for a confirmation
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

    # ------------------------------------------------------------------ status lines
    def _status(self, st: Status, now: float) -> list[WheelEvent]:
        out: list[WheelEvent] = []
        prev = self.last
        self.status_lines += 1
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
        out += self._flags(st, now)
        out += self._result(prev, st)
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
        out: list[WheelEvent] = []
        pending, self.pending = self.pending, None
        key = (int(st.state), st.spin)
        two_alike = prev is not None and (int(prev.state), prev.spin) == key
        if (
            not self.armed
            and self.accepted is not None
            and key != (5, self.accepted[0])
            and two_alike
        ):
            self.armed = True  # two consecutive lines show another (state, spin)
        if not self.armed:
            return out
        if st.state != GameState.WINNING_NUMBER:
            if self.missing is not None and two_alike:
                miss, self.missing = self.missing, None
                self.anomalies += 1
                out.append(
                    self._warning(
                        st,
                        "RESULT_MISSING",
                        f"the wheel left state 5 of spin {miss.spin} without a confirmed result "
                        f"(a single line showed {pocket_text(miss.win or 0)}): enter it by hand",
                        Action.WARN,
                        "suggested",
                    )
                )
            return out
        if st.win is None:
            self.anomalies += 1  # state 5 without a number: nothing to take
            return out
        if (
            self.bare is not None
            and self.bare.number == st.win
            and prev is not None
            and prev.spin == st.spin  # the spin number only changes on 5 -> 2
        ):
            by = "line"
        elif pending is not None and pending.spin == st.spin and pending.win == st.win:
            by = "status"
        else:
            self.unconfirmed += 1
            self.pending = st
            self.pending_bare = self.bare
            if self.missing is None:
                self.missing = st
            return out
        self.missing = None
        self.armed = False
        self.accepted = (st.spin, st.win)
        if st.win >= self.pockets:
            self.anomalies += 1
            out.append(
                self._warning(
                    st,
                    "RESULT_OUT_OF_RANGE",
                    f"result {pocket_text(st.win)} does not exist on a {self.pockets}-pocket wheel",
                    Action.FAULT,
                    "suggested",
                )
            )
            return out
        line = self.bare if by == "line" else self.pending_bare
        if by == "status" and line is not None and line.number != st.win:
            out.append(
                self._warning(
                    st,
                    "RESULT_LINE_MISMATCH",
                    f"winning-number line said {pocket_text(line.number)}, "
                    f"status says {pocket_text(st.win)}; the status line is taken",
                    Action.WARN,
                    "suggested",
                )
            )
        raw = st.raw if by == "status" or line is None else line.raw + b"\n" + st.raw
        ev = WinningNumber(
            device=self.device,
            raw=raw,
            number=st.win,
            pocket=pocket_text(st.win),
            spin=st.spin,
            direction=Direction(st.direction).label,
            speed=st.speed,
            confirmed_by=by,
            void_reason=self.void_reason,
        )
        self.results += 1
        self.last_result = ev
        out.append(ev)
        return out

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
            "anomalies": self.anomalies,
        }
