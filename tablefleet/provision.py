"""``tablectl provision``: the floor's inventory made into every table's files and the
floor's (issue 35).

From the inventory (``inventory.py``), the floor's defaults (``--floor FILE``, a TOML
file: the sections every table shares, ``[games.<game>]`` those of one game) and the
principals' public keys (``--keys DIR``: ``NAME.pub`` of every principal a table names),
it writes under ``OUT``::

    tables/<id>/table.toml       the table file (installed as /etc/tablectl/table.toml)
    tables/<id>/identity.key     the table's Ed25519 identity (0600; created once)
    tables/<id>/identity.pub     its public key (the floor's registry has a copy)
    tables/<id>/audit.key        the key of its journal's audit chain (0600; created once)
    tables/<id>/mqtt-password    its broker password (0600; created once)
    tables/<id>/keys/NAME.pub    the public key of each principal its table file names
    floor/tables.toml            the registry of tables the floor ingest reads
    floor/keys/<id>.pub          each table's identity public key, for the registry
    floor/broker/passwd          the broker's password file (every table's account)
    floor/broker/acl             the broker's ACL lines (tables, pits, dealers)

**Idempotent**: a key, a password, a hash that exists is kept (a key is never replaced:
the floor knows the table by it, the journal is verified with it); every other file is
written only when its content changes, through a temporary file renamed over it. A
second run with the same inputs changes nothing; a new line of the inventory adds that
table's files (and its lines in the floor's files). A table that left the inventory
keeps its files (named in the summary: retiring a table is a person's decision).
Secrets are written with mode 0600, never group or world readable.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import tomllib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from firmware_host.auth.identity import IdentityKeyError, TableIdentity
from firmware_host.games import get_game
from firmware_host.journal.auditkey import AuditKey
from tablesim.tables import to_toml

from . import broker
from .inventory import TableLine

#: The members of ``--floor`` besides the table file's sections.
_FLOOR_ONLY = ("provision", "games")
SECRET = 0o600
PUBLIC = 0o644


class ProvisionError(ValueError):
    """Inputs that cannot be provisioned; ``lines``: every problem, one per line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass
class Summary:
    """What a run did, file by file."""

    created: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    #: Tables with files under ``OUT`` that are not in the inventory.
    not_in_inventory: list[str] = field(default_factory=list)
    tables: int = 0

    def line(self) -> str:
        extra = (
            f"; {len(self.not_in_inventory)} table(s) under tables/ not in the inventory, kept: "
            + ", ".join(self.not_in_inventory[:10])
            if self.not_in_inventory
            else ""
        )
        return (
            f"{self.tables} table(s): {len(self.created)} file(s) created, "
            f"{len(self.changed)} changed, {self.unchanged} unchanged{extra}"
        )


def load_floor(path: str | Path) -> dict[str, Any]:
    """The floor's defaults (``--floor``)."""
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProvisionError([f"{path}: cannot read it: {exc.strerror or exc}"]) from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProvisionError([f"{path}: not valid TOML: {exc}"]) from None
    games = doc.get("games", {})
    if not isinstance(games, dict) or not all(isinstance(v, dict) for v in games.values()):
        raise ProvisionError([f"{path}: games: [games.<game>] sections only"])
    return doc


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


class Writer:
    """Writes a file only when its content or mode differs, counting what it did."""

    def __init__(self, summary: Summary) -> None:
        self.summary = summary
        #: Secrets this run created (:meth:`create_secrets`).
        self._fresh: set[Path] = set()

    def put(self, path: Path, data: bytes, mode: int) -> None:
        try:
            same = path.read_bytes() == data
        except FileNotFoundError:
            same, existed = False, False
        else:
            existed = True
        if same:
            if (path.stat().st_mode & 0o777) != mode:
                os.chmod(path, mode)
                self.summary.changed.append(str(path))
            else:
                self.summary.unchanged += 1
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        (self.summary.changed if existed else self.summary.created).append(str(path))

    def create_secrets(self, wanted: list[tuple[Path, Any]]) -> None:
        """The secrets of ``wanted`` that are missing, created by ``make(path)`` in a few
        threads (each waits on its own fsync); counted as created, once."""
        missing = [(p, make) for p, make in wanted if not p.exists()]

        def one(item: tuple[Path, Any]) -> None:
            item[0].parent.mkdir(parents=True, exist_ok=True)
            item[1](item[0])
            os.chmod(item[0], SECRET)

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(one, missing))
        self._fresh.update(p for p, _ in missing)
        self.summary.created.extend(str(p) for p, _ in missing)

    def secret_once(self, path: Path, make: Any) -> None:
        """A secret created by ``make(path)`` when missing (never replaced); its mode
        made 0600 if it was opened up."""
        if path in self._fresh:
            return
        if path.exists():
            if (path.stat().st_mode & 0o777) != SECRET:
                os.chmod(path, SECRET)
                self.summary.changed.append(str(path))
            else:
                self.summary.unchanged += 1
            return
        make(path)
        os.chmod(path, SECRET)
        self.summary.created.append(str(path))


