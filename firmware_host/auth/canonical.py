"""The canonical form a floor request is signed over: RFC 8785 (JCS) JSON.

A floor vendor signs a request in any language with an off-the-shelf JSON
Canonicalization Scheme library; the table rebuilds the same bytes from the request
it parsed. ``docs/security.md`` spells the form out, with a test vector that
``tests/auth/test_canonical.py`` keeps true.

JCS in short: no whitespace; object members sorted by their names compared as
UTF-16 code units; strings as JSON with only ``"``, ``\\`` and the control
characters escaped (``\\b \\t \\n \\f \\r`` short, the others ``\\u00xx``, lower-case
hex), everything else as UTF-8; numbers as ECMAScript writes a double
(``12.5``, ``1e+21``, ``1e-7``; an integer as its digits). What is signed is

    b"tablectl-request-v1\\n" + topic + b"\\n" + JCS(request without "signature")

with ``topic`` the request topic below the table's root (``bets/request`` or
``commands/request``): a signature made for one table, topic or content fits no other.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

#: First line of every signed message: the scheme and its version.
DOMAIN = b"tablectl-request-v1"

#: Integers beyond this are not exact in an IEEE double: JCS would round them.
MAX_SAFE_INTEGER = 2**53 - 1


class CanonicalError(ValueError):
    """A value that has no canonical form (NaN, a lone surrogate, an oversized number)."""


def _number(x: float) -> str:
    """ECMAScript's Number::toString of a finite double (RFC 8785 section 3.2.2.3)."""
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    # repr gives the shortest digits that read back as x, like ECMAScript.
    dec = Decimal(repr(abs(x)))
    _, digits_t, exp = dec.as_tuple()
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    assert isinstance(exp, int)
    # value = 0.digits * 10**n
    n = exp + len("".join(map(str, digits_t)))
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mant = digits if k == 1 else digits[0] + "." + digits[1:]
        out = f"{mant}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + out


def _string(s: str) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalError("a string holds a lone surrogate (not Unicode text)") from None
    # json.dumps escapes exactly what JCS escapes, in the same forms, with
    # ensure_ascii=False: '"', '\\', and U+0000..U+001F (\b \t \n \f \r short).
    return json.dumps(s, ensure_ascii=False)


def _encode(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalError(f"{value!r} is not a JSON number")
        out.append(_number(value))
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        for key in value:
            if not isinstance(key, str):
                raise CanonicalError(f"object member name {key!r} is not a string")
        keys = sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        for i, key in enumerate(keys):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    else:
        raise CanonicalError(f"{type(value).__name__} has no canonical JSON form")


def canonicalize(value: Any) -> bytes:
    """``value`` (parsed JSON) in RFC 8785 canonical form, UTF-8.

    Integers are written in full: beyond ±(2**53 - 1) they are never valid in a
    request, and a JCS library would round them (the signature then fails)."""
    out: list[str] = []
    _encode(value, out)
    return "".join(out).encode("utf-8")


def signing_input(topic: str, request: dict[str, Any]) -> bytes:
    """The bytes a request's signature covers (module docstring): ``request`` with
    its ``signature`` member left out."""
    body = {k: v for k, v in request.items() if k != "signature"}
    return DOMAIN + b"\n" + topic.encode("utf-8") + b"\n" + canonicalize(body)
