"""The technician console over a serial line (a pseudo-terminal here) and the Unix
socket: help, status, recall with raw frames, a privileged void after login, the
lockout after five wrong PINs, and everything written to the event log."""

from __future__ import annotations

import asyncio
import os
import tty
from pathlib import Path

import pytest

from firmware_host.config import validate_document
from firmware_host.console import COMMANDS, hash_pin
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from tablesim.principals import make_principals

PIN = "2468"


class PtyTerminal:
    """The technician's end of the serial line: a dumb terminal."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        self.path = os.ttyname(slave)
        tty.setraw(slave)
        self._slave = slave
        os.set_blocking(self.master, False)
        self.buf = b""

    async def read_until(self, marker: bytes, timeout: float = 10.0) -> str:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while marker not in self.buf:
            if loop.time() > deadline:
                raise AssertionError(f"{marker!r} not seen; got {self.buf[-500:]!r}")
            try:
                self.buf += os.read(self.master, 4096)
            except BlockingIOError:
                await asyncio.sleep(0.02)
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out.decode("ascii")

    async def cmd(self, line: str, prompt: bytes = b"> ") -> str:
        os.write(self.master, line.encode() + b"\r")
        text = await self.read_until(prompt)
        return text

    def close(self) -> None:
        os.close(self.master)
        os.close(self._slave)


def config(tty_path: str, keys: Path, **console: object) -> object:
    # fantan without its keypad: results entered by people, over signed commands
    return validate_document(
        {
            "table": {"id": "con-1", "game": "fantan", "result_source": "manual"},
            "auth": make_principals(keys).auth_section(),
            "console": {
                "serial_port": tty_path,
                "max_tries": 5,
                "lockout_seconds": 60,
                "operators": {"tech1": {"pin_hash": hash_pin(PIN)}},
                **console,
            },
        }
    )


@pytest.fixture
async def table(tmp_path: Path, amqtt_broker):  # type: ignore[no-untyped-def]
    term = PtyTerminal()
    d = TableDaemon(
        config(term.path, tmp_path / "keys"),
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(
            host=amqtt_broker.host, port=amqtt_broker.port, protocol=amqtt_broker.protocol
        ),
    )
    await d.start()
    try:
        yield d, term
    finally:
        await d.stop()
        term.close()


async def test_login_recall_void_and_audit(table) -> None:  # type: ignore[no-untyped-def]
    d, term = table
    banner = await term.read_until(b"table> ")
    assert "con-1" in banner and "\x1b" not in banner  # no ANSI
    help_text = await term.cmd("help")
    for c in COMMANDS:
        assert c.syntax in help_text, c.name
    # a settled round to recall, with the dealer's raw keypad frame
    e = d.parts.engine
    e.open_betting()
    e.desk.place({"bet_id": "a", "seat": 1, "bet_type": "fan", "selection": 2, "stake": 500})
    e.close_betting()
    e.record_frames([("keypad", "rx", b"KEY 2\r\n")])
    e.submit_result({"number": 2})
    recall = await term.cmd("recall 1")
    assert "fan" in recall and b"KEY 2".hex() in recall and "settled" in recall
    status = await term.cmd("status")
    assert "phase: idle" in status
    # amqtt speaks MQTT 3.1.1 only: the console says refusals cannot be detected (issue 28)
    assert "protocol: 3.1.1" in status and "refusals: undetectable" in status
    assert "a publication the broker refuses cannot be detected" in status
    # the journal's chain head and the audit key it is keyed with (issue 15)
    seq, head = d.journal.chain.head()
    assert head in status and str(seq) in status and d.journal.chain.key_id in status
    # a privileged command needs a login
    e.open_betting()
    e.desk.place({"bet_id": "b", "seat": 2, "bet_type": "fan", "selection": 1, "stake": 500})
    old = d.journal.rounds.summary(2)[1].round_id
    now = e.current.round_id
    refused = await term.cmd(f"void {now} dealer error")
    assert "needs an operator login" in refused and e.phase.value == "open"
    await term.cmd("login tech1", prompt=b"PIN: ")
    ok = await term.cmd(PIN, prompt=b"# ")
    assert "logged in as tech1" in ok
    # a void names its round: the last round's id voids nothing (issue 14)
    stale = await term.cmd(f"void {old} bets placed after the bell", prompt=b"# ")
    assert "STALE_ROUND" in stale and now in stale and e.phase.value == "open"
    voided = await term.cmd(f"void {now} bets placed after the bell", prompt=b"# ")
    assert "refunded: 1" in voided and e.phase.value == "idle"
    events = d.journal.chain.events(50)
    priv = [ev for ev in events if ev.kind == "privileged_action"]
    assert (
        priv
        and priv[-1].data["operator"] == "tech1"
        and priv[-1].data["why"] == "bets placed after the bell"
    )
    assert any(ev.kind == "console_login" and ev.data["operator"] == "tech1" for ev in events)
    assert d.journal.chain.verify().ok


async def test_lockout_after_five_wrong_pins(table) -> None:  # type: ignore[no-untyped-def]
    d, term = table
    await term.read_until(b"table> ")
    for i in range(5):
        await term.cmd("login tech1", prompt=b"PIN: ")
        out = await term.cmd("0000")
        if i < 4:
            assert "wrong operator or PIN" in out
    assert "console locked" in out
    out = await term.cmd("login tech1")
    assert "console locked" in out  # even the right PIN is not asked for now
    kinds = [ev.kind for ev in d.journal.chain.events(50)]
    assert kinds.count("console_login_failed") == 5 and "console_lockout" in kinds


async def test_nothing_typed_is_shown_while_locked(table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 29 item 8, end to end: after the lockout, the PIN typed again on the serial
    line is neither echoed nor shown as an unknown command, nor on the socket console;
    the answer says how long is left; ``tablectl status`` still answers."""
    from firmware_host.subcommands.ops import console_query

    d, term = table
    await term.read_until(b"table> ")
    for _ in range(5):
        await term.cmd("login tech1", prompt=b"PIN: ")
        out = await term.cmd("0000")
    assert "console locked for 1 min 0 s" in out and out.endswith("locked table> ")
    out = await term.cmd(PIN)  # typed at the wrong moment
    assert PIN not in out and "unknown command" not in out
    assert "console locked after too many wrong PINs: " in out and " s left" in out
    assert out.endswith("locked table> ")
    status = await term.cmd("status")  # not echoed, answered
    assert "phase: idle" in status and "status" not in status
    # the socket console: locked too (the lockout is the console's, every channel)
    reader, writer = await asyncio.open_unix_connection(str(tmp_path / "console.sock"))
    banner = await asyncio.wait_for(reader.readuntil(b"locked table> "), 10)
    assert b"con-1" in banner
    writer.write(PIN.encode() + b"\r\n")
    await writer.drain()
    reply = (await asyncio.wait_for(reader.readuntil(b"table> "), 10)).decode()
    assert PIN not in reply and "unknown command" not in reply and " s left" in reply
    writer.write(b"quit\r\n")
    writer.close()
    st = await console_query(str(tmp_path / "console.sock"), "status json")
    assert '"table_id":"con-1"' in st.replace(" ", "")
    events = d.journal.chain.events(50)
    assert not any(PIN in str(ev.data) for ev in events)


