"""The check of each round's chain anchor, a step of its own.

Issue 15 (the evidence: branch ``wt-evidence``) puts in every round payload
``"chain": {"seq": N, "head": "<64 hex>"}``: the position and HMAC of the table's
audit-chain entry that closed the round. The floor cannot check the HMAC (the key
stays on the table); what it can check, and what this module does, is:

- the anchor's shape: ``seq`` an integer >= 1, ``head`` 64 lowercase hex digits;
- that the chain only moves forward with the table's rounds: round ``seq`` n+1's
  chain position is beyond round n's (a table whose chain went back, or whose anchor
  vanished after it had one, was restored or replaced: ``docs/reliability.md``,
  "Evidence");
- and it keeps every anchor with its round, so that ``tablectl audit verify
  --anchors FILE`` on the table's journal (``tablectl floor-ingest anchors`` writes
  FILE, the rounds as received) proves nothing up to them was rewritten.

A round without ``chain`` (a table before issue 15) is counted, not refused.
Pure: no I/O; :mod:`flooringest.store` runs it over the rounds in ``seq`` order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

HEAD = re.compile(r"^[0-9a-f]{64}$")

#: Verdicts, as stored in ``floor_anchor_faults.code`` for the failing ones.
OK = "ok"
ABSENT = "absent"
MALFORMED = "CHAIN_MALFORMED"
NOT_ADVANCING = "CHAIN_NOT_ADVANCING"
DROPPED = "CHAIN_DROPPED"


@dataclass(frozen=True, slots=True)
class ChainPoint:
    """One anchor: the audit chain's entry ``seq`` and its hash ``head``."""

    seq: int
    head: str

    def text(self) -> str:
        """As ``tablectl audit verify --anchor`` takes it: ``SEQ:HEAD``."""
        return f"{self.seq}:{self.head}"


@dataclass(frozen=True, slots=True)
class Verdict:
    code: str
    point: ChainPoint | None
    message: str = ""

    @property
    def fault(self) -> bool:
        return self.code not in (OK, ABSENT)


def parse_chain(payload: Any) -> ChainPoint | str | None:
    """The round's anchor; None when it has none; a message when it is malformed."""
    if not isinstance(payload, dict) or "chain" not in payload:
        return None
    chain = payload["chain"]
    if not isinstance(chain, dict) or set(chain) != {"seq", "head"}:
        return "chain must be an object with exactly 'seq' and 'head'"
    seq, head = chain["seq"], chain["head"]
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        return f"chain.seq must be an integer >= 1, got {seq!r}"
    if not isinstance(head, str) or not HEAD.match(head):
        return "chain.head must be 64 lowercase hex digits"
    return ChainPoint(seq, head)


def check(previous: ChainPoint | None, payload: Any) -> Verdict:
    """The anchor of a round, given the anchor of the table's round before it (by
    ``seq``; None when that round had none or this is the first one checked)."""
    point = parse_chain(payload)
    if isinstance(point, str):
        return Verdict(MALFORMED, None, point)
    if point is None:
        if previous is not None:
            return Verdict(DROPPED, None, f"no chain, after a round anchored at {previous.text()}")
        return Verdict(ABSENT, None)
    if previous is not None and point.seq <= previous.seq:
        return Verdict(
            NOT_ADVANCING,
            point,
            f"chain at {point.seq}, not beyond the previous round's {previous.seq}: "
            "the table's journal went back (restored or replaced?)",
        )
    return Verdict(OK, point)
