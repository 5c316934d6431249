"""The signed ``verify_software`` hashes the installed files in a worker thread, outside
the request's journal transaction, while the event loop keeps running; its answer is
journaled once (a retry of the request id gets it without hashing again).

Responsiveness is asserted by ordering, not timing: the hash cannot finish until a
heartbeat coroutine on the event loop has ticked while the hash is under way (it opens
the gate the hashing waits at). Hashing on the loop would never let the heartbeat
tick: the gate's wait times out and the test fails."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from test_software import install, signed

from firmware_host.integrity import selfcheck
from firmware_host.integrity.selfcheck import SoftwareCheck
from firmware_host.integrity.software import verify
from firmware_host.table.floor import FloorRequests
from tests.table.floor_support import make_table


def _table(tmp_path: Path) -> tuple[Any, SoftwareCheck]:
    site = install(tmp_path)
    sw = signed(tmp_path, site)
    t = make_table(tmp_path)
    check = SoftwareCheck(sw, t.journal.chain, t.journal.faults, None)
    t.floor = FloorRequests(t.engine, t.floor.procedure, t.journal, auth=t.floor.auth)
    check.register_commands(t.floor.commands)
    return t, check


async def test_the_hash_runs_off_the_loop_and_outside_the_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t, check = _table(tmp_path)
    started = threading.Event()  # the worker is hashing
    gate = threading.Event()  # opened by the heartbeat, on the loop
    seen: dict[str, Any] = {"calls": 0}

    def slow_verify(*args: Any, **kw: Any) -> Any:
        seen["calls"] += 1
        seen["thread"] = threading.current_thread() is threading.main_thread()
        seen["in_transaction"] = t.journal.db.in_transaction
        started.set()
        seen["gate_opened"] = gate.wait(10)  # False: the loop never ran meanwhile
        return verify(*args, **kw)

    monkeypatch.setattr(selfcheck, "verify", slow_verify)
    ticks_while_hashing = 0

    async def heartbeat() -> None:
        nonlocal ticks_while_hashing
        while not gate.is_set():
            await asyncio.sleep(0.005)
            if started.is_set():
                ticks_while_hashing += 1
                if ticks_while_hashing >= 3:
                    gate.set()

    req = t.build("commands/request", "pit", {"command": "verify_software",
                                               "args": {"seed": "lab-seed-0001"}})  # fmt: skip
    beat = asyncio.create_task(heartbeat())
    answer = await t.floor.handle("commands/request", json.dumps(req).encode())
    await asyncio.wait_for(beat, 5)
    assert seen["gate_opened"] is True and ticks_while_hashing >= 3
    assert seen["thread"] is False and seen["in_transaction"] is False
    assert answer["status"] == "ok", answer
    expect = verify(check.settings, prefix=check.prefix, seed="lab-seed-0001")
    assert answer["data"]["seeded_digest"] == expect.seeded_digest and answer["data"]["ok"]
    # journaled once, with its answer; the same request id again: the same answer, no hash
    again = t.signer("pit").sign("commands/request", "T1",
                                 {k: v for k, v in req.items() if k not in ("signature", "timestamp")})  # fmt: skip
    assert await t.floor.handle("commands/request", json.dumps(again).encode()) == answer
    assert seen["calls"] == 1
    events = [e for e in t.journal.chain.events(50)]
    checks = [e.data for e in events if e.kind == "software_verified"]
    assert [(c["trigger"], c["by"], c["seed"]) for c in checks] == [
        ("mqtt", "mqtt:pit", "lab-seed-0001")
    ]
    assert [e.data["command"] for e in events if e.kind == "floor_command"] == ["verify_software"]
    assert t.journal.requests.answered("pit", req["request_id"]) is not None


async def test_refusals_do_not_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad seed, a principal without the role, a stale signature: refused before any
    file is read (no flood of requests can make the table hash)."""
    t, _ = _table(tmp_path)
    calls = []
    monkeypatch.setattr(selfcheck, "verify", lambda *a, **k: calls.append(1))

    async def send(who: str, seed: str) -> dict[str, Any]:
        req = t.build("commands/request", who, {"command": "verify_software",
                                                 "args": {"seed": seed}})  # fmt: skip
        out = await t.floor.handle("commands/request", json.dumps(req).encode())
        assert isinstance(out, dict)
        return out

    assert (await send("pit", "short"))["code"] == "MALFORMED_REQUEST"
    assert (await send("dealer", "lab-seed-0002"))["code"] == "NOT_PERMITTED"
    assert calls == []


def test_a_synchronous_caller_still_gets_the_answer(tmp_path: Path) -> None:
    """``FloorRequests.answer`` (tools, benches) runs the deferred hash inline."""
    t, check = _table(tmp_path)
    req = t.build("commands/request", "pit", {"command": "verify_software",
                                               "args": {"seed": "lab-seed-0003"}})  # fmt: skip
    t.sent[req["request_id"]] = req
    r = t.send("commands/request", req)
    assert r["status"] == "ok", r
    expect = verify(check.settings, prefix=check.prefix, seed="lab-seed-0003")
    assert r["data"]["seeded_digest"] == expect.seeded_digest
    assert t.retry(r["request_id"]) == r
    assert sum(e.kind == "software_verified" for e in t.journal.chain.events(50)) == 1


async def test_a_handler_that_defers_twice_is_an_internal_error(tmp_path: Path) -> None:
    from firmware_host.table.floor import Deferred

    t, _ = _table(tmp_path)

    def always(call: Any) -> Any:
        raise Deferred(lambda: "done")

    t.floor.commands.register("verify_software", always, replace=True)
    req = t.build("commands/request", "pit", {"command": "verify_software",
                                               "args": {"seed": "lab-seed-0004"}})  # fmt: skip
    out = await t.floor.handle("commands/request", json.dumps(req).encode())
    assert isinstance(out, dict) and out["code"] == "INTERNAL_ERROR", out
    assert t.journal.requests.answered("pit", req["request_id"]) is None
