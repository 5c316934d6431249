"""A wheel described by a line-protocol file: its lines -> the wheel kind's events
(sans-I/O; the live driver and ``tablectl decode`` feed it alike).

- ``game_state`` lines: :class:`~tablecommon.events.wheel.GameStateChanged` on every
  change between two consecutive state lines (``previous`` 0 for the first one); a
  game is open from state 2 until its result (5); leaving it to 1 or 6 before a result
  voids it (``WHEEL_STOPPED``), state 7 during it too (``NO_BALL_IN_TRACK``);
- results: :mod:`.results` (``WinningNumber``, once per game, from ``lines`` lines);
- warning bits: :mod:`.flags` (the file's table: ``WheelWarning``, ``GameVoided``,
  ``WarningCleared``);
- ``fault`` lines: a ``WheelWarning`` ``WHEEL_FAULT_<code>`` (action fault); the
  device's health is FAULT until the next game opens (state 2).

Each event carries the time of the line that made it (``monotonic``: the driver's
clock, or the capture's), so a spin's duration (state 3 to the result) is the
wheel's, not the host's.
"""

from __future__ import annotations

from typing import Any

from tablecommon.events.wheel import (
    STATE_NAMES,
    GameStateChanged,
    GameVoided,
    WheelEvent,
    WheelWarning,
)

from .flags import FlagPolicy
from .results import StateLine, WheelResults
from .rules import Line
from .spec import Protocol

__all__ = ["LineWheel"]

_IN_GAME = (2, 3, 4)


