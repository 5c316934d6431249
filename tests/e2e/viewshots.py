"""The pictures of ``tablectl view`` in docs/images (issue 33), from a seeded demo, and
the pit of tables the browser tests use.

    .venv/bin/python -m tests.e2e.viewshots docs/images

plays each of the ten games through the demo (``tablesim.demo.DemoTable``: a real table
daemon, its simulated devices, its broker, signed MQTT), with a dealer signed in,
opens each table's board in headless Chromium (``tests/e2e/_cdp.py``) at 1920x1080, at
390 px wide and at 1080x1920 (portrait), and then a pit of 12 tables made of what those
tables published (each message given to a table of the pit under its own id and signed
with that table's own key, as a pit of real tables would publish it; one table with an
open alert, one whose witness holds a disputed result, the stud poker table with a
jackpot hit pending) on the pit page at both
widths, and that stud poker table's board with the hit beside the meter. The same seed draws the same rounds; the
pictures differ from one run to the next only by the clock and the timestamps.

``Pit`` and ``play_game`` are what the browser tests (``tests/e2e/test_view_board.py``)
use.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiomqtt

from firmware_host.auth.identity import TableIdentity
from firmware_host.mqtt import MqttSettings
from tablesim.broker import EmbeddedBroker
from tablesim.demo import DemoTable
from tests.e2e._cdp import Browser, find_chromium

#: The ten games, in the order of the README, with the rounds each plays for its board.
GAMES = {
    "roulette": 14,
    "sicbo": 8,
    "fish-prawn-crab": 6,
    "fantan": 8,
    "baccarat": 14,
    "blackjack": 3,
    "stud-poker": 3,
    "super-pan-9": 2,
    "paikao": 2,
    "mahjong": 2,
}
#: Retained topics a table publishes (what a pit of tables shows of each).
RETAINED = ("state", "board", "stats", "jackpot", "limits", "alerts")
#: Screens: (name, width, height).
SCREENS = (("1920", 1920, 1080), ("390", 390, 844), ("portrait", 1080, 1920))
SEED = 33


@dataclass
class Played:
    """What a demo table published (the floor's view of it), to replay for a pit."""

    game: str
    table_id: str
    retained: dict[str, dict[str, Any]] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)


def record(t: DemoTable, game: str) -> Played:
    assert t.floor is not None
    p = Played(game, t.table_id)
    for m in t.floor.messages:
        body = m.json()
        if not isinstance(body, dict):
            continue
        if m.topic in RETAINED or m.topic.startswith("devices/"):
            p.retained[m.topic] = body
        elif m.topic == "rounds" and body["round_id"] not in {r["round_id"] for r in p.rounds}:
            p.rounds.append(body)
    return p


async def play_game(game: str, rounds: int, *, seed: int = SEED, dealer: str = "ana") -> DemoTable:
    """A demo table of ``game`` with its view, a dealer signed in, ``rounds`` played.
    The caller stops it (``await t.stop()``)."""
    t = DemoTable(game, speed=4.0, seed=seed, bets=4, view=True, view_port=0)
    await t.start()
    try:
        assert t.floor is not None
        await t.floor.command("dealer_sign_in", signer=t.principals.signer("pit"), dealer=dealer)
        await t.play(rounds)
        await asyncio.sleep(0.6)  # the last phase change reaches the view
    except BaseException:
        await t.stop()
        raise
    return t


def _as(table_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k != "signature"}
    out["table_id"] = table_id
    for key in ("round_id", "last_round_id"):
        if isinstance(out.get(key), str):
            out[key] = table_id + out[key][out[key].index("-0") :]
    return out


class Pit:
    """A pit of tables on a broker: each a table id, its own identity, and what one of the
    demo tables published, published again as that table's (signed with its key)."""

    def __init__(self, host: str, port: int, played: Iterable[Played], n: int = 12) -> None:
        self.host, self.port = host, port
        base = list(played)
        self.tables: list[tuple[str, Played, TableIdentity]] = []
        for i in range(n):
            p = base[i % len(base)]
            tid = f"MO-{p.game[:2].upper()}-{i + 1:02d}"
            self.tables.append((tid, p, TableIdentity.generate()))
        #: The rounds published, per table, as published (ids, times: see :meth:`publish`).
        self.published: dict[str, list[dict[str, Any]]] = {}

    @property
    def keys(self) -> dict[str, tuple[Any, ...]]:
        from cryptography.hazmat.primitives.serialization import load_pem_public_key

        return {tid: (load_pem_public_key(ident.public_pem()),) for tid, _, ident in self.tables}

    async def publish(self, prefix: str = "casino", alert_on: int = 0, witness_on: int = 1) -> None:
        async with aiomqtt.Client(self.host, self.port) as c:
            for i, (tid, p, ident) in enumerate(self.tables):
                root = f"{prefix}/tables/{tid}"
                for topic, body in p.retained.items():
                    await c.publish(
                        f"{root}/{topic}", ident.seal(topic, _as(tid, body)), qos=1, retain=True
                    )
                if i == alert_on:
                    await c.publish(
                        f"{root}/alerts", ident.seal("alerts", alert(tid)), qos=1, retain=True
                    )
                if i == witness_on:
                    topic = f"devices/{WITNESS['device']}"
                    await c.publish(
                        f"{root}/{topic}",
                        ident.seal(topic, {**WITNESS, "table_id": tid}),
                        qos=1,
                        retain=True,
                    )
                # a demo plays a round in seconds: each table of the pit at a pace of its
                # own, one round every 90 + 6 i seconds, the last one ending now
                period = 90.0 + 6 * i
                start = datetime.now(UTC) - timedelta(seconds=period * len(p.rounds))
                self.published[tid] = []
                for k, r in enumerate(p.rounds):
                    body = _retimed(_as(tid, r), start + timedelta(seconds=period * k))
                    self.published[tid].append(body)
                    await c.publish(f"{root}/rounds", ident.seal("rounds", body), qos=1)


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _retimed(body: dict[str, Any], opened: datetime) -> dict[str, Any]:
    """A round moved in time to open at ``opened``, its other stamps as far from it as
    they were."""
    stamps = body["timestamps"]
    shift = opened - _stamp(stamps["opened"])
    moved = {
        k: (_stamp(v) + shift).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        if isinstance(v, str)
        else v
        for k, v in stamps.items()
    }
    return {**body, "timestamps": moved}


