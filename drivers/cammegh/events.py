"""Typed events of the Cammegh SS2 wheel driver (all JSON-friendly fields).

A wheel's events (:class:`WheelEvent` and the game states, results, voids and
warnings every wheel reports) are the wheel kind's, in :mod:`tablecommon.events.wheel`
(re-exported here); the SS2 adds its fault packets and self-test results.
"""

from __future__ import annotations

from dataclasses import dataclass

from tablecommon.events.wheel import (
    GameStateChanged,
    GameVoided,
    WarningCleared,
    WheelEvent,
    WheelWarning,
    WinningNumber,
)

__all__ = [
    "GameStateChanged",
    "GameVoided",
    "SelfTestResult",
    "WarningCleared",
    "WheelEvent",
    "WheelFault",
    "WheelWarning",
    "WinningNumber",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelFault(WheelEvent):
    """A ``*F <code>`` fault packet during play (mode bit 256)."""

    code: int
    meaning: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SelfTestResult(WheelEvent):
    """The outcome of ``*F`` (self-test): ``codes == (0,)`` means passed."""

    codes: tuple[int, ...]
    meanings: tuple[str, ...]
    passed: bool
