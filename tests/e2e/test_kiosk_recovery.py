"""The board on the Pi's own screen recovers (issue 33 item 2), in Debian's Chromium.

``python -m tableview.kiosk`` (``tableview/kiosk.py``) runs the browser of
``systemd/tablectl-board.service`` and keeps the board on the screen. Here it runs the
same Chromium headless against a small server that serves the board's page and counts
each time the page is loaded (independent of the kiosk), and:

- the view is not answering when the browser starts (the browser shows its error page):
  the board is loaded once the view answers;
- the page's process (the renderer) is killed, as an out-of-memory kill would: the
  browser stays up showing its "Aw, Snap!" page; the kiosk loads the board again;
- the browser itself is killed: the kiosk starts a new one, which loads the board.

Every process killed here is one this test started (the kiosk's browser and its
children, by pid)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from pathlib import Path

import pytest
from aiohttp import web

from tableview.kiosk import Kiosk, main, parse
from tests.e2e._cdp import find_chromium

STATIC = Path(__file__).resolve().parents[2] / "tableview" / "static"
CHROMIUM = find_chromium()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None and not os.environ.get("TABLECTL_REQUIRE_CHROMIUM"),
        reason="Chromium is not installed (apt-get install chromium)",
    ),
]

HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def descendants(pid: int) -> list[tuple[int, str]]:
    """The processes below ``pid`` (pid, command line), from /proc."""
    parent: dict[int, int] = {}
    cmd: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            cmd[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for child, ppid in parent.items():
            if ppid == p:
                out.append((child, cmd.get(child, "")))
                todo.append(child)
    return out


class BoardServer:
    """The board's page and statics on ``port``; ``loads``: how often the page was
    loaded."""

    def __init__(self, port: int) -> None:
        self.port, self.loads = port, 0
        self.runner: web.AppRunner | None = None

    async def start(self) -> None:
        async def board(_: web.Request) -> web.FileResponse:
            self.loads += 1
            # as tablectl view serves it (tableview/server.py): revalidated at every load
            return web.FileResponse(STATIC / "board.html", headers={"Cache-Control": "no-cache"})

        app = web.Application()
        app.router.add_get("/board/{table_id}", board)
        app.router.add_static("/static/", STATIC)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


async def until(cond: object, timeout: float, what: str) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # type: ignore[operator]
            await asyncio.sleep(0.1)
    assert cond(), what  # type: ignore[operator]


async def test_the_kiosk_brings_the_board_back(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert CHROMIUM is not None, "TABLECTL_REQUIRE_CHROMIUM is set and Chromium is missing"
    port = free_port()
    url = f"http://127.0.0.1:{port}/board/MO-R-01"
    # one profile, as the unit's (its lock left behind by the browser killed below)
    browser = [CHROMIUM, *HEADLESS, "--incognito", f"--user-data-dir={tmp_path / 'chromium'}"]
    kiosk = Kiosk(url, browser, check_s=1.0, restart_s=0.5)
    running = asyncio.create_task(kiosk.run())
    server = BoardServer(port)
    try:
        # the view is not answering yet: the browser's error page is not the board
        await until(lambda: kiosk.recoveries.get("not_board", 0) >= 1, 30, "error page seen")
        await server.start()
        await until(lambda: server.loads >= 1, 15, "the board is loaded once the view answers")
        assert kiosk.proc is not None
        first = kiosk.proc.pid
        await asyncio.sleep(2.5)  # shown and checked: nothing to recover
        loads = server.loads
        assert loads == 1 and kiosk.recoveries.get("crash", 0) == 0
        # the renderer killed: the browser lives on, the page is loaded again
        renderers = [p for p, c in descendants(first) if "--type=renderer" in c]
        assert renderers, descendants(first)
        for pid in renderers:
            os.kill(pid, signal.SIGKILL)
        await until(lambda: server.loads > loads, 15, "the board loaded again after the crash")
        assert kiosk.recoveries.get("crash", 0) >= 1 and kiosk.proc.pid == first
        assert "browser_ended" not in kiosk.recoveries
        await asyncio.sleep(2.5)  # every renderer killed is reported (a spare one too)
        # the browser killed: a new one, showing the board
        loads = server.loads
        os.kill(first, signal.SIGKILL)
        await until(lambda: kiosk.recoveries.get("browser_ended", 0) == 1, 15, "browser ended")
        await until(lambda: server.loads > loads, 30, "the board shown by a new browser")
        assert kiosk.proc.pid != first
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await kiosk.end()
        await server.stop()
    err = capfd.readouterr().err
    assert "the page's process crashed" in err
    assert "the browser ended" in err


def test_the_kiosk_refuses_what_it_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    ns = parse(["http://127.0.0.1:8080/board?lang=pt", "--check", "5", "--", "/usr/bin/chromium",
                "--kiosk"])  # fmt: skip
    assert ns.browser == ["/usr/bin/chromium", "--kiosk"] and ns.check == 5
    for bad in (["http://127.0.0.1:8080/board"], ["file:///etc/passwd", "--", "chromium"],
                ["http://x/board", "--check", "0", "--", "chromium"]):  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            parse(bad)
        assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "the browser and its flags after --" in err and "must be http" in err


def test_a_browser_that_cannot_start_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """No traceback: one line naming the browser, exit 1 (the unit starts it again)."""
    assert main(["http://127.0.0.1:8080/board", "--", "/nonexistent/chromium", "--kiosk"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("tablectl kiosk: error: BROWSER_NOT_STARTED: /nonexistent/chromium: ")
    assert "Traceback" not in "\n".join(err)
