"""Every shell command in README.md and docs/ works as written (issue 17).

The commands are taken from the ```sh blocks (a ``\\`` continues a line, ``#`` starts a
comment, ``table> `` lines are what a technician types into the console). Each must be
classified below, or this test fails and says which one is new:

- run: run to the end from the repository's root (as a newcomer would), exit 0, no
  traceback;
- serve: a command that runs until stopped (the demo without ``--rounds``, a simulator):
  run until it prints what shows it works, then Ctrl-C; no traceback;
- the README's own table (``run`` then ``console``, ``status``, ``audit verify``): run
  in order against one table in a temporary directory (the README's ``/tmp/t``);
- not here: commands for the Pi itself (root, systemd, udev, certificates), the test
  suite and the benchmarks; each with its reason.

A JSON file shown in a doc as ``NAME.json:`` followed by a ```json block is written to
the working directory of that doc's commands (docs/rules/blackjack.md's example).

The commands run in a **fresh clone** (issue 30): the repository's tracked files copied
to a temporary folder, with nothing beside it (no sibling folder, no untracked file, no
build output), as a newcomer's ``git clone`` has it. Its code runs there (``PYTHONPATH``),
with this environment's installed dependencies (``.venv`` is linked, not rebuilt).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def fresh_clone(dest: Path) -> Path:
    """The repository as ``git clone`` gives it (its tracked files, in their working
    state), in ``dest/table-controller``, ``.venv`` linked to this environment's."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    clone = dest / "table-controller"
    for name in filter(None, listed):
        src = ROOT / os.fsdecode(name)
        if not src.is_file():  # deleted in the working tree
            continue
        target = clone / os.fsdecode(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    venv = Path(sys.prefix)
    (clone / ".venv").symlink_to(venv)
    stamp = venv / ".installed"
    if stamp.exists():  # ./dev would reinstall when pyproject.toml is newer than its stamp
        t = stamp.stat().st_mtime - 1
        os.utime(clone / "pyproject.toml", (t, t))
    return clone


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fresh clone for the module's commands (nothing beside it: no sibling folder)."""
    where = fresh_clone(tmp_path_factory.mktemp("clone"))
    assert not (where.parent / "shared").exists()
    return where


VENV_BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class DocCommand:
    doc: Path
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}: {self.text}"


def commands() -> Iterator[DocCommand]:
    fence = re.compile(r"^```(\w*)\s*$")
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        lang: str | None = None
        pending = ""
        start = 0
        for i, raw in enumerate(lines, 1):
            m = fence.match(raw)
            if m:
                lang = None if lang is not None else m.group(1)
                continue
            if lang != "sh":
                continue
            line = raw.rstrip()
            if not pending:
                start = i
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            text = _strip_comment(pending + line).strip()
            pending = ""
            if text and not text.startswith("table> "):
                yield DocCommand(doc, start, " ".join(text.split()))


def _strip_comment(line: str) -> str:
    """The command without its trailing ``# comment`` (a ``#`` inside quotes stays)."""
    try:
        lex = shlex.shlex(line, posix=True, punctuation_chars=False)
        lex.whitespace_split = True
        lex.commenters = "#"
        list(lex)
    except ValueError:
        return line
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


