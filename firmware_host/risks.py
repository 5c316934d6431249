"""What a table's configuration may not do without saying so (issue 29): the checks
that keep ``[auth]`` from configuring an open door.

Each check has a stable code. A check that fails is a *problem* of the plan
(:func:`firmware_host.assembly.read_plan`): ``tablectl check-config`` lists it and the
daemon refuses to start with it, the same lines from the same code. Four of them a
table may run with anyway, by naming their codes in ``[auth] accept_risks`` (in so many
words: each is then still printed as a warning by ``check-config``, logged when the
daemon starts and listed in the retained ``state`` as ``accepted_risks``):

- ``SHARED_KEY``: one public key listed by two principals: whoever holds the private
  key is both (a jackpot confirmed "by two people" by one);
- ``TWO_PERSON_TOO_FEW``: a command of ``two_person`` that fewer than two principals
  with keys of their own may send (principals sharing a key count once): one key
  holder satisfies a rule meant for two people, or nobody can;
- ``TWO_PERSON_OFF``: a table whose game has a progressive jackpot without
  ``jackpot_paid`` in ``two_person``: one principal confirms a payment alone;
- ``FRESHNESS_WINDOW_LONG``: ``max_age_s`` above :data:`MAX_AGE_LIMIT_S`: a captured
  request can be replayed for that long.

One is never accepted: a key file of the table open to other users
(``AUDIT_KEY_EXPOSED``, ``TABLE_IDENTITY_EXPOSED``: the daemon's own verdict,
:meth:`AuditKey.load` and :meth:`TableIdentity.load`, which refuse to start with it
whatever the configuration says; an invalid key file likewise). Principals' public
key files are public: their mode does not matter.

One is a warning only: ``ROLE_MIXES_DUTIES``, a role (or a principal's roles together)
combining running the game or taking bets with supervising it
(:data:`~firmware_host.auth.policy.PLAY_PERMISSIONS`,
:data:`~firmware_host.auth.policy.SUPERVISION_PERMISSIONS`).

A table without signatures (``signatures = false``, a bench) is warned about as such;
the key and two-person checks do not apply to it (nobody is authenticated).
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .auth.identity import IdentityKeyError, TableIdentity
from .auth.keys import KeyFileError, key_id, load_public_key
from .auth.policy import (
    ACCEPTABLE_RISKS,
    MAX_AGE_LIMIT_S,
    PLAY_PERMISSIONS,
    SUPERVISION_PERMISSIONS,
    AuthSettings,
)
from .journal.auditkey import AuditKey, AuditKeyError
from .journal.settings import JournalSettings

__all__ = ["ACCEPTABLE_RISKS", "MAX_AGE_LIMIT_S", "Finding", "Verdict", "assess"]


@dataclass(frozen=True)
class Finding:
    """One failed check: its code, where in the file, why."""

    code: str
    where: str
    message: str

    def line(self) -> str:
        return f"{self.where}: {self.code}: {self.message}"


@dataclass(frozen=True)
class Verdict:
    """What the checks say of a configuration."""

    #: Why the table cannot run (one line each, with its code).
    problems: tuple[str, ...] = ()
    #: What runs but deserves a look, accepted risks included.
    warnings: tuple[str, ...] = ()
    #: The codes of the risks the table runs with (accepted and present), sorted.
    accepted: tuple[str, ...] = ()
    #: Each accepted risk's line (the daemon logs them when it starts).
    accepted_lines: tuple[str, ...] = ()


def assess(auth: AuthSettings, *, jackpot: bool, journal: JournalSettings | None) -> Verdict:
    """Every check on ``auth`` (key files resolved) and the table's own key files
    (``journal``'s audit and identity keys; None: not checked). ``jackpot``: the
    table's game offers a progressive jackpot."""
    problems: list[str] = []
    warnings: list[str] = []
    findings: list[Finding] = []
    if auth.signatures:
        key_ids = _public_key_ids(auth, problems)
        findings += _shared_keys(auth, key_ids)
        findings += _two_person(auth, key_ids, jackpot=jackpot)
        if auth.max_age_s > MAX_AGE_LIMIT_S:
            findings.append(
                Finding(
                    "FRESHNESS_WINDOW_LONG",
                    "auth.max_age_s",
                    f"{auth.max_age_s} s: a captured request could be replayed for that long; "
                    f"at most {MAX_AGE_LIMIT_S} s (run NTP on the table and the terminals)",
                )
            )
        warnings += _mixed_duties(auth)
    accepted: set[str] = set()
    accepted_lines: list[str] = []
    for f in findings:
        if f.code in auth.accept_risks:
            accepted.add(f.code)
            accepted_lines.append(f"{f.line()} (accepted: [auth] accept_risks)")
            warnings.append(accepted_lines[-1])
        else:
            problems.append(
                f'{f.line()} (to run with it anyway: [auth] accept_risks = ["{f.code}"])'
            )
    for code in sorted(auth.accept_risks - accepted):
        warnings.append(
            f"auth.accept_risks: {code} is accepted, but this configuration does not have it "
            "(remove it)"
        )
    if journal is not None:
        problems += [f.line() for f in _key_files(journal)]
    return Verdict(tuple(problems), tuple(warnings), tuple(sorted(accepted)), tuple(accepted_lines))


def _public_key_ids(auth: AuthSettings, problems: list[str]) -> dict[str, tuple[str, ...]]:
    """Each principal's key ids; a key file that cannot be read is a problem."""
    out: dict[str, tuple[str, ...]] = {}
    for name, spec in auth.principals.items():
        ids: list[str] = []
        for path in spec.keys:
            try:
                ids.append(key_id(load_public_key(path)))
            except KeyFileError as exc:
                problems.append(f"auth.principals.{name}.keys: {exc}")
        out[name] = tuple(ids)
    return out


def _shared_keys(auth: AuthSettings, key_ids: Mapping[str, tuple[str, ...]]) -> list[Finding]:
    """A key listed by more than one principal (by the key itself, not its file name)."""
    owners: dict[str, list[str]] = {}
    for name, ids in key_ids.items():
        for kid in dict.fromkeys(ids):
            owners.setdefault(kid, []).append(name)
    return [
        Finding(
            "SHARED_KEY",
            ", ".join(f"auth.principals.{n}.keys" for n in sorted(names)),
            f"the key {kid} is listed by {', '.join(sorted(names))}: whoever holds its "
            "private key signs as each of them (two principals are two keys)",
        )
        for kid, names in owners.items()
        if len(names) > 1
    ]


def _people(names: list[str], key_ids: Mapping[str, tuple[str, ...]]) -> int:
    """How many of ``names`` have keys of their own: principals sharing a key (directly
    or through others) count once."""
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    first: dict[str, str] = {}
    for n in names:
        for kid in key_ids.get(n, ()):
            if kid in first:
                parent[root(n)] = root(first[kid])
            else:
                first[kid] = n
    return len({root(n) for n in names})


def _two_person(
    auth: AuthSettings, key_ids: Mapping[str, tuple[str, ...]], *, jackpot: bool
) -> list[Finding]:
    out: list[Finding] = []
    if jackpot and "jackpot_paid" not in auth.two_person:
        out.append(
            Finding(
                "TWO_PERSON_OFF",
                "auth.two_person",
                "this table's game has a progressive jackpot and jackpot_paid is not in "
                "two_person: one principal would confirm a payment alone",
            )
        )
    for command in sorted(auth.two_person):
        if command == "jackpot_paid" and not jackpot:
            continue  # no jackpot here: the command is refused NOT_SUPPORTED anyway
        holders = sorted(auth.holders(command))
        if not holders:
            continue  # nobody may send it: a closed door, not an open one
        people = _people(holders, key_ids)
        if people < 2:
            who = ", ".join(holders)
            why = (
                f"{who} share their keys: one key holder confirms it as two principals"
                if len(holders) > 1
                else f"only {who} may send it: nobody can be the second"
            )
            out.append(
                Finding(
                    "TWO_PERSON_TOO_FEW",
                    "auth.two_person",
                    f"{command} needs two different principals, and fewer than two with keys "
                    f"of their own may send it ({why})",
                )
            )
    return out


def _mixed_duties(auth: AuthSettings) -> list[str]:
    """``ROLE_MIXES_DUTIES``: the roles principals hold, and each principal's roles
    together, that both run the game (or take bets) and supervise it."""
    lines: list[str] = []

    def mixed(perms: frozenset[str]) -> tuple[list[str], list[str]] | None:
        play, sup = sorted(perms & PLAY_PERMISSIONS), sorted(perms & SUPERVISION_PERMISSIONS)
        return (play, sup) if play and sup else None

    used = sorted({r for spec in auth.principals.values() for r in spec.roles})
    flagged: set[str] = set()
    for role in used:
        m = mixed(auth.roles.get(role, frozenset()))
        if m is not None:
            flagged.add(role)
            lines.append(
                f"auth.roles.{role}: ROLE_MIXES_DUTIES: runs the game or takes bets "
                f"({', '.join(m[0])}) and supervises it ({', '.join(m[1])}): one principal "
                "could void what it lost or pay what it won; give supervision its own role"
            )
    for name, spec in auth.principals.items():
        if any(r in flagged for r in spec.roles):
            continue
        m = mixed(auth.permissions(name))
        if m is not None:
            lines.append(
                f"auth.principals.{name}.roles: ROLE_MIXES_DUTIES: its roles together run "
                f"the game or take bets ({', '.join(m[0])}) and supervise it "
                f"({', '.join(m[1])}); give supervision to another principal"
            )
    return lines


def _key_files(journal: JournalSettings) -> list[Finding]:
    """The daemon's own verdict on the table's audit and identity key files, where they
    exist (a missing one is the journal's to judge when it opens: created for a new
    table, refused beside an existing journal)."""
    out: list[Finding] = []
    checks: list[tuple[Path, str, str, Callable[[Path], object]]] = [
        (journal.key_path, "journal.audit_key", "AUDIT_KEY_EXPOSED", AuditKey.load),
        (journal.identity_path, "journal.identity_key", "TABLE_IDENTITY_EXPOSED",
         TableIdentity.load),
    ]  # fmt: skip
    for path, where, exposed, load in checks:
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        try:
            load(path)
        except (AuditKeyError, IdentityKeyError) as exc:
            if exc.code.endswith("_MISSING"):
                continue
            if exc.code.endswith("_UNREADABLE"):
                # not readable by whoever checks (check-config run as another user):
                # its mode alone says whether other users may read or write it
                if mode & stat.S_IRWXO:
                    out.append(
                        Finding(
                            exposed,
                            where,
                            f"{path} is open to other users (mode {stat.S_IMODE(mode):04o}); "
                            f"chmod 0600 {path}",
                        )
                    )
                continue
            out.append(Finding(exc.code, where, exc.message))
    return out
