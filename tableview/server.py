"""The view's MQTT subscriber and web server (aiohttp).

:class:`ViewServer` subscribes, read-only at QoS 1 with a clean session, to the topics
the page draws (``state``, ``board``, ``stats``, ``jackpot``, ``alerts``, ``rounds``,
``events``, ``devices/+``) of each followed table (``+`` when it follows prefixes or
every table: it then drops the others itself, :class:`tableview.model.Selection`), and
serves:

- ``/``: the pit page (``static/pit.html``: every table at a glance), ``/table/<id>``
  a table's page (``static/table.html``), ``/board/<id>`` (or ``/board``: the first
  table) the table's board for a screen facing the players (``static/board.html``),
  ``/static/...`` their CSS, JavaScript and the words of the board (``i18n.json``);
- ``/api/tables``: every table as JSON (``tableview.model``), and the ``link``: the
  broker, what the view follows, whether it verifies signatures, its caps and the
  messages it ignored;
- ``/events`` (``?table=ID``: that table only): server-sent events: a ``snapshot`` of
  the pit on connection, then a
  ``table`` event with the table's whole state when its topics changed, and a ``link``
  event when the link or the ignored counts changed.

A page that reads slowly never makes the view hold more: each page has the set of
tables changed since it last read, not a queue of messages (a table that changed
twice is sent once, as it is now).

It reconnects to the broker with a capped backoff; the page shows whether the view
is connected, and the log says it in one line when it connects, one when the broker is
lost or cannot be reached, one when it answers again (``firmware_host.progress``), and
every ``progress_s`` seconds one line of progress (``tablectl view --progress``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import aiomqtt
import orjson
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from firmware_host.mqtt import MqttSettings
from firmware_host.progress import LinkWatch, Since, every

from .caps import Caps
from .model import TOPICS, Pit, Selection

log = logging.getLogger(__name__)

STATIC = Path(str(resources.files(__package__).joinpath("static")))
#: Messages received and not yet read that the MQTT client holds at most: beyond, a
#: message is dropped and counted (``dropped``), so that a flood faster than the view
#: cannot make it hold more. The view reads a message in microseconds; the queue grows
#: only during a burst (the client hands over one message per turn of the event loop).
INCOMING_QUEUE = 5000
#: How often the ignored counts reach the pages (when they changed), and the log.
REPORT_SECONDS = 2.0
LOG_SECONDS = 60.0


class _Dropped(logging.Filter):
    """Counts the messages the MQTT client drops when its queue is full (``dropped``)
    instead of logging each of them."""

    def __init__(self, pit: Pit) -> None:
        super().__init__()
        self.pit = pit

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Message queue is full"):
            self.pit.ignored["dropped"] += 1
            return False
        return True


class _Page:
    """One page's stream: what changed since it last read."""

    __slots__ = ("closed", "link", "tables", "wake")

    def __init__(self) -> None:
        self.tables: dict[str, None] = {}
        self.link = False
        self.closed = False
        self.wake = asyncio.Event()


