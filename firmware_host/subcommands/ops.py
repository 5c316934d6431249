"""Operations subcommands of tablectl: ``tablectl console`` and ``tablectl audit``.

(What the console sees of the running table is ``firmware_host/console_backend.py``.)"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cliargs import CliError, count, creatable_file, existing_file
from ..console import hash_pin
from ..textsafe import printable

if TYPE_CHECKING:
    from ..journal import Anchor

DEFAULT_RUNTIME = "/run/tablectl"
DEFAULT_STATE = "/var/lib/tablectl"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "console",
        help="open the technician console of the running daemon",
        description="A line console on the daemon's Unix socket ('help' lists its commands; "
        "docs/console.md). The PIN asked after 'login NAME' is never echoed. Exit 2 when "
        "the daemon cannot be reached.",
    )
    p.add_argument("--socket", help=f"console socket (default {DEFAULT_RUNTIME}/console.sock)")
    p.add_argument(
        "--hash-pin",
        action="store_true",
        help="print the hash of a PIN for [console.operators.NAME]",
    )
    p.set_defaults(func=cmd_console)

    p = sub.add_parser(
        "status",
        help="the running table's status, once (from the console socket)",
        description="Ask the running daemon for its status through the console socket and "
        "print it (table, game, phase, round, journal, broker, loop lag, latched faults); "
        "exit 0, or 2 when the daemon cannot be reached.",
    )
    p.add_argument("--socket", help=f"console socket (default {DEFAULT_RUNTIME}/console.sock)")
    p.add_argument("--json", action="store_true", help="print the status as one JSON object")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print the completion script of tablectl for a shell (bash): its "
        "subcommands, options and the choices of each (games, devices).",
    )
    p.add_argument("shell", choices=["bash"], help="the shell")
    p.set_defaults(func=cmd_completion)

    p = sub.add_parser(
        "audit", help="audit the journal: every money row against the keyed chain, and anchors"
    )
    asub = p.add_subparsers(dest="audit_command", metavar="ACTION")
    asub.required = True
    v = asub.add_parser(
        "verify",
        help="check every row that moves money against the keyed chain, and the chain against "
        "the floor's anchors; name the first row that fails and why",
    )
    v.add_argument(
        "--journal",
        type=existing_file,
        help=f"journal file (default {DEFAULT_STATE}/journal.sqlite3)",
    )
    _key_args(v)
    v.add_argument(
        "--anchor",
        action="append",
        default=[],
        type=_anchor,
        metavar="SEQ:HASH",
        help="a chain position the floor holds (a round's chain.seq:chain.head); repeatable",
    )
    v.add_argument(
        "--anchors",
        type=existing_file,
        metavar="FILE",
        help="the floor's payloads, one JSON per line (rounds, anchor, state): every anchor "
        "in them must hold and every round must be in the journal, unchanged",
    )
    v.add_argument("--json", action="store_true", help="print the report as JSON")
    v.set_defaults(func=cmd_audit_verify)
    k = asub.add_parser(
        "init-key",
        help="create the table's audit key (at install; mode 0600; never overwrites one)",
    )
    _key_args(k, new=True)
    k.add_argument("--journal", help=f"journal file (default {DEFAULT_STATE}/journal.sqlite3)")
    k.set_defaults(func=cmd_audit_init_key)
    e = asub.add_parser("events", help="print the event log")
    e.add_argument(
        "--journal",
        type=existing_file,
        help=f"journal file (default {DEFAULT_STATE}/journal.sqlite3)",
    )
    e.add_argument("-n", type=count(1), default=50, help="last N events (at least 1)")
    e.set_defaults(func=cmd_audit_events)


def _key_args(p: argparse.ArgumentParser, *, new: bool = False) -> None:
    p.add_argument(
        "--key",
        type=creatable_file if new else str,
        help="the table's audit key file (default: [journal] audit_key of --config, else "
        "audit.key beside the journal)",
    )
    p.add_argument(
        "--config",
        type=existing_file,
        help="the table's configuration: its [journal] path and audit_key",
    )


def _anchor(text: str) -> Any:
    """``--anchor SEQ:HASH``, checked as the command line is read."""
    from ..cliargs import BadValue
    from ..journal import Anchor, AnchorError

    try:
        return Anchor.parse(text)
    except AnchorError as exc:
        raise BadValue(f"{text}: {exc}", "ANCHOR_INVALID") from None


def _journal_path(arg: str | None) -> str:
    return arg or os.environ.get("TABLECTL_JOURNAL") or f"{DEFAULT_STATE}/journal.sqlite3"


def _existing_journal(path: str, given: bool) -> str:
    if not Path(path).is_file():
        how = "--journal" if given else "the journal (default; --journal names another)"
        raise CliError(f"{how} {path}: no journal there", code="JOURNAL_NOT_FOUND")
    return path


def _paths(args: argparse.Namespace) -> tuple[str, Path]:
    """The journal and the audit key the arguments name (``--config`` fills what the
    other options leave out)."""
    journal, key = args.journal, args.key
    if args.config:
        from ..config import load_config
        from ..journal import JournalSettings

        cfg = load_config(args.config)
        settings: JournalSettings = cfg.section("journal") or JournalSettings()
        journal = journal or settings.path
        key = key or (settings.audit_key or None)
    path = _journal_path(journal)
    return path, Path(key) if key else Path(path).parent / "audit.key"


def _floor_file(path: str) -> tuple[list[Anchor], list[tuple[str, dict[str, Any]]]]:
    """Anchors and rounds from a file of floor payloads (one JSON per line)."""
    from ..journal import Anchor, AnchorError

    anchors: list[Anchor] = []
    rounds: list[tuple[str, dict[str, Any]]] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(
            f"--anchors {path}: cannot read it: {getattr(exc, 'strerror', None) or exc}",
            code="FILE_UNREADABLE",
        ) from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"--anchors {path}:{n}"
        try:
            doc = json.loads(line)
            anchor = Anchor.from_payload(doc, source=f"{path}:{n}")
        except (ValueError, AnchorError) as exc:
            raise CliError(
                f"{where}: not a floor payload with an anchor: {exc}", code="ANCHOR_INVALID"
            ) from None
        if anchor is None:
            raise CliError(
                f"{where}: carries no chain position (chain, or state's anchor)",
                code="ANCHOR_INVALID",
            )
        anchors.append(anchor)
        if isinstance(doc, dict) and doc.get("status") in ("settled", "void") and "bets" in doc:
            rounds.append((where, doc))
    return anchors, rounds


def cmd_audit_verify(args: argparse.Namespace) -> int:
    from ..journal import AuditKey, Journal, JournalError

    path, key_path = _paths(args)
    _existing_journal(path, given=bool(args.journal))
    anchors: list[Anchor] = list(args.anchor)
    rounds: list[tuple[str, dict[str, Any]]] = []
    if args.anchors:
        more, rounds = _floor_file(args.anchors)
        anchors.extend(more)
    try:
        key = AuditKey.load(key_path)
    except JournalError as exc:
        if exc.code == "AUDIT_KEY_MISSING":  # a new key could never verify this journal
            raise CliError(
                f"no audit key at {key_path}: give the table's own key with --key (or the "
                "table's configuration with --config)",
                code="AUDIT_KEY_MISSING",
            ) from None
        raise
    try:
        with Journal(path, readonly=True) as j:
            report = j.audit(key, anchors=anchors, floor_rounds=rounds)
    except JournalError as exc:
        print(printable(f"audit FAILED: the journal cannot be read: {exc}"), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return 0 if report.ok else 1
    # Row names and values come from the journal (bet ids, reasons from the floor):
    # no control character reaches the terminal.
    for line in str(report).splitlines():
        print(printable(line))
    if not report.ok:
        ordered = report.ordered()
        for p in ordered[1:20]:
            print(printable(f"  also: {p}"))
        if len(ordered) > 20:
            print(f"  ... and {len(ordered) - 20} more")
    return 0 if report.ok else 1


def cmd_audit_init_key(args: argparse.Namespace) -> int:
    from ..journal import AuditKey

    _, key_path = _paths(args)
    key = AuditKey.create(key_path)
    print(
        f"audit key created at {key_path} (id {key.key_id}, mode 0600). Keep a copy somewhere "
        "safe, away from the journal: without it the journal cannot be verified."
    )
    return 0


def cmd_audit_events(args: argparse.Namespace) -> int:
    from ..journal import Journal

    path = _existing_journal(_journal_path(args.journal), given=bool(args.journal))
    with Journal(path, readonly=True) as j:
        for ev in j.chain.events(args.n):
            print(printable(json.dumps(ev.to_json(), ensure_ascii=False)))
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    if args.hash_pin:
        if args.socket:
            raise CliError(
                "--socket does not apply with --hash-pin (it prints a PIN's hash; no daemon "
                "is reached)",
                code="OPTION_NOT_APPLICABLE",
            )
        pin = (
            getpass.getpass("PIN (4-12 digits): ")
            if sys.stdin.isatty()
            else sys.stdin.readline().strip()
        )
        try:
            print(hash_pin(pin))
        except ValueError as exc:
            raise CliError(f"the PIN: {exc}", code="PIN_INVALID") from None
        return 0
    path = _socket_path(args.socket)
    try:
        return asyncio.run(_console_client(path))
    except OSError as exc:
        raise _unreachable(args.socket, path, exc) from None


def _socket_path(arg: str | None) -> str:
    return arg or os.environ.get("TABLECTL_CONSOLE") or f"{DEFAULT_RUNTIME}/console.sock"


def _unreachable(given: str | None, path: str, exc: BaseException) -> CliError:
    """The console socket cannot be reached: one line naming it and how to fix it."""
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "no answer"
    how = "--socket" if given else "the console socket (default; --socket names another)"
    return CliError(
        f"{how} {path}: cannot reach the table's console: {why} (is 'tablectl run' running, "
        "with this --runtime-dir?)",
        code="CONSOLE_UNREACHABLE",
    )


class NoEcho:
    """The terminal's echo, turned off while the console asks for a PIN (as ``getpass``
    does), and always turned back on. Does nothing when standard input is no terminal."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list[Any] | None = None
        try:
            import termios

            self.saved = termios.tcgetattr(fd) if os.isatty(fd) else None
        except (ImportError, OSError):
            self.saved = None

    def off(self) -> None:
        if self.saved is None:
            return
        import termios

        attrs = list(self.saved)
        attrs[3] = attrs[3] & ~termios.ECHO
        with contextlib.suppress(OSError):
            termios.tcsetattr(self.fd, termios.TCSAFLUSH, attrs)

    def on(self) -> None:
        if self.saved is None:
            return
        import termios

        with contextlib.suppress(OSError):
            termios.tcsetattr(self.fd, termios.TCSAFLUSH, self.saved)


