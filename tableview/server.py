"""The view's MQTT subscriber and web server (aiohttp).

:class:`ViewServer` subscribes to ``<prefix>/tables/<id>/#`` for each followed table
(``+`` for every table of the pit), read-only at QoS 1 with a clean session, and
serves:

- ``/``: the page (``static/index.html``), ``/static/...`` its CSS and JavaScript;
- ``/api/tables``: every table as JSON (``tableview.model``);
- ``/events``: server-sent events: a ``snapshot`` of the pit on connection, then one
  ``table`` event with the table's whole state each time one of its topics changes.

It reconnects to the broker with a capped backoff; the page shows whether the view
is connected.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import aiomqtt
from aiohttp import web

from firmware_host.mqtt import MqttSettings

from .model import Pit

log = logging.getLogger(__name__)

STATIC = Path(str(resources.files(__package__).joinpath("static")))
#: Queued updates per page before the oldest are dropped (a page that stopped reading).
CLIENT_QUEUE = 200


class ViewServer:
    """``await start()``, then :attr:`url`; ``await stop()``."""

    def __init__(
        self,
        mqtt: MqttSettings,
        *,
        tables: Sequence[str] = (),
        host: str = "127.0.0.1",
        port: int = 8080,
    ) -> None:
        self.mqtt = mqtt
        self.prefix = mqtt.prefix
        self.tables = tuple(tables)
        self.host = host
        self.port = port
        self.pit = Pit(self.prefix)
        self.connected = False
        self.last_error = ""
        self._clients: set[asyncio.Queue[str]] = set()
        self._runner: web.AppRunner | None = None
        self._task: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    # -- life-cycle -----------------------------------------------------------------------
    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_get("/api/tables", self._api)
        app.router.add_get("/events", self._events)
        app.router.add_static("/static/", STATIC, follow_symlinks=False)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])
        self._task = asyncio.create_task(self._follow(), name="tableview-mqtt")

    async def wait_subscribed(self, timeout: float = 10) -> None:
        await asyncio.wait_for(self._subscribed.wait(), timeout)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        for q in list(self._clients):
            q.put_nowait("")  # end every stream
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> ViewServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- MQTT -----------------------------------------------------------------------------
    def topics(self) -> list[str]:
        return [f"{self.prefix}/tables/{t}/#" for t in (self.tables or ("+",))]

    async def _follow(self) -> None:
        s = self.mqtt
        delay = 0.2
        while True:
            try:
                async with aiomqtt.Client(
                    s.host,
                    s.port,
                    username=s.username or None,
                    password=s.read_password(),
                    identifier=f"tableview-{os.getpid()}-{secrets.token_hex(3)}",
                    tls_context=s.tls_context(),
                    keepalive=s.keepalive,
                    clean_session=True,
                ) as client:
                    for topic in self.topics():
                        await client.subscribe(topic, qos=1)
                    self._set_connected(True, "")
                    self._subscribed.set()
                    delay = 0.2
                    async for m in client.messages:
                        raw = m.payload
                        payload = (
                            bytes(raw) if isinstance(raw, (bytes, bytearray)) else str(raw).encode()
                        )
                        changed = self.pit.apply(m.topic.value, payload)
                        if changed is not None:
                            self._broadcast("table", self.pit.tables[changed].to_json())
            except aiomqtt.MqttError as exc:
                self._set_connected(False, str(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _set_connected(self, up: bool, error: str) -> None:
        if (up, error) != (self.connected, self.last_error):
            self.connected, self.last_error = up, error
            self._broadcast("link", self._link())

    def _link(self) -> dict[str, Any]:
        return {
            "connected": self.connected,
            "error": self.last_error,
            "broker": f"{self.mqtt.host}:{self.mqtt.port}",
            "topics": self.topics(),
        }

    # -- web ------------------------------------------------------------------------------
    def _broadcast(self, event: str, data: Any) -> None:
        text = f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
        for q in list(self._clients):
            if q.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    q.get_nowait()
            q.put_nowait(text)

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def _api(self, request: web.Request) -> web.Response:
        return web.json_response({**self.pit.to_json(), "link": self._link()})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await resp.prepare(request)
        q: asyncio.Queue[str] = asyncio.Queue(CLIENT_QUEUE)
        self._clients.add(q)
        try:
            first = {**self.pit.to_json(), "link": self._link()}
            await resp.write(f"event: snapshot\ndata: {json.dumps(first)}\n\n".encode())
            while True:
                try:
                    text = await asyncio.wait_for(q.get(), 15)
                except TimeoutError:
                    text = ": keepalive\n\n"
                if not text:
                    break
                await resp.write(text.encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._clients.discard(q)
        return resp


async def serve(view: ViewServer, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    await view.start()
    try:
        await stop.wait()
    finally:
        await view.stop()
