"""The board on the Pi's own screen, kept showing: a browser in kiosk mode, watched.

    python -m tableview.kiosk [--check S] [--restart S] URL -- BROWSER [FLAG ...]

runs ``BROWSER FLAG ...`` (Chromium: ``systemd/tablectl-board.service`` gives the kiosk
flags) with ``--remote-debugging-pipe`` (the DevTools protocol on two inherited file
descriptors, 3 and 4: no port is opened, nothing else on the machine can drive the
browser) and keeps it showing ``URL``:

- **the page's process crashes** (an out-of-memory kill of the renderer, a bug: the
  browser stays up and shows its "Aw, Snap!" page, which a screen facing the players
  would show all evening): the crash is reported by the browser
  (``Target.targetCrashed``) and the page is loaded again at once;
- **the page is not the board** (the view was not answering when it loaded: the
  browser's error page; or the page stopped answering): checked every ``--check``
  seconds (``document.getElementById('board')`` evaluated in the page, answered within
  ``--check`` seconds), and loaded again;
- **the browser ends** (a crash, a kill): started again after ``--restart`` seconds;
- the page itself reconnects to the view when the view restarts (server-sent events).

Every recovery is one line on standard error (the journal under systemd:
``journalctl -u tablectl-board``). If this process ends, its unit restarts it
(``Restart=always``). It imports nothing of the table: it is a browser's nurse.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import itertools
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

#: What is evaluated in the page to know it is the board.
PROBE = "document.getElementById('board') !== null"


def log(text: str) -> None:
    print(f"tablectl kiosk: {text}", file=sys.stderr, flush=True)


class BrowserGone(Exception):
    """The browser's end of the pipe closed (it ended)."""


class Pipe:
    """The DevTools protocol over the browser's pipe: JSON messages ended by NUL, the
    commands on the browser's fd 3, its answers and events on its fd 4."""

    def __init__(self, reader: asyncio.StreamReader, write_fd: int) -> None:
        self.reader, self.write_fd = reader, write_fd
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.closed = asyncio.Event()

    async def read_forever(self) -> None:
        try:
            while True:
                raw = await self.reader.readuntil(b"\0")
                msg = json.loads(raw[:-1])
                if "id" in msg and msg["id"] in self._waiting:
                    fut = self._waiting.pop(msg["id"])
                    if not fut.done():
                        fut.set_result(msg)
                elif "method" in msg:
                    self.events.put_nowait(msg)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            self.closed.set()
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(BrowserGone())

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
        timeout: float = 10.0,
    ) -> dict[str, Any]:  # fmt: skip
        """``method`` with ``params`` (on the page's ``session``); its ``result``. Raises
        :class:`BrowserGone`, ``TimeoutError``, or ``RuntimeError`` (the browser's error)."""
        if self.closed.is_set():
            raise BrowserGone()
        n = next(self._ids)
        msg: dict[str, Any] = {"id": n, "method": method, "params": params or {}}
        if session is not None:
            msg["sessionId"] = session
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[n] = fut
        try:
            os.write(self.write_fd, json.dumps(msg).encode() + b"\0")
        except OSError as exc:
            self._waiting.pop(n, None)
            raise BrowserGone() from exc
        try:
            async with asyncio.timeout(timeout):
                answer = await fut
        finally:
            self._waiting.pop(n, None)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error'].get('message')}")
        result: dict[str, Any] = answer.get("result", {})
        return result