def _password(path: Path, w: Writer) -> str:
    def make(p: Path) -> None:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SECRET)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_urlsafe(24))

    w.secret_once(path, make)
    return path.read_text(encoding="ascii").strip()


def _principal_keys(
    table: TableLine, auth: Mapping[str, Any], keys_dir: Path, problems: list[str]
) -> tuple[dict[str, Any], dict[str, Path]]:
    """The table's ``[auth]`` (the floor's principals and the table's dealers, each key
    named ``keys/<file>`` beside the table file) and the key files to copy."""
    principals: dict[str, Any] = {}
    files: dict[str, Path] = {}
    floor_principals = auth.get("principals", {})
    wanted: dict[str, dict[str, Any]] = {
        name: dict(spec) for name, spec in floor_principals.items() if isinstance(spec, dict)
    }
    for dealer in table.dealers:
        wanted.setdefault(dealer, {"roles": ["dealer"]})
    for name, spec in wanted.items():
        listed = spec.get("keys") or [f"{name}.pub"]
        named: list[str] = []
        for k in listed:
            base = Path(str(k)).name
            src = keys_dir / base
            if not src.is_file():
                problems.append(
                    f"table {table.table_id} (line {table.line}): principal {name}: no public "
                    f"key {src} (each principal hands over NAME.pub: tablectl keys generate)"
                )
                continue
            files[base] = src
            named.append(f"keys/{base}")
        principals[name] = {**spec, "keys": named}
    return {**dict(auth), "principals": principals}, files


def _sections(table: TableLine, floor: Mapping[str, Any]) -> dict[str, Any]:
    """The floor's sections for ``table``: those every table shares, with its game's."""
    shared = {k: v for k, v in floor.items() if k not in _FLOOR_ONLY}
    return _merge(shared, floor.get("games", {}).get(table.game, {}))


def table_document(
    table: TableLine, floor: Mapping[str, Any], etc: str, auth: Mapping[str, Any]
) -> dict[str, Any]:
    """The table file of one line of the inventory (see the module docstring)."""
    doc = _sections(table, floor)
    game = get_game(table.game)
    kinds = {d.name: _kind(d.driver) for d in table.devices}
    t: dict[str, Any] = {
        "id": table.table_id,
        "name": str(doc.get("table", {}).get("name") or table.table_id),
        "game": table.game,
    }
    if game.result_device is not None and game.result_device not in kinds.values():
        t["result_source"] = "manual"
    table_section = {**dict(doc.get("table", {})), **t}
    out: dict[str, Any] = {"version": 1, "table": table_section}
    for key, value in doc.items():
        if key not in ("version", "table", "devices", "mqtt", "journal", "auth"):
            out[key] = value
    if table.devices:
        extra = doc.get("devices", {})  # a device's other keys, by its name (a board's layout)
        out["devices"] = {
            d.name: {**dict(extra.get(d.name, {})), "driver": d.driver, "port": d.port}
            for d in table.devices
        }
    out["mqtt"] = {**dict(doc.get("mqtt", {})), "username": table.table_id,
                   "password_file": f"{etc}/mqtt-password"}  # fmt: skip
    out["journal"] = {**dict(doc.get("journal", {})), "audit_key": f"{etc}/audit.key",
                      "identity_key": f"{etc}/identity.key"}  # fmt: skip
    out["auth"] = dict(auth)
    return out


