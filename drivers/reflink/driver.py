"""The host-side driver every reflink device shares (shoe, shaker, board, sign).

It follows the driver contract (``start``/``stop``/``events``/``get_status``,
``health``, ``frames``) and does what is common to every profile:

- opens the port (serial URL, or USB bulk) through a reconnecting
  :class:`drivers.transport.Link`, shared by the devices of one RS-485 bus;
- identifies the device (HELLO -> IDENT: link version, profile, profile major
  version), then polls it (PING -> STATUS) every ``poll_ms``;
- health: OFFLINE while the port is down or the device does not answer (bounded:
  ``poll_ms`` + (``retries`` + 1) x ``ack_timeout_ms``), FAULT on a protocol
  mismatch or an active fault condition, else ONLINE;
- after every (re)identification (port back, device restarted, STATUS says its
  state was lost) calls :meth:`RefDriver.resync` so output devices get their
  whole display state again;
- decodes the device's own messages and hands them to :meth:`RefDriver.on_message`.

A vendor protocol riding on reflink is a new :class:`~drivers.reflink.messages.Profile`
plus a subclass; one with its own framing is a separate driver emitting the same
events (see ``docs/protocols/reflink.md``, "Vendor protocols").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any, ClassVar

from tablecommon.settings import ConfigInvalid, FieldSpec, validate_fields

from ..base import CodecError, DeviceTimeout, DriverError, HealthState, LinkError
from ..common import DriverBase, E
from ..link import Backoff, LinkState
from ..transport import Opener, serial_opener
from .aio import ReflinkHost, acquire_host, release_host, wait_event
from .link import LinkTimers
from .messages import LINK_VERSION, Message, MessageError, Profile, Sender

log = logging.getLogger(__name__)


class CommandRefused(DriverError):
    """The device answered a command with REFUSED."""

    code = "COMMAND_REFUSED"

    def __init__(self, message: str, reason: int = 0) -> None:
        super().__init__(message)
        self.reason = reason


#: Settings of every serial reflink driver (``[devices.<name>]`` keys).
SERIAL_SETTINGS: dict[str, FieldSpec] = {
    "port": FieldSpec(
        "str",
        required=True,
        doc="serial port URL: /dev/ttyUSB0, /dev/serial/by-id/..., socket://host:port, loop://",
    ),
    "baud": FieldSpec("int", 115200, doc="baud rate", range=(1200, 4_000_000)),
    "address": FieldSpec(
        "int", 0, doc="device address: 0 point-to-point, 1..254 on an RS-485 bus", range=(0, 254)
    ),
    "ack_timeout_ms": FieldSpec(
        "int", 100, doc="retransmit a frame after this long without its ACK", range=(5, 5000)
    ),
    "retries": FieldSpec(
        "int", 3, doc="retransmissions before a frame counts as unanswered", range=(0, 20)
    ),
    "poll_ms": FieldSpec("int", 1000, doc="keepalive poll (PING) period", range=(20, 60000)),
    "offline_after": FieldSpec(
        "int",
        2,
        doc="unanswered polls in a row (the next one sent at once) before "
        "the device is reported offline",
        range=(1, 20),
    ),
}

#: Settings of a reflink device on USB bulk endpoints.
USB_SETTINGS: dict[str, FieldSpec] = {
    "usb": FieldSpec(
        "str",
        required=True,
        doc="usb:VVVV:PPPP or usb:VVVV:PPPP:SERIAL (hex ids)",
        check=lambda v: _usb_problem(v),
    ),
    "interface": FieldSpec("int", 0, doc="USB interface with the bulk endpoints", range=(0, 31)),
    "reset_after": FieldSpec(
        "int",
        3,
        doc="USB-reset the device after this many unanswered polls in a row",
        range=(1, 100),
    ),
    **{k: v for k, v in SERIAL_SETTINGS.items() if k not in ("port", "baud", "address")},
}


def _usb_problem(url: str) -> str | None:
    from ..usb import parse_usb_url

    try:
        parse_usb_url(url)
    except ValueError as exc:
        return str(exc)
    return None


def resolve_settings(
    specs: Mapping[str, FieldSpec], settings: Mapping[str, Any], where: str
) -> dict[str, Any]:
    """Validated settings with defaults (``driver``/``enabled`` ignored); ConfigInvalid if bad."""
    # already-validated settings hold tuples where the TOML had lists
    # (and None where an optional key was left out: validating it again would refuse it)
    data = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in settings.items()
        if k not in ("driver", "enabled") and v is not None
    }
    errors: list[str] = []
    out = validate_fields(specs, data, where, errors)
    if errors:
        raise ConfigInvalid(where, errors)
    return out


class RefDriver(DriverBase[E]):
    """Base of the reflink drivers; subclasses set ``profile`` and handle messages."""

    profile: ClassVar[Profile]
    SETTINGS: ClassVar[dict[str, FieldSpec]] = SERIAL_SETTINGS
    #: STATUS condition codes that make the device FAULT (the others are informational).
    FAULT_CONDITIONS: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        name: str,
        settings: Mapping[str, Any],
        *,
        opener: Opener | None = None,
        pin_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__(name, clock=clock)
        self.settings = resolve_settings(self.SETTINGS, settings, f"devices.{name}")
        s = self.settings
        self.address: int = s.get("address", 0)
        self.timers = LinkTimers(ack_timeout=s["ack_timeout_ms"] / 1000, max_retries=s["retries"])
        self.poll_interval: float = s["poll_ms"] / 1000
        self.offline_after: int = s["offline_after"]
        self.pin_factory = pin_factory
        self._backoff = backoff
        if opener is not None:
            self._opener: Opener = opener
            self._bus_key: Hashable = ("opener", id(opener))
        else:
            self._opener, self._bus_key = self.make_opener()
        self._host: ReflinkHost | None = None
        self._poll_task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._link_up = False
        self._link_reason = "opening the port"
        self._answering = False
        self._no_answer = False
        self._identified = False
        self._need_resync = "first contact"
        self.ident: dict[str, Any] = {}
        self.conditions: list[str] = []
        self._protocol_fault = ""
        self._latched: dict[str, str] = {}  # fault code -> message, until cleared
        self.misses = 0

    # -- configuration --------------------------------------------------------------------
    def make_opener(self) -> tuple[Opener, Hashable]:
        port = self.settings["port"]
        return serial_opener(port, baudrate=self.settings["baud"]), ("serial", port)

    # -- contract -------------------------------------------------------------------------
    async def start(self) -> None:
        if self._poll_task is not None:
            return
        opener, key = self._opener, self._bus_key
        host = acquire_host(
            key,
            lambda: ReflinkHost(
                opener,
                name=f"reflink {self.name}",
                timers=self.timers,
                backoff=self._backoff,
                clock=self.clock,
            ),
        )
        host.attach(self.address, self)
        self._host = host
        self._link_up = host.up
        self.set_health(HealthState.OFFLINE, "CONNECTING", "opening the port")
        await host.start()
        self._poll_task = asyncio.create_task(self._poll_loop(), name=f"{self.name} poll")

    async def stop(self) -> None:
        task, self._poll_task = self._poll_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        host, self._host = self._host, None
        if host is not None:
            host.detach(self.address)
            await release_host(self._bus_key, host)
        self._identified = self._answering = self._link_up = False
        self.set_health(HealthState.OFFLINE, "STOPPED", "stopped")
        self.hub.close()

    def get_status(self) -> dict[str, Any]:
        out = super().get_status()
        host = self._host
        out.update(
            {
                "profile": self.profile.name,
                "address": self.address,
                "ident": dict(self.ident),
                "conditions": list(self.conditions),
                "latched_faults": dict(self._latched),
                "link": host.endpoint.counters.to_json() if host is not None else {},
                "port": host.link.stats.to_json() if host is not None else {},
            }
        )
        out.update(self.status_extra())
        return out

    def status_extra(self) -> dict[str, Any]:
        return {}

    @property
    def online(self) -> bool:
        return self._identified and self._answering

    # -- commands -------------------------------------------------------------------------
    async def request(self, name: str, **values: Any) -> Message | None:
        """Send one request; return its reply message (None for a bare ACK).

        Raises :class:`CommandRefused`, :class:`DeviceTimeout`, :class:`LinkError`.
        """
        host = self._host
        if host is None:
            raise LinkError(f"{self.name}: not started")
        payload = self.profile.encode(name, **values)
        self.counters[f"tx.{name}"] += 1
        reply = await host.request(payload, self.address)
        if not reply:
            return None
        try:
            msg = self.profile.decode(reply, Sender.DEVICE)
        except MessageError as exc:
            self.counters["bad_replies"] += 1
            raise CodecError(f"{self.name}: bad reply to {name}: {exc}") from exc
        if msg.name == "REFUSED":
            self.counters["refused"] += 1
            raise CommandRefused(f"{self.name}: {name} refused: {msg['text']}", msg["reason"])
        return msg

    async def command(self, name: str, **values: Any) -> None:
        """A request whose answer is a bare ACK (or REFUSED)."""
        await self.request(name, **values)

    # -- fault bookkeeping --------------------------------------------------------------------
    def latch_fault(self, code: str, message: str) -> None:
        self._latched[code] = message
        self.update_health()

    def clear_latched(self, code: str | None = None) -> None:
        if code is None:
            self._latched.clear()
        else:
            self._latched.pop(code, None)
        self.update_health()

    def update_health(self) -> None:
        if not self._link_up:
            self.set_health(HealthState.OFFLINE, "LINK_DOWN", self._link_reason)
        elif self._no_answer:
            self.set_health(
                HealthState.OFFLINE,
                "NO_ANSWER",
                f"no answer after {self.timers.max_retries} retransmissions",
            )
        elif not self._answering:
            self.set_health(HealthState.OFFLINE, "IDENTIFYING", "waiting for IDENT")
        elif self._protocol_fault:
            self.set_health(HealthState.FAULT, "PROTOCOL_MISMATCH", self._protocol_fault)
        elif faults := [c for c in self.conditions if c in self.FAULT_CONDITIONS]:
            self.set_health(HealthState.FAULT, faults[0], ", ".join(faults))
        elif self._latched:
            code, msg = next(iter(self._latched.items()))
            self.set_health(HealthState.FAULT, code, msg)
        elif not self._identified:
            self.set_health(HealthState.OFFLINE, "IDENTIFYING", "waiting for IDENT")
        else:
            self.set_health(HealthState.ONLINE)

    # -- the poll loop ------------------------------------------------------------------------
    async def _poll_loop(self) -> None:
        while True:
            try:
                if not self._identified:
                    await self._identify()
                if self._identified and self._need_resync:
                    reason, self._need_resync = self._need_resync, ""
                    sent = await self.resync(reason)
                    self.counters["resyncs"] += 1
                    log.info("%s: resynchronised (%s, %d messages)", self.name, reason, sent)
                if self._identified:
                    await self._ping()
            except DeviceTimeout:
                self.misses += 1
                self.counters["no_answer"] += 1
                await self._note_usb_timeout()
                if self.misses < self.offline_after:
                    continue  # poll again at once: one lost exchange is not a lost device
                self._no_answer = True
                self._lost("no answer")
            except LinkError as exc:
                self._lost(str(exc))
            except (CodecError, CommandRefused) as exc:
                self.counters["poll_errors"] += 1
                log.warning("%s: %s", self.name, exc)
            self._wake.clear()
            await wait_event(self._wake, self.poll_interval)

    def _lost(self, why: str) -> None:
        if self._answering or self._identified:
            log.warning("%s: device lost: %s", self.name, why)
        self._answering = False
        self._identified = False
        self._need_resync = self._need_resync or "device back"
        self.update_health()

    async def _note_usb_timeout(self) -> None:
        conn = self._host.link.connection if self._host is not None else None
        note = getattr(conn, "note_timeout", None)
        if note is not None:
            with contextlib.suppress(LinkError):
                await note(f"{self.name}: no answer to a poll")

    async def _identify(self) -> None:
        msg = await self.request("HELLO", link_version=LINK_VERSION)
        self._answering = True
        self._no_answer = False
        self.misses = 0
        if msg is None or msg.name != "IDENT":
            self._protocol_fault = "HELLO not answered with IDENT"
        else:
            self.ident = dict(msg.values)
            p = self.profile
            if msg["profile"] != p.profile_id:
                self._protocol_fault = (
                    f"device speaks profile {msg['profile']}, this driver {p.profile_id} ({p.name})"
                )
            elif msg["major"] != p.major:
                self._protocol_fault = (
                    f"device speaks {p.name} {msg['major']}.{msg['minor']}, driver {p.major}.x"
                )
            elif msg["link_version"] != LINK_VERSION:
                self._protocol_fault = f"device speaks link version {msg['link_version']}"
            else:
                self._protocol_fault = ""
                self._identified = True
        self.update_health()

    async def _ping(self) -> None:
        msg = await self.request("PING")
        self._answering = True
        self._no_answer = False
        self.misses = 0
        if msg is not None and msg.name == "STATUS":
            bits = msg["conditions"]
            self.conditions = self.profile.condition_names(bits)
            if "STATE_LOST" in self.conditions and not self._need_resync:
                self._need_resync = "device reports its state lost"
                self._wake.set()
        self.update_health()

    async def resync(self, reason: str) -> int:
        """Send the device its whole state again; return how many messages were sent."""
        return 0

    # -- from the host end ------------------------------------------------------------------------
    def on_reflink_message(self, payload: bytes, wire: bytes) -> None:
        try:
            msg = self.profile.decode(payload, Sender.DEVICE)
        except MessageError as exc:
            self.counters["bad_messages"] += 1
            log.warning("%s: undecodable message %s: %s", self.name, payload.hex(" "), exc)
            return
        self.counters[f"rx.{msg.name}"] += 1
        try:
            self.on_message(msg, wire)
        except MessageError as exc:
            self.counters["bad_messages"] += 1
            log.warning("%s: invalid %s: %s", self.name, msg.name, exc)

    def on_message(self, msg: Message, wire: bytes) -> None:
        """A message the device sent on its own (an event)."""

    def on_reflink_peer_restarted(self) -> None:
        self.counters["device_restarts"] += 1
        self._identified = False
        self._need_resync = "device restarted"
        self._wake.set()

    def on_reflink_link_state(self, state: LinkState) -> None:
        self._link_up = state.up
        self._link_reason = state.reason
        if not state.up:
            self._answering = False
            self._no_answer = False
            self._identified = False
            self._need_resync = self._need_resync or "link back"
        else:
            self._wake.set()
        self.update_health()
