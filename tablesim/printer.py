"""What ``tablectl demo`` prints: each settled round as the floor receives it.

Reads only what arrives on the table's topics (``rounds``, ``events``), so it shows
exactly what a floor system would see.
"""

from __future__ import annotations

import asyncio
import json

from firmware_host.config import TableConfig
from firmware_host.jsonio import JSON

from .floor_client import FloorMessage

#: Fault events worth a line (the others are the round's ordinary life).
FAULT_EVENTS = ("throw_void", "spin_void", "misdeal", "result_refused", "device_problem")


def out(text: str) -> None:
    print(text, flush=True)


def money(amount: int, cfg: TableConfig) -> str:
    return cfg.money.format(amount)


class RoundPrinter:
    """Readable lines for each settled round, as the floor receives it."""

    def __init__(self, cfg: TableConfig, quiet: bool) -> None:
        self.cfg = cfg
        self.quiet = quiet
        self.count = 0
        self.seen: set[str] = set()
        self.done = asyncio.Event()
        self.target = 0

    def on_message(self, msg: FloorMessage) -> None:
        if msg.topic == "rounds":
            r = msg.json()
            if r["round_id"] in self.seen:
                return  # QoS 1 may deliver twice; same id, same round
            self.seen.add(r["round_id"])
            self.count += 1
            self.print_round(r)
            if self.target and self.count >= self.target:
                self.done.set()
        elif msg.topic == "events" and not self.quiet:
            ev = msg.json()
            if ev["event"] in FAULT_EVENTS:
                out(f"   ! {ev['event']}: {json.dumps(ev.get('data', {}), ensure_ascii=False)}")

    def print_round(self, r: JSON) -> None:
        cfg = self.cfg
        t = r["totals"]
        outcome = outcome_text(r["game"], r["outcome"])
        status = "VOID " + (r.get("void_reason") or "") if r["status"] == "void" else "settled"
        out(f"#{self.count:<4} {r['round_id']}  {status}")
        out(f"      outcome: {outcome}")
        if not self.quiet:
            for b in r["bets"]:
                sel = (
                    ""
                    if b.get("selection") is None
                    else json.dumps(b["selection"], ensure_ascii=False)
                )
                res = b["result"].upper()
                extra = f" commission {money(b['commission'], cfg)}" if b.get("commission") else ""
                out(
                    f"      seat {b['seat']:<2} {b['bet_type']:<16} {sel:<22} stake {money(b['stake'], cfg):>14}"
                    f"  {res:<6} net {money(b['net'], cfg):>15}{extra}"
                )
        jp = r.get("jackpot") or {}
        jp_text = ""
        if jp.get("pool_after") is not None:
            jp_text = f"  jackpot {money(jp['pool_after'], cfg)}"
            for h in jp.get("hits", []):
                jp_text += f"  HIT {h['hand']} seat {h['seat']} {money(h['prize'], cfg)}"
        out(
            f"      totals: {len(r['bets'])} bets, stakes {money(t['stakes'], cfg)}, "
            f"players net {money(t['net'], cfg)}, commission {money(t['commission'], cfg)}, "
            f"house {money(t['house_net'], cfg)}{jp_text}"
        )


def outcome_text(game: str, o: JSON) -> str:
    """One line for a round's published outcome (the demo's reading of each game's
    outcome JSON; anything it does not know is shown as JSON)."""
    if o is None:
        return "(none)"
    if game == "roulette":
        return f"{o['number']} {o['colour']}"
    if game in ("sicbo", "fish-prawn-crab"):
        extra = (
            " ".join(o.get("figures", []))
            if game == "fish-prawn-crab"
            else ("triple" if o.get("triple") else "")
        )
        return f"dice {o['dice']} total {o['total']} {extra}".rstrip()
    if game == "fantan":
        return f"number {o['number']}" + (f" ({o['buttons']} buttons)" if "buttons" in o else "")
    try:
        if game == "baccarat":
            return (
                f"player {' '.join(o['player'])} ({o['player_total']})  banker {' '.join(o['banker'])} "
                f"({o['banker_total']})  -> {o['winner']}"
            )
        if game == "blackjack":
            places = "; ".join(
                f"seat {p['seat']}: "
                + " | ".join(
                    f"{' '.join(h['cards'])} ({h['total']} {h['status']})" for h in p["hands"]
                )
                for p in o["places"]
            )
            d = o["dealer"]
            return f"dealer {' '.join(d['cards'])} ({d['total']}); {places}"
        if game == "stud-poker":
            seats = "; ".join(
                f"seat {k}: {' '.join(v['cards'])} {v['hand']} {v['action']}"
                for k, v in o["seats"].items()
            )
            q = "qualifies" if o["dealer_qualifies"] else "does not qualify"
            return f"dealer {' '.join(o['dealer'])} {o['dealer_hand']} ({q}); {seats}"
        if game in ("super-pan-9", "paikao"):
            hands = " ".join(f"{k}:{'+'.join(v)}" for k, v in o["hands"].items())
            return f"banker place {o['banker']}, dice {o['dice']}, first served {o['first_place']}; {hands}"
        if game == "mahjong":
            return f"seat {o['winner']} wins on {o['win']['tile']} ({o['win']['by']}), banker {o['banker']}, stake {o['stake']}"
    except (KeyError, TypeError):
        pass
    text = json.dumps(o, ensure_ascii=False)
    return text if len(text) < 160 else text[:157] + "..."
