"""What every device event shares: the base :class:`DeviceEvent`, a device's
:class:`Health` and the :class:`HealthChanged` every driver emits."""

from __future__ import annotations

import enum
import time
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["DeviceEvent", "Health", "HealthChanged", "HealthState"]


class HealthState(enum.Enum):
    ONLINE = "online"
    OFFLINE = "offline"
    FAULT = "fault"


@dataclass(frozen=True, slots=True)
class Health:
    """A device's health as published on ``devices/<name>``."""

    state: HealthState = HealthState.OFFLINE
    code: str = ""
    message: str = ""
    since: float = 0.0  # time.time() of the last change, for display

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "code": self.code,
            "message": self.message,
            "since": self.since,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceEvent:
    """Base of every typed event a driver emits.

    ``device`` is the configured device name (``wheel``, ``shoe``...); ``raw`` is the
    frame(s) the event was decoded from, kept for game recall.
    """

    device: str = ""
    raw: bytes = b""
    monotonic: float = field(default_factory=time.monotonic)

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = _jsonable(asdict(self))
        d.pop("monotonic", None)
        d["raw"] = self.raw.decode("latin-1")
        d["kind"] = self.kind
        return d


def _jsonable(value: Any) -> Any:
    """Enums to their values, tuples to lists, recursively (events nest Health)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthChanged(DeviceEvent):
    """Emitted by every driver when its health changes."""

    health: Health = field(default_factory=Health)
