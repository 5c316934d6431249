"""The broker's side of provisioning: mosquitto's password file and ACL lines.

- **Password file** (mosquitto 2's ``password_file``): one line per account,
  ``NAME:$7$ITERATIONS$SALT$HASH``, PBKDF2-HMAC-SHA512 over the password with a 12-byte
  salt, 64 bytes of hash, both base64 (what ``mosquitto_passwd`` writes; 101 iterations,
  its default). A table's account is its id, its password the random secret in its
  ``mqtt-password`` file.
- **ACL** (``acl_file``): the tables' ``pattern`` lines (each table writes only what it
  publishes under its own root and reads its requests, its own retained ``state`` and
  ``anchor`` and the floor's record of it: the same lines as
  ``config/broker/acl.example``, a test keeps them equal), then one account per pit
  (``<pit>@pit``: commands to the pit's tables, what they publish) and per dealer
  (``<dealer>@dealer``: the dealer's commands to the tables it deals at). The floor's
  own accounts (floor systems, the ingest, monitors) are the floor's, as in the example.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Iterable, Mapping

ITERATIONS = 101
SALT_BYTES = 12
HASH_BYTES = 64

#: What each table may write (below its root), then read.
TABLE_WRITES = (
    "state", "rounds", "events", "jackpot", "anchor", "board", "stats", "limits", "alerts",
    "shift", "sessions", "devices/+", "bets/response", "commands/response",
)  # fmt: skip
TABLE_READS = ("bets/request", "commands/request", "state", "anchor")


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """The password file's hash of ``password`` (``$7$...``)."""
    salt = salt if salt is not None else secrets.token_bytes(SALT_BYTES)
    dk = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, ITERATIONS, HASH_BYTES)
    return f"$7${ITERATIONS}${base64.b64encode(salt).decode()}${base64.b64encode(dk).decode()}"


def password_matches(password: str, hashed: str) -> bool:
    """Whether ``hashed`` (``$7$...``) is a hash of ``password``."""
    parts = hashed.split("$")
    if len(parts) != 5 or parts[1] != "7" or not parts[2].isdigit():
        return False
    try:
        salt, dk = base64.b64decode(parts[3], validate=True), base64.b64decode(parts[4], validate=True)
    except ValueError:
        return False
    got = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, int(parts[2]), len(dk))
    return hmac.compare_digest(got, dk)


def read_password_file(text: str) -> dict[str, str]:
    """Account -> hash, in the file's order (lines that are not ``NAME:HASH`` are kept
    out: comments, blank lines)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, colon, hashed = line.partition(":")
        if colon and name and not line.startswith("#"):
            out[name] = hashed
    return out


def password_file(accounts: Mapping[str, str]) -> str:
    return "".join(f"{name}:{hashed}\n" for name, hashed in accounts.items())


def table_patterns(prefix: str) -> list[str]:
    """The ``pattern`` lines every table account is held to (``%u``: the table id)."""
    root = f"{prefix}/tables/%u"
    lines = [f"pattern write {root}/{t}" for t in TABLE_WRITES]
    lines += [f"pattern read {root}/{t}" for t in TABLE_READS]
    lines.append(f"pattern read {prefix}/floor/records/%u")
    return lines


def acl(
    prefix: str,
    pits: Mapping[str, Iterable[str]],
    dealers: Mapping[str, Iterable[str]],
) -> str:
    """The ACL file: the tables' patterns, then each pit's account and each dealer's,
    with the tables it serves (``pits``: pit -> table ids; ``dealers``: dealer -> ids)."""
    out = [
        "# mosquitto ACL written by `tablectl provision` from the floor's inventory",
        "# (docs/install.md); the floor's own accounts (floor systems, the ingest,",
        "# monitors): config/broker/acl.example. Each table writes only under its root.",
        *table_patterns(prefix),
        "",
    ]
    for pit, tables in sorted(pits.items()):
        out.append(f"user {pit}@pit")
        for tid in sorted(tables):
            root = f"{prefix}/tables/{tid}"
            out += [f"topic write {root}/commands/request"]
            out += [f"topic read {root}/{t}" for t in
                    ("commands/response", "state", "events", "rounds", "jackpot")]  # fmt: skip
        out.append("")
    for dealer, tables in sorted(dealers.items()):
        out.append(f"user {dealer}@dealer")
        for tid in sorted(tables):
            root = f"{prefix}/tables/{tid}"
            out += [f"topic write {root}/commands/request"]
            out += [f"topic read {root}/{t}" for t in ("commands/response", "state", "events")]
        out.append("")
    return "\n".join(out)
