"""Peers on the same inputs: what a user would pick instead of our code.

- Stud poker hand ranking (:func:`firmware_host.games.stud_poker.hand_value_codes`,
  the evaluator the rules core and its simulation use) against ``treys`` and
  ``pokerkit`` on the same random five-card hands: agreement on the category, on
  the order of consecutive hands, and the speed ratio. Our order is strict: art. 4
  of 61/2004 breaks what the ranks leave equal by suit, so a tie of the peers is
  counted apart ("ties broken by suit"), not as a disagreement.
- The mah-jong complete-hand check (:func:`firmware_host.games.mahjong.decompose.
  is_complete` with 4 sets, or :func:`is_thirteen_orphans`) against
  ``mahjong.agari.Agari.is_agari`` on the same 34-count arrays. The peer (riichi
  rules) also accepts seven pairs, which Portaria 135/91/M does not know: such
  hands are counted apart as an expected difference.
- Publication: :class:`firmware_host.mqtt.FloorLink` draining a journal outbox
  against bare ``aiomqtt`` publishing the same payloads at QoS 1 to the same
  loopback mosquitto, one in flight at a time for both (``max_inflight = 1``; the
  link's default window is compared in ``bench/limit.py``), both with TCP_NODELAY; the
  time until the last PUBACK.

A peer that is not installed gives "skipped: package not installed".
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import random
import socket
import time
from collections.abc import Callable
from typing import Any

from .common import Figure, skipped, spread, workdir

SECTION = "peers"
JSON = Any


def _have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _pkg_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


# ---------------------------------------------------------------------------
# stud poker hand ranking

RANKS = "23456789TJQKA"
SUITS_OURS = "DCHS"  # index = project suit index (card code & 3)

# project category -> treys rank class (treys 0.1.8: 0 royal flush .. 9 high card)
_TREYS_CLASS = {9: 0, 8: 1, 7: 2, 6: 3, 5: 4, 4: 5, 3: 6, 2: 7, 1: 8, 0: 9}
_POKERKIT_LABEL = {
    0: "HIGH_CARD",
    1: "ONE_PAIR",
    2: "TWO_PAIR",
    3: "THREE_OF_A_KIND",
    4: "STRAIGHT",
    5: "FLUSH",
    6: "FULL_HOUSE",
    7: "FOUR_OF_A_KIND",
    8: "STRAIGHT_FLUSH",
    9: "STRAIGHT_FLUSH",
}


def random_hands(n: int, seed: int) -> list[tuple[int, int, int, int, int]]:
    """``n`` random five-card hands as project card codes (0..51)."""
    rng = random.Random(seed)
    pool = range(52)
    return [tuple(rng.sample(pool, 5)) for _ in range(n)]  # type: ignore[misc]


def _code_str(code: int) -> str:
    return RANKS[code >> 2] + SUITS_OURS[code & 3].lower()


def poker_peers(n_hands: int, repeats: int, seed: int = 2004, chunk: int = 100_000) -> list[Figure]:
    from firmware_host.games.stud_poker.hands import _CAT_SHIFT, hand_value_codes

    have_treys, have_pk = _have("treys"), _have("pokerkit")
    if have_treys:
        from treys import Card as TCard  # type: ignore[import-untyped]
        from treys import Evaluator

        tev = Evaluator()
        tcards = [TCard.new(_code_str(c)) for c in range(52)]
        t_five = tev.evaluate
    if have_pk:
        from pokerkit import Card as PCard
        from pokerkit import StandardHighHand

        pcards = [next(iter(PCard.parse(_code_str(c)))) for c in range(52)]

    ours_t = [0.0] * repeats
    treys_t = [0.0] * repeats
    pk_t = [0.0] * repeats
    cat_agree = {"treys": 0, "pokerkit": 0}
    order = {
        "treys": {"strict": 0, "agree": 0, "ties": 0},
        "pokerkit": {"strict": 0, "agree": 0, "ties": 0},
    }
    examples: list[JSON] = []
    done = 0
    seed_i = seed
    while done < n_hands:
        m = min(chunk, n_hands - done)
        hands = random_hands(m, seed_i)
        seed_i += 1
        done += m
        th = [[tcards[c] for c in h] for h in hands] if have_treys else []
        ph = [[pcards[c] for c in h] for h in hands] if have_pk else []
        ours: list[int] = []
        tv: list[int] = []
        pv: list[Any] = []
        # The three evaluators take turns within each pass (the machine is shared: a
        # slow moment then hits all three), the garbage collector paused while timed.
        for r in range(repeats):
            gc.collect()
            gc.disable()
            try:
                t0 = time.perf_counter()
                ours = [hand_value_codes(a, b, c, d, e) for a, b, c, d, e in hands]
                ours_t[r] += time.perf_counter() - t0
                if have_treys:
                    t0 = time.perf_counter()
                    tv = [t_five(h, []) for h in th]
                    treys_t[r] += time.perf_counter() - t0
                if have_pk:
                    t0 = time.perf_counter()
                    pv = [StandardHighHand(h) for h in ph]
                    pk_t[r] += time.perf_counter() - t0
            finally:
                gc.enable()
        if have_treys:
            for i in range(m):
                if _TREYS_CLASS[ours[i] >> _CAT_SHIFT] == tev.get_rank_class(tv[i]):
                    cat_agree["treys"] += 1
                elif len(examples) < 5:
                    examples.append({"peer": "treys", "hand": [_code_str(c) for c in hands[i]]})
            o = order["treys"]
            for i in range(m - 1):
                peer = (tv[i] < tv[i + 1]) - (tv[i] > tv[i + 1])  # treys: lower is better
                if peer == 0:
                    o["ties"] += 1
                    continue
                o["strict"] += 1
                o["agree"] += peer == ((ours[i] > ours[i + 1]) - (ours[i] < ours[i + 1]))
        if have_pk:
            for i in range(m):
                if pv[i].entry.label.name == _POKERKIT_LABEL[ours[i] >> _CAT_SHIFT]:
                    cat_agree["pokerkit"] += 1
                elif len(examples) < 10:
                    examples.append({"peer": "pokerkit", "hand": [_code_str(c) for c in hands[i]]})
            o = order["pokerkit"]
            for i in range(m - 1):
                a, b = pv[i], pv[i + 1]
                peer = (a > b) - (a < b)
                if peer == 0:
                    o["ties"] += 1
                    continue
                o["strict"] += 1
                o["agree"] += peer == ((ours[i] > ours[i + 1]) - (ours[i] < ours[i + 1]))
        del th, ph, tv, pv

    figs: list[Figure] = []
    our_rates = [n_hands / t for t in ours_t]
    st = spread(our_rates)
    figs.append(
        Figure(SECTION, "poker rank: ours", st["median"], "hands/s", st,
               note=f"{n_hands} random hands, stud_poker.hand_value_codes")
    )  # fmt: skip
    for name, have, times in (("treys", have_treys, treys_t), ("pokerkit", have_pk, pk_t)):
        if not have:
            figs.append(skipped(SECTION, f"poker rank vs {name}", "package not installed"))
            continue
        ratios = [times[r] / ours_t[r] for r in range(repeats)]
        rst = spread(ratios)
        rst["peer_hands_per_s"] = spread([n_hands / t for t in times])["median"]
        o = order[name]
        rst["category_agreement"] = cat_agree[name] / n_hands
        rst["order_agreement"] = o["agree"] / o["strict"] if o["strict"] else None
        rst["pairs_compared"] = o["strict"] + o["ties"]
        rst["peer_ties_broken_by_suit"] = o["ties"]
        rst["disagreement_examples"] = [e for e in examples if e["peer"] == name]
        figs.append(
            Figure(
                SECTION,
                f"poker rank vs {name} {_pkg_version(name)}",
                rst["median"],
                "x slower",
                rst,
                note=(
                    f"peer time / our time on the same {n_hands} hands; category agreement "
                    f"{100 * rst['category_agreement']:.4f}%, order agreement "
                    f"{100 * (rst['order_agreement'] or 0):.4f}% of {o['strict']} strictly "
                    f"ordered consecutive pairs; {o['ties']} peer ties (we break them by suit, "
                    "61/2004 art. 4)"
                ),
            )
        )
    return figs


# ---------------------------------------------------------------------------
# mah-jong complete-hand check


def _tile_pool_ok(counts: list[int]) -> bool:
    return all(c <= 4 for c in counts)


def mahjong_hands(n: int, seed: int) -> list[tuple[str, list[int]]]:
    """(kind, 34 counts) of 14-tile concealed hands: complete hands built from four
    sets and a pair, the same with one tile changed (near misses), random draws from
    the 136 tiles, thirteen orphans and seven pairs."""
    from firmware_host.games.mahjong.tiles import ORPHANS

    rng = random.Random(seed)
    out: list[tuple[str, list[int]]] = []
    wall = [t for t in range(34) for _ in range(4)]

    def complete() -> list[int]:
        while True:
            c = [0] * 34
            for _ in range(4):
                if rng.random() < 0.55:
                    suit = rng.randrange(3)
                    start = suit * 9 + rng.randrange(7)
                    for t in (start, start + 1, start + 2):
                        c[t] += 1
                else:
                    c[rng.randrange(34)] += 3
            c[rng.randrange(34)] += 2
            if _tile_pool_ok(c):
                return c

    while len(out) < n:
        r = rng.random()
        if r < 0.40:
            out.append(("complete", complete()))
        elif r < 0.80:
            c = complete()
            while True:
                d = list(c)
                d[rng.choice([t for t in range(34) if d[t]])] -= 1
                d[rng.randrange(34)] += 1
                if _tile_pool_ok(d) and d != c:
                    break
            out.append(("near-miss", d))
        elif r < 0.95:
            c = [0] * 34
            for t in rng.sample(wall, 14):
                c[t] += 1
            out.append(("random", c))
        elif r < 0.975:
            c = [0] * 34
            for t in ORPHANS:
                c[t] += 1
            c[rng.choice(ORPHANS)] += 1
            out.append(("thirteen-orphans", c))
        else:
            c = [0] * 34
            for t in rng.sample(range(34), 7):
                c[t] = 2
            out.append(("seven-pairs", c))
    return out


def mahjong_peer(n_hands: int, repeats: int, seed: int = 13591) -> list[Figure]:
    from firmware_host.games.mahjong import decompose
    from firmware_host.games.mahjong.decompose import is_complete, is_thirteen_orphans

    hands = mahjong_hands(n_hands, seed)
    arrays = [c for _k, c in hands]

    def ours(c: list[int]) -> bool:
        return is_complete(c, 4) or is_thirteen_orphans(c)

    decompose._suit_sets.cache_clear()
    decompose._suit_sets_pair.cache_clear()
    is_agari: Callable[[list[int]], bool] | None = None
    if _have("mahjong"):
        from mahjong.agari import Agari

        is_agari = Agari.is_agari
    our_times: list[float] = []
    peer_times: list[float] = []
    mine: list[bool] = []
    theirs: list[bool] = []
    for _ in range(repeats):  # turns within each pass, as for the poker peers
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            mine = [ours(c) for c in arrays]
            our_times.append(time.perf_counter() - t0)
            if is_agari is not None:
                t0 = time.perf_counter()
                theirs = [is_agari(c) for c in arrays]
                peer_times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    st = spread([n_hands / t for t in our_times])
    st["first_pass_hands_per_s"] = n_hands / our_times[0]
    kinds: dict[str, int] = {}
    for k, _c in hands:
        kinds[k] = kinds.get(k, 0) + 1
    figs = [
        Figure(SECTION, "mahjong complete-hand: ours", st["median"], "hands/s", st,
               note=f"{n_hands} hands {kinds}; first pass (empty suit cache) "
                    f"{st['first_pass_hands_per_s']:.0f} hands/s")
    ]  # fmt: skip
    if is_agari is None:
        figs.append(skipped(SECTION, "mahjong check vs mahjong", "package not installed"))
        return figs
    agree = sum(a == b for a, b in zip(mine, theirs, strict=True))
    seven_pairs = 0
    other: list[JSON] = []
    for (kind, c), a, b in zip(hands, mine, theirs, strict=True):
        if a == b:
            continue
        if b and not a and sum(1 for x in c if x == 2) == 7 and sum(c) == 14:
            seven_pairs += 1
        elif len(other) < 5:
            other.append({"kind": kind, "counts": c, "ours": a, "peer": b})
    unexplained = n_hands - agree - seven_pairs
    ratios = [p / o for p, o in zip(peer_times, our_times, strict=True)]
    rst = spread(ratios)
    rst.update(
        agreement=agree / n_hands,
        agreement_except_seven_pairs=(agree + seven_pairs) / n_hands,
        seven_pairs_only_peer=seven_pairs,
        unexplained_disagreements=unexplained,
        disagreement_examples=other,
        peer_hands_per_s=spread([n_hands / t for t in peer_times])["median"],
        complete_ours=sum(mine),
        complete_peer=sum(theirs),
    )
    figs.append(
        Figure(
            SECTION,
            f"mahjong check vs mahjong {_pkg_version('mahjong')}",
            rst["median"],
            "x slower",
            rst,
            note=(
                f"peer time / our time; agreement {100 * agree / n_hands:.3f}% "
                f"({seven_pairs} seven-pairs hands only the peer accepts: riichi rule, not in "
                f"135/91/M; {unexplained} other disagreements)"
            ),
        )
    )
    return figs


# ---------------------------------------------------------------------------
# MQTT publication overhead


def _payloads(k: int, bets: int = 10) -> list[dict[str, JSON]]:
    """Round-like payloads: roulette settlements of ``bets`` bets, as the daemon publishes."""
    from .rules import build_rounds

    cfg, built = build_rounds("roulette", k, bets_per_round=bets, seed=5)
    out = []
    for i, (o, b) in enumerate(built):
        s = cfg.game.settle(cfg.rules, o, b, cfg.money).to_json()
        out.append({"schema_version": 3, "table_id": "bench-01", "round_id": f"bench-01-{i:06d}",
                    "seq": i + 1, "status": "settled", **s})  # fmt: skip
    return out


async def _mqtt_overhead(
    host: str, port: int, k: int, repeats: int
) -> tuple[list[float], list[float], int]:
    import aiomqtt

    from firmware_host.journal import Journal, OutboxMessage
    from firmware_host.jsonio import dumps
    from firmware_host.mqtt import FloorLink, MqttSettings

    from .procs import broker_protocol

    payloads = _payloads(k)
    size = sum(len(dumps(p)) for p in payloads) // k
    link_t: list[float] = []
    bare_t: list[float] = []
    with workdir("mqtt") as d:
        journal = Journal(d / "journal.sqlite3")
        # One in flight on both sides (bench.limit compares the link's default window).
        settings = MqttSettings(
            host=host, port=port, protocol=broker_protocol(host, port), client_id="bench-link",
            max_inflight=1,
        )  # fmt: skip
        link = FloorLink(settings, "bench-01", journal.outbox)
        link.start()
        try:
            await link.wait_connected(10)
            await link.wait_idle(10)
            async with aiomqtt.Client(
                host,
                port,
                identifier="bench-bare",
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                protocol=aiomqtt.ProtocolVersion.V5 if settings.protocol == "5" else None,
            ) as client:
                topic = "casino/tables/bench-02/rounds"
                bodies = [dumps(p).encode("utf-8") for p in payloads]
                for r in range(repeats):
                    for order in (0, 1) if r % 2 == 0 else (1, 0):
                        if order == 0:
                            done = link.stats.outbox_published + len(payloads)
                            journal.outbox.enqueue(
                                *(
                                    OutboxMessage("rounds", p, round_id=p["round_id"])
                                    for p in payloads
                                )
                            )
                            t0 = time.perf_counter()
                            while link.stats.outbox_published < done:  # the last PUBACK
                                await asyncio.sleep(0.0002)
                            link_t.append(time.perf_counter() - t0)
                            await link.wait_idle(120)  # the marks, before the next pass
                        else:
                            t0 = time.perf_counter()
                            for body in bodies:
                                await client.publish(topic, body, qos=1)
                            bare_t.append(time.perf_counter() - t0)
        finally:
            await link.stop()
            journal.close()
    return link_t, bare_t, size


def mqtt_overhead(host: str, port: int, broker_kind: str, k: int, repeats: int) -> list[Figure]:
    link_t, bare_t, size = asyncio.run(_mqtt_overhead(host, port, k, repeats))
    ratios = [a / b for a, b in zip(link_t, bare_t, strict=True)]
    st = spread(ratios)
    st["floorlink_msgs_per_s"] = spread([k / t for t in link_t])
    st["aiomqtt_msgs_per_s"] = spread([k / t for t in bare_t])
    st["payload_bytes"] = size
    return [
        Figure(
            SECTION,
            "publish: FloorLink vs bare aiomqtt",
            st["median"],
            "x time",
            st,
            note=(
                f"{k} round payloads (~{size} B) QoS 1 to {broker_kind} on loopback, one in flight; "
                f"FloorLink {st['floorlink_msgs_per_s']['median']:.0f} msg/s (journal outbox read "
                f"from a cursor, published marks written together) vs aiomqtt "
                f"{st['aiomqtt_msgs_per_s']['median']:.0f} msg/s"
            ),
        )
    ]


def run(quick: bool, broker: tuple[str, int, str], log: Callable[[str], None]) -> list[Figure]:
    figs: list[Figure] = []
    n_poker = 100_000 if quick else 1_000_000
    log(f"  poker ranking on {n_poker} hands")
    figs += poker_peers(n_poker, 3)
    n_mj = 20_000 if quick else 200_000
    log(f"  mah-jong check on {n_mj} hands")
    figs += mahjong_peer(n_mj, 3 if quick else 5)
    k = 200 if quick else 1000
    log(f"  MQTT publication, {k} payloads")
    host, port, kind = broker
    figs += mqtt_overhead(host, port, kind, k, 3 if quick else 5)
    return figs
