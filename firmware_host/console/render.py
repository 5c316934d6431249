"""What the console prints: amounts in the table's currency, local ISO-8601 times,
nothing from outside with a control character."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction

from ..games.money import MoneyRules
from ..jsonio import JSON

# -- what the console prints --------------------------------------------------
#: Keys whose integer values are amounts in minor units.
MONEY_KEYS = frozenset(
    {
        "stake", "stakes", "net", "payout", "commission", "amount", "pool", "pool_before",
        "pool_after", "credited", "overflow", "prize", "capital", "gross", "house_net",
        "seed", "meter", "expected", "minimum", "maximum", "meter_max", "casino_net",
        "banker_capital", "casino_capital", "min_stake", "max_stake", "jackpot_stake",
        "jackpot_seed", "contribution", "unpaid", "paid", "total", "min", "max",
    }
)  # fmt: skip
#: Keys whose values are times (epoch seconds or ISO-8601 UTC strings).
TIME_KEYS = frozenset(
    {"at", "since", "time", "opened_at", "finished_at", "connected_since", "set_at",
     "cleared_at", "last_seen", "last_frame_at", "updated_at", "created_at"}
)  # fmt: skip
#: Mappings whose every value is a time (a round's phase timestamps).
TIME_MAPS = frozenset({"timestamps"})
#: Money keys that are counts, never amounts, in these parents (a sic bo ``total``).
NOT_MONEY_PARENTS = frozenset({"outcome", "rules", "selection", "counters", "dice"})


def local_time(value: JSON) -> str | None:
    """An epoch float or an ISO-8601 UTC string as ISO-8601 local time (None if it is
    neither)."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e8:
            dt = datetime.fromtimestamp(float(value)).astimezone()
        elif isinstance(value, str) and len(value) >= 19 and value[4] == "-" and "T" in value:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone()
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return dt.isoformat(timespec="milliseconds" if dt.microsecond else "seconds")


@dataclass(frozen=True)
class Renderer:
    """Plain-text rendering of JSON data for a dumb terminal, in the table's currency
    and local time."""

    money: MoneyRules

    def amount(self, value: JSON) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return self.money.format(value)
        if isinstance(value, str) and "/" in value:  # an exact fraction of the minor unit
            try:
                f = Fraction(value)
            except (ValueError, ZeroDivisionError):
                return value
            return f"{self.money.format(int(f))} (exactly {value} minor units)"
        return str(value)

    def scalar(self, key: str, value: JSON, parent: str = "") -> str:
        if key in TIME_KEYS or parent in TIME_MAPS:
            t = local_time(value)
            if t is not None:
                return t
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if is_int and key in MONEY_KEYS and parent not in NOT_MONEY_PARENTS:
            return self.amount(value)
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=True)

    def lines(self, data: JSON, indent: str = "", parent: str = "") -> list[str]:
        """``parent``: the key above; below an outcome, the rules or a selection every
        number is a count (a dice total, a hand's points), never an amount."""
        out: list[str] = []
        if isinstance(data, Mapping):
            if not data:
                out.append(f"{indent}(none)")
            for k, v in data.items():
                below = parent if parent in NOT_MONEY_PARENTS else str(k)
                if isinstance(v, (Mapping, list)) and v:
                    out.append(f"{indent}{k}:")
                    out += self.lines(v, indent + "  ", below)
                else:
                    out.append(f"{indent}{k}: {self.scalar(str(k), v, parent)}")
        elif isinstance(data, list):
            for i, v in enumerate(data):
                if isinstance(v, (Mapping, list)):
                    out.append(f"{indent}- [{i}]")
                    out += self.lines(v, indent + "  ", parent)
                else:
                    out.append(f"{indent}- {self.scalar('', v, parent)}")
        else:
            out.append(f"{indent}{data}")
        return out

    def recall(self, rounds: JSON, full: bool) -> list[str]:
        """``recall N``: one screen per round (the round, its outcome on one line, a line
        per bet, the totals, the raw frames in hex); ``full``: every field."""
        if not isinstance(rounds, list) or not rounds:
            return ["no round in the journal yet"]
        if full:
            return self.lines(rounds)
        out: list[str] = []
        for item in rounds:
            if not isinstance(item, Mapping):
                continue
            out += self.round_screen(item)
        out.append("('recall N full' shows every field: rules, settlement detail, timestamps)")
        return out

    def round_screen(self, item: Mapping[str, JSON]) -> list[str]:
        rnd = item.get("round")
        rnd = rnd if isinstance(rnd, Mapping) else {}
        settlement = item.get("settlement")
        pay = settlement if isinstance(settlement, Mapping) else {}
        status = rnd.get("status") or rnd.get("phase")
        reason = f" ({rnd.get('void_reason')})" if rnd.get("void_reason") else ""
        opened = local_time(rnd.get("opened_at")) or "-"
        finished = local_time(rnd.get("finished_at")) or "-"
        out = [
            f"round {rnd.get('round_id')} (seq {rnd.get('seq')}): {status}{reason}",
            f"  opened {opened}, finished {finished}",
            f"  outcome: {json.dumps(rnd.get('outcome'), ensure_ascii=True, separators=(', ', ': '))}",
        ]
        bets = pay.get("bets") if isinstance(pay.get("bets"), list) else item.get("bets")
        if isinstance(bets, list) and bets:
            for b in bets:
                if not isinstance(b, Mapping):
                    continue
                sel = b.get("selection")
                sel_text = "" if sel is None else " " + json.dumps(sel, separators=(",", ":"))
                res = (
                    f" {str(b.get('result')).upper()} net {self.amount(b.get('net'))}"
                    if "result" in b
                    else ""
                )
                com = (
                    f" commission {self.amount(b.get('commission'))}" if b.get("commission") else ""
                )
                out.append(
                    f"  seat {b.get('seat')} {b.get('bet_type')}{sel_text} stake "
                    f"{self.amount(b.get('stake'))}{res}{com}  [{b.get('bet_id')}]"
                )
        else:
            out.append("  no bets")
        t = pay.get("totals")
        if isinstance(t, Mapping):
            out.append(
                f"  totals: stakes {self.amount(t.get('stakes'))}, players net "
                f"{self.amount(t.get('net'))}, commission {self.amount(t.get('commission'))}, "
                f"house {self.amount(t.get('house_net'))}"
            )
        frames = item.get("frames")
        if isinstance(frames, list):
            for f in frames:
                if isinstance(f, Mapping):
                    out.append(
                        f"  frame {f.get('device')} {f.get('direction')} "
                        f"{local_time(f.get('at')) or ''} {f.get('hex') or f.get('data')}"
                    )
        return out
