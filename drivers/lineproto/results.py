"""A wheel's result, confirmed by the lines that carry it (``[results] lines``).

The rule (``docs/protocols/line-protocol.md``, "Results"; the Cammegh SS2's own,
``docs/protocols/cammegh-ss2.md`` §2, written for any wheel whose lines repeat):

- a result is **started** by a line that shows it: a state-5 line of a rule with
  ``result = "repeats"`` (its ``number``), or a line of a ``"shows"`` rule; never by a
  ``"precedes"`` line, which only counts for the result started right after it, in the
  same game;
- it is **taken** once ``lines`` lines carry its number and none another: the
  ``precedes`` line, the ``repeats`` lines of its game in states 5, 6 and 1, and the
  next game's first line (the game number after it, ``[results] wrap``), before that
  line's state change; never later: once the wheel is shown on another game, the
  number is given up (``RESULT_MISSING``), because the round logic voids a round
  whose game ended unseen;
- a line that should carry it and shows another number **disputes** it: no result
  for that game (``RESULT_DISPUTED``), the round waits for one entered by hand;
- **one result per game**: after a result (or a dispute), none is taken until two
  state lines in a row show another game, and never a second one for the same game
  unless ``lines`` state lines in a row show no number (a power cycle: the count
  starts again);
- two later lines in a row showing one other number than a result taken raise
  ``RESULT_CONTRADICTED`` (action fault); a number the wheel does not have,
  ``RESULT_OUT_OF_RANGE``.

A game is numbered by the state lines' ``spin`` field where the file gives one, else
by the tracker (one more at each entry into state 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tablecommon.events.wheel import WheelEvent, WheelWarning, WinningNumber

from .fields import pocket_text

__all__ = ["StateLine", "WheelResults"]


@dataclass(frozen=True, slots=True)
class StateLine:
    """A wheel's state line as the tracker reads it."""

    state: int
    game: int
    number: int | None  # the last result it repeats (None: none since power-on / not given)
    carries: bool  # its rule repeats the last result (result = "repeats")
    flags: int = 0
    speed: int = 0
    direction: str = "unknown"
    raw: bytes = b""


@dataclass
class _Candidate:
    first: StateLine  # the line that started it (speed, direction)
    game: int
    number: int
    lines: list[bytes]  # the lines carrying it, in order (the evidence)
    by_line: bool = False  # a winning-number line counted


@dataclass(frozen=True, slots=True)
class _Pending:
    number: int
    game: int | None
    raw: bytes


#: (line, code, message, action, source) -> the warning.
Warn = Callable[[StateLine, str, str, str, str], WheelWarning]


