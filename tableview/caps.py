"""What ``tablectl view`` keeps at most (``docs/view.md``, "Bounded"): no import beyond
the standard library, so that ``tablectl``'s command line can name the defaults."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class Caps:
    """What the view keeps at most (``docs/view.md``, "Bounded")."""

    #: Tables on the page.
    tables: int = 50
    #: Rounds, and events, kept per table (each).
    history: int = 12
    #: Bytes of one message (larger: ignored before it is parsed).
    message_bytes: int = 256 * 1024
    #: Bytes kept of one table (its JSON on ``/api/tables``).
    table_bytes: int = 512 * 1024
    #: Devices per table.
    devices: int = 32
    #: Bets listed per round (the round's count of bets is kept too).
    bets: int = 100

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    def to_json(self) -> dict[str, int]:
        return asdict(self)