#: A witness's health holding a disputed result (docs/mqtt.md, "devices/<device>" of a
#: witness; docs/witness.md): 1 disagreement in 410 comparisons.
WITNESS: dict[str, Any] = {
    "schema_version": 5, "device": "camera-1", "kind": "witness", "state": "fault",
    "code": "RESULT_DISPUTED", "message": "the witness read 17, the wheel 71",
    "since": "2026-05-09T07:36:12.480Z",
    "witness": {"source": "mqtt", "readings": 412, "agreed": 409, "disagreed": 1, "timeouts": 2,
                "resolved": 3, "disagreement_rate": 0.0024, "lag_ms": 184, "mean_lag_ms": 231,
                "last_reading_at": "2026-05-09T07:36:12.480Z"},
    "updated_at": "2026-05-09T07:36:12.481Z",
}  # fmt: skip


def alert(table_id: str) -> dict[str, Any]:
    """An open alert, as ``docs/mqtt.md`` shows one (a wheel's pocket above its CUSUM
    threshold), not yet acknowledged."""
    return {
        "schema_version": 5, "table_id": table_id, "unacknowledged": 1,
        "updated_at": "2026-05-09T07:35:47.540Z",
        "alerts": [{
            "id": 3, "code": "WHEEL_BIAS_POCKET", "subject": "SS2-00417:17", "severity": "critical",
            "message": "wheel SS2-00417: pocket 17 above its CUSUM threshold",
            "evidence": {"pocket": 17, "spins": 1804, "hits": 81},
            "first_seen": "2026-05-09T07:35:47.531Z", "last_seen": "2026-05-09T07:35:47.531Z",
            "count": 1, "state": "raised", "condition": "ended", "acknowledged_at": None,
            "acknowledged_by": None, "ack_reason": None, "cleared_at": None,
        }],
    }  # fmt: skip


async def shoot(browser: Browser, url: str, path: Path, ready: str, *, full: bool = True) -> None:
    """``url`` once ``ready`` holds, as a PNG (``full``: the whole page, else the screen)."""
    await browser.open(url)
    await browser.wait_for(ready, 20)
    await asyncio.sleep(0.3)
    await browser.screenshot(path, full=full)


async def main(outdir: Path) -> None:
    chromium = find_chromium()
    if chromium is None:
        raise SystemExit("viewshots: Chromium is not installed (apt-get install chromium)")
    outdir.mkdir(parents=True, exist_ok=True)
    played: list[Played] = []
    for game, rounds in GAMES.items():
        t = await play_game(game, rounds)
        try:
            played.append(record(t, game))
            url = f"{t.view.url}board/{t.table_id}"
            for name, w, h in SCREENS:
                if name == "portrait" and game not in ("roulette", "baccarat"):
                    continue
                async with Browser(chromium, width=w, height=h) as b:
                    lang = {"1920": "en", "390": "zh", "portrait": "pt"}[name]
                    await shoot(b, f"{url}?lang={lang}", outdir / f"board-{game}-{name}.png",
                                "document.querySelector('[data-result]') !== null",
                                full=name == "390")  # fmt: skip
            print(f"viewshots: {game}: board pictures", flush=True)
        finally:
            await t.stop()
    # the stud poker table of the pit with a jackpot hit waiting to be paid (a royal flush
    # at place 4: docs/integrity.md), to show the meter with the pending hit beside it
    stud = next(p for p in played if p.game == "stud-poker")
    stud.retained["jackpot"] = {**stud.retained["jackpot"], "locked": {
        "hit_id": "h-1", "amount": 80_000_000, "round_id": stud.rounds[-1]["round_id"],
        "seat": 4, "hand": "royal_flush", "waiting": 1}}  # fmt: skip
    broker = EmbeddedBroker()
    ep = await broker.start()
    try:
        pit = Pit(ep.host, ep.port, played)
        from tableview.server import ViewServer

        async with ViewServer(MqttSettings(host=ep.host, port=ep.port), tables=["MO-"],
                              port=0, keys=pit.keys) as view:  # fmt: skip
            await view.wait_subscribed()
            await pit.publish()
            await asyncio.sleep(1.0)
            for name, w, h in SCREENS[:2]:
                async with Browser(chromium, width=w, height=h) as b:
                    await shoot(b, view.url, outdir / f"pit-{name}.png",
                                "document.querySelectorAll('tr[data-table]').length >= 12")  # fmt: skip
            stud_id = next(tid for tid, p, _ in pit.tables if p.game == "stud-poker")
            async with Browser(chromium, width=1920, height=1080) as b:
                await shoot(b, f"{view.url}board/{stud_id}?lang=en",
                            outdir / "board-stud-poker-pending-1920.png",
                            "document.querySelector('[data-jackpot-locked]') !== null", full=False)  # fmt: skip
        print("viewshots: pit pictures", flush=True)
    finally:
        await broker.stop()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")))
