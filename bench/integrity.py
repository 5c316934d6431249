"""``python -m bench.integrity [--only shoe,warning] [--shoes N] [--runs N] [--years N]``:
the integrity figures of issue 37, measured with the device simulators, written to
``bench/results-integrity.json`` and ``.txt`` (``docs/integrity.md`` quotes them).

- ``shoe``: eight-deck shoes from the shoe simulator's seeded shuffle (``ShoeModel``),
  its messages decoded by the reference codec and the host's tracker (the driver's own
  code, without the serial link: ``tests/integrity/test_deck_check.py`` runs the same
  over the link) and handed to the table's :class:`IntegrityMonitor`, which asks the
  shoe for its deck check at the new shoe and at its end, as the daemon does. Four
  kinds of shoe, ``--shoes`` each: fair; one card removed from the set before the shoe;
  one card added before the shoe; one card taken during the shoe (after it was dealt).
  Each shoe is dealt to a cut leaving 14 to 24 cards behind (uniform), then the next
  shuffle ends it. Counted: the shoes whose own deck check named the card and raised
  its alert (at the new shoe, at its end), and every alert raised about a fair shoe
  (false alarms). For comparison, the
  composition statistics on the same shoes (cards never seen at the end; a card seen
  more often than the decks hold), as a shoe without a deck check leaves them.
- ``warning``: the warning tier of the bias detectors. Computed on the CUSUMs' Markov
  chains (``stats.py``): the false warnings a week, and the time to a warning for a
  pocket and a die's face at 1.2 times their fair probability (mean, quantiles);
  beside the alarm tier's. Simulated with the wheel and shaker simulators' own draw:
  ``--years`` design years of a fair wheel and fair dice (warnings counted), and
  ``--runs`` seeded biased wheels and loaded dice (spins to the warning).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from drivers.cammegh.sim import CammeghSim
from drivers.reflink.driver import CommandRefused
from drivers.reflink.messages import Sender
from drivers.shaker.model import ShakerModel
from drivers.shoe.codec import PROFILE, ShoeTracker
from drivers.shoe.model import ShoeModel
from firmware_host.auth import TableIdentity
from firmware_host.games.cards import deck
from firmware_host.integrity.alerts import Alerts
from firmware_host.integrity.bias import (
    HOURS_A_WEEK,
    HOURS_A_YEAR,
    DiceBias,
    WheelBias,
    face_design,
    face_warning_design,
    pocket_design,
    pocket_warning_design,
)
from firmware_host.integrity.monitor import IntegrityMonitor
from firmware_host.integrity.settings import IntegritySettings
from firmware_host.journal import Journal
from firmware_host.table.extension import TableExtensions

HERE = Path(__file__).resolve().parent
RATE = 60  # results an hour (the design rate)
DECKS = 8
CUT = (14, 24)  # cards the cut card leaves behind, uniform


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- the shoe ------------------------------------------------------------------------------
class SansIoShoe:
    """The shoe simulator and the host's codec and tracker, without the serial link: what
    the driver does with the device's messages, and its ``request_deck_check``."""

    def __init__(self, model: ShoeModel, mon: Callable[[], IntegrityMonitor]) -> None:
        self.model = model
        self.tracker = ShoeTracker("shoe", model.decks)
        self.mon = mon

    async def request_deck_check(self) -> None:
        reply = self.model.handle(0, PROFILE.encode("CHECK_DECK"))
        if reply:
            msg = PROFILE.decode(reply, Sender.DEVICE)
            if msg.name == "REFUSED":
                raise CommandRefused(f"shoe: CHECK_DECK refused: {msg['text']}", msg["reason"])

    async def pump(self) -> None:
        """Deliver what the shoe sent, and what the monitor's requests make it send."""
        for _ in range(100):
            await asyncio.sleep(0)  # the monitor's request tasks run
            out = self.model.take_outbox()
            if not out:
                await asyncio.sleep(0)
                if not self.model.outbox:
                    return
                continue
            for raw in out:
                for ev in self.tracker.apply(PROFILE.decode(raw, Sender.DEVICE), raw):
                    await self.mon().on_device_event("shoe", ev)


