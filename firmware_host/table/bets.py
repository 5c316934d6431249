"""What the floor may put on a round (the ``[bets]`` section and its caps) and what
``bets/response`` says about one request: the answer to a bet already journaled, and
the refusal of one that would take its round or seat over a cap."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

from ..games.base import Bet, Game
from ..games.errors import BetError
from ..games.money import MAX_STAKE
from ..journal import BetRecord, RoundNotFound, RoundStore
from ..jsonio import JSON, canonical_json


@dataclass(frozen=True, slots=True)
class BetCaps:
    """How much the floor may put on one round (``[bets]``): a cap on the number of
    bets and on the stakes held, per round and per seat. None: no cap."""

    max_bets_per_round: int | None = None
    max_bets_per_seat: int | None = None
    max_round_stakes: int | None = None
    max_seat_stakes: int | None = None

    def refusal(self, bet: Bet, held: Sequence[Bet], rid: str) -> BetAnswer | None:
        """A refusal if ``bet`` would take its round (which holds ``held``) or its seat
        over a cap; None: it fits."""
        seat = [b for b in held if b.seat == bet.seat]
        checks = (
            (self.max_bets_per_round, len(held) + 1, "ROUND_BET_CAP", "bets in the round"),
            (self.max_bets_per_seat, len(seat) + 1, "SEAT_BET_CAP", f"bets of seat {bet.seat}"),
            (
                self.max_round_stakes,
                sum(b.stake for b in held) + bet.stake,
                "ROUND_EXPOSURE_LIMIT",
                "stakes in the round",
            ),
            (
                self.max_seat_stakes,
                sum(b.stake for b in seat) + bet.stake,
                "SEAT_EXPOSURE_LIMIT",
                f"stakes of seat {bet.seat}",
            ),
        )
        for cap, would_be, code, what in checks:
            if cap is not None and would_be > cap:
                return BetAnswer(
                    False,
                    bet.bet_id,
                    code,
                    f"the bet would bring the {what} to {would_be}; the table's cap is {cap}",
                    rid,
                )
        return None


BETS_SPECS: dict[str, FieldSpec] = {
    "max_bets_per_round": FieldSpec(
        "int", 1000, doc="bets a round may hold (ROUND_BET_CAP beyond)", range=(1, 100_000)
    ),
    "max_bets_per_seat": FieldSpec(
        "int", 100, doc="bets one seat may hold in a round (SEAT_BET_CAP)", range=(1, 100_000)
    ),
    "max_round_stakes": FieldSpec(
        "int",
        None,
        doc="stakes a round may hold, minor units (ROUND_EXPOSURE_LIMIT; default 100 times "
        "limits.max_stake)",
        range=(1, MAX_STAKE * 100_000),
    ),
    "max_seat_stakes": FieldSpec(
        "int",
        None,
        doc="stakes one seat may hold in a round, minor units (SEAT_EXPOSURE_LIMIT; default "
        "10 times limits.max_stake)",
        range=(1, MAX_STAKE * 100_000),
    ),
}


def _validate_bets(data: Any, path: str, errors: list[str]) -> dict[str, Any]:
    return validate_fields(BETS_SPECS, data, path, errors)


register_section("bets", _validate_bets)


def bet_caps(section: Mapping[str, Any] | None, max_stake: int) -> BetCaps:
    """``[bets]`` as the round engine applies it; the stake caps default to multiples
    of the table's maximum stake (10 a seat, 100 a round)."""
    s: Mapping[str, Any] = section if section is not None else {}

    def get(key: str) -> Any:
        return s[key] if key in s else BETS_SPECS[key].default

    return BetCaps(
        max_bets_per_round=get("max_bets_per_round"),
        max_bets_per_seat=get("max_bets_per_seat"),
        max_round_stakes=get("max_round_stakes") or 100 * max_stake,
        max_seat_stakes=get("max_seat_stakes") or 10 * max_stake,
    )


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


def answer_again(
    game: Game[Any, Any], rules: Any, known: BetRecord, raw: object, principal: str | None
) -> BetAnswer:
    """The answer to a place of a bet already journaled (a retry, in any phase):
    ``accepted`` for the same content by the same principal, else why not."""
    rid = known.round_id
    if known.principal != principal:
        return BetAnswer(
            False,
            known.bet_id,
            "BET_ID_CONFLICT",
            f"bet id {known.bet_id!r} is already used in round {rid} by another principal",
            rid,
        )
    try:  # the content, as the rules core reads it (limits may have changed since)
        bet = game.parse_bet(rules, raw, None)
    except BetError as exc:
        return BetAnswer(False, known.bet_id, exc.code, exc.message, rid)
    if (bet.seat, bet.bet_type, canonical_json(bet.selection), bet.stake) != known.content():
        return BetAnswer(
            False,
            known.bet_id,
            "BET_ID_CONFLICT",
            f"bet id {known.bet_id!r} is already used in round {rid} by "
            f"{known.bet_type} {canonical_json(known.selection)} stake {known.stake}",
            rid,
        )
    if known.status != "placed":
        return BetAnswer(
            False,
            known.bet_id,
            "BET_ID_CANCELLED",
            f"bet {known.bet_id!r} was cancelled in round {rid}; a new bet needs a new bet_id",
            rid,
        )
    return BetAnswer(True, known.bet_id, round_id=rid, bet=known.to_bet().to_json())


def pruned(rounds: RoundStore, round_id: str) -> str | None:
    """Why nothing can be said of a bet in ``round_id`` any more (a round whose bets
    the journal no longer keeps, ``[journal] full_rounds``), or None."""
    try:
        rnd = rounds.round(round_id)
    except RoundNotFound:
        return None
    if rnd.detail != "summary":
        return None
    return (
        f"round {round_id} finished at {rnd.finished_at} and its bets are no longer kept "
        "in full here ([journal] full_rounds): the floor's copy of its settlement says "
        "what was settled"
    )
