"""A headless Chromium driven over the Chrome DevTools protocol (a websocket), for the
browser test of ``tablectl view``: open a page, evaluate JavaScript, take a PNG."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name) or (
            f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None
        )
        if path:
            return path
    return None


class Browser:
    """``async with Browser() as b: page = await b.page(url)``."""

    def __init__(self, binary: str, width: int = 1280, height: int = 900) -> None:
        self.binary = binary
        self.width, self.height = width, height
        self.profile = Path(tempfile.mkdtemp(prefix="tableview-chromium-"))
        self.proc: asyncio.subprocess.Process | None = None
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Browser:
        self.proc = await asyncio.create_subprocess_exec(
            self.binary,
            *FLAGS,
            f"--user-data-dir={self.profile}",
            "--remote-debugging-port=0",
            f"--window-size={self.width},{self.height}",
            "about:blank",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        assert self.proc.stderr is not None
        port = None
        async with asyncio.timeout(30):
            while port is None:
                line = (await self.proc.stderr.readline()).decode(errors="replace")
                if not line:
                    raise RuntimeError("chromium exited before listening for DevTools")
                m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
                if m:
                    port = int(m.group(1))
        asyncio.create_task(self._drain())  # noqa: RUF006 (ends with the process)
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as r:
            targets = await r.json(content_type=None)
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        await self.send("Page.enable")
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )
        return self

    async def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while await self.proc.stderr.readline():
            pass

    async def _read(self) -> None:
        assert self.ws is not None
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            fut = self._waiting.pop(data.get("id", -1), None)
            if fut is not None and not fut.done():
                if "error" in data:
                    fut.set_exception(RuntimeError(str(data["error"])))
                else:
                    fut.set_result(data.get("result"))

    async def send(self, method: str, **params: Any) -> Any:
        assert self.ws is not None
        i = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[i] = fut
        await self.ws.send_str(json.dumps({"id": i, "method": method, "params": params}))
        return await asyncio.wait_for(fut, 30)

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def eval(self, expression: str) -> Any:
        res = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if res.get("exceptionDetails"):
            raise RuntimeError(f"page error: {res['exceptionDetails']}")
        return res["result"].get("value")

    async def wait_for(self, expression: str, timeout: float) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = await self.eval(expression)
            if value:
                return value
            if loop.time() > deadline:
                raise TimeoutError(f"the page never showed: {expression}")
            await asyncio.sleep(0.02)

    async def screenshot(self, path: Path, *, full: bool = True) -> None:
        """The page as a PNG: the whole page (``full``), or the screen alone (what a
        board shows on a screen of the browser's size)."""
        if not full:
            res = await self.send("Page.captureScreenshot", format="png")
            path.write_bytes(base64.b64decode(res["data"]))
            return
        height = await self.eval("document.documentElement.scrollHeight")
        clip = {"x": 0, "y": 0, "width": self.width, "height": max(200, int(height)), "scale": 1}
        res = await self.send(
            "Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True
        )
        path.write_bytes(base64.b64decode(res["data"]))

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 10)
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