async def one_shoe(kind: str, seed: int, workdir: Path) -> dict[str, Any]:
    """One eight-deck shoe of ``kind`` (``fair``, ``missing``, ``extra``, ``taken``),
    dealt to its cut and ended by the next shuffle: what was raised about it."""
    rng = random.Random(seed)
    model = ShoeModel(DECKS, seed)
    j = Journal(workdir / f"{kind}-{seed}.sqlite3", identity=TableIdentity.generate())
    holder: list[IntegrityMonitor] = []
    shoe = SansIoShoe(model, lambda: holder[0])
    mon = IntegrityMonitor(
        TableExtensions(), alerts=Alerts(j), journal=j, table_id="BENCH", result_device="shoe",
        settings=IntegritySettings(), shoe_name="shoe", decks=DECKS,
        deck_check=shoe.request_deck_check,
    )  # fmt: skip
    holder.append(mon)
    card = str(rng.choice(sorted(deck())))
    if kind == "missing":
        model.inject("missing_card", card)
    elif kind == "extra":
        model.inject("extra_card", card)
    model.shuffle()
    await shoe.pump()
    behind = rng.randint(*CUT)
    dealt: list[str] = []
    while model.remaining > behind:
        dealt.append(model.deal())
        await shoe.pump()
    if kind == "taken":
        card = rng.choice(dealt)
        model.inject("missing_card", card)
    model.shuffle()  # the next shoe: this one ends
    await shoe.pump()
    alerts = [(a.code, a.subject, a.evidence) for a in j.active_alerts()]
    checks = [e.data for e in j.chain.events(100) if e.kind == "deck_check"]
    seen = Counter(dealt)
    j.close()
    want = "SHOE_CARD_EXCESS" if kind == "extra" else "SHOE_CARDS_MISSING"
    raised = any(c == want and s == "shoe:1:check" for c, s, _ in alerts)
    found_by = sorted(
        {c["purpose"] for c in checks
         if c["shuffle"] == 1 and card in c["missing"] + c["extra"] and raised}
    )  # fmt: skip
    return {
        "card": card,
        "found_by": found_by,
        "alerts_about_shoe_1": [(c, s) for c, s, _ in alerts if s.startswith("shoe:1")],
        "alerts": len(alerts),
        "checks": [(c["purpose"], c["shuffle"], c["ok"]) for c in checks],
        # what the composition statistics compare with shoe_unseen_max
        "unseen": sum(max(0, DECKS - seen[str(c)]) for c in deck()),
        "excess_seen": any(n > DECKS for n in seen.values()),
    }


def run_shoe(shoes: int) -> dict[str, Any]:
    out: dict[str, Any] = {"decks": DECKS, "shoes_each": shoes, "cut_behind": list(CUT)}

    kinds = ("fair", "missing", "extra", "taken")

    async def run_all(kind: str, workdir: Path) -> list[dict[str, Any]]:
        base = 10_000 * (1 + kinds.index(kind))  # each kind its own seeds
        return [await one_shoe(kind, base + s, workdir) for s in range(shoes)]

    with tempfile.TemporaryDirectory(prefix="bench-shoe-") as tmp:
        for kind in kinds:
            t0 = time.perf_counter()
            rows = asyncio.run(run_all(kind, Path(tmp)))
            secs = time.perf_counter() - t0
            found = sum(1 for r in rows if r["found_by"])
            by = Counter(p for r in rows for p in r["found_by"])
            raised = sum(1 for r in rows if r["alerts"])
            res: dict[str, Any] = {
                "shoes": len(rows),
                "found_by_deck_check": found,
                "found_at_new_shoe": by.get("new_shoe", 0),
                "found_at_end_of_shoe": by.get("end_of_shoe", 0),
                "shoes_with_any_alert": raised,
                "checks_per_shoe": Counter(len(r["checks"]) for r in rows).most_common(),
                "seconds": round(secs, 1),
            }
            # the composition statistics alone (a shoe without a deck check), same shoes
            for limit in (16, 24):
                res[f"composition_unseen_over_{limit}"] = sum(r["unseen"] > limit for r in rows)
            res["composition_excess_seen"] = sum(r["excess_seen"] for r in rows)
            out[kind] = res
            _log(f"shoe {kind}: {found}/{len(rows)} found by the deck check "
                 f"(new shoe {res['found_at_new_shoe']}, end {res['found_at_end_of_shoe']}), "
                 f"{raised} with an alert, {secs:.1f} s")  # fmt: skip
    out["false_alarms_fair"] = out["fair"]["shoes_with_any_alert"]
    return out


