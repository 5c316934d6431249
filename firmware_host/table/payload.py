"""The round payload published on ``rounds`` (docs/mqtt.md), built from the journaled
round: one builder for settled and void rounds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from ..games.base import Bet
from ..journal import RoundRecord
from ..jsonio import JSON
from ..schemas import PAYLOAD_SCHEMA_VERSION
from ..table_config import TableConfig
from ..timefmt import iso_utc
from .theo import Theo, jackpot_pool, with_theo, without_theo


def refunds(bets: Sequence[Bet]) -> list[dict[str, JSON]]:
    """The settlement lines of a void round: every bet refunded, nothing paid."""
    return [
        dict(b.to_json(), result="refund", payout=0, commission=0, net=0, breakage="0")
        for b in bets
    ]


def void_body(rnd: RoundRecord, refunded: Sequence[Mapping[str, JSON]]) -> dict[str, JSON]:
    """The body of a void round's payload: its refunds and their totals."""
    stakes = 0
    for r in refunded:
        stake = r["stake"]
        assert isinstance(stake, int)
        stakes += stake
    return {
        "outcome": rnd.outcome,
        "bets": list(refunded),
        "totals": {
            "stakes": stakes,
            "payout": 0,
            "commission": 0,
            "net": 0,
            "house_net": 0,
            "breakage": "0",
        },
    }


def round_payload(
    cfg: TableConfig,
    rnd: RoundRecord,
    status: str,
    body: Mapping[str, JSON],
    at: datetime,
    *,
    void_reason: str | None = None,
    extras: Mapping[str, JSON] | None = None,
    dealer: JSON = None,
    theo: Theo | None = None,
) -> dict[str, JSON]:
    # each bet's edge and theoretical win, and the round's (docs/mqtt.md, issue 34);
    # ``theo``: the bets' computed while the ball spun (table/ahead.py), if any
    game = cfg.game
    if status == "settled":
        pool = jackpot_pool(extras) if extras else None
        body = with_theo(game, cfg.rules, cfg.money, dict(body), pool=pool, known=theo)
    else:
        body = without_theo(dict(body), game.edge_basis)
    stamps = dict(rnd.timestamps)
    timestamps = {
        "opened": stamps.get("open", rnd.opened_at),
        "closed": stamps.get("closed"),
        "result": stamps.get("result"),
        status: iso_utc(at),
    }
    payload: dict[str, JSON] = {
        "schema_version": PAYLOAD_SCHEMA_VERSION,
        "table_id": cfg.table_id,
        "round_id": rnd.round_id,
        "seq": rnd.seq,
        "game": cfg.game_id,
        "rules": rnd.rules,
        "currency": cfg.money.currency,
        "minor_digits": cfg.money.minor_digits,
        "status": status,
        "void_reason": void_reason,
        "outcome": body.get("outcome"),
        "bets": body["bets"],
        "totals": body["totals"],
        "jackpot": {"contributions": [], "hits": []},
        "timestamps": timestamps,
        "dealer": dealer,
    }
    for key, value in body.items():
        if key not in payload and key != "game":
            payload[key] = value
    if extras:
        payload.update(extras)
    return payload
