"""A rule's pattern: a Python regular expression, compiled with limits.

Python's ``re`` backtracks, so a pattern such as ``(a+)+b`` takes exponential time on
a line that almost matches. A device's line is bounded (``framing.max_line``, at most
:data:`MAX_LINE_LIMIT` characters) and the patterns are checked when the file is read
(``tablectl check-config``), cheaply and conservatively, on the parsed pattern
(``re._parser``, the standard library's own parser):

- a repetition that can repeat more than once may not hold a repetition of unbounded
  length (``(a+)+``, ``(\\d+,){0,6}``): the classic catastrophic backtracking;
- a repetition of unbounded length may not hold a repetition of variable length
  (``(\\d{1,2},)*``) nor an alternation (``(a|ab)*``), whose overlapping choices
  backtrack alike.

What is refused has a simple rewrite: a character class repeated once (``[\\d,]*``),
with a conversion that splits it (``dice``), or the repetition written out. A
possessive repetition (``a*+``) or an atomic group (``(?>...)``) never backtracks into
itself and is not counted as an outer repetition. Lines are matched whole
(``fullmatch``), so a pattern needs no anchors.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["MAX_LINE_LIMIT", "compile_pattern"]

#: The longest line a file may allow (``framing.max_line``).
MAX_LINE_LIMIT = 4096

# The standard library's own regular-expression parser (no type stubs: Any).
_p: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT)


def compile_pattern(text: str) -> tuple[re.Pattern[str] | None, str | None]:
    """The compiled pattern, or None and why it is refused."""
    try:
        compiled = re.compile(text)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        return None, f"pattern does not compile: {exc.msg}{where}"
    except (OverflowError, RecursionError, ValueError) as exc:
        return None, f"pattern does not compile: {exc}"
    try:
        risk = _risk(_p.parse(text), many=False, unbounded=False)
    except RecursionError:
        return None, "pattern nested too deeply"
    if risk is not None:
        return None, f"pattern can backtrack catastrophically: {risk}"
    return compiled, None


def _risk(items: Any, *, many: bool, unbounded: bool) -> str | None:
    """The first risky construct in ``items`` (inside repetitions that repeat more than
    once when ``many``, of unbounded length when ``unbounded``), or None."""
    for op, av in items:
        found: str | None = None
        if op in _REPEATS:
            lo, hi, body = av
            variable = hi != lo
            endless = hi == _c.MAXREPEAT
            if many and endless:
                return "a repetition of unbounded length inside a repeated group"
            if unbounded and variable:
                return "a repetition of variable length inside an unbounded repetition"
            found = _risk(body, many=many or hi > 1, unbounded=unbounded or endless)
        elif op in (_c.POSSESSIVE_REPEAT,):
            found = _risk(av[2], many=False, unbounded=False)
        elif op is _c.ATOMIC_GROUP:
            found = _risk(av, many=False, unbounded=False)
        elif op is _c.SUBPATTERN:
            found = _risk(av[3], many=many, unbounded=unbounded)
        elif op is _c.BRANCH:
            if unbounded and len(av[1]) > 1:
                return "an alternation inside an unbounded repetition"
            for branch in av[1]:
                found = found or _risk(branch, many=many, unbounded=unbounded)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            found = _risk(av[1], many=many, unbounded=unbounded)
        elif op is _c.GROUPREF_EXISTS:
            for part in av[1:]:
                if part is not None:
                    found = found or _risk(part, many=many, unbounded=unbounded)
        if found is not None:
            return found
    return None
