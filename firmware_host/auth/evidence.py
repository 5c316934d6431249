"""What the table says to the floor, signed so that the floor can verify it.

Requests into the table are signed by their principals (:mod:`.canonical`); what
comes out of the table is signed by the table's own identity key
(:mod:`.identity`), and the floor's own record of each table by the floor ingest's
key. Both use one form, spelled out for a floor vendor in ``docs/security.md`` with a
test vector:

    signed bytes = DOMAIN LF topic LF JCS(payload without its "signature" member)
    message      = that JCS text with ``,"signature":"<base64>"`` before its last ``}``

``DOMAIN`` is ``tablectl-table-v1`` for the table's messages and ``tablectl-floor-v1``
for the floor's record; ``topic`` is the topic below the table's root (``rounds``,
``anchor``, ``devices/wheel``, ``commands/response``...), or ``record`` for the
floor's record. JCS is RFC 8785, the canonical form requests are signed over. The
message itself is therefore exactly one string: a verifier that parses it and
canonicalises it again gets the signed bytes back, and :func:`open_sealed` (the
reference ingest's check) refuses any other spelling of the same content (spaces,
member order, escapes, a duplicated member that a first-wins parser would read
otherwise): a forger can neither alter a signed message nor store a variant of it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..games.errors import CodedError
from .canonical import MAX_SAFE_INTEGER, CanonicalError, canonicalize

#: First line of the bytes a table signs (its messages to the floor).
TABLE_DOMAIN = b"tablectl-table-v1"
#: First line of the bytes the floor ingest signs (its record of a table).
FLOOR_DOMAIN = b"tablectl-floor-v1"
#: The member that carries the signature (base64, RFC 4648 with padding, of the
#: 64-byte Ed25519 signature).
SIGNATURE = "signature"
_TAIL = ',"signature":"'


class EvidenceError(CodedError, ValueError):
    """A message that is not a valid signed message: ``NOT_JSON``, ``NOT_AN_OBJECT``,
    ``UNSIGNED``, ``NOT_CANONICAL``, ``BAD_SIGNATURE``."""

    code = "BAD_SIGNATURE"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


def _plain(value: Any) -> bool:
    """Whether orjson's sorted output of ``value`` is its JCS form: no float (JCS
    writes numbers as ECMAScript does), no integer beyond 2**53 - 1 (JCS rounds it), no
    member name outside the Basic Multilingual Plane (JCS sorts by UTF-16 code units,
    orjson by code points: they differ only there)."""
    stack = [value]
    while stack:
        x = stack.pop()
        items = x.values() if type(x) is dict else x
        if type(x) is dict:
            for k in x:
                if type(k) is not str or (not k.isascii() and any(ord(c) > 0xFFFF for c in k)):
                    return False
        for y in items:
            t = type(y)
            if t is dict or t is list:
                stack.append(y)
            elif t is float or (t is int and not -MAX_SAFE_INTEGER <= y <= MAX_SAFE_INTEGER):
                return False
    return True


def canonical_text(value: Any, *, float_free: bool = False) -> str:
    """``value`` (parsed JSON) in RFC 8785 canonical form. ``float_free``: the caller
    guarantees what :func:`_plain` checks (a round payload: integers only, ASCII
    member names), which saves the walk on the settlement's path."""
    if float_free or _plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
        except TypeError:  # orjson.JSONEncodeError: a lone surrogate, a foreign type
            pass
    return canonicalize(value).decode("utf-8")


def signed_bytes(topic: str, text: str, *, domain: bytes = TABLE_DOMAIN) -> bytes:
    """The bytes a signature covers: ``domain LF topic LF text`` (no trailing LF)."""
    return domain + b"\n" + topic.encode("utf-8") + b"\n" + text.encode("utf-8")


