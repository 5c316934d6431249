"""Checking who sent a floor request, and signing one (the floor's side).

Every request carries ``table_id``, ``principal``, ``timestamp`` (ISO 8601 UTC) and
``signature``: the base64 (RFC 4648, padded) of the principal's Ed25519 signature of
:func:`~.canonical.signing_input`. :meth:`Authenticator.verify` checks the request is
for this table, from a known principal, signed by one of its keys; then
:meth:`Authenticator.check_fresh` that it was signed within ``max_age_s`` of the
table's clock, and :meth:`Authenticator.allowed` that the principal's roles permit it.
Each refusal has its own stable code (:class:`AuthError`).

A *replay* (the same signed request sent again, by an attacker or by the broker's
QoS 1 re-delivery) never acts twice: the table answers a request id it already
answered with that answer (``journal/requests.py``), and a request older than the
freshness window, whose answer may since have been pruned, is refused.

:class:`Signer` is the floor's side, for ``tablesim``'s floor client, the tests and as
the reference for a vendor's implementation (``docs/security.md``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..games.errors import CodedError
from ..timefmt import iso_utc, utc_now
from .canonical import CanonicalError, signing_input
from .keys import KeyFileError, key_id, load_private_key, load_public_key
from .policy import PRINCIPAL_NAME, AuthSettings

#: The members of a request that say who sent it (not part of its content).
AUTH_FIELDS = ("table_id", "principal", "timestamp", "signature")

#: The principal of a request on a table that runs without signatures and names none.
ANONYMOUS = "anonymous"


class AuthError(CodedError, PermissionError):
    """A request refused for who sent it: ``UNSIGNED``, ``BAD_SIGNATURE``,
    ``UNKNOWN_PRINCIPAL``, ``WRONG_TABLE``, ``REQUEST_EXPIRED``,
    ``REQUEST_FROM_FUTURE``, ``NOT_PERMITTED``."""

    code = "NOT_AUTHENTICATED"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who sent a request, as the table established it."""

    name: str
    #: Proven by a signature (False: the table runs without signatures; name claimed).
    verified: bool
    #: The key that signed (``ed25519:...``), or None.
    key: str | None = None

    @property
    def audit(self) -> str:
        """How the audit names it: ``dealer-07`` verified, ``unverified:dealer-07`` not."""
        return self.name if self.verified else f"unverified:{self.name}"


def parse_timestamp(value: object) -> datetime:
    # The messages echo nothing of the request (nothing in it is trusted yet).
    if not isinstance(value, str) or len(value) > 40:
        raise AuthError("UNSIGNED", "timestamp must be an ISO 8601 UTC time string")
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise AuthError("UNSIGNED", "timestamp is not an ISO 8601 time") from None
    if at.tzinfo is None or at.utcoffset() != timedelta(0):
        raise AuthError("UNSIGNED", "timestamp must be UTC (end with 'Z')")
    return at


