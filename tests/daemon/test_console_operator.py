"""The console as technicians and a regulator want it (issue 17 point 7, issue 15 item 6):
amounts in the table's currency, local ISO times, compact recall, messages when there
is nothing to show, nothing from the floor reaching the terminal with a control
character, an unknown operator's PIN costing a known one's, the lockout surviving a
restart, and dual control of the jackpot meter (NJAC 13:69D-1.52: changes to a
progressive controller's parameters need two people)."""

from __future__ import annotations

import hashlib
import os
import pty
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from firmware_host.console import (
    ConsoleSession,
    ConsoleSettings,
    DualControl,
    Lockout,
    hash_pin,
    local_time,
    restore_lockout,
)
from firmware_host.games.money import MoneyRules
from firmware_host.journal import Journal
from firmware_host.jsonio import JSON

PIN_A, PIN_B = "1357", "2468"
OPS = {"alice": hash_pin(PIN_A, iterations=100_000), "bob": hash_pin(PIN_B, iterations=100_000)}


class FakeBackend:
    """What a console sees of a table, recorded."""

    def __init__(self, rounds: JSON = None, journal: Journal | None = None) -> None:
        self.rounds = rounds if rounds is not None else []
        self.calls: list[tuple[str, Any]] = []
        self.journal = journal
        self.events_seen: list[tuple[str, Mapping[str, JSON]]] = []

    def money(self) -> MoneyRules:
        return MoneyRules(currency="MOP", minor_digits=2)

    def status(self) -> JSON:
        return {"table_id": "t1", "game": "roulette", "phase": "idle"}

    def devices(self) -> JSON:
        return {"wheel": {"health": {"state": "online", "since": 1795453625.98}}}

    async def self_test(self, device: str) -> JSON:
        return {}

    async def lamp_test(self) -> JSON:
        return {}

    def recall(self, n: int) -> JSON:
        return self.rounds[:n] if isinstance(self.rounds, list) else []

    def round_info(self) -> JSON:
        return {"phase": "open", "bets": [{"bet_id": "x\x1b[2Jy", "stake": 4300}]}

    def jackpot(self) -> JSON:
        return {"pool": 20002800}

    def events(self, n: int) -> JSON:
        return []

    def check_config(self) -> JSON:
        return {}

    def faults(self) -> JSON:
        return ["no latched fault"]

    def audit_event(self, kind: str, data: Mapping[str, JSON]) -> None:
        self.events_seen.append((kind, data))
        if self.journal is not None:
            self.journal.chain.append_event(kind, dict(data))

    async def command(
        self,
        name: str,
        args: Mapping[str, JSON],
        *,
        round_id: str | None = None,
        after_round_id: str | None = None,
        operator: str | None = None,
    ) -> JSON:
        """The table's commands a console runs (``firmware_host/commands.py``)."""
        if name == "open_betting":
            self.calls.append(("open", (after_round_id, operator)))
            return {"round_id": "r1", "phase": "open"}
        if name == "close_betting":
            self.calls.append(("close", (round_id, operator)))
            return {}
        if name == "result":
            self.calls.append(("result", (round_id, args["outcome"])))
            return {"round_id": "r1", "status": "settled"}
        assert name == "void_round", name
        self.calls.append(("void", (round_id, args["reason"])))
        return {"status": "void", "reason": args["reason"]}

    def jackpot_adjust(self, amount: int, reason: str, who: str) -> JSON:
        self.calls.append(("adjust", (amount, reason, who)))
        return {"pool": 20002800 + amount}

    def jackpot_reset(self, reason: str, who: str) -> JSON:
        self.calls.append(("reset", who))
        return {}

    def jackpot_params(self, key: str, value: str, reason: str, who: str) -> JSON:
        self.calls.append(("param", (key, value, who)))
        return {}

    def clear_fault(self, code: str, reason: str, who: str) -> JSON:
        return {}


def session(backend: FakeBackend, lockout: Lockout | None = None, **kw: Any) -> ConsoleSession:
    return ConsoleSession(
        backend,  # type: ignore[arg-type]
        ConsoleSettings(operators=OPS, max_tries=3, lockout_seconds=300),
        lockout or Lockout(3, 300),
        **kw,
    )


async def login(s: ConsoleSession, name: str, pin: str) -> list[str]:
    await s.handle(f"login {name}")
    return await s.handle(pin)


