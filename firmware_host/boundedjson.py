"""Requests bounded before they are parsed: size, nesting depth and container count.

Everything on ``bets/request`` and ``commands/request`` comes from outside the
table. Python's ``json`` module parses at C speed but has no depth limit: a payload of
tens of thousands of ``[`` recurses until ``RecursionError`` (a traceback per request,
and milliseconds of work each), and a payload of a million small arrays allocates a
million lists. So a request is measured before it is parsed:

1. its size (:data:`MAX_REQUEST_BYTES`): ``len`` of the bytes, nothing read;
2. its shape: how many arrays and objects it opens and how deep they nest, counted
   on the brackets outside string literals (C-speed ``bytes.count``, ``replace``,
   ``split`` and ``translate`` remove the strings and keep the brackets; a Python
   loop only over what is left, at most ``2 * max_containers`` brackets);
3. only then ``json.loads``, which can no longer recurse deeper than ``max_depth``,
   and which refuses an object naming one member twice, at any depth
   (``DUPLICATE_MEMBER``): RFC 8259 leaves such a text's meaning to the parser (one
   keeps the first, another the last), so the table reads it no way at all. The check
   is the parser's ``object_pairs_hook`` (a ``dict`` built from the pairs, compared
   in length: at C speed, once per object, at most ``max_containers`` of them).

Each refusal is a :class:`RequestShapeError` with a stable code
(``REQUEST_TOO_LARGE``, ``REQUEST_TOO_DEEP``, ``REQUEST_TOO_COMPLEX``,
``MALFORMED_JSON``, ``DUPLICATE_MEMBER``) and a one-line message that echoes nothing
of the request; nothing here raises anything else. The
limits are far above what any request of the contract needs (``docs/mqtt.md``: a
bet nests 3 levels, the deepest command outcome 5).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .games.errors import CodedError
from .jsonio import JSON

#: Largest request accepted, bytes (a bet request is about 200 bytes, the largest
#: command of the contract, a stud poker deal, under 2 KiB).
MAX_REQUEST_BYTES = 16 * 1024
#: Deepest nesting of arrays and objects accepted (the contract needs 5).
MAX_DEPTH = 16
#: Most arrays and objects one request may open.
MAX_CONTAINERS = 1024

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: The last request :func:`loads` refused (the same object is not measured again).
_last_refused: bytes | None = None


class RequestShapeError(CodedError, ValueError):
    """A request refused before (or instead of) being parsed."""

    code = "MALFORMED_JSON"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


def _outside_strings(raw: bytes) -> bytes:
    """``raw`` without its string literals, in C-speed passes whatever it holds.

    Escapes go first: an escaped backslash, then an escaped quote (JSON reads escapes
    left to right, as ``bytes.replace`` does); every quote left then opens or closes a
    string, so the pieces between them alternate outside, inside, outside..."""
    text = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(text.split(b'"')[0::2])


def nesting(raw: bytes, *, max_containers: int = MAX_CONTAINERS) -> int:
    """The deepest nesting of arrays and objects in ``raw`` (JSON text), counting only
    brackets outside string literals. Raises ``REQUEST_TOO_COMPLEX`` above
    ``max_containers`` containers. An unterminated string leaves its brackets counted:
    the depth is then an upper bound (such a text is not JSON anyway)."""
    skeleton = _outside_strings(raw).translate(None, _NOT_BRACKETS)
    opened = skeleton.count(b"[") + skeleton.count(b"{")
    if opened > max_containers:
        raise RequestShapeError(
            "REQUEST_TOO_COMPLEX",
            f"the request opens {opened} arrays and objects; the limit is {max_containers}",
        )
    depth = deepest = 0
    for b in skeleton:
        if b in b"[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def check_shape(
    raw: bytes,
    *,
    max_bytes: int = MAX_REQUEST_BYTES,
    max_depth: int = MAX_DEPTH,
    max_containers: int = MAX_CONTAINERS,
) -> None:
    """Refuse ``raw`` if it is too large, nests too deep or opens too many containers."""
    if len(raw) > max_bytes:
        raise RequestShapeError(
            "REQUEST_TOO_LARGE", f"the request is {len(raw)} bytes; the limit is {max_bytes}"
        )
    # Fast path: a text that opens no more brackets than the depth limit (strings
    # included: an overestimate) cannot nest deeper.
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return
    depth = nesting(raw, max_containers=max_containers)
    if depth > max_depth:
        raise RequestShapeError(
            "REQUEST_TOO_DEEP",
            f"the request nests arrays and objects {depth} deep; the limit is {max_depth}",
        )


def _no_constant(name: str) -> Any:
    """NaN and the infinities are not JSON (and have no canonical form to sign)."""
    raise ValueError(f"{name} is not a JSON number")


def _one_reading(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose members all have different names (``object_pairs_hook``)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise RequestShapeError(
            "DUPLICATE_MEMBER",
            "an object of the request names one member twice: its meaning would depend on "
            "the parser (docs/security.md, 'One reading of a request'); send each member once",
        )
    return obj


def loads(
    raw: bytes,
    *,
    parse_int: Callable[[str], Any] | None = None,
    max_bytes: int = MAX_REQUEST_BYTES,
    max_depth: int = MAX_DEPTH,
    max_containers: int = MAX_CONTAINERS,
) -> JSON:
    """Parse a request's JSON text after :func:`check_shape`; every refusal is a
    :class:`RequestShapeError` (``MALFORMED_JSON`` for text that is not UTF-8 or not
    JSON)."""
    global _last_refused
    try:
        check_shape(raw, max_bytes=max_bytes, max_depth=max_depth, max_containers=max_containers)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RequestShapeError("MALFORMED_JSON", "the request is not UTF-8 text") from None
        try:
            value: JSON = json.loads(
                text,
                parse_int=parse_int,
                parse_constant=_no_constant,
                object_pairs_hook=_one_reading,
            )
        except RequestShapeError:  # a member named twice (a ValueError: caught first)
            raise
        except json.JSONDecodeError as exc:
            raise RequestShapeError(
                "MALFORMED_JSON",
                f"the request is not valid JSON: {exc.msg} at position {exc.pos}",
            ) from None
        except RecursionError:  # belt and braces: the shape was checked
            raise RequestShapeError("MALFORMED_JSON", "the request nests too deeply") from None
        except ValueError as exc:  # NaN/Infinity, or an integer parse_int refused
            raise RequestShapeError(
                "MALFORMED_JSON", f"the request is not valid JSON: {exc}"
            ) from None
    except RequestShapeError:
        _last_refused = raw
        raise
    return value


def peek_request_id(raw: bytes, *, parse_int: Callable[[str], Any] | None = None) -> str | None:
    """The top-level ``request_id`` of a request that could be parsed (to echo it in a
    refusal), or None; never raises. The request just refused by :func:`loads` is not
    measured a second time."""
    if raw is _last_refused:
        return None
    try:
        data = loads(raw, parse_int=parse_int)
    except RequestShapeError:
        return None
    rid = data.get("request_id") if isinstance(data, dict) else None
    return rid if isinstance(rid, str) and len(rid) <= 128 else None
