"""Cutting a byte stream into lines (sans-I/O), as a file's ``[framing]`` says.

``end = "CR or LF"`` (each of CR and LF ends a line; the empty lines a CR LF pair
leaves are skipped), ``"CR LF"``, ``"LF"`` or ``"CR"`` (exactly that ends a line).
A run longer than ``max_line`` without an end is reported once (an
:class:`~drivers.lineproto.rules.Unmatched`, never an event) and discarded up to the
next end. Any chunking of the same bytes gives the same lines.
"""

from __future__ import annotations

import re

from .rules import Unmatched
from .spec import Framing

__all__ = ["LineSplitter"]

_CR_OR_LF = re.compile(rb"[\r\n]")


class LineSplitter:
    """Lines (without their end) out of bytes in any chunking."""

    def __init__(self, framing: Framing) -> None:
        self.end = framing.end
        self.max_line = framing.max_line
        self._buf = b""
        self._overflow = False  # discarding an overlong line up to its end
        self.lines = 0
        self.overlong = 0

    def feed(self, data: bytes) -> list[bytes | Unmatched]:
        out: list[bytes | Unmatched] = []
        buf = self._buf + data
        parts = _CR_OR_LF.split(buf) if self.end is None else buf.split(self.end)
        tail = parts.pop()
        for part in parts:
            if self._overflow:
                self._overflow = False  # the end of the overlong line
                continue
            if not part:
                continue
            if len(part) > self.max_line:
                out.append(self._too_long(part))
                continue
            self.lines += 1
            out.append(part)
        keep = 0 if self.end is None else len(self.end) - 1  # a partial end
        if self._overflow:
            tail = tail[-keep:] if keep else b""
        elif len(tail) > self.max_line + keep:
            out.append(self._too_long(tail))
            self._overflow = True
            tail = tail[-keep:] if keep else b""
        self._buf = tail
        return out

    def _too_long(self, part: bytes) -> Unmatched:
        self.overlong += 1
        return Unmatched(f"no line end within {self.max_line} bytes", part[:64])

    def reset(self) -> None:
        """Forget a partial line (after a reconnect: its start is another session's)."""
        self._buf = b""
        self._overflow = False
