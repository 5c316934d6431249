"""Test support for the journal and MQTT tests: a floor-side subscriber that survives
broker restarts, and schema-valid round payloads built independently of the engine."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import aiomqtt

from firmware_host.games.money import fraction_str
from firmware_host.journal import Journal, RoundRecord
from firmware_host.mqtt import MqttSettings
from firmware_host.schemas import PAYLOAD_SCHEMA_VERSION
from firmware_host.timefmt import iso_utc, utc_now


def settings_for(b: Any, **kw: Any) -> MqttSettings:
    """Link settings for broker ``b`` (its host, port and the MQTT version it speaks:
    amqtt 3.1.1 only), reconnecting fast."""
    kw.setdefault("protocol", b.protocol)
    return MqttSettings(host=b.host, port=b.port, reconnect_min_ms=20, reconnect_max_ms=300, **kw)


@dataclass(frozen=True)
class Received:
    topic: str
    payload: bytes
    retain: bool
    at: float  # perf_counter

    def json(self) -> Any:
        return json.loads(self.payload)


@dataclass
class Collector:
    """A floor consumer: persistent session, QoS 1, reconnects until stopped."""

    host: str
    port: int
    topic_filter: str
    client_id: str = "floor-collector"
    clean_session: bool = False
    messages: list[Received] = field(default_factory=list)
    connects: int = 0
    _task: asyncio.Task[None] | None = None
    _connected: asyncio.Event = field(default_factory=asyncio.Event)

    async def _run(self) -> None:
        while True:
            try:
                async with aiomqtt.Client(
                    self.host, self.port, identifier=self.client_id,
                    clean_session=self.clean_session, keepalive=5,
                ) as c:  # fmt: skip
                    await c.subscribe(self.topic_filter, qos=1)
                    self.connects += 1
                    self._connected.set()
                    async for m in c.messages:
                        raw = m.payload
                        payload = (
                            bytes(raw) if isinstance(raw, bytes | bytearray) else str(raw).encode()
                        )
                        self.messages.append(
                            Received(m.topic.value, payload, bool(m.retain), time.perf_counter())
                        )
            except aiomqtt.MqttError:
                self._connected.clear()
                await asyncio.sleep(0.05)

    async def start(self, timeout: float = 10) -> Collector:
        self._task = asyncio.create_task(self._run())
        await asyncio.wait_for(self._connected.wait(), timeout)
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    async def __aenter__(self) -> Collector:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def on(self, suffix: str) -> list[Received]:
        return [m for m in self.messages if m.topic.endswith("/" + suffix)]

    async def wait_for(self, pred: Callable[[], bool], timeout: float = 10, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or pred}")
            await asyncio.sleep(0.01)


def round_payload(
    rnd: RoundRecord, stakes: list[int], *, status: str = "settled"
) -> dict[str, Any]:
    """A round payload valid against round.json, built by hand (no engine involved):
    every bet an even-money bet won (settled) or refunded (void)."""
    now = iso_utc(utc_now())
    bets = []
    for i, stake in enumerate(stakes):
        if status == "settled":  # red: 18 of 37 pockets pay 1:1, an edge of 1/37
            money = {"result": "win", "payout": stake, "commission": 0, "net": stake,
                     "edge": "1/37", "theo_exact": fraction_str(Fraction(stake, 37)),
                     "theo": round(Fraction(stake, 37))}  # fmt: skip
        else:
            money = {"result": "refund", "payout": 0, "commission": 0, "net": 0,
                     "edge": None, "theo_exact": "0", "theo": 0}  # fmt: skip
        bets.append(
            {"bet_id": f"b{i}", "seat": i % 8, "bet_type": "red", "selection": None, "stake": stake,
             **money, "breakage": "0"}
        )  # fmt: skip
    net = sum(b["net"] for b in bets)
    theo = Fraction(sum(stakes), 37) if status == "settled" else Fraction(0)
    return {
        "schema_version": PAYLOAD_SCHEMA_VERSION,
        "table_id": rnd.table_id,
        "round_id": rnd.round_id,
        "seq": rnd.seq,
        "game": "roulette",
        "rules": {"regulation": "60/2004"},
        "currency": "MOP",
        "status": status,
        "void_reason": None if status == "settled" else "test void",
        "outcome": 18 if status == "settled" else None,
        "bets": bets,
        "totals": {
            "stakes": sum(stakes),
            "payout": sum(b["payout"] for b in bets),
            "commission": 0,
            "net": net,
            "house_net": -net,
            "breakage": "0",
            "theo_exact": fraction_str(theo),
            "theo": round(theo),
        },
        "theo_basis": "exact",
        "jackpot": {"contributions": [], "hits": []},
        "timestamps": {"opened": rnd.opened_at, "closed": now, "result": now, status: now},
        "dealer": None,
    }


def play_round(journal: Journal, table_id: str = "t1", stakes: tuple[int, ...] = (100, 200)) -> str:
    """Open, bet, settle one round; returns its round_id."""
    rnd = journal.rounds.open_round(table_id, "roulette", {"regulation": "60/2004"})
    for i, s in enumerate(stakes):
        journal.bets.place_bet(
            rnd.round_id, {"bet_id": f"b{i}", "seat": i % 8, "bet_type": "red", "stake": s}
        )
    journal.rounds.set_phase(rnd.round_id, "closed")
    journal.rounds.settle_round(rnd.round_id, 18, round_payload(rnd, list(stakes)))
    return rnd.round_id
