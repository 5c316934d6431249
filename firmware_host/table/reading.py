"""What a request's fields must be, and the refusal when they are not: shared by the
floor (``floor.py``) and the parts that answer commands (``commands.py``)."""

from __future__ import annotations

import re

from ..games.errors import CodedError

#: An identifier from the floor (request, bet, round, hit ids): printable ASCII, no
#: space, so that it can never smuggle a control character into a log, the console
#: or a downstream system.
_IDENT = re.compile(r"[\x21-\x7e]+")
MAX_REQUEST_ID = 128
MAX_BET_ID = 64
MAX_REASON = 200


class RequestError(CodedError, ValueError):
    """A request refused before it reaches the table (malformed, unknown field or
    command...): answered with its ``code`` and ``message``."""

    code = "MALFORMED_REQUEST"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


def is_identifier(value: object, max_len: int) -> bool:
    return isinstance(value, str) and 0 < len(value) <= max_len and bool(_IDENT.fullmatch(value))


def identifier(value: object, what: str, max_len: int, *, show: bool = True) -> str:
    """``value`` if it is an identifier of 1..``max_len`` printable ASCII characters
    (``show``: the refusal quotes what it got)."""
    if not is_identifier(value, max_len):
        got = f", got {shown(value)}" if show else ""
        raise RequestError(
            "BAD_IDENTIFIER",
            f"{what} must be 1-{max_len} printable ASCII characters without spaces{got}",
        )
    assert isinstance(value, str)
    return value


def shown(value: object) -> str:
    """``value`` as a refusal may quote it: its repr, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def reason_text(value: object, what: str) -> str:
    """``value`` if it is a reason: a non-empty string of at most :data:`MAX_REASON`
    printable characters."""
    if not isinstance(value, str) or not value.strip():
        raise RequestError("MALFORMED_REQUEST", f"{what} must be a non-empty string")
    if len(value) > MAX_REASON or not value.isprintable():
        raise RequestError(
            "MALFORMED_REQUEST", f"{what} must be at most {MAX_REASON} printable characters"
        )
    return value