class ViewServer:
    """``await start()``, then :attr:`url`; ``await stop()``.

    ``tables``: ids and prefixes to follow (:class:`Selection`; none: every table);
    ``keys``: each table's public keys, to verify what it signed (None: not verified);
    ``caps``: what the view keeps at most."""

    def __init__(
        self,
        mqtt: MqttSettings,
        *,
        tables: Sequence[str] = (),
        host: str = "127.0.0.1",
        port: int = 8080,
        caps: Caps | None = None,
        keys: Mapping[str, Sequence[Ed25519PublicKey]] | None = None,
        progress_s: float = 0.0,
    ) -> None:
        self.mqtt = mqtt
        self.prefix = mqtt.prefix
        self.selection = Selection(tables)
        self.tables = tuple(tables)
        self.host = host
        self.port = port
        self.pit = Pit(self.prefix, selection=self.selection, caps=caps or Caps(), keys=keys)
        self.connected = False
        self.last_error = ""
        #: The broker's connection lines in the log, and the progress line's period.
        self.watch = LinkWatch(log, "tablectl view", f"broker {mqtt.host}:{mqtt.port}")
        self.progress_s = progress_s
        self.received = 0
        self._since = Since()
        self._pages: set[_Page] = set()
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._subscribed = asyncio.Event()
        # the MQTT client's own logger (not registered: one per view), counting drops
        self._mqtt_log = logging.Logger("tableview.mqtt")
        self._mqtt_log.parent = log
        self._mqtt_log.addFilter(_Dropped(self.pit))

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    # -- life-cycle -----------------------------------------------------------------------
    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/", self._page("pit.html"))
        app.router.add_get("/table/{table_id}", self._page("table.html"))
        app.router.add_get("/board", self._page("board.html"))
        app.router.add_get("/board/{table_id}", self._page("board.html"))
        app.router.add_get("/api/tables", self._api)
        app.router.add_get("/events", self._events)
        app.router.add_static("/static/", STATIC, follow_symlinks=False)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])
        self._tasks = [
            asyncio.create_task(self._follow(), name="tableview-mqtt"),
            asyncio.create_task(self._report(), name="tableview-report"),
            asyncio.create_task(every(self.progress_s, self.progress, log), name="progress"),
        ]

    async def wait_subscribed(self, timeout: float = 10) -> None:
        await asyncio.wait_for(self._subscribed.wait(), timeout)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        for page in list(self._pages):
            page.closed = True  # end every stream
            page.wake.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> ViewServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- MQTT -----------------------------------------------------------------------------
    def topics(self) -> list[str]:
        return [
            f"{self.prefix}/tables/{t}/{kind}" for t in self.selection.filters() for kind in TOPICS
        ]

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
                    max_queued_incoming_messages=INCOMING_QUEUE,
                    logger=self._mqtt_log,
                ) as client:
                    topics = self.topics()
                    await client.subscribe([(topic, 1) for topic in topics])
                    self.watch.up(
                        f"following {self.selection.describe()}, {len(topics)} topic filters"
                    )
                    self._set_connected(True, "")
                    self._subscribed.set()
                    delay = 0.2
                    async for m in client.messages:
                        self.received += 1
                        raw = m.payload
                        payload = (
                            bytes(raw) if isinstance(raw, (bytes, bytearray)) else str(raw).encode()
                        )
                        try:
                            changed = self.pit.apply(m.topic.value, payload)
                        except Exception:  # what a stranger publishes never stops the view
                            log.debug("message on %s not read", m.topic.value, exc_info=True)
                            self.pit.ignored["malformed"] += 1
                            continue
                        if changed is not None:
                            self._changed(changed)
            except aiomqtt.MqttError as exc:
                self.watch.down(str(exc) or type(exc).__name__)
                self._set_connected(False, str(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _report(self) -> None:
        """The ignored counts to the pages (when they changed) and, at most once a
        minute, to the log."""
        shown = logged = dict(self.pit.ignored)
        last_log = time.monotonic()
        while True:
            await asyncio.sleep(REPORT_SECONDS)
            now = dict(self.pit.ignored)
            if now != shown:
                shown = now
                self._link_changed()
            if now != logged and time.monotonic() - last_log >= LOG_SECONDS:
                new = {k: now[k] - logged[k] for k in now if now[k] != logged[k]}
                log.warning(
                    "tablectl view: messages ignored in the last %d s: %s",
                    round(time.monotonic() - last_log),
                    ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in new.items()),
                )
                logged, last_log = now, time.monotonic()

    def progress(self) -> str:
        """The view's progress in one line (``--progress``)."""
        ignored = dict(self.pit.ignored)
        reasons = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in ignored.items() if n)
        total = sum(ignored.values())
        return (
            f"tablectl view: progress: {self.watch.state()}; tables shown {len(self.pit.tables)} "
            f"(at most {self.pit.caps.tables}); messages received "
            f"{self._since.text('received', self.received)}, ignored "
            f"{self._since.text('ignored', total)}{f' ({reasons})' if reasons else ''}; "
            f"pages open {len(self._pages)}"
        )

    def _set_connected(self, up: bool, error: str) -> None:
        if (up, error) != (self.connected, self.last_error):
            self.connected, self.last_error = up, error
            self._link_changed()

    def _link(self, *, topics: bool = False) -> dict[str, Any]:
        """The link, what the view follows and trusts, its caps and what it ignored
        (``topics``: the topic filters too, for ``/api/tables`` and a page's first
        snapshot)."""
        keys = self.pit.keys
        link = {
            "connected": self.connected,
            "error": self.last_error,
            "broker": f"{self.mqtt.host}:{self.mqtt.port}",
            "following": self.selection.describe(),
            "verifying": keys is not None,
            "keys_for": sorted(keys) if keys is not None else [],
            "caps": self.pit.caps.to_json(),
            "ignored": dict(self.pit.ignored),
            "tables": len(self.pit.tables),
        }
        if topics:
            link["topics"] = self.topics()
        return link

    # -- pages ----------------------------------------------------------------------------
    def _changed(self, table_id: str) -> None:
        for page in self._pages:
            page.tables[table_id] = None
            page.wake.set()

    def _link_changed(self) -> None:
        for page in self._pages:
            page.link = True
            page.wake.set()

    def _everything(self, only: str | None = None) -> bytes:
        link = orjson.dumps(self._link(topics=True))
        return self.pit.text(only) + b',"link":' + link + b"}"

    @staticmethod
    def _page(name: str) -> Any:
        """A page of the view (the pit, a table, a table's board): a static file; the
        page reads the table it shows from its address."""

        async def page(request: web.Request) -> web.StreamResponse:
            return web.FileResponse(STATIC / name, headers={"Cache-Control": "no-cache"})

        return page

    async def _api(self, request: web.Request) -> web.Response:
        return web.Response(body=self._everything(), content_type="application/json")

    async def _events(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await resp.prepare(request)
        only = request.query.get("table") or None  # a table's page or board: that table only
        page = _Page()
        self._pages.add(page)
        try:
            await resp.write(b"event: snapshot\ndata: " + self._everything(only) + b"\n\n")
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(page.wake.wait(), 15)
                if page.closed:
                    break
                if not page.wake.is_set():
                    await resp.write(b": keepalive\n\n")
                    continue
                page.wake.clear()
                changed, page.tables = page.tables, {}
                for tid in changed:
                    if only is not None and tid != only:
                        continue
                    t = self.pit.tables.get(tid)
                    if t is not None:
                        await resp.write(b"event: table\ndata: " + t.text() + b"\n\n")
                if page.link:
                    page.link = False
                    link = orjson.dumps(self._link())
                    await resp.write(b"event: link\ndata: " + link + b"\n\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._pages.discard(page)
        return resp


async def serve(view: ViewServer, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    await view.start()
    try:
        await stop.wait()
    finally:
        await view.stop()