class Authenticator:
    """The table's check of who sent a request (see the module docstring)."""

    def __init__(
        self,
        settings: AuthSettings,
        table_id: str,
        *,
        keys: Mapping[str, tuple[Ed25519PublicKey, ...]] | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``keys``: each principal's public keys; loaded from the files the settings
        name when not given (:class:`~.keys.KeyFileError` if one cannot be read)."""
        self.settings = settings
        self.table_id = table_id
        self.clock = clock
        if keys is None:
            keys = {
                name: tuple(load_public_key(p) for p in spec.keys)
                for name, spec in settings.principals.items()
            }
        self.keys = dict(keys)

    @property
    def signatures(self) -> bool:
        return self.settings.signatures

    def keys_allowed(self, permission: str) -> tuple[Ed25519PublicKey, ...]:
        """The public keys of every principal allowed ``permission`` (``floor_record``:
        the keys that may sign the floor's record of the table)."""
        return tuple(
            key for name in self.settings.holders(permission) for key in self.keys.get(name, ())
        )

    @property
    def mode(self) -> str:
        """What the retained ``state`` shows: ``signed`` or ``unsigned``."""
        return "signed" if self.settings.signatures else "unsigned"

    def verify(self, topic: str, request: dict[str, Any]) -> Principal:
        """Who sent ``request`` (received on ``topic``, relative to the table's root).

        Signatures on: refuses (:class:`AuthError`) a request for another table, with a
        member of :data:`AUTH_FIELDS` missing, from an unknown principal, or whose
        signature no key of its principal verifies. Signatures off: the principal the
        request names (or :data:`ANONYMOUS`), unverified. A refusal's message echoes
        nothing of the request (the answer says only what the table knows).
        """
        table = request.get("table_id")
        if table is not None and table != self.table_id:
            raise AuthError(
                "WRONG_TABLE", f"the request is for another table; this is {self.table_id!r}"
            )
        name = request.get("principal")
        if name is not None and (not isinstance(name, str) or not PRINCIPAL_NAME.match(name)):
            raise AuthError(
                "UNSIGNED", "principal must be 1-64 letters, digits, '_', '.', '@', ':', '-'"
            )
        if not self.settings.signatures:
            return Principal(name or ANONYMOUS, False)
        missing = [f for f in AUTH_FIELDS if request.get(f) is None]
        if missing:
            raise AuthError(
                "UNSIGNED",
                f"the request is not signed: {', '.join(missing)} missing "
                "(this table requires signed requests; docs/security.md)",
            )
        assert isinstance(name, str)
        keys = self.keys.get(name)
        if not keys:
            raise AuthError(
                "UNKNOWN_PRINCIPAL", "the principal the request names is not known to this table"
            )
        parse_timestamp(request["timestamp"])
        sig_text = request["signature"]
        try:
            if not isinstance(sig_text, str):
                raise ValueError
            signature = base64.b64decode(sig_text, validate=True)
        except (ValueError, binascii.Error):
            raise AuthError("BAD_SIGNATURE", "signature must be base64 text") from None
        if len(signature) != 64:
            raise AuthError("BAD_SIGNATURE", "an Ed25519 signature is 64 bytes")
        try:
            message = signing_input(topic, request)
        except CanonicalError as exc:
            raise AuthError("BAD_SIGNATURE", f"the request has no canonical form: {exc}") from None
        for key in keys:
            try:
                key.verify(signature, message)
            except InvalidSignature:
                continue
            return Principal(name, True, key_id(key))
        raise AuthError(
            "BAD_SIGNATURE",
            "the signature does not verify with the key(s) of the principal the request "
            "names (forged, altered, or signed over another form: docs/security.md)",
        )

    def check_fresh(self, request: Mapping[str, Any]) -> None:
        """Refuse a signed request whose ``timestamp`` is outside ``max_age_s`` of the
        table's clock (a replay of an old request, or a terminal's clock off)."""
        if not self.settings.signatures:
            return
        at = parse_timestamp(request.get("timestamp"))
        now = self.clock()
        window = timedelta(seconds=self.settings.max_age_s)
        if at < now - window:
            raise AuthError(
                "REQUEST_EXPIRED",
                f"signed at {iso_utc(at)}, more than {self.settings.max_age_s} s before the "
                f"table's clock ({iso_utc(now)}): sign it again (same request_id) to retry",
            )
        if at > now + window:
            raise AuthError(
                "REQUEST_FROM_FUTURE",
                f"signed at {iso_utc(at)}, more than {self.settings.max_age_s} s after the "
                f"table's clock ({iso_utc(now)}): check the sender's clock",
            )

    def allowed(self, principal: Principal, permission: str) -> None:
        """Refuse (``NOT_PERMITTED``) what ``principal``'s roles do not permit. Without
        signatures, nothing is refused (nobody is known)."""
        if not self.settings.signatures:
            return
        if permission not in self.settings.permissions(principal.name):
            spec = self.settings.principals.get(principal.name)
            roles = ", ".join(spec.roles) if spec and spec.roles else "none"
            holders = ", ".join(sorted(self.settings.holders(permission))) or "nobody"
            raise AuthError(
                "NOT_PERMITTED",
                f"{principal.name} (roles: {roles}) may not {permission}; allowed: {holders}",
            )


class Signer:
    """Signs requests as one principal (the floor's side of :class:`Authenticator`)."""

    def __init__(
        self,
        principal: str,
        key: Ed25519PrivateKey | str | Path,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        if not PRINCIPAL_NAME.match(principal):
            raise ValueError(f"invalid principal name {principal!r}")
        self.principal = principal
        self.key = key if isinstance(key, Ed25519PrivateKey) else load_private_key(key)
        self.clock = clock

    def sign(
        self, topic: str, table_id: str, request: Mapping[str, Any], *, at: datetime | None = None
    ) -> dict[str, Any]:
        """``request`` with ``table_id``, ``principal``, ``timestamp`` and
        ``signature`` set (any old ``signature`` replaced): a retry signs the same
        request again, with a new timestamp, under the same ``request_id``."""
        body = {k: v for k, v in request.items() if k not in AUTH_FIELDS}
        body["table_id"] = table_id
        body["principal"] = self.principal
        body["timestamp"] = iso_utc(at if at is not None else self.clock())
        sig = self.key.sign(signing_input(topic, body))
        body["signature"] = base64.b64encode(sig).decode("ascii")
        return body


__all__ = [
    "ANONYMOUS",
    "AUTH_FIELDS",
    "AuthError",
    "Authenticator",
    "KeyFileError",
    "Principal",
    "Signer",
    "parse_timestamp",
]