class Kiosk:
    """One browser at a time, showing ``url``; :meth:`run` until cancelled."""

    def __init__(
        self, url: str, browser: Sequence[str], *, check_s: float, restart_s: float
    ) -> None:
        self.url, self.browser = url, list(browser)
        self.check_s, self.restart_s = check_s, restart_s
        self.proc: asyncio.subprocess.Process | None = None
        #: Recoveries so far, by kind (``crash``, ``not_board``, ``browser_ended``).
        self.recoveries: dict[str, int] = {}

    def _count(self, kind: str) -> None:
        self.recoveries[kind] = self.recoveries.get(kind, 0) + 1

    async def run(self) -> None:
        while True:
            why = ""
            try:
                await self._one_browser()
            except BrowserGone:
                pass
            except (TimeoutError, RuntimeError) as exc:  # it started and would not answer
                why = f": it did not answer ({exc or 'timed out'}), stopped"
            code = self.proc.returncode if self.proc is not None else None
            self._count("browser_ended")
            log(f"the browser ended (exit {code}){why}; starting it again in {self.restart_s:g} s")
            await asyncio.sleep(self.restart_s)

    async def _start(self) -> Pipe:
        # the pipe's ends raised above 10 (close-on-exec): the child's dup2 onto 3 and 4
        # cannot overwrite one of them, and nothing else of this process is inherited
        raw = (*os.pipe(), *os.pipe())
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in raw]
        for fd in raw:
            os.close(fd)
        to_browser_r, to_browser_w, from_browser_r, from_browser_w = ends

        def fds() -> None:  # in the child, before exec: the pipe on fds 3 and 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        argv = [*self.browser, "--remote-debugging-pipe", "about:blank"]
        self.proc = await asyncio.create_subprocess_exec(
            *argv, preexec_fn=fds, close_fds=False, stdin=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser_r)
        os.close(from_browser_w)
        log(f"browser started (pid {self.proc.pid}): {' '.join(self.browser[:1])}")
        reader = asyncio.StreamReader(limit=1 << 24)
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_browser_r, "rb", 0)
        )
        return Pipe(reader, to_browser_w)

    async def _one_browser(self) -> None:
        pipe = await self._start()
        reading = asyncio.create_task(pipe.read_forever())
        try:
            await pipe.call("Target.setDiscoverTargets", {"discover": True}, timeout=30)
            session, target = await self._attach(pipe)
            await self._show(pipe, session, "start")
            await self._watch(pipe, session, target)
        finally:
            with contextlib.suppress(OSError):
                os.close(pipe.write_fd)
            await self.end()
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading

    async def _attach(self, pipe: Pipe) -> tuple[str, str]:
        targets = (await pipe.call("Target.getTargets"))["targetInfos"]
        page = next((t for t in targets if t.get("type") == "page"), None)
        if page is None:
            page = await pipe.call("Target.createTarget", {"url": "about:blank"})
        target = str(page["targetId"])
        got = await pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        return str(got["sessionId"]), target

    async def _show(self, pipe: Pipe, session: str, why: str) -> None:
        try:
            await pipe.call(
                "Page.navigate", {"url": self.url}, session=session, timeout=self.check_s * 2
            )
        except (TimeoutError, RuntimeError) as exc:
            log(f"loading {self.url} ({why}): {exc}")
            return
        if why != "start":
            log(f"{self.url} loaded again ({why})")

    async def _is_board(self, pipe: Pipe, session: str) -> bool:
        try:
            got = await pipe.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True},
                                  session=session, timeout=self.check_s)  # fmt: skip
        except (TimeoutError, RuntimeError):
            return False
        return got.get("result", {}).get("value") is True

    async def _watch(self, pipe: Pipe, session: str, target: str) -> None:
        """Until the browser ends: a crashed page, or a page that is not the board, is
        loaded again."""
        loop = asyncio.get_running_loop()
        due = loop.time() + self.check_s
        while not pipe.closed.is_set():
            try:
                async with asyncio.timeout(max(0.0, due - loop.time())):
                    ev = await pipe.events.get()
            except TimeoutError:
                if pipe.closed.is_set():
                    break
                if not await self._is_board(pipe, session):
                    self._count("not_board")
                    await self._show(pipe, session, "the page was not the board")
                due = loop.time() + self.check_s
                continue
            method, params = ev.get("method"), ev.get("params", {})
            crashed = method == "Target.targetCrashed" and params.get("targetId") == target
            if crashed or (method == "Inspector.targetCrashed" and ev.get("sessionId") == session):
                self._count("crash")
                log(f"the page's process crashed ({params.get('status', 'crashed')})")
                await self._show(pipe, session, "after the crash")
            elif method == "Target.detachedFromTarget" and params.get("sessionId") == session:
                session, target = await self._attach(pipe)
                await self._show(pipe, session, "the page was closed")
        raise BrowserGone()

    async def end(self) -> None:
        p = self.proc
        if p is None or p.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            p.terminate()
        try:
            async with asyncio.timeout(5):
                await p.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            await p.wait()


def parse(argv: Sequence[str]) -> argparse.Namespace:
    args = list(argv)
    browser: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, browser = args[:i], args[i + 1 :]
    p = argparse.ArgumentParser(
        prog="python -m tableview.kiosk",
        description="Show URL full screen in a browser and keep it showing: a crashed page "
        "or a page that is not the board is loaded again, a browser that ended is started "
        "again (docs/view.md, 'The board on the Pi's own screen').",
    )
    p.add_argument("url", help="the board's address (http://127.0.0.1:8080/board?lang=zh)")
    p.add_argument(
        "--check", type=float, default=10.0, help="seconds between two checks of the page (10)"
    )
    p.add_argument(
        "--restart",
        type=float,
        default=2.0,
        help="seconds before a browser that ended is started again (2)",
    )
    ns = p.parse_args(args)
    if not browser:
        p.error("the browser and its flags after --: -- /usr/bin/chromium --kiosk ...")
    if not ns.url.startswith(("http://", "https://")):
        p.error(f"the URL must be http:// or https://, got {ns.url!r}")
    if ns.check <= 0 or ns.restart < 0:
        p.error("--check must be > 0 and --restart >= 0")
    ns.browser = browser
    return ns


async def amain(ns: argparse.Namespace) -> None:
    kiosk = Kiosk(ns.url, ns.browser, check_s=ns.check, restart_s=ns.restart)
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: task.cancel() if task else None)
    log(f"showing {ns.url}")
    try:
        await kiosk.run()
    except asyncio.CancelledError:
        await kiosk.end()
        log("stopped")


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse(sys.argv[1:] if argv is None else argv)
    try:
        asyncio.run(amain(ns))
    except OSError as exc:  # the browser cannot be started at all (its unit restarts us)
        log(f"error: BROWSER_NOT_STARTED: {ns.browser[0]}: {exc.strerror or exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