ROULETTE_ROUND: dict[str, JSON] = {
    "round": {"round_id": "r-000001", "seq": 1, "status": "settled", "phase": "settled",
              "outcome": {"number": 17, "colour": "black"},
              "opened_at": "2026-11-23T20:00:00.000Z", "finished_at": "2026-11-23T20:01:00.000Z",
              "rules": {"sectors9": {k: list(range(9)) for k in "ABCD"}}},
    "bets": [],
    "settlement": {
        "bets": [{"bet_id": "b1", "seat": 3, "bet_type": "straight", "selection": [17],
                  "stake": 4300, "result": "win", "net": 150500, "commission": 0}],
        "totals": {"stakes": 4300, "net": 150500, "commission": 0, "house_net": -150500},
        "rules": {"sectors9": {k: list(range(9)) for k in "ABCD"}},
    },
    "frames": [{"device": "wheel", "direction": "rx", "hex": "3137", "at": "2026-11-23T20:01:00Z"}],
}  # fmt: skip


async def test_recall_is_compact_in_the_currency_and_full_on_request() -> None:
    s = session(FakeBackend([ROULETTE_ROUND]))
    compact = await s.handle("recall 1")
    text = "\n".join(compact)
    assert "stake MOP 43.00" in text and "net MOP 1,505.00" in text and "4300" not in text
    assert "3137" in text  # the raw frame, in hex
    assert len(compact) <= 10
    full = await s.handle("recall 1 full")
    assert len(full) > len(compact) and any("sectors9" in ln for ln in full)
    assert any("stake: MOP 43.00" in ln for ln in full)


async def test_nothing_to_show_says_so() -> None:
    s = session(FakeBackend([]))
    assert await s.handle("recall 3") == ["no round in the journal yet"]
    assert await s.handle("events") == ["no event in the log"]
    assert await s.handle("pending") == ["no request waits for approval"]


async def test_times_are_local_iso() -> None:
    s = session(FakeBackend())
    text = "\n".join(await s.handle("devices"))
    assert "1795453625" not in text
    assert f"since: {local_time(1795453625.98)}" in text
    utc = datetime(2026, 11, 23, 20, tzinfo=UTC)
    assert local_time("2026-11-23T20:00:00Z") == utc.astimezone().isoformat(timespec="seconds")


async def test_nothing_from_the_floor_reaches_the_terminal_with_a_control_character() -> None:
    s = session(FakeBackend())
    for line in await s.handle("round"):
        assert all(ch.isprintable() and ch.isascii() for ch in line), repr(line)
    assert any("\\x1b[2J" in ln for ln in await s.handle("round"))  # shown, not obeyed