def seal_text(
    key: Ed25519PrivateKey, topic: str, text: str, *, domain: bytes = TABLE_DOMAIN
) -> bytes:
    """The message for a payload whose canonical ``text`` is given (a JSON object in
    JCS form, without ``signature``): ``text`` with the signature as its last member."""
    if not text.startswith("{") or not text.endswith("}"):
        raise ValueError("a sealed payload must be a JSON object")
    sig = base64.b64encode(key.sign(signed_bytes(topic, text, domain=domain))).decode("ascii")
    head = text[:-1] + ("," if text != "{}" else "")
    return (head + f'"{SIGNATURE}":"{sig}"' + "}").encode("utf-8")


def seal(
    key: Ed25519PrivateKey,
    topic: str,
    payload: Mapping[str, Any],
    *,
    domain: bytes = TABLE_DOMAIN,
    float_free: bool = False,
) -> bytes:
    """``payload`` signed for ``topic`` (the module docstring's form). A ``signature``
    member already in it is replaced."""
    body = {k: v for k, v in payload.items() if k != SIGNATURE}
    return seal_text(key, topic, canonical_text(body, float_free=float_free), domain=domain)


def open_sealed(
    raw: bytes,
    topic: str,
    keys: Sequence[Ed25519PublicKey],
    *,
    domain: bytes = TABLE_DOMAIN,
) -> tuple[dict[str, Any], int]:
    """Check a signed message: returns its payload (without ``signature``) and the
    index in ``keys`` of the key that signed it. Raises :class:`EvidenceError`:

    - ``NOT_JSON`` / ``NOT_AN_OBJECT``: not a JSON object in UTF-8;
    - ``UNSIGNED``: no ``signature`` member, or not base64 of 64 bytes;
    - ``NOT_CANONICAL``: not exactly the canonical text with the signature last (any
      other spelling, a duplicated member among them);
    - ``BAD_SIGNATURE``: no key in ``keys`` signed those bytes for ``topic``.
    """
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise EvidenceError("NOT_JSON", f"not JSON in UTF-8: {exc}") from None
    if not isinstance(doc, dict):
        raise EvidenceError("NOT_AN_OBJECT", "not a JSON object")
    sig = doc.pop(SIGNATURE, None)
    if not isinstance(sig, str):
        raise EvidenceError("UNSIGNED", "no signature member (a string)")
    try:
        signature = base64.b64decode(sig.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        signature = b""
    if len(signature) != 64:
        raise EvidenceError("UNSIGNED", "signature is not base64 of a 64-byte Ed25519 signature")
    tail = (_TAIL + sig + '"}').encode("utf-8")
    text = None
    for exact in (False, True):
        try:
            candidate = (
                canonicalize(doc).decode("utf-8")
                if exact
                else orjson.dumps(doc, option=orjson.OPT_SORT_KEYS).decode("utf-8")
            )
        except (CanonicalError, TypeError):
            continue
        head = candidate[:-1] if candidate != "{}" else "{"
        expected = head.encode("utf-8") + (tail if candidate != "{}" else tail[1:])
        if expected == raw:
            text = candidate
            break
    if text is None:
        raise EvidenceError(
            "NOT_CANONICAL",
            "not the signed form (the canonical JSON with the signature as its last "
            "member): reformatted, reordered or with a duplicated member",
        )
    message = signed_bytes(topic, text, domain=domain)
    for i, key in enumerate(keys):
        try:
            key.verify(signature, message)
        except InvalidSignature:
            continue
        return doc, i
    raise EvidenceError(
        "BAD_SIGNATURE",
        f"the signature does not verify for topic {topic!r} with "
        f"{'any of the ' + str(len(keys)) + ' keys' if keys else 'no key'} known",
    )


__all__ = [
    "FLOOR_DOMAIN",
    "SIGNATURE",
    "TABLE_DOMAIN",
    "EvidenceError",
    "canonical_text",
    "open_sealed",
    "seal",
    "seal_text",
    "signed_bytes",
]
