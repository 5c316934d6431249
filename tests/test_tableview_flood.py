"""``tablectl view`` against a broker client publishing 3,000 fake tables (issue 29
item 7), measured on the view's own process.

The finding: a client that may publish under ``casino/tables/`` took the view from 45
to 72 MB and ``/api/tables`` to 6.7 MB, and could replace a real table's state on the
page. Here the view runs as ``tablectl view`` (a child process, its resident memory
read from ``/proc``), the real table ``MO-R-07`` publishes, then 3,000 fake tables do
(``state``, ``board``, ``stats`` retained and a round each: 12,000 messages), and a
stranger publishes on ``MO-R-07``'s own topics. The view's memory and its API stay
bounded, and ``MO-R-07`` shows what it published. The figures are in docs/view.md.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from firmware_host.auth.identity import TableIdentity

ROOT = Path(__file__).resolve().parents[1]
REAL = "MO-R-07"
FAKES = 3000

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc"),
]


def payloads(tid: str, i: int) -> dict[str, dict[str, Any]]:
    """A table's messages, about the size a roulette table's are (docs/view.md)."""
    return {
        "state": {"table_id": tid, "schema_version": 6, "availability": "online",
                  "game": "roulette", "phase": "open", "seq": i, "faults": [],
                  "last_round_id": f"{tid}-{i:06d}-5e6f7a8b", "pad": "x" * 300},
        "board": {"table_id": tid, "layout": "roulette", "message": "result", "number": 17,
                  "history": list(range(20)), "round_id": f"{tid}-{i:06d}", "seq": i, "lit": []},
        "stats": {"table_id": tid, "rounds": 100, "hot": [1, 2, 3], "cold": [4, 5, 6],
                  "chances": {"red": 40, "black": 50}, "dozens": [30, 30, 30], "pad": "y" * 600},
        "rounds": {"table_id": tid, "round_id": f"{tid}-{i:06d}", "seq": i, "status": "settled",
                   "outcome": {"number": 17}, "totals": {"stakes": 4000},
                   "bets": [{"bet_id": f"b{k}", "seat": k, "bet_type": "straight",
                             "selection": [17], "stake": 500, "result": "win",
                             "payout": 17500, "net": 17500} for k in range(8)]},
    }  # fmt: skip


def encode(topic: str, body: dict[str, Any], identity: TableIdentity | None) -> bytes:
    if identity is not None:
        return identity.seal(topic, body)
    return json.dumps({**body, "signature": "A" * 88}).encode()  # signed by nobody


async def publish(
    host: str,
    port: int,
    tables: dict[str, TableIdentity | None],
    *,
    on: str | None = None,
    i: int = 1,
) -> None:
    """Each table's messages, on its own topics (``on``: all on that table's)."""
    async with aiomqtt.Client(host, port) as c:
        for tid, identity in tables.items():
            for topic, body in payloads(tid, i).items():
                await c.publish(
                    f"casino/tables/{on or tid}/{topic}",
                    encode(topic, body, identity),
                    qos=1,
                    retain=topic != "rounds",
                )


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def api(url: str) -> bytes:
    with urllib.request.urlopen(url + "api/tables", timeout=30) as r:
        body: bytes = r.read()
    return body


def settle(url: str, done: Any, timeout: float = 60) -> dict[str, Any]:
    """The API once ``done(doc)`` holds and it stopped changing."""
    deadline = time.monotonic() + timeout
    last = b""
    while time.monotonic() < deadline:
        body = api(url)
        doc: dict[str, Any] = json.loads(body)
        if body == last and done(doc):
            return doc
        last = body
        time.sleep(0.5)
    raise AssertionError(f"the view did not settle: {last[-2000:]!r}")


@pytest.mark.parametrize("mode", ["by-id", "by-prefix", "every-table", "registry"], ids=lambda m: m)
def test_3000_fake_tables_leave_the_view_bounded(
    mosquitto_in_memory: Any, tmp_path: Path, mode: str
) -> None:
    ep = mosquitto_in_memory.endpoint
    real_identity = TableIdentity.generate() if mode == "registry" else None
    args = {
        "by-id": ["--table", REAL],
        "by-prefix": ["--table", "MO-R-"],
        "every-table": [],
        "registry": ["--registry", str(tmp_path / "tables.toml")],
    }[mode]
    if real_identity is not None:
        (tmp_path / f"{REAL}.pub").write_bytes(real_identity.public_pem())
        (tmp_path / "tables.toml").write_text(
            f'[tables.{REAL}]\ngame = "roulette"\nkeys = ["{REAL}.pub"]\n'
        )
    proc = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "view", "--broker", f"mqtt://{ep.host}:{ep.port}",
         "--listen", "127.0.0.1:0", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = ""  # the page's address, after the lines saying what it connected to
        found = None
        for _ in range(20):
            line = proc.stdout.readline()
            found = re.search(r"http://\S+/", line)
            if found or not line:
                break
        assert found, line + (proc.stdout.read() if proc.poll() is not None else "")
        url = found.group(0)
        assert ("signatures verified" in line) == (mode == "registry"), line
        asyncio.run(publish(ep.host, ep.port, {REAL: real_identity}))
        settle(url, lambda d: [t["table_id"] for t in d["tables"]] == [REAL])
        time.sleep(1.0)
        before, api_before = rss_mb(proc.pid), len(api(url))

        fakes: dict[str, TableIdentity | None] = {f"FAKE-{k:04d}": None for k in range(FAKES)}
        asyncio.run(publish(ep.host, ep.port, fakes))
        every = mode == "every-table"

        def flooded(doc: dict[str, Any]) -> bool:
            ignored = doc["link"]["ignored"]
            heard = ignored["dropped"] + ignored["not_followed" if not every else "too_many_tables"]
            # by id (and the registry's ids), the broker sends the view no fake table
            return mode in ("by-id", "registry") or heard >= 4 * (FAKES - (49 if every else 0))

        settle(url, flooded)
        # a stranger on the real table's own topics, with another table's payloads
        asyncio.run(publish(ep.host, ep.port, {"FAKE-0001": None}, on=REAL, i=99))
        if mode == "registry":
            # ... and payloads naming MO-R-07, signed with another key: only a view that
            # has the table's key tells them from the table's (without it, they would
            # be taken: docs/view.md)
            spoof: dict[str, TableIdentity | None] = {REAL: TableIdentity.generate()}
            asyncio.run(publish(ep.host, ep.port, spoof, i=99))

        def done(doc: dict[str, Any]) -> bool:
            ignored = doc["link"]["ignored"]
            want = 8 if mode == "registry" else 4  # the stranger's messages
            return bool(ignored["table_mismatch"] + ignored["unverified"] >= want)

        doc = settle(url, done)
        time.sleep(1.0)
        after, body = rss_mb(proc.pid), api(url)
        doc = json.loads(body)
        print(f"\n{mode}: RSS {before:.1f} -> {after:.1f} MB, /api/tables {api_before} -> "
              f"{len(body)} bytes, {len(doc['tables'])} tables, ignored {doc['link']['ignored']}")  # fmt: skip
        assert after - before < 10, (before, after)  # the unbounded view: +48 MB
        ids = [t["table_id"] for t in doc["tables"]]
        real = next(t for t in doc["tables"] if t["table_id"] == REAL)
        assert real["state"]["seq"] == 1 and real["board"]["seq"] == 1, real["state"]
        assert [r["round_id"] for r in real["rounds"]] == [f"{REAL}-000001"]
        if every:
            assert len(ids) == 50 and len(body) < 50 * 6 * 1024  # the cap of tables
        else:
            assert ids == [REAL] and len(body) < 16 * 1024
        ignored = doc["link"]["ignored"]
        if mode == "registry":
            assert doc["link"]["verifying"] and ignored["unverified"] == 8
        else:
            assert not doc["link"]["verifying"] and ignored["table_mismatch"] == 4
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            print(proc.stdout.read()[-3000:])