# -- the warning tier --------------------------------------------------------------------
POCKET = 17
POCKET_P = 1.2 / 37
POCKET_WEIGHT = 36 * POCKET_P / (1 - POCKET_P)  # the simulator's weight: p = w / (36 + w)
FACE_P = 1.2 / 6
FACE_WEIGHT = 5 * FACE_P / (1 - FACE_P)  # 1.25 against 1: p = w / (5 + w) = 0.2
QUANTILES = (0.5, 0.9, 0.999)


def _empirical(times: list[int], computed: list[int] | None = None) -> dict[str, Any]:
    """Mean (and its standard error) and quantiles of the measured times; against the
    computed quantiles (``computed``, as :data:`QUANTILES`), the share of runs within
    each (expected: the quantile's probability)."""
    s = sorted(times)
    q = {f"q{int(p * 1000) / 10:g}": s[min(len(s) - 1, int(p * len(s)))] for p in QUANTILES}
    out = {"runs": len(s), "mean": round(statistics.fmean(s), 1),
           "stderr": round(statistics.stdev(s) / len(s) ** 0.5, 1), **q}  # fmt: skip
    for p, bound in zip(QUANTILES, computed or [], strict=False):
        out[f"within_computed_q{int(p * 1000) / 10:g}"] = round(
            sum(t <= bound for t in s) / len(s), 4
        )
    return out


def computed() -> dict[str, Any]:
    week = RATE * HOURS_A_WEEK
    out: dict[str, Any] = {}
    for name, design, p0, p1, cusums in (
        ("pocket_warning", pocket_warning_design(RATE), 1 / 37, POCKET_P, 37),
        ("face_warning", face_warning_design(3, RATE), 1 / 6, FACE_P, 18),
        ("pocket_alarm", pocket_design(RATE), 1 / 37, POCKET_P, 37),
        ("face_alarm", face_design(3, RATE), 1 / 6, FACE_P, 18),
    ):
        t0 = time.perf_counter()
        arl0 = design.arl(p0)
        qs = design.quantiles(p1, QUANTILES)
        out[name] = {
            "up": design.up, "down": design.down, "h": design.h,
            "arl0": round(arl0), "false_a_week": round(cusums * week / arl0, 3),
            "false_a_year": round(cusums * RATE * HOURS_A_YEAR / arl0, 3),
            "mean_at_1.2x": round(design.arl(p1)),
            **{f"q{int(p * 1000) / 10:g}_at_1.2x": q for p, q in zip(QUANTILES, qs, strict=True)},
            "seconds": round(time.perf_counter() - t0, 1),
        }  # fmt: skip
        _log(f"computed {name}: {out[name]}")
    # a shaker whose three dice are loaded alike: the first of three face CUSUMs
    d = face_warning_design(3, RATE)
    out["face_warning"]["any_of_3_dice_q_at_1.2x"] = d.quantiles(FACE_P, QUANTILES, copies=3)
    return out


