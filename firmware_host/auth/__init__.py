"""Who may send what to the table: signed floor requests, principals and roles.

- ``canonical``: the bytes a request's signature covers (RFC 8785 JCS, with a domain
  line naming the scheme and the topic);
- ``keys``: Ed25519 key files (``cryptography``), generation and loading;
- ``policy``: permissions, the built-in roles, the ``[auth]`` section;
- ``verify``: :class:`Authenticator` (the table's check: table, principal,
  signature, freshness, role) and :class:`Signer` (the floor's side);
- ``evidence``: the other direction, what the table (and the floor's record) says,
  signed so that the receiver can verify it: :func:`seal`, :func:`open_sealed`;
- ``identity``: the table's own Ed25519 identity key, which signs its messages.

``docs/security.md`` is the threat model and the vendor's guide.
"""

from __future__ import annotations

from .canonical import CanonicalError, canonicalize, signing_input
from .evidence import EvidenceError, open_sealed, seal
from .identity import IdentityKeyError, TableIdentity
from .keys import KeyFileError, generate, key_id, load_private_key, load_public_key
from .policy import (
    BET_PERMISSIONS,
    BUILTIN_ROLES,
    COMMAND_PERMISSIONS,
    PERMISSIONS,
    AuthSettings,
    PrincipalSpec,
)
from .verify import ANONYMOUS, AUTH_FIELDS, Authenticator, AuthError, Principal, Signer

__all__ = [
    "ANONYMOUS",
    "AUTH_FIELDS",
    "BET_PERMISSIONS",
    "BUILTIN_ROLES",
    "COMMAND_PERMISSIONS",
    "PERMISSIONS",
    "AuthError",
    "AuthSettings",
    "Authenticator",
    "CanonicalError",
    "EvidenceError",
    "IdentityKeyError",
    "KeyFileError",
    "Principal",
    "PrincipalSpec",
    "Signer",
    "TableIdentity",
    "canonicalize",
    "generate",
    "key_id",
    "load_private_key",
    "load_public_key",
    "open_sealed",
    "seal",
    "signing_input",
]
