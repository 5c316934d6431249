"""Who may do what at the table: principals, roles and the ``[auth]`` section.

A *principal* is one party on the floor that signs its requests with its own key: a
dealer's terminal, a pit supervisor, the floor system that places the players' bets.
A *role* is a set of *permissions*; a permission is a request the table answers:
each command of ``commands/request`` by name, and ``place`` and ``cancel`` of
``bets/request``. A principal holds one or more roles. The built-in roles follow the
separation of duties a gaming lab expects (GLI-24's owner/guest host model):

- ``dealer``: runs the game (opens and closes betting, re-shakes a voided throw,
  enters results on a manual table, players' decisions, a deal's setup);
- ``pit_supervisor``: what a dealer does, and voids a round and confirms a jackpot
  payment (which needs a second, different principal: :data:`TWO_PERSON`),
  acknowledges an integrity alert and asks for a software check (``docs/integrity.md``);
- ``floor_system``: places and cancels bets (a cancel only of its own bets), asks
  for rounds again (``replay_rounds``);
- ``floor_ingest``: the floor's records (``tablectl floor-ingest``): asks for rounds
  again to repair a gap, and ``status``; its key signs the floor's record of the
  table (``floor_record``), which the table checks its journal against at start-up;
- ``jackpot_attendant``: confirms jackpot payments;
- ``observer``: ``status`` only.

``[auth.roles]`` may redefine these or add roles. Running without signatures needs
``signatures = false`` said in so many words; ``tablectl check-config`` warns about it
and the retained ``state`` shows it (``"auth": "unsigned"``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config import FieldSpec, register_section, validate_fields

#: Every command of ``commands/request`` (a permission each).
COMMAND_PERMISSIONS = (
    "open_betting",
    "close_betting",
    "void_round",
    "void_throw",
    "result",
    "decide",
    "deal_setup",
    "new_shoe",
    "jackpot_paid",
    "status",
    "replay_rounds",
    "ack_alert",
    "verify_software",
    "dealer_sign_in",
    "dealer_sign_out",
)
#: The actions of ``bets/request``.
BET_PERMISSIONS = ("place", "cancel")
#: What is not a request: ``floor_record``, signing the floor's record of the table
#: that the table checks its journal against at start-up (``docs/floor.md``).
RECORD_PERMISSIONS = ("floor_record",)
PERMISSIONS = frozenset(COMMAND_PERMISSIONS + BET_PERMISSIONS + RECORD_PERMISSIONS)

_DEALER = frozenset(
    {
        "open_betting",
        "close_betting",
        "void_throw",
        "result",
        "decide",
        "deal_setup",
        "new_shoe",
        "status",
        "dealer_sign_in",
        "dealer_sign_out",
    }
)
BUILTIN_ROLES: dict[str, frozenset[str]] = {
    "dealer": _DEALER,
    "pit_supervisor": _DEALER | {"void_round", "jackpot_paid", "ack_alert", "verify_software"},
    "floor_system": frozenset({"place", "cancel", "status", "replay_rounds"}),
    "floor_ingest": frozenset({"replay_rounds", "status", "floor_record"}),
    "jackpot_attendant": frozenset({"jackpot_paid", "status"}),
    "observer": frozenset({"status"}),
}

#: Commands that act only once confirmed by two different principals by default.
TWO_PERSON = ("jackpot_paid",)

#: A principal's name: printable, no spaces, a topic- and log-safe identifier.
PRINCIPAL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}$")


@dataclass(frozen=True)
class PrincipalSpec:
    """``[auth.principals.<name>]``: its public key files and its roles."""

    name: str
    keys: tuple[str, ...]
    roles: tuple[str, ...]


@dataclass(frozen=True)
class AuthSettings:
    """The ``[auth]`` section."""

    #: Whether requests must be signed (``false`` only by saying so; warned about).
    signatures: bool = True
    #: A request's ``timestamp`` must be within this many seconds of the table's clock.
    max_age_s: int = 30
    principals: Mapping[str, PrincipalSpec] = field(default_factory=dict)
    #: Role -> permissions: the built-in roles, as ``[auth.roles]`` changed them.
    roles: Mapping[str, frozenset[str]] = field(default_factory=lambda: dict(BUILTIN_ROLES))
    #: Commands that need two different principals.
    two_person: frozenset[str] = frozenset(TWO_PERSON)

    def permissions(self, principal: str) -> frozenset[str]:
        """What ``principal`` may do (nothing if unknown)."""
        spec = self.principals.get(principal)
        if spec is None:
            return frozenset()
        out: set[str] = set()
        for role in spec.roles:
            out |= self.roles.get(role, frozenset())
        return frozenset(out)

    def holders(self, permission: str) -> list[str]:
        """Principals allowed ``permission``."""
        return [p for p in self.principals if permission in self.permissions(p)]


AUTH_SPECS: dict[str, FieldSpec] = {
    "signatures": FieldSpec(
        "bool",
        True,
        doc="floor requests must be signed by a known principal (false: taken on trust, for "
        "a bench only; check-config warns and the retained state shows 'unsigned')",
    ),
    "max_age_s": FieldSpec(
        "int",
        30,
        doc="a signed request's timestamp must be within this many seconds of the table's "
        "clock (older: REQUEST_EXPIRED; later: REQUEST_FROM_FUTURE)",
        range=(1, 3600),
    ),
    "two_person": FieldSpec(
        "str_list",
        list(TWO_PERSON),
        doc="commands that act only when confirmed by two different principals",
    ),
    "principals": FieldSpec(
        "table", {}, doc="[auth.principals.<name>] keys = [public key files], roles = [...]"
    ),
    "roles": FieldSpec(
        "table", {}, doc="[auth.roles] <role> = [permissions]: redefine or add roles"
    ),
}

PRINCIPAL_SPECS: dict[str, FieldSpec] = {
    "keys": FieldSpec(
        "str_list",
        [],
        doc="Ed25519 public key files (PEM) of the principal; two during a key rotation",
    ),
    "roles": FieldSpec("str_list", [], doc="the principal's roles", required=True),
}


def _validate(data: Any, path: str, errors: list[str]) -> AuthSettings:
    n = len(errors)
    vals = validate_fields(AUTH_SPECS, data, path, errors)
    roles: dict[str, frozenset[str]] = dict(BUILTIN_ROLES)
    for role, perms in (vals.get("roles") or {}).items():
        p = f"{path}.roles.{role}"
        if not isinstance(perms, list) or not all(isinstance(x, str) for x in perms):
            errors.append(f"{p}: expected a list of permissions, got {perms!r}")
            continue
        unknown = sorted(set(perms) - PERMISSIONS)
        if unknown:
            errors.append(
                f"{p}: unknown permission(s) {', '.join(unknown)}; known: "
                f"{', '.join(sorted(PERMISSIONS))}"
            )
            continue
        roles[str(role)] = frozenset(perms)
    principals: dict[str, PrincipalSpec] = {}
    for name, spec in (vals.get("principals") or {}).items():
        p = f"{path}.principals.{name}"
        if not PRINCIPAL_NAME.match(str(name)):
            errors.append(
                f"{p}: a principal's name is 1-64 letters, digits, '_', '.', '@', ':', '-'"
            )
            continue
        sub = validate_fields(PRINCIPAL_SPECS, spec, p, errors)
        unknown_roles = sorted(set(sub.get("roles") or ()) - set(roles))
        if unknown_roles:
            errors.append(
                f"{p}.roles: unknown role(s) {', '.join(unknown_roles)}; known: "
                f"{', '.join(sorted(roles))}"
            )
        if vals.get("signatures", True) and not sub.get("keys"):
            errors.append(f"{p}.keys: a principal needs at least one public key file")
        principals[str(name)] = PrincipalSpec(
            str(name), tuple(sub.get("keys") or ()), tuple(sub.get("roles") or ())
        )
    unknown_cmds = sorted(set(vals.get("two_person") or ()) - set(COMMAND_PERMISSIONS))
    if unknown_cmds:
        errors.append(
            f"{path}.two_person: unknown command(s) {', '.join(unknown_cmds)}; known: "
            f"{', '.join(COMMAND_PERMISSIONS)}"
        )
    if len(errors) > n:
        return AuthSettings()
    return AuthSettings(
        signatures=vals["signatures"],
        max_age_s=vals["max_age_s"],
        principals=principals,
        roles=roles,
        two_person=frozenset(vals["two_person"]),
    )


register_section("auth", _validate)
