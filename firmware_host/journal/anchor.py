"""Anchors: positions of the audit chain that left the Pi, and what they prove.

Every round the table publishes carries ``chain = {"seq", "head"}``: the id and hash
of the chain entry that closed it (``round_settled`` / ``round_void``), so each round
the floor keeps is an anchor of everything the journal held up to it. The same
position, with the round's ``seq``, goes out on the retained ``anchor`` topic when a
round opens and when it is finished, *before* that round's own messages (both are
queued in the round's transaction, and the outbox is published in order): whatever the
floor has heard of a round, the broker's retained anchor is at least that far.

:class:`Anchor` is one such position, read from a floor payload (a round, the
``anchor`` topic, the ``state`` snapshot) or given as ``SEQ:HASH``;
:func:`check_against_anchors` says whether a journal still holds everything up to
each (the start-up check of the journal against the floor uses it, and ``tablectl
audit verify --anchor``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..jsonio import JSON

_HEX64 = re.compile(r"^[0-9a-f]{64}$")

#: Topic (relative to the table's root) of the retained anchor.
ANCHOR_TOPIC = "anchor"


class AnchorError(ValueError):
    """An anchor that cannot be read (``SEQ:HASH``, or a payload without a position)."""


@dataclass(frozen=True, slots=True)
class Anchor:
    """A position of the chain the floor holds: entry ``chain_seq`` had hash ``chain_head``;
    with the round ``round_seq`` / ``round_id`` when it came with one."""

    chain_seq: int
    chain_head: str
    round_seq: int | None = None
    round_id: str | None = None
    #: Where it came from (``anchor``, ``state``, ``rounds``, ``--anchor``, a file line).
    source: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.chain_seq, bool) or not isinstance(self.chain_seq, int):
            raise AnchorError(f"chain position {self.chain_seq!r} is not an integer")
        if self.chain_seq < 1:
            raise AnchorError(f"chain position {self.chain_seq} is below 1")
        if not isinstance(self.chain_head, str) or not _HEX64.match(self.chain_head):
            raise AnchorError(f"chain head {self.chain_head!r} is not 64 lowercase hex digits")

    def __str__(self) -> str:
        rnd = f" (round {self.round_id} seq {self.round_seq})" if self.round_id else ""
        return f"{self.chain_seq}:{self.chain_head[:16]}...{rnd}"

    def to_json(self) -> dict[str, JSON]:
        return {
            "chain": {"seq": self.chain_seq, "head": self.chain_head},
            "round_seq": self.round_seq,
            "round_id": self.round_id,
            "source": self.source,
        }

    @staticmethod
    def parse(text: str, *, source: str = "--anchor") -> Anchor:
        """``SEQ:HASH`` (as ``tablectl audit verify --anchor`` takes it)."""
        seq, sep, head = text.strip().partition(":")
        if not sep or not seq.isdigit():
            raise AnchorError(f"anchor {text!r} is not SEQ:HASH (e.g. 1042:9f3c...)")
        return Anchor(int(seq), head.lower(), source=source)

    @staticmethod
    def from_payload(doc: Any, *, source: str = "") -> Anchor | None:
        """The anchor a floor payload carries: a round (``chain``, its ``seq`` and
        ``round_id``), the ``anchor`` topic (the same keys) or a ``state`` snapshot
        (its ``anchor`` object); None when the payload carries none."""
        if not isinstance(doc, Mapping):
            return None
        if "chain" not in doc and isinstance(doc.get("anchor"), Mapping):
            doc = doc["anchor"]
        chain = doc.get("chain")
        if not isinstance(chain, Mapping):
            return None
        seq = doc.get("seq")
        rid = doc.get("round_id")
        return Anchor(
            chain.get("seq"),  # type: ignore[arg-type]
            chain.get("head"),  # type: ignore[arg-type]
            seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
            rid if isinstance(rid, str) else None,
            source,
        )


@dataclass(frozen=True, slots=True)
class AnchorFinding:
    """What a journal lacks, according to one anchor (``ok`` when it lacks nothing)."""

    anchor: Anchor
    ok: bool
    #: ``missing`` (the journal ends before it), ``differs`` (another chain),
    #: ``rounds`` (rounds the floor heard of are not in the journal), or ``""``.
    kind: str = ""
    reason: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {
            "anchor": self.anchor.to_json(),
            "ok": self.ok,
            "kind": self.kind,
            "reason": self.reason,
        }


class ChainView(Protocol):
    """What :func:`check_anchor` needs of the chain (``AuditLog`` is one)."""

    def head(self) -> tuple[int, str]: ...

    def hash_at(self, event_id: int) -> str | None: ...


class SeqView(Protocol):
    """What :func:`check_anchor` needs of the rounds (``RoundStore`` is one)."""

    def last_seq(self, table_id: str | None = None) -> int: ...


def check_anchor(
    chain: ChainView, rounds: SeqView, anchor: Anchor, table_id: str | None = None
) -> AnchorFinding:
    """Does the journal (its ``chain`` and ``rounds``) still hold everything up to
    ``anchor``?"""
    head_id, _ = chain.head()
    if anchor.chain_seq > head_id:
        missing = (
            f"entry {anchor.chain_seq}"
            if anchor.chain_seq == head_id + 1
            else f"entries {head_id + 1}..{anchor.chain_seq}"
        )
        return AnchorFinding(
            anchor,
            False,
            "missing",
            f"the journal's chain ends at entry {head_id}, the floor holds entry "
            f"{anchor.chain_seq} ({anchor.source or 'anchor'}): chain {missing} missing",
        )
    have = chain.hash_at(anchor.chain_seq)
    if have != anchor.chain_head:
        return AnchorFinding(
            anchor,
            False,
            "differs",
            f"chain entry {anchor.chain_seq} has hash {str(have)[:16]}... in the journal, "
            f"{anchor.chain_head[:16]}... on the floor ({anchor.source or 'anchor'}): this is "
            "not the journal the floor heard from (restored, replaced or rewritten)",
        )
    if anchor.round_seq is not None:
        last = rounds.last_seq(table_id)
        if anchor.round_seq > last:
            return AnchorFinding(
                anchor,
                False,
                "rounds",
                f"the floor heard of round seq {anchor.round_seq}, the journal's last is {last}",
            )
    return AnchorFinding(anchor, True)


def check_against_anchors(
    chain: ChainView, rounds: SeqView, anchors: Iterable[Anchor], table_id: str | None = None
) -> list[AnchorFinding]:
    """Every anchor that says the journal lacks something (empty: it lacks nothing)."""
    return [f for a in anchors if not (f := check_anchor(chain, rounds, a, table_id)).ok]