def _kind(driver: str) -> str:
    from drivers.registry import kind_of

    return kind_of(driver)


def provision(
    tables: list[TableLine],
    floor: Mapping[str, Any],
    keys_dir: Path,
    out: Path,
    *,
    etc_dir: str = "/etc/tablectl",
) -> Summary:
    """Write every table's files and the floor's under ``out`` (module docstring).
    ``etc_dir``: where a table's files are installed, as its table file names them
    (``{table}``: the table's id; a test gives the output directory itself)."""
    problems: list[str] = []
    plans = []
    for table in tables:
        auth, files = _principal_keys(
            table, _sections(table, floor).get("auth", {}), keys_dir, problems
        )
        plans.append((table, auth, files))
    if problems:
        raise ProvisionError(problems)
    summary = Summary(tables=len(tables))
    w = Writer(summary)
    prefix = str(floor.get("mqtt", {}).get("prefix", "casino"))
    passwd_path = out / "floor" / "broker" / "passwd"
    try:
        accounts = broker.read_password_file(passwd_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        accounts = {}
    registry: list[str] = ["# The floor's registry of tables (docs/floor.md), written by "
                           "`tablectl provision`", ""]  # fmt: skip
    pits: dict[str, list[str]] = {}
    dealers: dict[str, list[str]] = {}
    # The keys a table lacks, made first and side by side: each is written and fsynced
    # by the code that makes it at the table (``TableIdentity``, ``AuditKey``).
    w.create_secrets(
        [(out / "tables" / t.table_id / name, make) for t, _, _ in plans
         for name, make in (("identity.key", _identity), ("audit.key", AuditKey.create))]
    )  # fmt: skip
    for table, auth, files in plans:
        d = out / "tables" / table.table_id
        etc = etc_dir.replace("{table}", table.table_id)
        w.secret_once(d / "identity.key", _identity)
        w.put(d / "identity.pub", TableIdentity.load(d / "identity.key").public_pem(), PUBLIC)
        w.secret_once(d / "audit.key", AuditKey.create)
        password = _password(d / "mqtt-password", w)
        for base, src in files.items():
            w.put(d / "keys" / base, src.read_bytes(), PUBLIC)
        doc = table_document(table, floor, etc, auth)
        w.put(d / "table.toml", _header(table).encode() + to_toml(doc).encode(), PUBLIC)
        w.put(out / "floor" / "keys" / f"{table.table_id}.pub", (d / "identity.pub").read_bytes(),
              PUBLIC)  # fmt: skip
        if not broker.password_matches(password, accounts.get(table.table_id, "")):
            accounts[table.table_id] = broker.hash_password(password)
        registry += [f"[tables.{table.table_id}]", f'game = "{table.game}"',
                     f'keys = ["keys/{table.table_id}.pub"]', f'pit = "{table.pit}"', ""]  # fmt: skip
        pits.setdefault(table.pit, []).append(table.table_id)
        for dealer in table.dealers:
            dealers.setdefault(dealer, []).append(table.table_id)
    w.put(out / "floor" / "tables.toml", "\n".join(registry).encode(), PUBLIC)
    w.put(passwd_path, broker.password_file(accounts).encode(), SECRET)
    w.put(out / "floor" / "broker" / "acl", broker.acl(prefix, pits, dealers).encode(), PUBLIC)
    known = {t.table_id for t in tables}
    if (out / "tables").is_dir():
        summary.not_in_inventory = sorted(
            p.name for p in (out / "tables").iterdir() if p.is_dir() and p.name not in known
        )
    return summary


def _identity(path: Path) -> None:
    try:
        TableIdentity.create(path)
    except IdentityKeyError as exc:
        raise ProvisionError([str(exc)]) from None


def _header(table: TableLine) -> str:
    return (
        f"# Table {table.table_id} ({table.game}, {table.pit}), written by `tablectl provision` "
        "from the floor's\n# inventory: change the inventory or the floor's defaults and "
        "provision again, not this file.\n"
    )


def copy_tree(src: Path, dst: Path) -> None:
    """The same files written plainly (the benchmark's baseline)."""
    shutil.copytree(src, dst)
