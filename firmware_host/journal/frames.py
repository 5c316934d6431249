"""Raw device frames kept against the round they belong to (game recall, disputes).

Frames are committed without an fsync of their own (see ``connection.py``): the
next durable commit, at the latest the settlement of their round, puts them on
disk. The frame that carried a device result is written by the settlement's own
transaction instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..jsonio import JSON
from .database import Database


@dataclass(frozen=True, slots=True)
class RawFrame:
    id: int
    round_id: str | None
    device: str
    direction: Literal["rx", "tx"]
    data: bytes
    at: str

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "round_id": self.round_id,
            "device": self.device,
            "direction": self.direction,
            "hex": self.data.hex(),
            "at": self.at,
        }


class FrameStore:
    """Keep and read raw device frames."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        round_id: str | None,
        device: str,
        direction: Literal["rx", "tx"],
        data: bytes,
        *,
        at: datetime | None = None,
    ) -> int:
        """Keep one raw device frame (committed without its own fsync; see the module docstring)."""
        return self.add_many([(round_id, device, direction, data)], at=at)[0]

    def add_many(
        self,
        frames: Iterable[tuple[str | None, str, Literal["rx", "tx"], bytes]],
        *,
        at: datetime | None = None,
    ) -> list[int]:
        """Keep raw device frames ``(round_id, device, direction, data)`` in one write."""
        now = self._db.now(at)
        with self._db.tx("add_raw_frames", durable=False) as db:
            return self.insert_in_tx(db, frames, now)

    @staticmethod
    def insert_in_tx(
        db: sqlite3.Connection,
        frames: Iterable[tuple[str | None, str, Literal["rx", "tx"], bytes]],
        now: str,
    ) -> list[int]:
        """Write ``frames`` in the open transaction (a settlement's own)."""
        ids = []
        for round_id, device, direction, data in frames:
            cur = db.execute(
                "INSERT INTO raw_frames (round_id, device, direction, data, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (round_id, device, direction, bytes(data), now),
            )
            ids.append(int(cur.lastrowid or 0))
        return ids

    def of_round(self, round_id: str) -> list[RawFrame]:
        """The raw frames kept against ``round_id``, in the order they came."""
        return [
            RawFrame(r[0], r[1], r[2], r[3], bytes(r[4]), r[5])
            for r in self._db.sql.execute(
                "SELECT id, round_id, device, direction, data, at FROM raw_frames "
                "WHERE round_id = ? ORDER BY id",
                (round_id,),
            )
        ]