@dataclass
class WheelResults:
    """The results of one wheel, from its lines (sans-I/O)."""

    device: str
    lines: int  # lines carrying a number that make it a result
    pockets: int
    next_game: Callable[[int], int]
    warn: Warn
    void_reason: Callable[[], str]
    armed: bool = True
    done_game: int | None = None  # the game of the last result taken (or disputed)
    no_number_lines: int = 0  # state lines in a row showing no number (a power cycle)
    pending: _Pending | None = None  # a "precedes" line since the last state line
    candidate: _Candidate | None = None
    missing: _Candidate | None = None  # given up, not yet reported
    watch: _Candidate | None = None  # the result taken, checked by later lines
    contradiction: int | None = None
    last_result: WinningNumber | None = None
    counts: dict[str, int] = field(
        default_factory=lambda: {"results": 0, "unconfirmed": 0, "disputed": 0, "anomalies": 0}
    )

    # ------------------------------------------------------------------ lines
    def on_precedes(self, number: int, game: int | None, raw: bytes) -> None:
        self.pending = _Pending(number, game, raw)

    def on_state(self, prev: StateLine | None, st: StateLine, now: float) -> list[WheelEvent]:
        out = self._check_taken(st)
        two_alike = prev is not None and (prev.state, prev.game) == (st.state, st.game)
        if st.carries:
            self.no_number_lines = self.no_number_lines + 1 if st.number is None else 0
            if self.no_number_lines >= self.lines:
                self.done_game = None  # a power cycle: the game count starts again
        if not self.armed and two_alike and st.game != self.done_game:
            self.armed = True
        if not self.armed:
            return out
        if not st.carries:
            return out + self._report_missing(st, two_alike)
        cand = self.candidate
        if cand is not None:
            carried = self._carries(cand, st)
            if carried is True:
                cand.lines.append(st.raw)
                if len(cand.lines) >= self.lines:
                    return out + self._take(cand, st, now)
                if st.game != cand.game:  # the next game's first line, still short
                    self.candidate, self.missing = None, cand
                    self.counts["unconfirmed"] += 1
                return out
            if carried is False:
                return out + self._dispute(cand, st, f"line {st.raw.decode('latin-1')!r}")
            result_line = st.state == 5
            if (result_line and not two_alike) or (not result_line and st.game != cand.game):
                return out  # one line of another game, a power cycle: nothing about it
            self._give_up(cand)  # this game before its result, or another game's result
        if st.state != 5:
            return out + self._report_missing(st, two_alike)
        if st.number is None:
            self.counts["anomalies"] += 1  # state 5 without a number
            return out
        if st.game == self.done_game:
            return out
        if self.missing is not None and self.missing.game != st.game:
            out.append(self._missing(st))
        pend = self.pending
        if pend is None or prev is None or prev.game != st.game or pend.game not in (None, st.game):
            pend = None
        cand = self.candidate = _Candidate(st, st.game, st.number, [st.raw])
        if pend is not None:
            if pend.number != st.number:
                return out + self._dispute(cand, st, f"line {pend.raw.decode('latin-1')!r}")
            cand.by_line = True
            cand.lines.insert(0, pend.raw)
        if len(cand.lines) >= self.lines:
            out += self._take(cand, st, now)
        return out

    def on_shows(
        self, number: int, game: int, st: StateLine, raw: bytes, now: float
    ) -> list[WheelEvent]:
        """A line showing ``game``'s result (a ``"shows"`` rule); ``st``: the last state
        line (speed, direction), or a stand-in."""
        if not self.armed and game != self.done_game:
            self.armed = True
        if not self.armed or game == self.done_game:
            return []
        out: list[WheelEvent] = []
        cand = self.candidate
        if cand is not None and cand.game == game:
            if number != cand.number:
                return self._dispute(cand, st, f"line {raw.decode('latin-1')!r}")
            cand.lines.append(raw)
            cand.by_line = True
        else:
            if cand is not None:
                self._give_up(cand)
            if self.missing is not None and self.missing.game != game:
                out.append(self._missing(st))
            cand = self.candidate = _Candidate(st, game, number, [raw], by_line=True)
        if len(cand.lines) >= self.lines:
            out += self._take(cand, st, now)
        return out

    def game_shown(self, game: int) -> None:
        """A state change of ``game`` was emitted: a result of another game is given up
        (the round logic voids a round whose game ended unseen: never a late result)."""
        cand = self.candidate
        if cand is not None and cand.game != game:
            self._give_up(cand)

    # ------------------------------------------------------------------ runs of the host
    def new_session(self, last: StateLine | None) -> list[WheelEvent]:
        """A new run of the host reads the wheel: what the wheel carries on stays (the
        number gathering its lines, the last game taken, the lines without a number)."""
        out: list[WheelEvent] = []
        if self.missing is not None and last is not None:
            out.append(self._missing(last))
        self.missing = self.watch = None
        self.pending = self.contradiction = None
        return out

    def end(self, last: StateLine | None) -> list[WheelEvent]:
        """The input ends (a capture): a number still gathering its lines is reported,
        never taken."""
        out: list[WheelEvent] = []
        if self.missing is not None and last is not None:
            out.append(self._missing(last))
        cand, self.candidate = self.candidate, None
        if cand is None or last is None:
            return out
        self.counts["anomalies"] += 1
        text = (
            f"the input ends before the result of game {cand.game} was confirmed "
            f"({pocket_text(cand.number)} on {len(cand.lines)} of the {self.lines} lines "
            "it needs): enter it by hand"
        )
        return [*out, self.warn(last, "RESULT_UNCONFIRMED", text, "warn", "suggested")]

    # ------------------------------------------------------------------ the rule
    def _carries(self, cand: _Candidate, st: StateLine) -> bool | None:
        """Whether ``st`` shows ``cand``'s number (True), another where it should show
        it (False), or says nothing about it (None)."""
        if not st.carries or st.number is None:
            return None
        same = st.game == cand.game and st.state in (5, 6, 1)
        following = st.game == self.next_game(cand.game) and st.state != 5
        if not (same or following):
            return None
        return st.number == cand.number

    def _give_up(self, cand: _Candidate) -> None:
        self.candidate = None
        self.counts["unconfirmed"] += 1
        if self.missing is None:
            self.missing = cand

    def _report_missing(self, st: StateLine, two_alike: bool) -> list[WheelEvent]:
        if self.missing is not None and two_alike and st.game != self.missing.game:
            return [self._missing(st)]
        return []

    def _missing(self, st: StateLine) -> WheelWarning:
        miss, self.missing = self.missing, None
        assert miss is not None
        self.counts["anomalies"] += 1
        text = (
            f"the wheel left game {miss.game} without a confirmed result (a line showed "
            f"{pocket_text(miss.number)}): enter it by hand"
        )
        return self.warn(st, "RESULT_MISSING", text, "warn", "suggested")

    def _dispute(self, cand: _Candidate, st: StateLine, other: str) -> list[WheelEvent]:
        self.candidate = self.missing = None
        self.armed, self.done_game = False, cand.game
        self.counts["disputed"] += 1
        self.counts["anomalies"] += 1
        text = (
            f"game {cand.game}: line {cand.first.raw.decode('latin-1')!r} shows "
            f"{pocket_text(cand.number)} but {other} does not; no result is taken: enter it "
            "by hand or void the round"
        )
        return [self.warn(st, "RESULT_DISPUTED", text, "warn", "suggested")]

    def _take(self, cand: _Candidate, st: StateLine, now: float) -> list[WheelEvent]:
        self.candidate = self.missing = None
        self.armed, self.done_game = False, cand.game
        if cand.number >= self.pockets:
            self.counts["anomalies"] += 1
            text = (
                f"result {pocket_text(cand.number)} does not exist on a {self.pockets}-pocket wheel"
            )
            return [self.warn(st, "RESULT_OUT_OF_RANGE", text, "fault", "suggested")]
        self.watch, self.contradiction = cand, None
        first = cand.first
        ev = WinningNumber(
            device=self.device,
            raw=b"\n".join(cand.lines),
            number=cand.number,
            pocket=pocket_text(cand.number),
            spin=cand.game,
            direction=first.direction,
            speed=first.speed,
            confirmed_by="line" if cand.by_line else "status",
            void_reason=self.void_reason(),
            monotonic=now,
        )
        self.counts["results"] += 1
        self.last_result = ev
        return [ev]

    def _check_taken(self, st: StateLine) -> list[WheelEvent]:
        watch = self.watch
        if watch is None:
            return []
        carried = self._carries(watch, st)
        if carried is None:
            if st.state == 5 and st.game != watch.game:
                self.watch = None  # the next result: its own lines take over
            self.contradiction = None
            return []
        if carried:
            self.contradiction = None
            return []
        if self.contradiction != st.number:
            self.contradiction = st.number
            return []
        self.watch = self.contradiction = None
        self.counts["anomalies"] += 1
        text = (
            f"game {watch.game} was taken as {pocket_text(watch.number)}, but two later "
            f"lines show {pocket_text(st.number or 0)}: check the wheel and the round's frames"
        )
        return [self.warn(st, "RESULT_CONTRADICTED", text, "fault", "suggested")]
