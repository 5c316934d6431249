"""Operations commands: ``tablectl console`` and ``tablectl audit``; and the console
backend that lets a technician look into (and, logged in, act on) the running daemon."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..console import hash_pin
from ..jsonio import JSON

if TYPE_CHECKING:
    from ..daemon import TableDaemon

DEFAULT_RUNTIME = "/run/tablectl"
DEFAULT_STATE = "/var/lib/tablectl"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("console", help="open the technician console of the running daemon")
    p.add_argument("--socket", help=f"console socket (default {DEFAULT_RUNTIME}/console.sock)")
    p.add_argument(
        "--hash-pin",
        action="store_true",
        help="print the hash of a PIN for [console.operators.NAME]",
    )
    p.set_defaults(func=cmd_console)

    p = sub.add_parser("audit", help="audit the journal: verify the event log's hash chain")
    asub = p.add_subparsers(dest="audit_command", metavar="ACTION")
    asub.required = True
    v = asub.add_parser("verify", help="check the hash chain; say where it breaks")
    v.add_argument("--journal", help=f"journal file (default {DEFAULT_STATE}/journal.sqlite3)")
    v.set_defaults(func=cmd_audit_verify)
    e = asub.add_parser("events", help="print the event log")
    e.add_argument("--journal", help=f"journal file (default {DEFAULT_STATE}/journal.sqlite3)")
    e.add_argument("-n", type=int, default=50, help="last N events")
    e.set_defaults(func=cmd_audit_events)


def _journal_path(arg: str | None) -> str:
    return arg or os.environ.get("TABLECTL_JOURNAL") or f"{DEFAULT_STATE}/journal.sqlite3"


def cmd_audit_verify(args: argparse.Namespace) -> int:
    from ..journal import Journal

    path = _journal_path(args.journal)
    if not Path(path).exists():
        print(f"error: no journal at {path}", file=sys.stderr)
        return 2
    with Journal(path, readonly=True) as j:
        report = j.verify_chain()
    print(report)
    return 0 if report.ok else 1


def cmd_audit_events(args: argparse.Namespace) -> int:
    from ..journal import Journal

    with Journal(_journal_path(args.journal), readonly=True) as j:
        for ev in j.events(args.n):
            print(json.dumps(ev.to_json(), ensure_ascii=False))
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    if args.hash_pin:
        pin = (
            getpass.getpass("PIN (4-12 digits): ")
            if sys.stdin.isatty()
            else sys.stdin.readline().strip()
        )
        try:
            print(hash_pin(pin))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    path = args.socket or os.environ.get("TABLECTL_CONSOLE") or f"{DEFAULT_RUNTIME}/console.sock"
    try:
        return asyncio.run(_console_client(path))
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        print(f"error: cannot reach the console at {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2


async def _console_client(path: str) -> int:
    """A plain line client: stdin lines to the socket, socket bytes to stdout."""
    reader, writer = await asyncio.open_unix_connection(path)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    async def pump_out() -> None:
        while True:
            data = await reader.read(4096)
            if not data:
                break
            sys.stdout.write(data.decode("ascii", "replace").replace("\r\n", "\n"))
            sys.stdout.flush()
        done.set()

    out_task = asyncio.create_task(pump_out())
    while not done.is_set():
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        writer.write(line.rstrip("\r\n").encode("ascii", "replace") + b"\r\n")
        await writer.drain()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(out_task, 1.0)
    writer.close()
    return 0


class DaemonConsoleBackend:
    """What the console sees of the daemon (implements ``console.ConsoleBackend``)."""

    def __init__(self, daemon: TableDaemon) -> None:
        self.d = daemon

    @property
    def _journal(self) -> Any:
        assert self.d.journal is not None
        return self.d.journal

    @property
    def _engine(self) -> Any:
        assert self.d.engine is not None
        return self.d.engine

    def status(self) -> JSON:
        d = self.d
        return {
            **self._engine.get_status(),
            "name": d.cfg.name,
            "journal": self._journal.get_status(),
            "mqtt": d.link.get_status() if d.link else None,
            "loop_lag_ms": round(d.loop_lag * 1000, 1),
            "faults": [f.code for f in self._journal.active_faults()],
        }

    def devices(self) -> JSON:
        return {name: drv.get_status() for name, drv in self.d.drivers.items()} or {
            "devices": "none configured"
        }

    async def self_test(self, device: str) -> JSON:
        drv = self.d.drivers.get(device)
        if drv is None:
            return {
                "error": f"no device {device!r}; devices: {', '.join(self.d.drivers) or 'none'}"
            }
        test = getattr(drv, "self_test", None)
        if test is None:
            return {"device": device, "self_test": "not supported by this device"}
        self._journal.append_event("device_self_test", {"device": device})
        result = await test()
        return {
            "device": device,
            "result": result if isinstance(result, (dict, list, str, int)) else str(result),
        }

    async def lamp_test(self) -> JSON:
        out: dict[str, JSON] = {}
        for name, drv in self.d.drivers.items():
            lamp = getattr(drv, "lamp_test", None)
            if lamp is not None:
                out[name] = str(await lamp())
        return out or {"lamp_test": "no board or sign configured"}

    def recall(self, n: int) -> JSON:
        return [r.to_json() for r in self._journal.recall(n)]

    def round_info(self) -> JSON:
        e = self._engine
        cur = e.current
        if cur is None:
            return {"phase": "idle", "round": None}
        return {
            "round_id": cur.round_id,
            "seq": cur.seq,
            "phase": cur.phase,
            "timestamps": dict(cur.timestamps),
            "bets": [b.to_json() for b in e.bets()],
        }

    def jackpot(self) -> JSON:
        jp = getattr(self.d, "jackpot", None)
        if jp is None:
            return {"jackpot": "this table has no progressive jackpot"}
        return jp.get_status()

    def events(self, n: int) -> JSON:
        return [
            f"{e.id} {e.at} {e.kind} {json.dumps(e.data, ensure_ascii=True)}"
            for e in self._journal.events(n)
        ]

    def faults(self) -> JSON:
        return [f.to_json() for f in self._journal.active_faults()] or ["no latched fault"]

    def check_config(self) -> JSON:
        from ..config import ConfigInvalid, load_config

        if self.d.config_path is None:
            return {"config": "no file (built-in configuration)"}
        try:
            cfg = load_config(self.d.config_path)
        except ConfigInvalid as exc:
            return {"config": str(self.d.config_path), "ok": False, "errors": exc.errors}
        return {
            "config": str(self.d.config_path),
            "ok": True,
            "table": cfg.table_id,
            "game": cfg.game_id,
        }

    def audit_event(self, kind: str, data: Mapping[str, JSON]) -> None:
        self._journal.append_event(kind, dict(data))

    def _privileged(self, action: str, who: str, why: str, **data: JSON) -> None:
        self._journal.append_event(
            "privileged_action", {"action": action, "operator": who, "why": why, **data}
        )

    def void_round(self, reason: str, who: str) -> JSON:
        self._privileged("void_round", who, reason)
        payload = self._engine.void_round(f"{reason} (console, {who})", source=f"console:{who}")
        return {"round_id": payload["round_id"], "status": "void", "refunded": len(payload["bets"])}

    def _jackpot(self) -> Any:
        jp = getattr(self.d, "jackpot", None)
        if jp is None:
            raise RuntimeError("this table has no progressive jackpot")
        return jp

    def jackpot_adjust(self, amount: int, reason: str, who: str) -> JSON:
        jp = self._jackpot()
        self._privileged("jackpot_adjust", who, reason, amount=amount)
        return jp.adjust(amount, reason=reason, who=who)

    def jackpot_reset(self, reason: str, who: str) -> JSON:
        jp = self._jackpot()
        self._privileged("jackpot_reset", who, reason)
        return jp.reset(reason=reason, who=who)

    def jackpot_params(self, key: str, value: str, reason: str, who: str) -> JSON:
        jp = self._jackpot()
        self._privileged("jackpot_param", who, reason, key=key, value=value)
        return jp.set_param(key, value, reason=reason, who=who)

    def clear_fault(self, code: str, reason: str, who: str) -> JSON:
        self._privileged("clear_fault", who, reason, code=code)
        fault = self._journal.clear_fault(code, by=who, reason=reason)
        if self.d.engine is not None:
            self.d._phase_changed(self.d.engine.phase, self.d.engine.current)
        return fault.to_json()
