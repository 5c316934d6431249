"""The floor's registry of tables: which tables exist, and the keys they sign with.

Every message a table publishes is signed with its own Ed25519 identity key
(``firmware_host.auth.evidence``). The ingest stores a table's rounds only when they
verify with a key the floor holds for that table: the registry. It is a TOML file,

    [tables.MO-R-07]
    game = "roulette"
    keys = ["keys/MO-R-07.pub"]   # PEM public keys (Ed25519), relative to this file;
                                  # at most 2: both verify during a rotation
    pit = "pit-2"                 # optional

imported into the database (``floor_registry``, :meth:`flooringest.store.Store.
import_registry`), which every worker reads again every few seconds: a table added to
the file (``tablectl floor-ingest registry import FILE``, or the file given to ``run
--registry`` changing) is known to every worker without a restart. A table missing
from the registry is unknown: its messages are quarantined (``UNKNOWN_TABLE``). An
empty registry knows no table: closed by default.

Every error in the file is reported as one line naming the file, the table and the
member (:class:`RegistryError`), never as a traceback.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from firmware_host.auth.keys import KeyFileError, key_id, load_public_key

#: A table id as the table and its MQTT account name it (no '@', no '/', no wildcard).
TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: Keys a table may have at once: its key, and its next one during a rotation.
MAX_KEYS = 2
_MEMBERS = {"game", "keys", "pit"}


class RegistryError(ValueError):
    """A registry that cannot be used; ``lines`` are its problems, one per line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass(frozen=True, slots=True)
class TableEntry:
    """One table of the registry."""

    table_id: str
    game: str
    #: The PEM text of each public key (SubjectPublicKeyInfo), as imported.
    key_pems: tuple[str, ...]
    pit: str | None = None

    @property
    def keys(self) -> tuple[Ed25519PublicKey, ...]:
        return _keys(self.key_pems)

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(key_id(k) for k in self.keys)


_KEY_CACHE: dict[str, Ed25519PublicKey] = {}


def _keys(pems: Iterable[str]) -> tuple[Ed25519PublicKey, ...]:
    out = []
    for pem in pems:
        k = _KEY_CACHE.get(pem)
        if k is None:
            loaded = serialization.load_pem_public_key(pem.encode("ascii"))
            if not isinstance(loaded, Ed25519PublicKey):
                raise ValueError("not an Ed25519 public key")
            k = _KEY_CACHE[pem] = loaded
        out.append(k)
    return tuple(out)


class Registry:
    """The tables the floor knows, by id, with their public keys loaded once."""

    __slots__ = ("_keys", "digest", "tables")

    def __init__(self, entries: Iterable[TableEntry] = ()) -> None:
        self.tables: dict[str, TableEntry] = {e.table_id: e for e in entries}
        self._keys: dict[str, tuple[Ed25519PublicKey, ...]] = {
            tid: e.keys for tid, e in self.tables.items()
        }
        #: What the registry holds, as one SHA-256: the same content, the same digest.
        self.digest = digest(self.tables.values())

    def keys(self, table_id: str) -> tuple[Ed25519PublicKey, ...] | None:
        """The table's public keys; None when the table is unknown."""
        return self._keys.get(table_id)

    def __contains__(self, table_id: object) -> bool:
        return table_id in self._keys

    def __len__(self) -> int:
        return len(self.tables)


def digest(entries: Iterable[TableEntry]) -> str:
    doc = [
        [e.table_id, e.game, list(e.key_pems), e.pit]
        for e in sorted(entries, key=lambda e: e.table_id)
    ]
    return hashlib.sha256(json.dumps(doc, separators=(",", ":")).encode()).hexdigest()


