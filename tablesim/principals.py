"""The floor's principals for a simulated table: keys, the table's ``[auth]`` section
and the signers of the floor client.

``tablectl demo`` and the tests generate fresh Ed25519 keys in their temporary
directory (never a key shipped with the code): a dealer's terminal, a pit
supervisor, a jackpot attendant and the floor system that places the players' bets.
The table file names their public keys (:meth:`Principals.auth_section`); the floor
client signs each request as the principal whose role allows it
(:meth:`Principals.signer_for`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from firmware_host.auth import BUILTIN_ROLES, Signer, generate

#: The demo's principals and their roles (``firmware_host.auth.policy.BUILTIN_ROLES``).
DEMO_PRINCIPALS: dict[str, tuple[str, ...]] = {
    "dealer": ("dealer",),
    "pit": ("pit_supervisor",),
    "attendant": ("jackpot_attendant",),
    "floor": ("floor_system",),
}


@dataclass
class Principals:
    """Key pairs in ``directory`` for each principal, with their roles."""

    directory: Path
    roles: Mapping[str, tuple[str, ...]]
    signers: dict[str, Signer] = field(default_factory=dict)
    public_keys: dict[str, Path] = field(default_factory=dict)

    def auth_section(self, **options: Any) -> dict[str, Any]:
        """The table's ``[auth]`` section naming these principals (absolute key paths)."""
        return {
            **options,
            "principals": {
                name: {"keys": [str(self.public_keys[name])], "roles": list(roles)}
                for name, roles in self.roles.items()
            },
        }

    def signer_for(self, permission: str) -> Signer | None:
        """The first principal whose roles allow ``permission`` (``place``,
        ``close_betting``...), with the built-in roles."""
        for name, roles in self.roles.items():
            if any(permission in BUILTIN_ROLES.get(r, frozenset()) for r in roles):
                return self.signers[name]
        return None

    def signer(self, name: str) -> Signer:
        return self.signers[name]


def make_principals(
    directory: str | Path, roles: Mapping[str, tuple[str, ...]] | None = None
) -> Principals:
    """Generate a key pair for each principal of ``roles`` (default
    :data:`DEMO_PRINCIPALS`) in ``directory``."""
    d = Path(directory)
    out = Principals(d, dict(roles if roles is not None else DEMO_PRINCIPALS))
    for name in out.roles:
        priv, pub = generate(name, d, overwrite=True)
        out.signers[name] = Signer(name, priv)
        out.public_keys[name] = pub.resolve()
    return out
