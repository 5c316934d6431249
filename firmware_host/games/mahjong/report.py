"""The score of a declared win as JSON (settlement extras, ``tablectl score --json``)
and as text a floor inspector can check against the tiles on the table."""

from __future__ import annotations

from typing import Any

from ..money import MoneyRules
from .declared import DeclaredWin
from .decompose import Group
from .patterns import MAX_FAN, Score
from .payments import COMMISSION_ARTICLE, PaymentPlan, seat_label
from .tiles import WIND_LETTERS, tile_chinese, tile_str, tiles_str

_BY = {
    "self_drawn": "drawn from the wall",
    "discard": "discarded by",
    "robbing_kong": "robbed from the kong of",
    "kong_replacement": "drawn from the end of the wall after a kong",
    "second_kong_replacement": "drawn from the end of the wall after a second kong",
    "last_tile": "the last tile of the wall",
    "dealer_first_fourteen": "the banker's first fourteen tiles",
    "dealer_first_discard": "the banker's first discard, by",
}
_WIND_NAMES = ("East", "South", "West", "North")


def _group_json(g: Group) -> dict[str, Any]:
    out: dict[str, Any] = {"type": g.kind, "tiles": tiles_str(g.tiles())}
    out["on_table"] = "exposed" if g.exposed else ("concealed kong" if g.declared else "in hand")
    if g.source is not None:
        out["from"] = g.source
    return out


def score_json(win: DeclaredWin, score: Score, plan: PaymentPlan) -> dict[str, Any]:
    out: dict[str, Any] = {
        "variant": win.variant,
        "stake": win.stake_text,
        "valid": score.valid,
    }
    if not score.valid:
        out["reason"] = score.reason
    out["winner"] = {"seat": win.winner, "wind": WIND_LETTERS[win.seat_wind]}
    out["banker"] = win.banker
    out["round_wind"] = WIND_LETTERS[win.round_wind]
    if score.reading is not None:
        r = score.reading
        pair = [] if r.pair is None else tiles_str([r.pair, r.pair])
        out["reading"] = {
            "thirteen_orphans": r.thirteen_orphans,
            "pair": pair,
            "sets": [_group_json(g) for g in score.sets],
        }
        out["readings_considered"] = score.readings
        out["patterns"] = [h.to_json() for h in score.hits]
        out["fan_raw"] = score.raw_fan
        out["fan"] = score.fan
        out["max_fan"] = MAX_FAN[win.variant]
    out["grade"] = plan.grade
    out["single_share"] = plan.single_share
    out["payments"] = [
        {
            "seat": p.seat,
            "wind": WIND_LETTERS[win.wind_of(p.seat)],
            "role": p.role,
            "share": p.share,
            "amount": p.amount,
        }
        for p in plan.payments
    ]
    liab = plan.liability
    out["liability"] = {
        "applies": liab.applies,
        "seat": liab.seat,
        "cases": list(liab.cases),
        "exemptions": list(liab.exemptions),
    }
    out["commission"] = {
        "article": COMMISSION_ARTICLE[win.variant],
        "table": plan.commission_table,
        "taken": plan.commission,
    }
    out["capital"] = plan.capital
    out["capped"] = plan.capped
    out["notes"] = list(plan.notes)
    return out


def _tile(t: int) -> str:
    return f"{tile_str(t)} {tile_chinese(t)}"


def _set_line(g: Group) -> str:
    where = "exposed" if g.exposed else ("concealed kong" if g.declared else "concealed")
    src = f", from seat {g.source}" if g.source is not None else ""
    return f"{g.kind:<5} {' '.join(tiles_str(g.tiles())):<14} ({where}{src})"


def score_text(win: DeclaredWin, score: Score, plan: PaymentPlan, money: MoneyRules) -> str:
    fmt = money.format
    lines = [
        f"Mah-jong, {win.variant} (Portaria 135/91/M), stake level ${win.stake[0]}/${win.stake[1]}",
        f"{'Winner' if score.valid else 'Declared by'}: {seat_label(win, win.winner)}; "
        f"banker: seat {win.banker}; "
        f"round: {_WIND_NAMES[win.round_wind]}",
    ]
    how = _BY[win.by]
    if win.source is not None and how.endswith(("by", "of")):
        how = f"{how} {seat_label(win, win.source)}"
    lines.append(f"Winning tile: {_tile(win.tile)}, {how}")
    lines.append("")
    if not score.valid:
        lines.append(f"NOT A WIN: {score.reason}")
    else:
        r = score.reading
        assert r is not None
        if r.thirteen_orphans:
            lines.append("Valid: the thirteen orphans (135/91/M art. 6 (a) (3))")
            lines.append(f"  tiles: {' '.join(tiles_str(sorted([*win.concealed, win.tile])))}")
        else:
            art = (
                "art. 4 (a): four sets and a pair"
                if win.variant == "conventional"
                else "art. 4 (b): one set and a pair"
            )
            lines.append(f"Valid: 135/91/M {art}")
            for g in score.sets:
                lines.append(f"  {_set_line(g)}")
            assert r.pair is not None
            lines.append(f"  pair  {tile_str(r.pair)} {tile_str(r.pair)}")
        if score.readings > 1:
            lines.append(f"  ({score.readings} readings of these tiles; the best is shown)")
        lines.append("")
        lines.append("Patterns (135/91/M art. 6):")
        if not score.hits:
            lines.append("  none: kai vu (jogo mínimo), the lowest grade, 0 fan")
        for h in score.hits:
            pat = h.pattern
            label = pat.name + (f" «{pat.romanised}»" if pat.romanised else "") + f" {pat.chinese}"
            lines.append(f"  {pat.fan} fan  {label}: {h.detail}  [{pat.article}]")
        cap = MAX_FAN[win.variant]
        capped = f" (sum {score.raw_fan}, the maximum is {cap})" if score.raw_fan > cap else ""
        lines.append(f"Fan: {score.fan}{capped}: {plan.grade}")
    lines.append("")
    if score.valid:
        lines.append(
            f"Payments (art. 7: the banker pays and receives double); single share "
            f"{fmt(plan.single_share)}:"
        )
    else:
        lines.append("Compensation for the false win:")
    for p in plan.payments:
        verb = "receives" if p.amount > 0 else ("pays" if p.amount < 0 else "pays nothing")
        amount = f" {fmt(abs(p.amount))}" if p.amount else ""
        extra = f" (art. 7 share {fmt(abs(p.share))})" if p.share != p.amount else ""
        lines.append(f"  {seat_label(win, p.seat):<22} {p.role:<13} {verb}{amount}{extra}")
    liab = plan.liability
    for c in liab.cases:
        lines.append(f"  liability: seat {liab.seat} {c}")
    for e in liab.exemptions:
        lines.append(f"  no liability: {e}")
    for n in plan.notes:
        lines.append(f"  note: {n}")
    art = COMMISSION_ARTICLE[win.variant]
    if plan.grade != "false win":
        received = plan.winner_received()
        lines.append(
            f"Commission ({art}, ${win.stake[0]}/${win.stake[1]}): {fmt(plan.commission)}"
            f" from the winner; the winner's net {fmt(received - plan.commission)}"
        )
    return "\n".join(lines)