#: What the console prints when it waits for a PIN (``ConsoleSession.prompt``).
PIN_PROMPT = "PIN: "
#: Its prompt while it is locked after too many wrong PINs: nothing typed is shown.
LOCKED_PROMPT = "locked table> "


async def _console_client(path: str) -> int:
    """A plain line client: stdin lines to the socket, socket bytes to stdout; the
    terminal does not echo the line typed after the console's ``PIN:`` prompt, nor after
    its ``locked table>`` prompt (a PIN typed while the console is locked)."""
    reader, writer = await asyncio.open_unix_connection(path)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    echo = NoEcho(sys.stdin.fileno()) if hasattr(sys.stdin, "fileno") else None
    asking_pin = False

    async def pump_out() -> None:
        nonlocal asking_pin
        while True:
            data = await reader.read(4096)
            if not data:
                break
            text = data.decode("ascii", "replace").replace("\r\n", "\n")
            sys.stdout.write(text)
            sys.stdout.flush()
            if text.endswith((PIN_PROMPT, LOCKED_PROMPT)) and echo is not None:
                asking_pin = True
                echo.off()
        done.set()

    out_task = asyncio.create_task(pump_out())
    lines: asyncio.Queue[str] = asyncio.Queue()

    def read_stdin() -> None:  # a daemon thread: never holds the exit up (``quit``)
        while True:
            line = sys.stdin.readline()
            loop.call_soon_threadsafe(lines.put_nowait, line)
            if not line:
                return

    threading.Thread(target=read_stdin, name="console-stdin", daemon=True).start()
    ended = asyncio.create_task(done.wait())
    try:
        while not done.is_set():
            typed = asyncio.create_task(lines.get())
            await asyncio.wait({typed, ended}, return_when=asyncio.FIRST_COMPLETED)
            if not typed.done():  # the console closed the session (quit): no Enter wanted
                typed.cancel()
                break
            line = typed.result()
            if not line:
                break
            if asking_pin and echo is not None:
                asking_pin = False
                echo.on()
                sys.stdout.write("\n")  # the Enter typed was not echoed either
            try:
                writer.write(line.rstrip("\r\n").encode("ascii", "replace") + b"\r\n")
                await writer.drain()
            except ConnectionError:  # the console closed the session meanwhile
                break
        with contextlib.suppress(Exception):
            await asyncio.wait_for(out_task, 1.0)
    finally:
        ended.cancel()
        if echo is not None:
            echo.on()
        writer.close()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    path = _socket_path(args.socket)
    try:
        text = asyncio.run(console_query(path, "status json"))
    except (OSError, TimeoutError) as exc:
        raise _unreachable(args.socket, path, exc) from None
    try:
        status = json.loads(text)
    except json.JSONDecodeError:
        raise CliError(
            f"the console at {path} answered: {text[:200]}", code="CONSOLE_ANSWER"
        ) from None
    if args.json:
        print(json.dumps(status, indent=2, ensure_ascii=False))
        return 0
    print(status_text(status))
    return 0