async def test_unix_socket_console(table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    d, _ = table
    reader, writer = await asyncio.open_unix_connection(str(tmp_path / "console.sock"))
    writer.write(b"devices\r\nround\r\nquit\r\n")
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    text = data.decode()
    assert "phase: idle" in text and "bye" in text
    writer.close()


async def test_the_daemon_settles_ahead_while_the_result_is_awaited(  # type: ignore[no-untyped-def]
    table, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The daemon gives its engine a runner on the event loop (table/ahead.py): after
    # the close, a few loop turns settle fantan's four remainders, and the result
    # takes its own without the rules core settling again.
    d, _term = table
    e = d.parts.engine
    e.open_betting()
    e.desk.place({"bet_id": "a", "seat": 1, "bet_type": "fan", "selection": 3, "stake": 500})
    e.close_betting()
    for _ in range(10):
        await asyncio.sleep(0)
    calls: list[object] = []
    settle = type(e.game).settle
    monkeypatch.setattr(type(e.game), "settle", lambda g, *a: calls.append(a) or settle(g, *a))
    payload = e.submit_result({"number": 3})
    assert calls == []
    # 58/2004 art. 7 1) (1): Fan pays 3 to 1 less 5%: a prize of 1500, 75 kept.
    [b] = payload["bets"]
    assert (b["result"], b["payout"], b["commission"], b["net"]) == ("win", 1500, 75, 1425)


async def test_quit_ends_the_client_at_once_without_another_enter(tmp_path: Path) -> None:
    """Issue 30: ``quit`` printed "bye" and the client waited for another Enter, then
    said "cannot reach the console ... Connection lost" and exited 2. Now the session's
    end ends the client, exit 0, with its standard input still open."""
    import asyncio
    import subprocess
    import sys

    sock = tmp_path / "c.sock"

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"table> ")
        await writer.drain()
        while (line := await reader.readline()) and line.strip() != b"quit":
            writer.write(b"unknown command\r\ntable> ")
            await writer.drain()
        writer.write(b"bye\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(session, path=str(sock))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "firmware_host", "console", "--socket", str(sock),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"quit\n")  # and nothing more: the terminal stays open
        await proc.stdin.drain()
        rc = await asyncio.wait_for(proc.wait(), 10)
        out = (await proc.stdout.read()).decode()  # type: ignore[union-attr]
        err = (await proc.stderr.read()).decode()  # type: ignore[union-attr]
        assert rc == 0, err
        assert "bye" in out and err == "", (out, err)
    finally:
        if proc.returncode is None:
            proc.kill()
        server.close()
