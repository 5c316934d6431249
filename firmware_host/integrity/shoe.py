"""The shoe's composition, as a pure state machine (issue 19, item 3).

A shoe of N decks holds each of the 52 cards N times. From the shoe's events (a
shuffle starts a new shoe with its number of decks; every card dealt; the shoe's own
deck check) and the rounds (coups) it finds:

- ``SHOE_CARD_EXCESS``: a card seen more often in one shoe than the decks hold (a
  foreign card, a card put back);
- ``SHOE_CARDS_MISSING``: at the end of a shoe, more cards never seen than the cut
  leaves behind (``[integrity] shoe_unseen_max``), or cards the shoe's deck check
  found missing;
- ``SHOE_LENGTH``: a shoe that dealt fewer or more coups than the configured band.

A card the shoe could not read (``MISREAD``) is not a card seen: a shoe with misreads
leaves more unseen cards, which the evidence says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..games.cards import Card, deck
from .bias import Finding


class ShoeComposition:
    """One shoe at a time (``shoe``: the device's name, the alerts' subject)."""

    def __init__(
        self, shoe: str = "shoe", *, decks: int = 8, unseen_max: int = 0,
        coups_min: int = 0, coups_max: int = 0,
    ) -> None:  # fmt: skip
        self.shoe = shoe
        self.default_decks = decks
        self.unseen_max = unseen_max
        self.coups_min = coups_min
        self.coups_max = coups_max
        self.number = 0  # the shuffle's number (0: none seen)
        self.decks = decks
        self.seen: Counter[str] = Counter()
        self.coups = 0
        self.misreads = 0
        self.started = False

    @property
    def cards(self) -> int:
        return sum(self.seen.values())

    def new_shoe(self, decks: int | None = None, number: int = 0) -> list[Finding]:
        """A new shoe: the previous one ends (checked), counting starts again."""
        found = self.end() if self.started else []
        self.decks = decks or self.default_decks
        self.number = number
        self.seen = Counter()
        self.coups = 0
        self.misreads = 0
        self.started = True
        return found

    def card(self, text: str) -> list[Finding]:
        """A card dealt (``AS``, ``TD``...)."""
        card = str(Card.parse(text))
        self.started = True
        self.seen[card] += 1
        if self.seen[card] <= self.decks:
            return []
        return [Finding(
            "SHOE_CARD_EXCESS", f"{self.shoe}:{self.number}:{card}",
            f"shoe {self.shoe}: {card} seen {self.seen[card]} times in a {self.decks}-deck shoe",
            {"shoe": self.shoe, "shuffle": self.number, "card": card,
             "seen": self.seen[card], "decks": self.decks, "cards_dealt": self.cards},
        )]  # fmt: skip

    def misread(self) -> None:
        self.misreads += 1

    def coup(self) -> None:
        """A round of the shoe settled."""
        self.started = True
        self.coups += 1

    def deck_check(
        self, missing: Sequence[str], extra: Sequence[str], *, shuffle: int | None = None,
        purpose: str = "device", counted: int | None = None, decks: int | None = None,
    ) -> list[Finding]:  # fmt: skip
        """The shoe's own count of the cards (its ``DeckChecked``) of the shoe
        ``shuffle`` (default: this one), asked for ``purpose`` (``new_shoe``,
        ``end_of_shoe``; ``device``: the shoe's own)."""
        number = self.number if shuffle is None else shuffle
        when = {"new_shoe": "at the new shoe", "end_of_shoe": "at the end of the shoe"}.get(
            purpose, "of its own accord"
        )
        base = {"shoe": self.shoe, "shuffle": number, "purpose": purpose, "counted": counted,
                "decks": decks if decks is not None else self.decks}  # fmt: skip
        found = []
        if missing:
            found.append(Finding(
                "SHOE_CARDS_MISSING", f"{self.shoe}:{number}:check",
                f"shoe {self.shoe}: its deck check {when} (shoe {number}) misses "
                f"{len(missing)} card(s): {' '.join(missing[:20])}",
                {**base, "missing": list(missing)},
            ))  # fmt: skip
        if extra:
            found.append(Finding(
                "SHOE_CARD_EXCESS", f"{self.shoe}:{number}:check",
                f"shoe {self.shoe}: its deck check {when} (shoe {number}) found "
                f"{len(extra)} card(s) too many: {' '.join(extra[:20])}",
                {**base, "extra": list(extra)},
            ))  # fmt: skip
        return found

    def end(self) -> list[Finding]:
        """The shoe ended (a new shuffle, or a ``new_shoe`` command): its length and
        the cards never seen."""
        found = []
        full = {str(c): self.decks for c in deck()}
        unseen = {c: n - self.seen.get(c, 0) for c, n in full.items() if n > self.seen.get(c, 0)}
        total_unseen = sum(unseen.values())
        summary = {"shoe": self.shoe, "shuffle": self.number, "decks": self.decks,
                   "cards_dealt": self.cards, "coups": self.coups, "unseen": total_unseen,
                   "misreads": self.misreads}  # fmt: skip
        if self.unseen_max and total_unseen > self.unseen_max:
            found.append(Finding(
                "SHOE_CARDS_MISSING", f"{self.shoe}:{self.number}",
                f"shoe {self.shoe}: {total_unseen} card(s) never seen at the end of the shoe "
                f"(the cut leaves at most {self.unseen_max})",
                {**summary, "unseen_max": self.unseen_max, "never_seen": unseen},
            ))  # fmt: skip
        if (self.coups_min and self.coups < self.coups_min) or (
            self.coups_max and self.coups > self.coups_max
        ):
            found.append(Finding(
                "SHOE_LENGTH", f"{self.shoe}:{self.number}",
                f"shoe {self.shoe}: {self.coups} coups, outside {self.coups_min}-"
                f"{self.coups_max or '...'}",
                {**summary, "coups_min": self.coups_min, "coups_max": self.coups_max},
            ))  # fmt: skip
        self.started = False
        return found

    def summary(self) -> dict[str, object]:
        return {"shoe": self.shoe, "shuffle": self.number, "decks": self.decks,
                "cards_dealt": self.cards, "coups": self.coups}  # fmt: skip