def load_file(path: str | Path) -> Registry:
    """Read and check a registry file; raises :class:`RegistryError` with every problem
    found, one line each (``FILE: table T: MEMBER: what``)."""
    p = Path(path)
    name = str(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RegistryError([f"{name}: cannot read the registry: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError:
        raise RegistryError([f"{name}: not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError([f"{name}: not valid TOML: {exc}"]) from None
    return parse(data, base=p.parent, name=name)


def parse(data: Mapping[str, Any], *, base: Path, name: str) -> Registry:
    """The registry of a parsed TOML document (``load_file``); key files are read
    relative to ``base``."""
    problems: list[str] = []
    for top in data:
        if top != "tables":
            problems.append(f"{name}: {top}: unknown (a registry has only [tables.<id>] sections)")
    tables = data.get("tables", {})
    if not isinstance(tables, dict):
        problems.append(f"{name}: tables: must be a table of [tables.<id>] sections")
        tables = {}
    entries: list[TableEntry] = []
    owner: dict[str, str] = {}  # key PEM -> the table it belongs to
    for tid, spec in tables.items():
        where = f"{name}: table {tid}"
        if not TABLE_ID.match(tid):
            problems.append(
                f"{where}: the table id must be 1-64 letters, digits, '_', '.', '-' "
                "(starting with a letter or digit), as the table's [table] id"
            )
            continue
        if not isinstance(spec, dict):
            problems.append(f"{where}: must be a section ([tables.{tid}]) with game and keys")
            continue
        for member in spec:
            if member not in _MEMBERS:
                problems.append(f"{where}: {member}: unknown member (known: game, keys, pit)")
        game = spec.get("game")
        if not isinstance(game, str) or not game.strip():
            problems.append(f"{where}: game: missing, or not a non-empty string")
            game = ""
        pit = spec.get("pit")
        if pit is not None and (not isinstance(pit, str) or not pit.strip()):
            problems.append(f"{where}: pit: must be a non-empty string")
            pit = None
        keys = spec.get("keys")
        pems: list[str] = []
        if not isinstance(keys, list) or not keys:
            problems.append(f"{where}: keys: missing, or not a list of 1 or 2 public key files")
            keys = []
        elif len(keys) > MAX_KEYS:
            problems.append(
                f"{where}: keys: {len(keys)} keys; at most {MAX_KEYS} (the key, and the next "
                "one during a rotation)"
            )
        for i, k in enumerate(keys[:MAX_KEYS] if isinstance(keys, list) else []):
            kw = f"{where}: keys[{i}]"
            if not isinstance(k, str) or not k:
                problems.append(f"{kw}: must be the path of a PEM public key file")
                continue
            kp = Path(k) if Path(k).is_absolute() else base / k
            try:
                pub = load_public_key(kp)
            except KeyFileError as exc:
                # load_public_key names the path first: keep it as written in the file.
                problems.append(f"{kw}: {k}: {str(exc).split(': ', 1)[-1]}")
                continue
            pem = pub.public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ).decode("ascii")
            if pem in pems:
                problems.append(f"{kw}: {k}: the same key twice")
                continue
            if pem in owner and owner[pem] != tid:
                problems.append(
                    f"{kw}: {k}: the key of table {owner[pem]} too: a key belongs to one table"
                )
                continue
            owner[pem] = tid
            pems.append(pem)
        if pems and game:
            entries.append(TableEntry(tid, game.strip(), tuple(pems), pit))
    if problems:
        raise RegistryError(problems)
    return Registry(entries)


def entries_to_rows(reg: Registry) -> list[tuple[str, str, str | None, str, str]]:
    """``(table_id, game, pit, keys JSON, key ids JSON)`` per table (``floor_registry``)."""
    return [
        (e.table_id, e.game, e.pit, json.dumps(list(e.key_pems)), json.dumps(list(e.key_ids)))
        for e in sorted(reg.tables.values(), key=lambda e: e.table_id)
    ]


def from_rows(rows: Iterable[tuple[Any, ...]]) -> Registry:
    """The registry of ``floor_registry`` rows ``(table_id, game, pit, keys JSON)``."""
    entries = []
    for tid, game, pit, keys in rows:
        entries.append(TableEntry(str(tid), str(game), tuple(json.loads(keys)), pit))
    return Registry(entries)


__all__ = [
    "MAX_KEYS",
    "TABLE_ID",
    "Registry",
    "RegistryError",
    "TableEntry",
    "digest",
    "entries_to_rows",
    "from_rows",
    "load_file",
    "parse",
]
