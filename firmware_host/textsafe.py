"""Text from outside (the floor's bet ids, reasons, operator names; a device's bytes)
made safe for a terminal or a log line: no control character reaches either.

A reason sent over MQTT may hold an ANSI escape that clears a technician's screen or a
newline that forges a second log line; :func:`printable` shows each such character as a
visible escape (``\\x1b``, ``\\n``) instead, keeping everything else as it was.
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]


def _unsafe(ch: str) -> bool:
    # Cc: C0/C1 controls (ESC, CSI, BEL, CR, LF...); Cf: format characters (bidi
    # overrides that reorder what a terminal shows); Zl/Zp: line and paragraph separators.
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def printable(text: object, *, ascii_only: bool = False) -> str:
    """``text`` with every control or format character shown as an escape; with
    ``ascii_only`` every non-ASCII character too (the serial console is ASCII)."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() and (not ascii_only or s.isascii()):
        return s
    out = []
    for ch in s:
        if _unsafe(ch) or (ascii_only and not ch.isascii()):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)
