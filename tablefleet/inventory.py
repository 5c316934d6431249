"""The floor's inventory: one line per table, read and checked whole.

A CSV file with a header naming its columns (any order; others are refused)::

    table_id,game,pit,devices,dealers
    MO-R-07,roulette,pit-2,wheel=cammegh-ss2:/dev/table-wheel,dealer-07;dealer-08
    MO-B-01,baccarat,pit-1,shoe=shoe-serial:/dev/table-shoe;board=board-rs485:/dev/table-board,dealer-11
    MO-F-03,fantan,pit-1,,dealer-12

- ``table_id``: the table's id (its ``[table] id``, its MQTT account, its registry entry);
- ``game``: a game id (``tablectl math`` lists them);
- ``pit``: the pit it belongs to (the registry's ``pit``; the pit's broker account);
- ``devices``: ``NAME=DRIVER:PORT`` separated by ``;`` (a ``[devices.NAME]`` section each;
  empty: no device, the table's results entered by people, ``result_source = "manual"``,
  when the game has a result device);
- ``dealers``: principal names separated by ``;`` (each ``[auth.principals.NAME]`` with
  the ``dealer`` role, its public key ``NAME.pub`` from ``--keys``).

Every problem is one line naming the file, the line and the column (:class:`InventoryError`).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from firmware_host.auth.policy import PRINCIPAL_NAME
from firmware_host.games import GAME_IDS
from flooringest.registry import TABLE_ID

COLUMNS = ("table_id", "game", "pit", "devices", "dealers")
#: A device name (its ``[devices.NAME]`` section) and a pit's name.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


class InventoryError(ValueError):
    """An inventory that cannot be used; ``lines`` are its problems, one per line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass(frozen=True)
class Device:
    name: str
    driver: str
    port: str


@dataclass(frozen=True)
class TableLine:
    """One table of the inventory."""

    table_id: str
    game: str
    pit: str
    devices: tuple[Device, ...]
    dealers: tuple[str, ...]
    line: int


def _name(text: str) -> bool:
    return 0 < len(text) <= 64 and set(text) <= _NAME_CHARS


def _devices(text: str, where: str, problems: list[str]) -> tuple[Device, ...]:
    from drivers.registry import declarations

    known = declarations()
    out: list[Device] = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        name, eq, rest = part.partition("=")
        driver, colon, port = rest.partition(":")
        if not eq or not colon or not _name(name.strip()) or not port.strip():
            problems.append(f"{where}: devices: {part!r} is not NAME=DRIVER:PORT")
            continue
        if driver.strip() not in known:
            problems.append(
                f"{where}: devices: {name.strip()}: unknown driver {driver.strip()!r} "
                f"(known: {', '.join(sorted(known))})"
            )
            continue
        if any(d.name == name.strip() for d in out):
            problems.append(f"{where}: devices: {name.strip()} named twice")
            continue
        out.append(Device(name.strip(), driver.strip(), port.strip()))
    return tuple(out)


def parse(text: str, name: str = "inventory") -> list[TableLine]:
    """The tables of an inventory's text; raises :class:`InventoryError` with every
    problem found."""
    problems: list[str] = []
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or ()]
    if sorted(header) != sorted(COLUMNS):
        raise InventoryError(
            [f"{name}: line 1: the header must name the columns {', '.join(COLUMNS)} "
             f"(got {', '.join(header) or 'nothing'})"]
        )
    tables: list[TableLine] = []
    seen: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        where = f"{name}: line {line}"
        cells = {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
        if None in row:
            problems.append(f"{where}: more cells than columns")
            continue
        tid, game, pit = cells["table_id"], cells["game"], cells["pit"]
        if not TABLE_ID.match(tid):
            problems.append(
                f"{where}: table_id: {tid!r} is not a table id (1-64 letters, digits, "
                "'_', '.', '-', starting with a letter or digit)"
            )
            continue
        if tid in seen:
            problems.append(f"{where}: table_id: {tid} is on line {seen[tid]} too")
            continue
        seen[tid] = line
        if game not in GAME_IDS:
            problems.append(f"{where}: game: {game!r} is none of {', '.join(GAME_IDS)}")
        if not _name(pit):
            problems.append(f"{where}: pit: {pit!r} is not a pit name (letters, digits, '_', '-')")
        devices = _devices(cells["devices"], where, problems)
        dealers: list[str] = []
        for d in (p.strip() for p in cells["dealers"].split(";")):
            if not d:
                continue
            if not PRINCIPAL_NAME.match(d) or "@" in d:
                problems.append(f"{where}: dealers: {d!r} is not a principal name")
            elif d not in dealers:
                dealers.append(d)
        tables.append(TableLine(tid, game, pit, devices, tuple(dealers), line))
    if problems:
        raise InventoryError(problems)
    if not tables:
        raise InventoryError([f"{name}: no table (a header and one line per table)"])
    return tables


def load(path: str | Path) -> list[TableLine]:
    """Read and check an inventory file (:func:`parse`)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InventoryError([f"{path}: cannot read the inventory: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError:
        raise InventoryError([f"{path}: not UTF-8 text"]) from None
    return parse(text, str(path))