#: Commands not run here, by pattern, with the reason.
NOT_HERE: list[tuple[str, str]] = [
    (r"^(sudo|udevadm|systemctl|journalctl|ls -l /dev/table)", "on the Pi, as root (install)"),
    (r"^printf .*\| sudo", "on the Pi, as root (install)"),
    (r"^openssl ", "makes the floor's certificates (install)"),
    (r"^/opt/tablectl/", "the Pi's installed venv (install); the same subcommands run here"),
    (r"^mosquitto_sub .*-h (broker|floor-broker)", "the casino's broker"),
    (r"^(\./dev test|\.venv/bin/python -m pytest)", "the test suite itself"),
    (r"^packaging/deb/build ", "builds the Debian package (CI: packaging/deb/check)"),
    (r"^ansible-playbook ", "the floor's update (tests/fleet/test_update_playbook.py runs it)"),
    (
        r"^(for i in 1 2; do timeout 3600 python3|time \./dev test|kill %1)",
        "the load check (the suite itself)",
    ),
    (r"^(\.venv/bin/python|python) -m bench", "benchmarks (tests/test_bench_smoke.py)"),
    (
        r"^\.venv/bin/python -m tests\.e2e\.viewshots ",
        "ten minutes of demo tables and Chromium (tests/e2e/test_view_board.py runs the same)",
    ),
    (r"^\.venv/bin/pip install -e '\.\[bench\]'", "installs the benchmarks' peers from PyPI"),
    (
        r"^tablectl view --(config /etc|broker mqtts?://(pit|10\.))",
        "the casino's broker and table file",
    ),
    (
        r"^tablectl audit verify --journal journal\.sqlite3 --key audit\.key --anchors? ",
        "a table's journal, key and the floor's anchors (tests/daemon/test_audit_cli.py)",
    ),
    (
        r"^(pip install 'table-controller\[floor\]'|tablectl keys generate floor-ingest "
        r"|tablectl floor-ingest .*(floor-broker|@db/))",
        "the casino's floor broker and database (tests/floor_ingest runs the ingest)",
    ),
    (
        r"^tablectl software-manifest --sign software\.manifest --key build\.key",
        "the release machine's signing key (tests/integrity/test_software.py signs)",
    ),
    (
        r"^(SEED=|cd /mnt/image|python3 -c 'import json,sys; m=json\.load|while IFS= read -r f"
        r"|if \[ -L|mac=\$\(|else$|fi$|printf '%s %s\\n' \"\$mac\"|done < /tmp/paths\.txt)",
        "a lab's procedure on its own image (tests/integrity/test_software.py runs it)",
    ),
    (
        r"^(mosquitto -p 1883 &|\./dev tablectl floor-ingest (run|status) .*/tmp/floor"
        r"|\./dev demo --broker \S+ --rounds \d+ --registry )",
        "a broker, an ingest and the demo together (tests/tablesim/test_demo_twice.py)",
    ),
]

#: Long-running commands: what they print once they work.
SERVE: list[tuple[str, str]] = [
    (r"^\./dev demo( --game \S+)?( --speed \S+)?$", "#1 "),
    (r"^\./dev demo --broker ", "#1 "),
    (r"^\./dev tablectl sim ", "connect the driver to port"),
    (r"^\./dev tablectl view --broker mqtt://127\.0\.0\.1:1883$", "tablectl view: http"),
]

#: The README's table: started once, the commands after it run against it.
TABLE_RUN = (
    r"^\./dev tablectl run --config (\S+) --state-dir /tmp/t --runtime-dir /tmp/t( --simulate)?$"
)
AGAINST_TABLE = r"^\./dev tablectl (console|status|audit verify) .*/tmp/t/"


def classify(cmd: DocCommand) -> tuple[str, str]:
    for pattern, why in NOT_HERE:
        if re.search(pattern, cmd.text):
            return "not-here", why
    for pattern, marker in SERVE:
        if re.search(pattern, cmd.text):
            return "serve", marker
    if re.search(TABLE_RUN, cmd.text) or re.search(AGAINST_TABLE, cmd.text):
        return "table", ""
    if re.match(r"^(\./dev (tablectl|demo) |tablectl )", cmd.text):
        return "run", ""
    return "unclassified", ""


ALL = list(commands())


def test_every_documented_command_is_classified() -> None:
    assert ALL, "no command found in README.md and docs/"
    new = [str(c) for c in ALL if classify(c)[0] == "unclassified"]
    assert not new, (
        "classify these documented commands in tests/test_docs_commands.py:\n" + "\n".join(new)
    )