class LineWheel:
    """States, results, voids and warnings of one wheel, from its lines."""

    def __init__(self, protocol: Protocol, device: str = "", *, pockets: int = 37) -> None:
        self.device = device
        self.protocol = protocol
        #: The state lines give the game's number (``spin``); else the tracker counts.
        self.numbered = any(
            r.event == "game_state" and any(c.name == "spin" for c in r.fields)
            for r in protocol.rules
        )
        wrap = protocol.results.wrap
        self.results = WheelResults(
            device, protocol.results.lines, pockets,
            (lambda g: g % wrap + 1) if wrap else (lambda g: g + 1),
            self._warn, lambda: self.void_reason,
        )  # fmt: skip
        self.flags = (
            FlagPolicy(protocol.flags, device, self._warn, self._void)
            if protocol.flags is not None
            else None
        )
        self.last: StateLine | None = None
        self.state_since = 0.0
        self.game_open = False
        self.void_reason = ""
        self.counter = 0  # the games counted, without a spin field
        self.device_fault: tuple[str, str] | None = None  # from a fault line
        self.state_lines = 0

    @property
    def fault(self) -> tuple[str, str] | None:
        """(code, message) while the wheel is faulty (a bit's rule, a fault line)."""
        if self.flags is not None and self.flags.fault is not None:
            return self.flags.fault
        return self.device_fault

    # ------------------------------------------------------------------ input
    def feed(self, line: Line, now: float) -> list[WheelEvent]:
        """Take one line read by the file's rules; return the events it causes."""
        event, f = line.event, line.fields
        if event == "game_state":
            return self._state(self._read_state(line), now)
        if event == "winning_number":
            game = f.get("spin")
            if line.rule.result == "precedes":
                self.results.on_precedes(f["number"], game, line.raw)
                return []
            st = self.last or StateLine(0, self.counter, None, False)
            return self.results.on_shows(
                f["number"], st.game if game is None else game, st, line.raw, now
            )
        if event == "fault":
            return [self._device_fault(line, now)]
        return []

    def new_session(self) -> list[WheelEvent]:
        """A new run of the host (a capture's next session, lines between them lost):
        what the host measured starts again; what the wheel carries on stays."""
        out = self.results.new_session(self.last)
        self.last = None
        self.state_since = 0.0
        self.game_open, self.void_reason = False, ""
        self.device_fault = None
        if self.flags is not None:
            self.flags.reset()
        return out

    def end(self) -> list[WheelEvent]:
        """The input ends (a capture; a live link never ends)."""
        return self.results.end(self.last)

    # ------------------------------------------------------------------ state lines
    def _read_state(self, line: Line) -> StateLine:
        f = self.last
        state = line.fields["state"]
        if self.numbered:
            game = line.fields.get("spin", f.game if f else 0)
        else:
            if state == 2 and (f is None or f.state != 2):
                self.counter += 1
            game = self.counter
        return StateLine(
            state, game, line.fields.get("number"), line.rule.result == "repeats",
            line.fields.get("flags", 0), line.fields.get("speed", 0),
            line.fields.get("direction", "unknown"), line.raw,
        )  # fmt: skip

    def _state(self, st: StateLine, now: float) -> list[WheelEvent]:
        prev = self.last
        self.state_lines += 1
        # the result first: the next game's first line may complete the previous one,
        # which then comes before that game's state change
        out = self.results.on_state(prev, st, now)
        if prev is None or prev.state != st.state:
            out.append(
                GameStateChanged(
                    device=self.device, raw=st.raw, state=st.state,
                    state_name=STATE_NAMES[st.state],
                    previous=prev.state if prev is not None else 0,
                    spin=st.game, speed=st.speed, direction=st.direction, monotonic=now,
                )
            )  # fmt: skip
            self.state_since = now
            out += self._transition(prev, st, now)
            self.results.game_shown(st.game)
            if st.state == 2:
                self.device_fault = None  # a new game: the wheel recovered
        if self.flags is not None:
            out += self.flags.on_line(st, now, self.state_since)
        self.last = st
        self.results.pending = None
        return out

    def _transition(self, prev: StateLine | None, st: StateLine, now: float) -> list[WheelEvent]:
        out: list[WheelEvent] = []
        state = st.state
        if state == 2:
            self.game_open, self.void_reason = True, ""  # a new game (or a re-spin)
        elif state in _IN_GAME and not self.game_open and not self.void_reason:
            self.game_open = True  # joined a game under way
        if self.game_open and prev is not None and state in (1, 6):
            text = f"the wheel went to state {state} ({STATE_NAMES[state]}) before a result"
            out += self._void(st, "WHEEL_STOPPED", text, "suggested", False)
        if state == 7 and self.game_open:
            text = "ball not detected in the ball track"
            out += self._void(st, "NO_BALL_IN_TRACK", text, "suggested", False)
        if state in (1, 5, 6):
            self.game_open = False  # 5: the game reached its result
        return out

    def _void(
        self, st: StateLine, reason: str, message: str, source: str, restart: bool
    ) -> list[WheelEvent]:
        if self.void_reason or not (self.game_open or st.state in _IN_GAME):
            return []
        self.void_reason = reason
        return [
            GameVoided(
                device=self.device, raw=st.raw, spin=st.game, reason=reason, message=message,
                restart_required=restart, source=source,
            )
        ]  # fmt: skip

    def _warn(
        self, st: StateLine, code: str, message: str, action: str, source: str
    ) -> WheelWarning:
        names = self.flags.table.names(st.flags) if self.flags is not None else ()
        return WheelWarning(
            device=self.device, raw=st.raw, code=code, message=message, flags=st.flags,
            flag_names=names, state=st.state, spin=st.game, action=action, source=source,
        )  # fmt: skip

    def _device_fault(self, line: Line, now: float) -> WheelWarning:
        code = line.fields["code"]
        message = str(line.fields.get("message") or f"the device reports fault {code}")
        self.device_fault = (f"WHEEL_FAULT_{code}", message)
        st = self.last or StateLine(0, self.counter, None, False)
        return WheelWarning(
            device=self.device, raw=line.raw, code=f"WHEEL_FAULT_{code}", message=message,
            flags=st.flags, flag_names=(), state=st.state, spin=st.game, action="fault",
            source="device", monotonic=now,
        )  # fmt: skip

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> dict[str, Any]:
        st, r = self.last, self.results
        return {
            "state": st.state if st else None,
            "state_name": STATE_NAMES.get(st.state) if st else None,
            "spin": st.game if st else None,
            "speed_rpm_x10": st.speed if st else None,
            "direction": st.direction if st else None,
            "game_open": self.game_open,
            "void_reason": self.void_reason,
            "fault": list(self.fault) if self.fault else None,
            "last_result": r.last_result.to_json() if r.last_result else None,
            "state_lines": self.state_lines,
            **r.counts,
        }
