"""The vendor's exception-handling guidance as a table [ref §9, §9.1, §9.2].

One :class:`Rule` per (warning flag, game state). ``source="vendor"`` cells restate
the guide (section 4.1 of the integration guide); ``source="suggested"`` cells are
our reading where the guide is silent (the reference's "Suggested" cells). The
:class:`~drivers.cammegh.tracker.WheelTracker` applies the rule of every set bit
(a combined value such as ``A`` = 8 + 2 applies both; the strictest action wins
for the game because a void is never undone).

Grace periods (vendor): flag 8 is ignored during the first 3 s of state 3 (false
triggers at the first ball revolution); flag 1 in state 4 is ignored for at least
5 s (10 status lines) — after that the game is void. The wheel itself stops when
flag 1 lasts 75 s.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .codec import WarningFlag

__all__ = ["RULES", "Action", "PolicySettings", "Rule", "rule_for"]


class Action(enum.Enum):
    IGNORE = "ignore"  # inside a grace period
    WARN = "warn"  # tell the operator; the game goes on
    VOID = "void"  # the game in progress is void (bets locked and returned)
    FAULT = "fault"  # the wheel is faulty (health FAULT); voids an open game if ``void``


@dataclass(frozen=True)
class Rule:
    action: Action
    source: str  # "vendor" | "suggested"
    text: str
    grace: str | None = None  # PolicySettings attribute: seconds during which to IGNORE
    grace_from: str = "flag"  # "flag": from the flag's first line; "state": from entering the state
    after_grace: Action | None = None  # what to do once the grace period is over
    restart: bool = False  # the wheel waits for *R (restart) after this void
    void: bool = False  # a FAULT that also voids the open game


@dataclass(frozen=True)
class PolicySettings:
    """Timing knobs of the rules (seconds)."""

    launch_grace: float = 3.0  # vendor: ignore flag 8 in the first 3 s of state 3
    no_ball_grace: float = 5.0  # vendor: ignore flag 1 in state 4 for at least 5 s
    launch_alert: float = 30.0  # suggested: a launch retried this long in state 2 -> alert
    confirm_lines: int = 2  # a flag counts once seen on this many consecutive lines


_F8 = WarningFlag.LAUNCH_FAILURE
_F2 = WarningFlag.MISS_SPIN
_F1 = WarningFlag.NO_BALL
_F4 = WarningFlag.COMPONENT_FAULT
S = "suggested"
V = "vendor"

RULES: dict[tuple[WarningFlag, int], Rule] = {
    # -- flag 8, launch failure: the controller retries the launch by itself.
    (_F8, 1): Rule(Action.WARN, S, "launch failure before the game"),
    (_F8, 2): Rule(
        Action.WARN,
        S,
        "launch failure: the wheel retries; betting may stay open (no ball in play)",
        grace="launch_alert",
        after_grace=Action.WARN,
    ),
    (_F8, 3): Rule(
        Action.IGNORE,
        V,
        "flag 8 in the first 3 s of state 3 is a false trigger; if it persists: void",
        grace="launch_grace",
        grace_from="state",
        after_grace=Action.VOID,
    ),
    (_F8, 4): Rule(Action.VOID, S, "launch failure with the ball in play"),
    (_F8, 5): Rule(Action.WARN, S, "launch failure after the result (the result stands)"),
    (_F8, 6): Rule(Action.FAULT, S, "launch failure left the wheel stopped"),
    (_F8, 7): Rule(Action.WARN, S, "launch failure, ball not in the track"),
    # -- flag 2, miss-spin: ball turning with the rotor.
    (_F2, 1): Rule(Action.WARN, S, "miss-spin flag before the game"),
    (_F2, 2): Rule(Action.WARN, S, "miss-spin flag before the launch (seen before a retry)"),
    (_F2, 3): Rule(
        Action.VOID, V, "miss-spin: VOID GAME, lock all bets, send *R (restart)", restart=True
    ),
    (_F2, 4): Rule(Action.VOID, S, "miss-spin after no more bets: void, *R", restart=True),
    (_F2, 5): Rule(Action.WARN, S, "miss-spin flag after the result (the result stands)"),
    (_F2, 6): Rule(Action.WARN, S, "miss-spin flag while idle"),
    (_F2, 7): Rule(Action.WARN, S, "miss-spin flag, ball not in the track"),
    # -- flag 1, no ball: not seen by the in-rim sensors for one rotor revolution.
    (_F1, 1): Rule(Action.WARN, S, "no-ball flag before the game"),
    (_F1, 2): Rule(Action.WARN, S, "no-ball flag before the launch"),
    (_F1, 3): Rule(Action.WARN, S, "no-ball flag with the ball in the rim"),
    (_F1, 4): Rule(
        Action.IGNORE,
        V,
        "no ball detected: ignore for at least 5 s, then VOID (the wheel stops itself at 75 s)",
        grace="no_ball_grace",
        after_grace=Action.VOID,
    ),
    (_F1, 5): Rule(Action.WARN, S, "no-ball flag after the result (the result stands)"),
    (_F1, 6): Rule(Action.WARN, S, "no-ball flag while idle"),
    (_F1, 7): Rule(Action.WARN, S, "no-ball flag, ball not in the track"),
    # -- flag 4, component fault: sensor, motor or encoder; the wheel powers down.
    (_F4, 1): Rule(Action.FAULT, S, "component fault: expect a power-down", void=True),
    (_F4, 2): Rule(Action.FAULT, S, "component fault: expect a power-down", void=True),
    (_F4, 3): Rule(Action.FAULT, S, "component fault with the ball in the rim", void=True),
    (_F4, 4): Rule(
        Action.FAULT, V, "component fault: *F packets, power-down to 6, then self-test", void=True
    ),
    (_F4, 5): Rule(Action.FAULT, S, "component fault after the result (the result stands)"),
    (_F4, 6): Rule(Action.FAULT, V, "component fault: run the self-test (*F) to identify it"),
    (_F4, 7): Rule(Action.FAULT, S, "component fault", void=True),
}


def rule_for(flag: WarningFlag, state: int) -> Rule:
    return RULES[(flag, state)]