async def console_query(path: str, command: str, timeout: float = 10.0) -> str:
    """Send one console command on a new session and return its answer (the lines
    between the banner's prompt and the next prompt)."""
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_unix_connection(path)
        try:
            await reader.readuntil(b"table> ")  # also the locked console's prompt
            writer.write(command.encode("ascii") + b"\r\n")
            await writer.drain()
            data = await reader.readuntil(b"table> ")
            writer.write(b"quit\r\n")
            with contextlib.suppress(OSError):
                await writer.drain()
        finally:
            writer.close()
    # the answer's lines end in CRLF; the prompt after them has none
    return data.rpartition(b"\r\n")[0].decode("ascii", "replace").strip()


def status_text(st: Any) -> str:
    """The status for a person: a few aligned lines."""
    if not isinstance(st, dict):
        return str(st)
    found = st.get("mqtt")
    mqtt: dict[str, Any] = found if isinstance(found, dict) else {}
    found = st.get("journal")
    journal: dict[str, Any] = found if isinstance(found, dict) else {}
    rnd = st.get("round_id") or "none"
    faults = ", ".join(st.get("faults") or []) or "none"
    where = mqtt.get("broker") or "?"
    broker = (
        f"connected to {where}"
        if mqtt.get("connected")
        else f"not connected to {where} ({mqtt.get('last_error') or 'no connection yet'})"
    ) if mqtt else "no MQTT link"  # fmt: skip
    rows = [
        ("table", f"{st.get('table_id')} ({st.get('name')})"),
        ("game", st.get("game")),
        ("phase", f"{st.get('phase')}, round {rnd}"),
        ("dealer", st.get("dealer") or "none signed in"),
        ("broker", broker),
        ("journal", f"{journal.get('path')}, {journal.get('outbox_pending')} to publish"),
        ("loop lag", f"{st.get('loop_lag_ms')} ms"),
        ("faults", faults),
        ("alerts", "; ".join(st.get("alerts") or []) or "none"),
        ("version", st.get("version")),
    ]
    return "\n".join(f"{k + ':':<10} {v}" for k, v in rows)


def cmd_completion(args: argparse.Namespace) -> int:
    from ..completion import bash_completion

    print(bash_completion(args.root_parser))
    return 0
