"""Tables that sign what they say, for the floor ingest's tests: their identity keys,
the registry that knows them, and their sealed rounds, anchors, states and answers
(``firmware_host.auth.evidence``, as the daemon seals them)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth.evidence import seal
from firmware_host.auth.keys import public_pem
from flooringest.messages import Incoming, Quarantined, Round
from flooringest.registry import Registry, TableEntry
from flooringest.verify import Announcements, Verifier


def head(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def round_doc(
    table: str, seq: int, *, chain: Any = True, rid: str | None = None, **extra: Any
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": 6,
        "table_id": table,
        "round_id": rid or f"{table}-{seq:06d}-abcd1234",
        "seq": seq,
        "status": "settled",
        "bets": [{"bet_id": "b1", "stake": 1000, "payout": 2000, "net": 1000}],
        "totals": {"stakes": 1000, "payout": 2000, "net": 1000},
        **extra,
    }
    if chain is True:
        doc["chain"] = {"seq": 10 * seq, "head": head(seq)}
    elif chain is not None:
        doc["chain"] = chain
    return doc


class Tables:
    """Test tables, each with its own identity key."""

    def __init__(self, *ids: str, game: str = "roulette") -> None:
        self.game = game
        self.keys = {t: Ed25519PrivateKey.generate() for t in ids}

    def entry(self, table: str, *extra: Ed25519PrivateKey) -> TableEntry:
        pems = tuple(public_pem(k.public_key()).decode() for k in (self.keys[table], *extra))
        return TableEntry(table, self.game, pems)

    def registry(self) -> Registry:
        return Registry(self.entry(t) for t in self.keys)

    def write(self, directory: Path, *, only: list[str] | None = None) -> Path:
        """The registry as a file (``tables.toml``) with a key file per table."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "keys").mkdir(exist_ok=True)
        lines = []
        for t, k in self.keys.items():
            if only is not None and t not in only:
                continue
            (directory / "keys" / f"{t}.pub").write_bytes(public_pem(k.public_key()))
            lines += [f"[tables.{json.dumps(t)}]", f'game = "{self.game}"',
                      f'keys = ["keys/{t}.pub"]', ""]  # fmt: skip
        path = directory / "tables.toml"
        path.write_text("\n".join(lines))
        return path

    def sealed(
        self, table: str, topic: str, doc: dict[str, Any], key: Ed25519PrivateKey | None = None
    ) -> bytes:
        return seal(key or self.keys[table], topic, doc)

    def round(self, table: str, seq: int, *, key: Ed25519PrivateKey | None = None,
              **kw: Any) -> bytes:  # fmt: skip
        return self.sealed(table, "rounds", round_doc(table, seq, **kw), key)

    def anchor(self, table: str, seq: int, *, phase: str = "settled", chain_seq: int | None = None,
               key: Ed25519PrivateKey | None = None) -> bytes:  # fmt: skip
        doc = {
            "schema_version": 6,
            "table_id": table,
            "round_id": f"{table}-{seq:06d}-abcd1234",
            "seq": seq,
            "phase": phase,
            "chain": {"seq": chain_seq or 10 * seq, "head": head(seq)},
            "at": "2026-11-28T07:36:13.455Z",
        }
        return self.sealed(table, "anchor", doc, key)

    def state(self, table: str, last_seq: int, *, phase: str = "idle",
              key: Ed25519PrivateKey | None = None, **extra: Any) -> bytes:  # fmt: skip
        doc = {
            "schema_version": 8,
            "table_id": table,
            "availability": "online",
            "phase": phase,
            "last_round_id": f"{table}-{last_seq:06d}-abcd1234",
            **extra,
        }
        return self.sealed(table, "state", doc, key)


def verified(tables: Tables, msgs: list[Incoming], *, announced: int = 10**9) -> list[Any]:
    """What a worker makes of ``msgs`` (each table having announced up to ``announced``)."""
    said = Announcements()
    for t in tables.keys:
        said.raise_to(t, announced, 0)
    return [Verifier(tables.registry(), said).round(m) for m in msgs]


def rounds_of(items: list[Round | Quarantined]) -> list[Round]:
    return [x for x in items if isinstance(x, Round)]