def run_warning(runs: int, years: int) -> dict[str, Any]:
    out: dict[str, Any] = {"computed": computed(), "simulated": {}}
    sim_out = out["simulated"]
    year = round(RATE * HOURS_A_YEAR)
    weeks = year * years / (RATE * HOURS_A_WEEK)
    # fair equipment: warnings a week
    t0 = time.perf_counter()
    wheel = CammeghSim(seed=37)
    w = WheelBias("W-fair")
    wheel_w = sum(1 for _ in range(year * years) for f in w.spin(wheel.pick_number())
                  if f.code == "WHEEL_BIAS_WARNING")  # fmt: skip
    sim_out["fair_wheel"] = {"spins": year * years, "weeks": round(weeks, 1), "warnings": wheel_w,
                             "a_week": round(wheel_w / weeks, 3),
                             "computed": round(out["computed"]["pocket_warning"]["false_a_week"]
                                               * weeks, 1),
                             "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
    _log(f"fair wheel: {sim_out['fair_wheel']}")
    t0 = time.perf_counter()
    shaker = ShakerModel(3, 37)
    d = DiceBias("S-fair")
    dice_w = sum(1 for _ in range(year * years) for f in d.throw(shaker.roll())
                 if f.code == "DICE_BIAS_WARNING")  # fmt: skip
    sim_out["fair_dice"] = {"throws": year * years, "weeks": round(weeks, 1), "warnings": dice_w,
                            "a_week": round(dice_w / weeks, 3),
                            "computed": round(out["computed"]["face_warning"]["false_a_week"]
                                              * weeks, 1),
                            "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
    _log(f"fair dice: {sim_out['fair_dice']}")
    # a pocket at 1.2x: spins to its warning (and the other pockets' warnings meanwhile)
    t0 = time.perf_counter()
    times, others = [], []
    for seed in range(runs):
        sim = CammeghSim(seed=1000 + seed, bias={POCKET: POCKET_WEIGHT})
        w = WheelBias("W-biased")
        n, other = 0, 0
        while True:
            n += 1
            found = [f.subject for f in w.spin(sim.pick_number()) if f.code == "WHEEL_BIAS_WARNING"]
            if f"W-biased:{POCKET}" in found:
                break
            other += len(found)
        times.append(n)
        others.append(other)
    qs = [out["computed"]["pocket_warning"][f"q{int(p * 1000) / 10:g}_at_1.2x"] for p in QUANTILES]
    sim_out["pocket_1.2x"] = {**_empirical(times, qs), "p": POCKET_P, "weight": POCKET_WEIGHT,
                              "other_pockets_warned_before": round(statistics.fmean(others), 2),
                              "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
    _log(f"pocket 1.2x: {sim_out['pocket_1.2x']}")
    # a die's face at 1.2x (all three dice loaded alike): throws to die 1's warning on
    # the 6, and to the first warning on a 6 of any die
    t0 = time.perf_counter()
    times, anyd = [], []
    for seed in range(runs):
        model = ShakerModel(3, 2000 + seed, bias=[1, 1, 1, 1, 1, FACE_WEIGHT])
        d = DiceBias("S-loaded")
        n, first_any = 0, 0
        while True:
            n += 1
            found = {f.subject for f in d.throw(model.roll()) if f.code == "DICE_BIAS_WARNING"}
            if not first_any and any(s.endswith(":6") for s in found):
                first_any = n
            if "S-loaded:die1:6" in found:
                break
        times.append(n)
        anyd.append(first_any)
    qs = [out["computed"]["face_warning"][f"q{int(p * 1000) / 10:g}_at_1.2x"] for p in QUANTILES]
    sim_out["face_1.2x"] = {**_empirical(times, qs), "p": FACE_P, "weight": FACE_WEIGHT,
                            "any_of_3_dice": _empirical(
                                anyd, out["computed"]["face_warning"]["any_of_3_dice_q_at_1.2x"]),
                            "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
    _log(f"face 1.2x: {sim_out['face_1.2x']}")
    return out


def text(doc: dict[str, Any]) -> str:
    lines = [f"bench.integrity {doc['when']} ({doc['seconds']} s): {doc['args']}"]
    for section in ("shoe", "warning"):
        if section in doc:
            lines.append(f"[{section}]")
            lines.append(json.dumps(doc[section], indent=1))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.integrity", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--only", default="shoe,warning")
    ap.add_argument("--shoes", type=int, default=400, help="shoes of each kind (400)")
    ap.add_argument("--runs", type=int, default=400, help="biased wheels and dice (400)")
    ap.add_argument("--years", type=int, default=4, help="design years of fair play (4)")
    ap.add_argument("--out", default=str(HERE / "results-integrity"), help="FILE.json / FILE.txt")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    doc: dict[str, Any] = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "args": vars(args)}  # fmt: skip
    only = set(args.only.split(","))
    if "shoe" in only:
        doc["shoe"] = run_shoe(args.shoes)
    if "warning" in only:
        doc["warning"] = run_warning(args.runs, args.years)
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    Path(args.out + ".json").write_text(json.dumps(doc, indent=1) + "\n")
    Path(args.out + ".txt").write_text(text(doc))
    print(text(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
