"""What the floor may put on a round (``[bets]`` caps) and what ``bets/response`` says
about one request."""

from __future__ import annotations

from dataclasses import dataclass

from ..jsonio import JSON


@dataclass(frozen=True, slots=True)
class BetCaps:
    """How much the floor may put on one round (``[bets]``): a cap on the number of
    bets and on the stakes held, per round and per seat. None: no cap."""

    max_bets_per_round: int | None = None
    max_bets_per_seat: int | None = None
    max_round_stakes: int | None = None
    max_seat_stakes: int | None = None


@dataclass(frozen=True, slots=True)
class BetAnswer:
    """What ``bets/response`` says about one request."""

    accepted: bool
    bet_id: str
    code: str = ""
    message: str = ""
    round_id: str | None = None
    bet: JSON = None

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "status": "accepted" if self.accepted else "rejected",
            "bet_id": self.bet_id,
        }
        if self.round_id is not None:
            out["round_id"] = self.round_id
        if self.accepted:
            out["bet"] = self.bet
        else:
            out["code"] = self.code
            out["message"] = self.message
        return out
