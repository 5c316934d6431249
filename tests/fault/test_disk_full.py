"""The disk fills up under a running table, then space returns (issue 15 item 4).

A fantan table (58/2004, results entered by command: ``result_source = "manual"``, no
keypad) runs as ``python -m firmware_host run`` with its journal on a small tmpfs
(mounted by the test: root is needed; skipped with the reason otherwise). Its requests
are signed, as on a casino floor: the dealer's commands by the dealer principal, the
bets by the floor system's (``signed_setup``). The floor's dealer plays it over MQTT,
driven by the
retained ``state`` (open betting, two bets, close, the counted buttons, whatever step
comes next), while a filler file takes every free byte of the filesystem; it keeps
playing for a while on the full disk, then the filler is deleted and play goes on.

Measured before the fix (issue 15): the outbox mark failed, the link reconnected with
its backoff reset and republished the same entry about 22 times a second, writing
12,400 tracebacks in 11 minutes. Asserted now:

- no reconnect at all: one ``since`` in the table's ``online`` states (a journal
  failure is not a broker failure), so no duplicate (at most one per reconnect);
- while the disk is full, bets are refused with ``DISK_FULL`` and the retained
  ``state`` lists ``DISK_FULL``; the daemon's log gets a bounded number of lines
  (one per change of state, not per attempt) and no traceback;
- after space returns the fault clears, play resumes, every round is settled or
  voided, and nothing is lost: every bet answered ``accepted`` is in its round's
  settled payload, and every round of the journal reached the floor, identical.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import random
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _fault_support import (
    SEED,
    DaemonProcess,
    Deliveries,
    NotifySocket,
    Requests,
    kv,
    report,
    signed_setup,
)
from _flood_requests import valid_bet

from tablesim.floor_client import FloorClient

TABLE = "fault-diskfull"
SIZE_MIB = 8
FULL_SECONDS = float(os.environ.get("TABLECTL_DISKFULL_SECONDS", "6"))
ROUNDS_AFTER = 5

CONFIG = """\
version = 1
[table]
id = "{table}"
game = "fantan"
payable_unit = 100
result_source = "manual"
[limits]
min_stake = 1000
max_stake = 1000000
[mqtt]
host = "{host}"
port = {port}
protocol = "{protocol}"
"""


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A tmpfs of SIZE_MIB MiB (root only); skipped with the reason otherwise."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("the disk-full test mounts a small tmpfs: it needs root (CI runs as root)")
    d = Path(tempfile.mkdtemp(prefix="diskfull-", dir="/tmp"))
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE_MIB}m,mode=0755", "tmpfs", str(d)],
        capture_output=True, text=True,
    )  # fmt: skip
    if r.returncode != 0:
        d.rmdir()
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode})")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)
        with contextlib.suppress(OSError):
            d.rmdir()


def fill(directory: Path) -> Path:
    """A file taking every free byte of the filesystem."""
    path = directory / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 20, 65536, 4096, 512, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return path


class Dealer:
    """Plays the next step of whatever round is in progress, from the retained state."""

    def __init__(self, req: Requests, floor: FloorClient, rng: random.Random) -> None:
        self.req = req
        self.floor = floor
        self.rng = rng
        self.accepted: dict[str, tuple[str, dict[str, Any]]] = {}  # bet_id -> (round, bet)
        self.codes: Counter[str] = Counter()
        self.n = 0

    async def step(self) -> None:
        phase = self.floor.phase
        if phase in (None, "idle"):
            await self._do(self.req.command("open_betting"))
        elif phase == "open":
            for _ in range(2):
                self.n += 1
                bet = valid_bet(self.rng, f"df-{self.n}")
                a = await self.req.place(bet)
                if a is not None and a.get("status") == "accepted":
                    self.accepted[bet["bet_id"]] = (a["round_id"], a["bet"])
                elif a is not None:
                    self.codes[a.get("code")] += 1
            await self._do(self.req.command("close_betting"))
        elif phase == "closed":
            buttons = self.rng.randint(20, 120)
            await self._do(self.req.command("result", outcome={"buttons": buttons}))

    async def _do(self, request: Any) -> None:
        a = await request
        if a is not None and a.get("status") != "ok":
            self.codes[a.get("code")] += 1
            await asyncio.sleep(0.2)
        else:
            await asyncio.sleep(0.05)  # the retained state follows


def settled_rounds(floor: FloorClient) -> set[str]:
    return set(floor.finished)


@pytest.mark.fault
@pytest.mark.slow
async def test_a_full_disk_stops_bets_calmly_and_play_resumes_with_nothing_lost(
    fault_broker: Any, small_fs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED + 15)
    cfg = tmp_path / "fantan.toml"
    # The keys are not on the small filesystem: the daemon reads them at start only,
    # but the test must never depend on what fits next to the journal.
    auth, principals = signed_setup(tmp_path / "keys")
    cfg.write_text(
        CONFIG.format(
            table=TABLE,
            host=fault_broker.host,
            port=fault_broker.port,
            protocol=fault_broker.protocol,
        )
        + auth
    )
    short = Path(tempfile.mkdtemp(prefix="df-", dir="/tmp"))
    notify = NotifySocket(short / "notify.sock")
    floor = FloorClient(
        fault_broker.host, fault_broker.port, TABLE, client_id="fault-df-floor",
        signers=principals,
    )  # fmt: skip
    log = tmp_path / "daemon.log"  # not on the small filesystem
    daemon = DaemonProcess(cfg, small_fs, notify, log, floor)
    filler: Path | None = None
    try:
        await floor.start()
        await daemon.start()
        req = Requests(floor, timeout=15.0)
        dealer = Dealer(req, floor, rng)
        while len(settled_rounds(floor)) < 3:  # warm-up on a disk with room
            await dealer.step()

        log_before = len(log.read_text(errors="replace").splitlines())
        filler = await asyncio.to_thread(fill, small_fs)
        t_full = time.monotonic()
        faults_seen: set[str] = set()
        while time.monotonic() - t_full < FULL_SECONDS:
            await dealer.step()
            faults_seen.update((floor.state or {}).get("faults") or [])
        full_codes = Counter(dealer.codes)
        log_full = log.read_text(errors="replace").splitlines()[log_before:]

        filler.unlink()
        filler = None
        t_room = time.monotonic()
        after = len(settled_rounds(floor))
        while len(settled_rounds(floor)) < after + ROUNDS_AFTER:
            assert time.monotonic() - t_room < 60, f"play did not resume: {dealer.codes}"
            await dealer.step()
        resumed_s = time.monotonic() - t_room
        await floor.until(lambda: not (floor.state or {}).get("faults"), 10, "the fault cleared")
        await asyncio.sleep(1.0)  # the last marks

        rc = await daemon.terminate()
        con = sqlite3.connect(f"file:{small_fs / 'journal.sqlite3'}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT round_id, status FROM rounds ORDER BY seq").fetchall()
            payloads = {
                r[0]: json.loads(r[1])
                for r in con.execute("SELECT round_id, payload FROM settlements")
            }
        finally:
            con.close()
        got = Deliveries(m.payload for m in floor.messages if m.topic == "rounds")
        onlines = {
            m.json()["since"]
            for m in floor.messages
            if m.topic == "state" and m.json().get("availability") == "online"
        }
        in_settlement = {
            b["bet_id"] for p in payloads.values() if p["status"] == "settled" for b in p["bets"]
        }
        lost_bets = [b for b in dealer.accepted if b not in in_settlement]
        tracebacks = [
            ln for ln in log.read_text(errors="replace").splitlines() if "Traceback" in ln
        ]
        report(
            capsys,
            f"disk full under a running table ({SIZE_MIB} MiB tmpfs, full for {FULL_SECONDS:g} s)",
            [
                kv(
                    refusals_while_full=dict(full_codes),
                    state_faults_seen=sorted(faults_seen),
                    log_lines_while_full=len(log_full),
                    tracebacks=len(tracebacks),
                ),
                kv(
                    connections=len(onlines),
                    rounds=len(rows),
                    settled=sum(1 for r in rows if r[1] == "settled"),
                    void=sum(1 for r in rows if r[1] == "void"),
                    delivered=len(got.order),
                    duplicates=got.duplicates,
                    bets_accepted=len(dealer.accepted),
                    lost=len(lost_bets),
                    resumed_in_s=f"{resumed_s:.1f}",
                ),
            ],
        )
        assert rc == 0, daemon.log_tail()
        assert full_codes.get("DISK_FULL", 0) >= 1, full_codes
        assert set(full_codes) <= {"DISK_FULL", "BETTING_CLOSED", "NO_ROUND", "WRONG_PHASE"}, (
            full_codes
        )
        assert "DISK_FULL" in faults_seen
        assert len(onlines) == 1, "the link reconnected"
        assert got.duplicates == 0 and not got.conflicts
        assert not tracebacks, "\n".join(log_full[:40])
        assert len(log_full) <= 12, "\n".join(log_full)
        assert all(r[1] in ("settled", "void") for r in rows), rows
        assert got.order == [r[0] for r in rows], "a round of the journal did not reach the floor"
        assert not lost_bets, lost_bets
    finally:
        if filler is not None:
            with contextlib.suppress(OSError):
                filler.unlink()
        if daemon.proc is not None and daemon.proc.returncode is None:
            daemon.proc.kill()
            await daemon.proc.wait()
        await floor.stop()
        notify.close()
        shutil.rmtree(short, ignore_errors=True)
