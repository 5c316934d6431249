"""Latency samples of a repeated operation (journal commits, MQTT PUBACKs).

Reported by ``get_status()`` and read by the benchmarks: count, p50, p99 and max
over the last 2048 samples (the max over all of them).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class Latency:
    """Durations of one kind of operation, in seconds."""

    samples: deque[float] = field(default_factory=lambda: deque(maxlen=2048))
    count: int = 0
    max_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)
        self.count += 1
        self.max_s = max(self.max_s, seconds)

    def summary(self) -> dict[str, float | int]:
        s = sorted(self.samples)
        if not s:
            return {"count": 0}
        return {
            "count": self.count,
            "p50_ms": round(s[len(s) // 2] * 1e3, 3),
            "p99_ms": round(s[min(len(s) - 1, (len(s) * 99) // 100)] * 1e3, 3),
            "max_ms": round(self.max_s * 1e3, 3),
        }