def _env(workdir: Path, clone: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(clone)  # the clone's code, not this checkout's
    env.pop("TABLECTL_DEBUG", None)
    return env


def _files_for(doc: Path, workdir: Path) -> None:
    """Write the JSON files a doc shows as ``NAME.json:`` + a ```json block."""
    text = doc.read_text()
    for name, body in re.findall(r"^(\S+\.json):\s*\n\s*```json\n(.*?)```", text, re.M | re.S):
        (workdir / name).write_text(body)


def _rewrite(cmd: str, tmp: Path) -> str:
    """The command with the README's /tmp/t (or /tmp/keys, ...) in this test's
    temporary directory."""
    return re.sub(r"/tmp/(\w+)", lambda m: str(tmp / m.group(1)), cmd)


def _no_traceback(output: str, cmd: DocCommand) -> None:
    assert "Traceback (most recent call last)" not in output, f"{cmd}\n{output[-3000:]}"


RUN = [c for c in ALL if classify(c)[0] == "run"]


@pytest.mark.parametrize("cmd", RUN, ids=[f"{c.doc.name}:{c.line}" for c in RUN])
def test_documented_command_runs(cmd: DocCommand, tmp_path: Path, clone: Path) -> None:
    cwd = clone
    if cmd.text.startswith("tablectl "):  # shown inside a doc, with its files beside it
        cwd = tmp_path
        _files_for(cmd.doc, tmp_path)
    proc = subprocess.run(
        ["bash", "-c", _rewrite(cmd.text, tmp_path)], cwd=cwd,
        capture_output=True, text=True, timeout=240, env=_env(tmp_path, clone),
    )  # fmt: skip
    _no_traceback(proc.stdout + proc.stderr, cmd)
    assert proc.returncode == 0, f"{cmd}\nexit {proc.returncode}\n{proc.stderr[-3000:]}"


class Background:
    """A long-running command from the repository's root, its output collected by a
    thread; :meth:`stop` is Ctrl-C to its process group."""

    def __init__(self, text: str, env: dict[str, str]) -> None:
        self.text = text
        self.proc = subprocess.Popen(
            ["bash", "-c", "exec " + text], cwd=env["PYTHONPATH"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.chunks.append(line)

    @property
    def out(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")

    def wait_for(self, marker: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while marker not in self.out and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.2)
        time.sleep(0.2)
        assert marker in self.out, f"{self.text}: {marker!r} not printed\n{self.out[-3000:]}"

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.thread.join(10)
        return self.proc.returncode


def _serve(text: str, marker: str, env: dict[str, str], timeout: float = 120.0) -> str:
    """Run until ``marker`` is printed, then Ctrl-C; the whole output."""
    bg = Background(text, env)
    try:
        bg.wait_for(marker, timeout)
    finally:
        bg.stop()
    return bg.out


SERVED = [c for c in ALL if classify(c)[0] == "serve"]


@pytest.mark.parametrize("cmd", SERVED, ids=[f"{c.doc.name}:{c.line}" for c in SERVED])
def test_documented_long_running_command_works(
    cmd: DocCommand, tmp_path: Path, mosquitto_broker: object, clone: Path
) -> None:
    text = cmd.text
    if "--broker mqtt://127.0.0.1:1883" in text:  # the running broker: the test's own
        text = text.replace("127.0.0.1:1883", f"127.0.0.1:{mosquitto_broker.port}")  # type: ignore[attr-defined]
    if "tablectl view" in text and "--listen" not in text:  # not the machine's port 8080
        text += " --listen 127.0.0.1:0"
    out = _serve(_rewrite(text, tmp_path), classify(cmd)[1], _env(tmp_path, clone))
    _no_traceback(out, cmd)
    if "demo" in text:  # Ctrl-C ends the demo with its summary and the seed to replay
        assert "interrupted (Ctrl-C)" in out and "seed " in out, out[-2000:]


TABLE = [c for c in ALL if classify(c)[0] == "table"]


def test_the_readme_table_run_console_status_audit(tmp_path: Path, clone: Path) -> None:
    """The README's sequence: a table run from an example configuration shows a round
    (``--simulate``), and the console, status and audit commands work against it."""
    runs = [c for c in TABLE if re.search(TABLE_RUN, c.text)]
    assert runs, "README.md shows no 'tablectl run' of an example table"
    (tmp_path / "t").mkdir()
    env = _env(tmp_path, clone)
    run = runs[0]
    bg = Background(_rewrite(run.text, tmp_path), env)
    try:
        bg.wait_for("settled" if "--simulate" in run.text else " ready", 90)
        for cmd in TABLE:
            if cmd is run or "audit verify" in cmd.text:
                continue
            done = subprocess.run(
                ["bash", "-c", _rewrite(cmd.text, tmp_path)], cwd=clone, input="status\nrecall 10\nquit\n",
                capture_output=True, text=True, timeout=60, env=env,
            )  # fmt: skip
            _no_traceback(done.stdout + done.stderr, cmd)
            assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
            if "tablectl console" in cmd.text:
                assert "settled" in done.stdout, done.stdout  # recall: the round played
    finally:
        bg.stop()
    out = bg.out
    _no_traceback(out, run)
    for cmd in TABLE:
        if "audit verify" in cmd.text:
            done = subprocess.run(
                ["bash", "-c", _rewrite(cmd.text, tmp_path)], cwd=clone,
                capture_output=True, text=True, timeout=60, env=env,
            )  # fmt: skip
            assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
