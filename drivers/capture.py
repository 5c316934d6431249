"""Reading serial captures for ``tablectl decode`` and replay tests.

Two formats are accepted:

- the frame-log format of the shared fixtures and of :meth:`drivers.base.FrameLog.dump`:
  one line per frame, ``<unix time>\\t<RX|TX>\\t<frame>``, ``# session <n>`` lines
  between runs, other ``#`` lines ignored; frames dumped by a driver have their
  non-printable bytes escaped (``\\r``, ``\\x00``) and are unescaped here;
- anything else is a raw byte capture (what ``cat /dev/ttyUSB0 > file`` records):
  one RX record holding every byte, without times.

Stable API: :func:`read_capture`, :class:`CaptureRecord`, :func:`is_frame_log`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["CaptureRecord", "is_frame_log", "read_capture"]

_LINE = re.compile(rb"^(\d+(?:\.\d+)?)\t(RX|TX)\t(.*)$")
_SESSION = re.compile(rb"^# session (\d+)")


@dataclass(frozen=True)
class CaptureRecord:
    """One frame (frame-log format) or the whole capture (raw format)."""

    direction: str  # "RX" (from the device), "TX" (to it), "SESSION" (a new run starts)
    data: bytes
    time: float | None = None
    session: int | None = None
    line_no: int = 0  # 1-based line in the capture file (0 for raw captures)


def is_frame_log(data: bytes, probe: int = 50) -> bool:
    """True if the first non-comment lines all look like ``time<TAB>RX|TX<TAB>frame``."""
    seen = 0
    for line in data.splitlines()[: probe * 2]:
        if not line.strip() or line.startswith(b"#"):
            continue
        if not _LINE.match(line):
            return False
        seen += 1
        if seen >= probe:
            break
    return seen > 0


def _unescape(text: bytes) -> bytes:
    if b"\\" not in text:
        return text
    try:
        return text.decode("latin-1").encode("latin-1").decode("unicode_escape").encode("latin-1")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return text


def read_capture(data: bytes) -> Iterator[CaptureRecord]:
    """The records of a capture, in order (see the module docstring)."""
    if not is_frame_log(data):
        yield CaptureRecord("RX", data)
        return
    session: int | None = None
    for no, line in enumerate(data.splitlines(), 1):
        m = _SESSION.match(line)
        if m is not None:
            session = int(m.group(1))
            yield CaptureRecord("SESSION", b"", None, session, no)
            continue
        if not line.strip() or line.startswith(b"#"):
            continue
        m = _LINE.match(line)
        if m is None:
            continue  # a stray line in a frame log: skipped, like a host annotation
        yield CaptureRecord(
            m.group(2).decode(), _unescape(m.group(3)), float(m.group(1)), session, no
        )
