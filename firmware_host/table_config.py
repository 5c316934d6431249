"""A validated table configuration (:class:`TableConfig`) and the sections whose reads
are tracked (:class:`Section`): what ``firmware_host.config`` returns once a table file
is valid, and what the table's modules read.

Apart from the validation (``firmware_host.config``, which loads every module that
declares a section by name), so that those modules may name the configuration they
read without importing what loads them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .games import get_game
from .games.base import Game, Limits
from .games.money import MoneyRules

__all__ = ["Section", "TableConfig"]


class Section(Mapping[str, Any]):
    """The validated values of one section whose reads are tracked: reading a key (by
    ``[]``, ``get``, or iterating the items) notes ``<section>.<key>`` as read."""

    def __init__(self, name: str, values: Mapping[str, Any], reads: set[str]) -> None:
        self._name = name
        self._values = dict(values)
        self._reads = reads

    def __getitem__(self, key: str) -> Any:
        value = self._values[key]
        self._reads.add(f"{self._name}.{key}")
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Section({self._name!r}, {self._values!r})"

    def untracked(self) -> dict[str, Any]:
        """The values, without noting them read (checks made while loading the file)."""
        return dict(self._values)


@dataclass(frozen=True)
class TableConfig:
    """A validated table configuration."""

    version: int
    table_id: str
    game_id: str
    name: str
    money: MoneyRules
    limits: Limits
    rules: Any
    sections: Mapping[str, Any] = field(default_factory=dict)
    source: str = "<defaults>"
    #: ``device`` (the game's result device reads results) or ``manual`` (entered by
    #: people, over signed commands): never a silent fallback from one to the other.
    result_source: str = "device"
    #: Every option the file sets in a module's section: ``"daemon.watchdog_check"``,
    #: ``"devices.wheel"`` (a device is one option: its driver checks its own keys).
    options: frozenset[str] = frozenset()
    #: What has been read (:meth:`section`, :class:`Section`): options and whole sections.
    reads: set[str] = field(default_factory=set, compare=False, repr=False)

    @property
    def game(self) -> Game[Any, Any]:
        return get_game(self.game_id)

    def section(self, name: str) -> Any:
        """The parsed section ``name``; reading it notes it as read (a :class:`Section`
        option by option as its keys are read, any other value as a whole)."""
        value = self.sections.get(name)
        if not isinstance(value, Section):
            self.reads.add(name)
        return value

    def unread_options(self) -> list[str]:
        """Every option set in the file that nothing has read, as an error line."""
        return [
            f"{opt}: set, but nothing on this table reads it (remove it; is it in the right "
            "section, and does this table use that section?)"
            for opt in sorted(self.options)
            if not _covered(opt, self.reads)
        ]


def _covered(option: str, reads: set[str]) -> bool:
    parts = option.split(".")
    return any(".".join(parts[:i]) in reads for i in range(1, len(parts) + 1))
