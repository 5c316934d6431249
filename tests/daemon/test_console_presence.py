"""Who counts as a technician at the table (issue 32 item 3): an operator logged in at
the console, active within the session timeout; logging out, the idle timeout and the
terminal closing each end it (``firmware_host/console/presence.py``)."""

from __future__ import annotations

import gc
from collections.abc import Mapping
from typing import Any

from firmware_host.console import (
    ConsoleSession,
    ConsoleSettings,
    Lockout,
    OperatorPresence,
    hash_pin,
    serve_stream,
)
from firmware_host.games.money import MoneyRules
from firmware_host.jsonio import JSON

PIN = "1357"
OPS = {"alice": hash_pin(PIN, iterations=100_000), "bob": hash_pin(PIN, iterations=100_000)}


class Backend:
    def __init__(self) -> None:
        self.audit: list[tuple[str, Mapping[str, JSON]]] = []

    def money(self) -> MoneyRules:
        return MoneyRules()

    def audit_event(self, kind: str, data: Mapping[str, JSON]) -> None:
        self.audit.append((kind, data))

    def status(self) -> JSON:  # the banner
        return {"table_id": "t-1", "game": "fantan"}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def session(presence: OperatorPresence, clock: Clock, channel: str = "serial") -> ConsoleSession:
    return ConsoleSession(
        Backend(),  # type: ignore[arg-type]
        ConsoleSettings(operators=OPS, session_timeout=600),
        Lockout(3, 300),
        channel=channel,
        clock=clock,
        presence=presence,
    )


async def login(s: ConsoleSession, name: str, pin: str = PIN) -> list[str]:
    await s.handle(f"login {name}")
    return await s.handle(pin)


async def test_a_login_is_a_technician_present_until_logout() -> None:
    clock = Clock()
    presence = OperatorPresence(clock=clock)
    s = session(presence, clock)
    assert presence.present() == []
    assert await login(s, "alice", "0000") == ["error: wrong operator or PIN"]
    assert presence.present() == []  # a wrong PIN is nobody
    assert await login(s, "alice") == ["logged in as alice"]
    other = session(presence, clock, channel="socket")
    await login(other, "bob")
    assert presence.present() == ["alice@serial", "bob@socket"]
    await s.handle("logout")
    assert presence.present() == ["bob@socket"]


async def test_an_idle_login_stops_counting_when_it_would_expire() -> None:
    clock = Clock()
    presence = OperatorPresence(clock=clock)
    s = session(presence, clock)
    await login(s, "alice")
    clock.t += 599
    assert presence.present() == ["alice@serial"]
    await s.handle("help")  # active again: 600 s more
    clock.t += 599
    assert presence.present() == ["alice@serial"]
    clock.t += 2  # 601 s idle: no longer present, though nothing was typed since
    assert presence.present() == []
    # the next line finds the login expired (the session's own check): still nobody
    await s.handle("help")
    assert s.user is None and presence.present() == []


async def test_a_closed_terminal_ends_it() -> None:
    clock = Clock()
    presence = OperatorPresence(clock=clock)
    feed = iter([b"login alice\r", PIN.encode() + b"\r"])
    seen: list[list[str]] = []

    async def read() -> bytes:
        seen.append(presence.present())
        return next(feed, b"")  # then the end of the stream: the cable pulled

    async def write(data: bytes) -> None:
        pass

    await serve_stream(session(presence, clock), read, write, echo=True)
    assert seen[-1] == ["alice@serial"]  # present while the terminal was there
    assert presence.present() == []


async def test_a_session_dropped_without_an_end_counts_no_more() -> None:
    clock = Clock()
    presence = OperatorPresence(clock=clock)
    s: Any = session(presence, clock)
    await login(s, "alice")
    assert presence.present() == ["alice@serial"]
    del s
    gc.collect()
    assert presence.present() == []
