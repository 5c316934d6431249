"""The tables' public keys the view verifies their messages with (``docs/view.md``).

Every message a table publishes is signed with its identity key (``docs/security.md``,
"What the table says"). Given the public keys, the view shows only what each table
signed (:func:`firmware_host.auth.evidence.open_sealed`):

- ``--key TABLE=FILE``: the table's identity public key (``identity.pub``, PEM), once
  per key (two during a rotation); ``--key FILE`` alone names the key of the one table
  the view follows;
- ``--registry FILE``: the floor's registry of tables (``[tables.<id>] keys = [...]``,
  ``docs/floor.md``), read as the floor ingest reads it;
- ``--config FILE`` (a table's file) without either: the public key beside the table's
  identity key (``[journal] identity_key``), when it is there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from firmware_host.auth.keys import KeyFileError, load_public_key

from .model import TABLE_ID

Keys = dict[str, tuple[Ed25519PublicKey, ...]]


def _add(keys: Keys, table_id: str, key: Ed25519PublicKey) -> None:
    keys[table_id] = (*keys.get(table_id, ()), key)


def key_options(specs: Iterable[str], follow: Sequence[str]) -> Keys:
    """The keys named by ``--key`` options (``TABLE=FILE``, or ``FILE`` when ``follow``
    names exactly one table by id). Raises ValueError with a line for a person."""
    keys: Keys = {}
    for spec in specs:
        table_id, sep, path = spec.partition("=")
        if not sep:
            ids = [t for t in follow if TABLE_ID.match(t) and t[-1] not in "-_."]
            if len(ids) != 1 or len(follow) != 1:
                raise ValueError(
                    f"--key {spec}: whose key? write --key TABLE_ID={spec} (a bare file is "
                    "the key of the one table followed, when --table names one table)"
                )
            table_id, path = ids[0], spec
        if not TABLE_ID.match(table_id):
            raise ValueError(f"--key {spec}: {table_id!r} is not a table id")
        try:
            _add(keys, table_id, load_public_key(path))
        except KeyFileError as exc:
            raise ValueError(f"--key: {exc}") from None
    return keys


def registry_keys(path: str) -> Keys:
    """Every table's keys in a floor registry file (``flooringest.registry``)."""
    from flooringest.registry import RegistryError, load_file

    try:
        reg = load_file(path)
    except RegistryError as exc:
        raise ValueError(str(exc)) from None
    return {tid: entry.keys for tid, entry in reg.tables.items()}


def identity_public_key(identity_key: Path) -> Path | None:
    """The public key beside a table's identity key, if it is there."""
    from firmware_host.auth.identity import public_path

    pub = public_path(identity_key)
    return pub if pub.exists() else None