async def test_unknown_operator_costs_the_same_pbkdf2_as_a_known_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No timing oracle: the same PBKDF2 work for a name that does not exist."""
    calls: list[int] = []
    real = hashlib.pbkdf2_hmac

    def counting(name: str, pin: bytes, salt: bytes, iterations: int, *a: Any) -> bytes:
        calls.append(iterations)
        return real(name, pin, salt, iterations, *a)

    monkeypatch.setattr("firmware_host.console.settings.hashlib.pbkdf2_hmac", counting)
    s = session(FakeBackend())
    assert await login(s, "alice", "0000") == ["error: wrong operator or PIN"]
    assert await login(s, "mallory", "0000") == ["error: wrong operator or PIN"]
    assert calls == [100_000, 100_000]


async def test_jackpot_changes_need_two_different_operators() -> None:
    b = FakeBackend()
    dual = DualControl()
    alice, bob = session(b, dual=dual), session(b, dual=dual)
    await login(alice, "alice", PIN_A)
    await login(bob, "bob", PIN_B)
    asked = await alice.handle("jackpot-adjust 250.50 meter reading after repair")
    assert asked[0].startswith("request 1 pending") and b.calls == []
    refused = await alice.handle("approve 1")
    assert "DUAL_CONTROL" in refused[0] and b.calls == []
    approved = await bob.handle("approve 1")
    assert approved[0].startswith("approved by bob")
    assert b.calls == [("adjust", (25050, "meter reading after repair", "alice+bob"))]
    assert await bob.handle("approve 1") == ["error: no pending request 1 (see 'pending')"]
    await alice.handle("jackpot-param contribution_rate 1/2 new schedule")
    await bob.handle("approve 2")
    assert b.calls[-1] == ("param", ("contribution_rate", "1/2", "alice+bob"))
    kinds = [k for k, _ in b.events_seen]
    assert kinds.count("privileged_request") == 2 and kinds.count("privileged_approval") == 2


async def test_a_dual_request_expires() -> None:
    now = [0.0]
    dual = DualControl(ttl=600, clock=lambda: now[0])
    b = FakeBackend()
    alice, bob = session(b, dual=dual), session(b, dual=dual)
    await login(alice, "alice", PIN_A)
    await login(bob, "bob", PIN_B)
    await alice.handle("jackpot-reset new shift")
    now[0] = 601
    assert "no pending request" in (await bob.handle("approve 1"))[0] and b.calls == []


async def test_manual_table_rounds_from_the_console() -> None:
    b = FakeBackend()
    s = session(b)
    assert "needs an operator login" in (await s.handle("open"))[0]
    await login(s, "alice", PIN_A)
    await s.handle("open")
    await s.handle("open r1")  # the next round, naming the one it follows
    await s.handle("close r1")
    await s.handle('result r1 {"number": 17}')
    assert b.calls == [
        ("open", (None, "alice")),
        ("open", ("r1", "alice")),
        ("close", ("r1", "alice")),
        ("result", ("r1", {"number": 17})),
    ]
    assert "syntax" in (await s.handle("result r1 {nope"))[0]
    assert "syntax" in (await s.handle('result {"number": 17}'))[0]  # no round named
    assert "syntax" in (await s.handle("close"))[0]


async def test_the_lockout_survives_a_restart(tmp_path: Path) -> None:
    wall = [1_800_000_000.0]
    mono = [100.0]
    with Journal(tmp_path / "j.sqlite3") as j:
        lock = Lockout(3, 300, clock=lambda: mono[0], wall=lambda: wall[0])
        s = session(FakeBackend(journal=j), lock)
        for _ in range(3):
            await login(s, "alice", "0000")
        assert lock.locked() == 300
    # the daemon restarts 100 s later: a new Lockout, the same journal
    wall[0] += 100
    with Journal(tmp_path / "j.sqlite3") as j:
        fresh = Lockout(3, 300, clock=lambda: 5.0, wall=lambda: wall[0])
        assert restore_lockout(fresh, j.chain) == pytest.approx(200)
        s = session(FakeBackend(journal=j), fresh)
        assert "console locked" in (await s.handle("login alice"))[0]
    wall[0] += 250  # past the lockout's end
    with Journal(tmp_path / "j.sqlite3") as j:
        assert restore_lockout(Lockout(3, 300, wall=lambda: wall[0]), j.chain) == 0


async def test_wrong_pins_before_a_restart_still_count(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.sqlite3") as j:
        s = session(FakeBackend(journal=j), Lockout(3, 300))
        await login(s, "alice", "0000")
        await login(s, "alice", "0001")
    with Journal(tmp_path / "j.sqlite3") as j:
        fresh = Lockout(3, 300)
        restore_lockout(fresh, j.chain)
        assert fresh.failures == 2
        s = session(FakeBackend(journal=j), fresh)
        assert "console locked" in (await login(s, "alice", "0002"))[0]
        assert (await login(s, "bob", PIN_B)) != ["logged in as bob"]  # locked, not asked


async def test_a_pin_typed_while_locked_is_never_shown_back() -> None:
    """Issue 29 item 8: while the console is locked, what is typed is not shown back as
    an unknown command; the answer says how long is left; commands still run."""
    mono = [100.0]
    lock = Lockout(3, 300, clock=lambda: mono[0])
    b = FakeBackend()
    s = session(b, lock, clock=lambda: mono[0])
    assert s.prompt() == "table> " and not s.input_hidden
    for _ in range(3):
        await s.handle("login alice")
        assert s.prompt() == "PIN: " and s.input_hidden
        out = await s.handle("0000")
    assert "console locked for 5 min 0 s" in out[0] and "nothing typed is shown" in out[0]
    assert s.prompt() == "locked table> " and s.input_hidden
    mono[0] += 13
    out = await s.handle(PIN_A)  # the technician types the PIN again, at the wrong moment
    assert out == [
        "error: console locked after too many wrong PINs: 4 min 47 s left; "
        "nothing typed is shown until then"
    ]
    assert s.prompt() == "locked table> "
    assert "phase: idle" in "\n".join(await s.handle("status"))  # commands still run
    assert "4 min 47 s left" in (await s.handle("login alice"))[0]
    assert not any(PIN_A in str(data) for _, data in b.events_seen)  # nor in the log
    mono[0] += 300  # the lockout is over: the next prompt shows it
    assert s.prompt() == "table> " and not s.input_hidden
    # a PIN typed at a plain prompt is not repeated either (a word with digits)
    out = await s.handle(PIN_A)
    assert out == ["error: unknown command (not repeated: it has digits); type 'help'"]
    assert (await s.handle("stauts")) == ["error: unknown command 'stauts'; type 'help'"]
    # the PIN typed for the operator's name: not asked for a PIN, not repeated, not logged
    out = await s.handle(f"login {PIN_A}")
    assert PIN_A not in out[0] and "no operator's name is a number" in out[0]
    assert s.prompt() == "table> " and not any(PIN_A in str(d) for _, d in b.events_seen)
    # a line typed under the locked prompt stays hidden when the lockout ends meanwhile
    for _ in range(3):
        await login(s, "alice", "0000")
    assert s.prompt() == "locked table> "
    mono[0] += 301
    out = await s.handle(PIN_A)
    assert PIN_A not in out[0] and "not shown" in out[0]
    assert (await login(s, "alice", PIN_A)) == ["logged in as alice"]


async def test_the_serial_line_echoes_nothing_while_locked() -> None:
    """The serial transport (it echoes what is typed): no PIN, nothing typed while the
    console is locked, no line starting with a digit; commands still answer."""
    from firmware_host.console import serve_stream

    typed = [
        b"login alice\r", b"0000\r", b"login alice\r", b"0001\r", b"login alice\r",
        b"0002\r", b"1357\r", b"rp\x7found\r", b"quit\r",
    ]  # fmt: skip
    feed = iter(typed)
    out = bytearray()

    async def read() -> bytes:
        return next(feed, b"")

    async def write(data: bytes) -> None:
        out.extend(data)

    s = session(FakeBackend(), Lockout(3, 300))
    await serve_stream(s, read, write, echo=True)
    text = out.decode()
    for secret in ("0000", "0001", "0002", "1357"):
        assert secret not in text, text
    assert "unknown command" not in text
    assert "console locked for 5 min 0 s" in text
    assert "locked table> " in text and "left; nothing typed is shown" in text
    assert "round" not in text.split("locked table> ")[-2]  # a command typed: not echoed
    assert "phase: open" in text  # ... and answered

    # not locked: a line that starts with a digit is not echoed either
    feed = iter([b"24\x7f68\r", b"quit\r"])
    out.clear()
    await serve_stream(session(FakeBackend(), Lockout(3, 300)), read, write, echo=True)
    text = out.decode()
    assert "24" not in text and "68" not in text and "\b" not in text
    assert "unknown command (not repeated" in text


def test_counts_below_an_outcome_are_not_amounts() -> None:
    from firmware_host.console import Renderer

    r = Renderer(MoneyRules(currency="MOP", minor_digits=2))
    text = "\n".join(
        r.lines({"outcome": {"places": [{"hands": [{"total": 21}]}], "total": 13},
                 "totals": {"stakes": 2500}})
    )  # fmt: skip
    assert "total: 21" in text and "total: 13" in text and "stakes: MOP 25.00" in text


@pytest.mark.parametrize("locked", [False, True], ids=["pin-prompt", "locked"])
def test_tablectl_console_never_echoes_the_pin(tmp_path: Path, locked: bool) -> None:
    """``tablectl console`` on a terminal: what is typed after ``PIN:`` is not shown, nor
    what is typed while the console is locked (its ``locked table>`` prompt)."""
    path = str(tmp_path / "c.sock")
    ask = b"locked table> " if locked else b"PIN: "
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)
    got: list[bytes] = []

    def console() -> None:
        conn, _ = srv.accept()
        conn.sendall(b"banner\r\ntable> ")
        buf = b""
        while b"\r\n" not in buf:
            buf += conn.recv(100)
        conn.sendall(ask)
        buf = b""
        while b"\r\n" not in buf:
            buf += conn.recv(100)
        got.append(buf)
        conn.sendall(b"error: wrong operator or PIN\r\ntable> ")
        conn.recv(100)
        conn.close()

    threading.Thread(target=console, daemon=True).start()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "console", "--socket", path],
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
    )  # fmt: skip
    os.close(slave)

    def read_until(marker: bytes, timeout: float = 20) -> bytes:
        out = b""
        deadline = time.monotonic() + timeout
        while marker not in out and time.monotonic() < deadline:
            try:
                out += os.read(master, 1000)
            except OSError:
                break
        return out

    try:
        read_until(b"table> ")
        os.write(master, b"login alice\n")
        assert ask in read_until(ask)
        time.sleep(0.3)  # the client turns the echo off when the prompt arrives
        os.write(master, b"97531\n")
        after = read_until(b"wrong operator")
        assert b"97531" not in after, after
        assert got == [b"97531\r\n"]
    finally:
        proc.terminate()
        proc.wait(10)
        os.close(master)
        srv.close()


def test_the_example_tables_operator_has_the_documented_demo_pin() -> None:
    """Issue 30: the README says ``login`` then ``clear-fault``; the example tables now
    have an operator, whose demo PIN (2468, README) logs in, and check-config says so."""
    from firmware_host.assembly import assembly_warnings
    from firmware_host.config import load_config
    from firmware_host.console.settings import check_pin

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    assert "`login demo-tech`" in readme and "PIN `2468`" in readme
    for path in sorted((root / "config").glob("*.toml")):
        cfg = load_config(path)
        console = cfg.section("console")
        assert check_pin("2468", console.operators["demo-tech"]), path
        assert not check_pin("2469", console.operators["demo-tech"])
        assert any("demo PIN 2468" in w for w in assembly_warnings(cfg)), path
