"""Who may do what at the table: principals, roles and the ``[auth]`` section.

A *principal* is one party on the floor that signs its requests with its own key: a
dealer's terminal, a pit supervisor, the floor system that places the players' bets.
A *role* is a set of *permissions*; a permission is a request the table answers:
each command of ``commands/request`` by name, and ``place`` and ``cancel`` of
``bets/request``. A principal holds one or more roles. The built-in roles follow the
separation of duties a gaming lab expects (GLI-24's owner/guest host model): who runs
the game or takes bets never also supervises it.

- ``dealer``: runs the game (opens and closes betting, re-shakes a voided throw,
  enters results on a manual table, players' decisions, a deal's setup) and signs
  itself in as the dealer on duty (only as the dealer it is bound to:
  ``[auth.principals.<name>] dealer``, by default its own name);
- ``pit_supervisor``: supervises: voids a round, confirms a jackpot payment (which
  needs a second, different principal: :data:`TWO_PERSON`), acknowledges an integrity
  alert, asks for a software check (``docs/integrity.md``) and signs a dealer in or
  out (``dealer_sign_in_others``); it does not deal (issue 29: a supervisor who also
  enters results can void the rounds it dislikes and settle the ones it likes);
- ``floor_system``: places and cancels bets (a cancel only of its own bets), asks
  for rounds again (``replay_rounds``);
- ``floor_ingest``: the floor's records (``tablectl floor-ingest``): asks for rounds
  again to repair a gap, and ``status``; its key signs the floor's record of the
  table (``floor_record``), which the table checks its journal against at start-up;
- ``jackpot_attendant``: confirms jackpot payments;
- ``observer``: ``status`` only;
- ``witness``: a second reading of each result (``witness_result``, ``docs/witness.md``:
  a recognition service's own principal), and ``status``. Resolving a held result
  (``resolve_result``) is the ``pit_supervisor``'s.

The roles' command permissions come from the commands' specs
(:mod:`firmware_host.commands`: each names the built-in roles that hold it); the bets
and records are added here. ``[auth.roles]`` may redefine these or add roles. Running without signatures needs
``signatures = false`` said in so many words; ``tablectl check-config`` warns about it
and the retained ``state`` shows it (``"auth": "unsigned"``). What a configuration may
not do without saying so (a key shared by two principals, a two-person rule one
person can satisfy...) is checked by ``firmware_host/risks.py``; ``accept_risks``
names each one a table runs with anyway, in so many words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

from ..commands import CATALOGUE, Catalogue, role_permissions, two_person, with_duty
from ..commands import permissions as command_permissions

#: Every command of ``commands/request`` needs a permission (its name, unless its spec
#: names another): :mod:`firmware_host.commands` declares them, with the built-in
#: roles that hold each, its duty and whether it needs two people.
COMMAND_PERMISSIONS = command_permissions(CATALOGUE)
#: The actions of ``bets/request``.
BET_PERMISSIONS = ("place", "cancel")
#: What is not a request: ``floor_record``, signing the floor's record of the table
#: that the table checks its journal against at start-up (``docs/floor.md``);
#: ``dealer_sign_in_others``, signing in a dealer other than the one the principal is
#: bound to (a supervisor's: ``dealer_sign_in`` naming another ``dealer``).
RECORD_PERMISSIONS = ("floor_record", "dealer_sign_in_others")
PERMISSIONS = frozenset(COMMAND_PERMISSIONS + BET_PERMISSIONS + RECORD_PERMISSIONS)

#: Running the game or taking bets (a dealer's, a floor system's): the commands whose
#: duty is ``play``, and the bets.
PLAY_PERMISSIONS = frozenset(BET_PERMISSIONS) | with_duty(CATALOGUE, "play")
#: Supervising it: undoing a round, paying a jackpot, clearing an alert (the commands
#: whose duty is ``supervise``), naming the dealer on duty. A role (or a principal)
#: holding both is warned about (``ROLE_MIXES_DUTIES``, ``firmware_host/risks.py``).
SUPERVISION_PERMISSIONS = with_duty(CATALOGUE, "supervise") | {"dealer_sign_in_others"}

#: The built-in roles, and what each holds besides the commands whose specs name it.
ROLE_NAMES = (
    "dealer", "pit_supervisor", "floor_system", "floor_ingest", "jackpot_attendant", "observer",
    "witness",
)  # fmt: skip
_NOT_COMMANDS: dict[str, frozenset[str]] = {
    "floor_system": frozenset(BET_PERMISSIONS),
    "floor_ingest": frozenset({"floor_record"}),
    #: Supervises the game, never runs it (separation of duties, issue 29).
    "pit_supervisor": frozenset({"dealer_sign_in_others"}),
}


def builtin_roles(specs: Catalogue = CATALOGUE) -> dict[str, frozenset[str]]:
    """Role -> permissions of the built-in roles: the command permissions ``specs`` give
    each, and the bets and records of :data:`_NOT_COMMANDS`. A spec naming a role that
    is not built in is refused."""
    given = role_permissions(specs)
    unknown = sorted(set(given) - set(ROLE_NAMES))
    if unknown:
        raise ValueError(f"commands name no built-in role {', '.join(unknown)}")
    return {
        role: frozenset(given.get(role, set()) | _NOT_COMMANDS.get(role, frozenset()))
        for role in ROLE_NAMES
    }


BUILTIN_ROLES: dict[str, frozenset[str]] = builtin_roles()

#: Commands that act only once confirmed by two different principals by default.
TWO_PERSON = two_person(CATALOGUE)

#: A principal's name: printable, no spaces, a topic- and log-safe identifier.
PRINCIPAL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}$")

#: The longest freshness window ``check-config`` lets through without
#: ``accept_risks = ["FRESHNESS_WINDOW_LONG"]``: a captured request can be replayed for
#: this long (its request id answers it once; another table refuses it).
MAX_AGE_LIMIT_S = 120

#: The policy checks a table may run with anyway, each named in ``[auth]
#: accept_risks`` (``firmware_host/risks.py``, ``docs/security.md``).
ACCEPTABLE_RISKS = ("SHARED_KEY", "TWO_PERSON_TOO_FEW", "TWO_PERSON_OFF", "FRESHNESS_WINDOW_LONG")


@dataclass(frozen=True)
class PrincipalSpec:
    """``[auth.principals.<name>]``: its public key files and its roles."""

    name: str
    keys: tuple[str, ...]
    roles: tuple[str, ...]
    #: The dealer this principal signs in as (``dealer_sign_in``); None: its own name.
    dealer: str | None = None

    @property
    def bound_dealer(self) -> str:
        return self.dealer or self.name


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
    #: The policy checks this table runs with anyway (:data:`ACCEPTABLE_RISKS`).
    accept_risks: frozenset[str] = frozenset()

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

    def sign_in_as(self, principal: str, requested: str | None) -> tuple[str, str]:
        """Who ``principal`` signs in with ``dealer_sign_in`` (``requested``: the
        command's ``dealer``, or None), and by what authority: ``bound`` (the dealer it
        is bound to, ``[auth.principals.<name>] dealer``, by default its own name) or
        ``supervisor`` (another dealer, which needs ``dealer_sign_in_others``).
        Raises ``ValueError`` naming who it may sign in otherwise."""
        spec = self.principals.get(principal)
        bound = spec.bound_dealer if spec is not None else principal
        if requested is None or requested == bound:
            return bound, "bound"
        if "dealer_sign_in_others" in self.permissions(principal):
            return requested, "supervisor"
        raise ValueError(
            f"{principal} may sign in only as dealer {bound} (its [auth.principals] dealer); "
            "a supervisor (dealer_sign_in_others) signs in another dealer"
        )


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
    "accept_risks": FieldSpec(
        "str_list",
        [],
        doc="policy checks this table runs with anyway, each by its code ("
        + ", ".join(ACCEPTABLE_RISKS)
        + "): still warned about, logged at start and listed in the retained state",
    ),
}

PRINCIPAL_SPECS: dict[str, FieldSpec] = {
    "keys": FieldSpec(
        "str_list",
        [],
        doc="Ed25519 public key files (PEM) of the principal; two during a key rotation",
    ),
    "roles": FieldSpec("str_list", [], doc="the principal's roles", required=True),
    "dealer": FieldSpec(
        "str",
        "",
        doc="the dealer this principal signs in as with dealer_sign_in (default: its own "
        "name); only a supervisor (dealer_sign_in_others) signs in another dealer",
    ),
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
        dealer = sub.get("dealer") or None
        if dealer is not None and not PRINCIPAL_NAME.match(dealer):
            errors.append(
                f"{p}.dealer: a dealer's name is 1-64 letters, digits, '_', '.', '@', ':', '-'"
            )
        principals[str(name)] = PrincipalSpec(
            str(name), tuple(sub.get("keys") or ()), tuple(sub.get("roles") or ()), dealer
        )
    unknown_cmds = sorted(set(vals.get("two_person") or ()) - set(CATALOGUE))
    if unknown_cmds:
        errors.append(
            f"{path}.two_person: unknown command(s) {', '.join(unknown_cmds)}; known: "
            f"{', '.join(CATALOGUE)}"
        )
    unknown_risks = sorted(set(vals.get("accept_risks") or ()) - set(ACCEPTABLE_RISKS))
    if unknown_risks:
        errors.append(
            f"{path}.accept_risks: no such risk to accept: {', '.join(unknown_risks)}; "
            f"known: {', '.join(ACCEPTABLE_RISKS)} (a key file open to others is never "
            "accepted)"
        )
    if len(errors) > n:
        return AuthSettings()
    return AuthSettings(
        signatures=vals["signatures"],
        max_age_s=vals["max_age_s"],
        principals=principals,
        roles=roles,
        two_person=frozenset(vals["two_person"]),
        accept_risks=frozenset(vals["accept_risks"]),
    )


register_section("auth", _validate)
