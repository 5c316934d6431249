"""A shift played through the real daemon over MQTT (issue 34 acceptance): the pit's
signed steps, bets by the floor system, results by the dealer, a player's session; the
retained `shift` received by a floor subscriber balances to the last minor unit against
the chips counted here and the rounds it received; then a fill changed in the journal
is caught by `tablectl audit verify`.

Roulette (60/2004 art. 7 16)-17), art. 8): red and black pay 1:1 and lose on zero, so
each bet's house edge is 1/37 (18 of 37 pockets win, paying twice the stake)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

from firmware_host.config import load_config
from firmware_host.daemon import TableDaemon
from firmware_host.mqtt import MqttSettings
from firmware_host.schemas import validate
from tablesim.floor_client import FloorClient
from tablesim.principals import make_principals
from tablesim.tables import to_toml

ROULETTE = """\
version = 1
[table]
id = "rt-34"
game = "roulette"
payable_unit = 100
result_source = "manual"
[limits]
min_stake = 1000
"""
RED = {1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36}


async def test_a_shift_through_the_daemon_balances_and_a_changed_fill_is_caught(
    broker, tmp_path: Path
) -> None:
    path = tmp_path / "roulette.toml"
    principals = make_principals(tmp_path / "keys")
    path.write_text(ROULETTE + to_toml({"auth": principals.auth_section()}))
    cfg = load_config(path)
    d = TableDaemon(
        cfg,
        state_dir=tmp_path,
        runtime_dir=tmp_path,
        mqtt=MqttSettings(
            host=broker.host, port=broker.port, protocol=broker.protocol, reconnect_min_ms=50
        ),
    )
    await d.start()
    await d.parts.link.wait_subscribed(30)
    try:
        async with FloorClient(broker.host, broker.port, cfg.table_id, signers=principals) as floor:

            async def ok(command: str, **args: object) -> dict:
                r = await floor.command(command, **args)
                assert r["status"] == "ok", r
                return r["data"]

            opener = 2_000_000
            await ok("shift_open", shift_id="night-1", amount=opener)
            await ok("session_open", session_id="RT-1", seat=2, player="P-00af")
            tray, cash, net, stakes = opener, 150_000, 0, 0
            tray -= cash  # chips sold for cash, the cash to the drop box
            spins = [(7, [(1, "red", 10_000), (2, "black", 20_000)]),
                     (0, [(2, "red", 5_000)]),
                     (22, [(1, "black", 30_000), (2, "red", 12_000)])]  # fmt: skip
            rounds = []
            for i, (number, bets) in enumerate(spins):
                await ok("open_betting")
                for j, (seat, colour, stake) in enumerate(bets):
                    bet = {"bet_id": f"b{i}{j}", "seat": seat, "bet_type": colour, "stake": stake}
                    assert (await floor.place(bet))["status"] == "accepted"
                    wins = number != 0 and (number in RED) == (colour == "red")
                    net += -stake if wins else stake
                    stakes += stake
                await ok("close_betting")
                await ok("result", outcome={"number": number})
                rounds.append(await floor.next_round())
            tray += net
            await ok("fill", slip="F-1", amount=500_000)
            await ok("credit", slip="C-1", amount=100_000)
            await ok("drop", slip="BOX-1", amount=cash)
            tray += 500_000 - 100_000
            session = await ok("session_close", session_id="RT-1")
            closed = await ok("shift_close", amount=tray)
            await floor.until(
                lambda: any(m.topic == "shift" and m.json().get("status") == "closed"
                            for m in floor.messages),
                what="the closed shift",
            )  # fmt: skip
            shift = next(m.json() for m in reversed(floor.messages) if m.topic == "shift")
            sessions = [m.json() for m in floor.messages if m.topic == "sessions"]
    finally:
        await d.stop()
    validate("shift", shift)
    assert {k: v for k, v in closed.items() if k not in ("recorded", "step")} == {
        k: v for k, v in shift.items() if k != "signature"
    }
    win = tray - opener + 100_000 - 500_000 + cash
    received = sum(r["totals"]["house_net"] for r in rounds)
    assert (shift["win"], shift["game_result"], shift["difference"]) == (win, net, 0)
    assert win == net == received  # balances to the last minor unit
    theo = Fraction(stakes, 37)
    assert shift["theo_exact"] == f"{theo.numerator}/{theo.denominator}"
    assert shift["rounds"] == 3 and shift["variance"] == win - round(theo)
    assert shift["hold_pct"] is not None
    # the player at seat 2: 20,000 on black at 7 lost, 5,000 on red at 0 lost, 12,000
    # on red at 22 (black) lost
    assert len(sessions) == 1
    validate("session", sessions[0])
    assert (session["rounds"], session["stakes"], session["player_net"]) == (3, 37_000, -37_000)
    assert session["theo_exact"] == "1000" and session["theo"] == 1000  # 37,000 / 37
    # the journal verifies, then a fill changed in it does not
    journal, key = tmp_path / "journal.sqlite3", tmp_path / "audit.key"
    assert journal.exists() and key.exists()

    def audit() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "firmware_host", "audit", "verify", "--journal", str(journal),
             "--key", str(key)], capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert audit().returncode == 0, audit().stdout
    db = sqlite3.connect(journal)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    row = db.execute("SELECT id, data FROM events WHERE kind = 'shift_fill'").fetchone()
    data = json.loads(row[1])
    data["amount"] = 50_000
    db.execute("UPDATE events SET data = ? WHERE id = ?", (json.dumps(data), row[0]))
    db.commit()
    db.close()
    tampered = audit()
    assert tampered.returncode != 0
    assert str(row[0]) in tampered.stdout + tampered.stderr
