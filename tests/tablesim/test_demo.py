"""``tablectl demo`` as a user runs it: what it prints, and how it ends."""

from __future__ import annotations

import asyncio

import pytest

from firmware_host.cliargs import CliError
from tablesim.demo import run_demo


async def test_demo_prints_each_round_the_floor_receives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc = await run_demo(
        game="fantan", rounds=2, broker=None, speed=20.0, seed=3, bets=2, quiet=False
    )
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "tablectl demo: " in printed and "table demo-fantan" in printed
    assert "#1    demo-fantan-000001-" in printed and "#2    demo-fantan-000002-" in printed
    assert printed.count("outcome: number ") == 2
    assert "seed 3 (replay these rounds: tablectl demo --game fantan --seed 3)" in printed
    assert "\n2 rounds settled, " in printed
    assert printed.rstrip().endswith("seed 3: tablectl demo --game fantan --seed 3")


def test_an_unknown_game_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    from firmware_host.cli import main

    with pytest.raises(SystemExit) as stop:  # argparse: one of the games, named
        main(["demo", "--game", "poker", "--rounds", "1"])
    assert stop.value.code == 2 and "invalid choice: 'poker'" in capsys.readouterr().err
    with pytest.raises(CliError) as exc:
        asyncio.run(
            run_demo(game="poker", rounds=1, broker=None, speed=1.0, seed=1, bets=1, quiet=True)
        )
    assert "unknown game 'poker'" in exc.value.message


async def test_an_unreachable_broker_ends_the_demo_with_a_message(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No traceback reaches the user: a broker that never answers is a message and rc 1."""
    from tablesim import floor_client
    from tablesim.broker import free_port

    start = floor_client.FloorClient.start

    async def impatient(self: floor_client.FloorClient, timeout: float = 30.0) -> None:
        await start(self, 0.5)

    monkeypatch.setattr(floor_client.FloorClient, "start", impatient)
    port = free_port()
    with pytest.raises(CliError) as exc:
        await run_demo(
            game="fantan", rounds=1, broker=f"mqtt://127.0.0.1:{port}", speed=1.0, seed=1,
            bets=1, quiet=True,
        )  # fmt: skip
    assert exc.value.code == "BROKER_UNREACHABLE"
    assert f"cannot reach the MQTT broker 127.0.0.1:{port}" in exc.value.message
    assert "refused" in exc.value.message
    # Through the command line: one line, its code, exit 2.
    from firmware_host.cli import main

    await asyncio.to_thread(main, ["demo", "--broker", f"mqtt://127.0.0.1:{port}", "--rounds", "1"])
    err = capsys.readouterr().err.strip()
    assert err.startswith("tablectl demo: error: BROKER_UNREACHABLE: ") and "\n" not in err, err
