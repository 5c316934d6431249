"""What every reflink device's driver shares (shoe, shaker, board, sign): its session.

A reflink driver (a :class:`~drivers.common.DriverBase`: the driver contract,
``start``/``stop``/``events``/``get_status``, ``health``, ``frames``) holds one
:class:`RefSession`, which does what is common to every profile:

- opens the port (serial URL, or USB bulk) through a reconnecting
  :class:`drivers.transport.Link`, shared by the devices of one RS-485 bus;
- identifies the device (HELLO -> IDENT: link version, profile, profile major
  version), then polls it (PING -> STATUS) every ``poll_ms``;
- health: OFFLINE while the port is down or the device does not answer (bounded:
  ``poll_ms`` + (``retries`` + 1) x ``ack_timeout_ms``), FAULT on a protocol
  mismatch or an active fault condition, else ONLINE;
- after every (re)identification (port back, device restarted, STATUS says its
  state was lost) calls the driver's ``resync`` so output devices get their whole
  display state again;
- decodes the device's own messages and hands them to the driver's ``on_message``.

A vendor protocol riding on reflink is a new :class:`~drivers.reflink.messages.Profile`
plus a driver holding a session; one with its own framing is a separate driver
emitting the same events (see ``docs/protocols/reflink.md``, "Vendor protocols").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any

from tablecommon.settings import ConfigInvalid, FieldSpec, validate_fields

from ..base import CodecError, DeviceTimeout, DriverError, HealthState, LinkError
from ..common import DriverBase
from ..link import Backoff, LinkState
from ..transport import Opener, cancel_and_wait, serial_opener
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


async def _no_resync(reason: str) -> int:
    return 0


def serial_port(settings: Mapping[str, Any]) -> tuple[Opener, Hashable]:
    """The opener of a serial reflink device and its bus key (one link per port)."""
    port = settings["port"]
    return serial_opener(port, baudrate=settings["baud"]), ("serial", port)


def usb_port(settings: Mapping[str, Any], backend: Any = None) -> tuple[Opener, Hashable]:
    """The opener of a reflink device on USB bulk endpoints and its bus key."""
    from ..usb import parse_usb_url, usb_opener

    ident = parse_usb_url(settings["usb"])
    opener = usb_opener(
        ident.vendor_id,
        ident.product_id,
        serial_number=ident.serial_number,
        interface=settings["interface"],
        reset_after=settings["reset_after"],
        backend=backend,
    )
    return opener, ("usb", settings["usb"])


class RefSession:
    """One reflink device's session, held by its driver (``driver.ref``).

    ``driver``: whose name, clock, counters and health the session keeps;
    ``settings``: the driver's resolved settings (:data:`SERIAL_SETTINGS` or
    :data:`USB_SETTINGS` keys); ``port``: the opener and its bus key (by default the
    serial port of the settings); ``fault_conditions``: the STATUS condition codes
    that make the device FAULT (the others are informational); ``on_message``: what the
    driver does with a message the device sent on its own (an event); ``resync``: sends
    the device its whole state again, returns how many messages it sent."""

    def __init__(
        self,
        driver: DriverBase[Any],
        profile: Profile,
        settings: Mapping[str, Any],
        *,
        fault_conditions: frozenset[str] = frozenset(),
        on_message: Callable[[Message, bytes], None] = lambda msg, wire: None,
        resync: Callable[[str], Awaitable[int]] = _no_resync,
        opener: Opener | None = None,
        port: tuple[Opener, Hashable] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.driver = driver
        self.name = driver.name
        #: The driver's frame log (the host logs every frame to and from the device).
        self.frames = driver.frames
        self.profile = profile
        self.fault_conditions = fault_conditions
        self._on_message = on_message
        self._resync = resync
        s = settings
        self.address: int = s.get("address", 0)
        self.timers = LinkTimers(ack_timeout=s["ack_timeout_ms"] / 1000, max_retries=s["retries"])
        self.poll_interval: float = s["poll_ms"] / 1000
        self.offline_after: int = s["offline_after"]
        self._backoff = backoff
        if opener is not None:
            self._opener: Opener = opener
            self._bus_key: Hashable = ("opener", id(opener))
        else:
            self._opener, self._bus_key = port if port is not None else serial_port(settings)
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
        #: Fault code -> message, until cleared (``latch_fault``, ``clear_latched``).
        self.latched: dict[str, str] = {}
        self.misses = 0

    # -- contract -------------------------------------------------------------------------
    async def start(self) -> None:
        if self._poll_task is not None:
            return
        opener, key = self._opener, self._bus_key
        driver = self.driver
        host = acquire_host(
            key,
            lambda: ReflinkHost(
                opener,
                name=f"reflink {self.name}",
                timers=self.timers,
                backoff=self._backoff,
                clock=driver.clock,
            ),
        )
        host.attach(self.address, self)
        self._host = host
        self._link_up = host.up
        driver.set_health(HealthState.OFFLINE, "CONNECTING", "opening the port")
        await host.start()
        self._poll_task = asyncio.create_task(self._poll_loop(), name=f"{self.name} poll")

    async def stop(self) -> None:
        task, self._poll_task = self._poll_task, None
        # cancel_and_wait, not suppress(CancelledError): a stop() cancelled by its
        # caller (a timeout, the daemon's shutdown) must not swallow that cancellation
        await cancel_and_wait(task)
        host, self._host = self._host, None
        if host is not None:
            host.detach(self.address)
            await release_host(self._bus_key, host)
        self._identified = self._answering = self._link_up = False
        self.driver.set_health(HealthState.OFFLINE, "STOPPED", "stopped")
        self.driver.hub.close()

    def get_status(self) -> dict[str, Any]:
        """What the session adds to its driver's status."""
        host = self._host
        return {
            "profile": self.profile.name,
            "address": self.address,
            "ident": dict(self.ident),
            "conditions": list(self.conditions),
            "latched_faults": dict(self.latched),
            "link": host.endpoint.counters.to_json() if host is not None else {},
            "port": host.link.stats.to_json() if host is not None else {},
        }

    @property
    def online(self) -> bool:
        return self._identified and self._answering

    def resync_soon(self, reason: str) -> None:
        """The device must be sent its whole state again: poll now (the poll decides
        whether it is offline), then resync."""
        self._need_resync = self._need_resync or reason
        self._wake.set()

    # -- commands -------------------------------------------------------------------------
    async def request(self, name: str, **values: Any) -> Message | None:
        """Send one request; return its reply message (None for a bare ACK).

        Raises :class:`CommandRefused`, :class:`DeviceTimeout`, :class:`LinkError`.
        """
        host = self._host
        if host is None:
            raise LinkError(f"{self.name}: not started")
        payload = self.profile.encode(name, **values)
        counters = self.driver.counters
        counters[f"tx.{name}"] += 1
        reply = await host.request(payload, self.address)
        if not reply:
            return None
        try:
            msg = self.profile.decode(reply, Sender.DEVICE)
        except MessageError as exc:
            counters["bad_replies"] += 1
            raise CodecError(f"{self.name}: bad reply to {name}: {exc}") from exc
        if msg.name == "REFUSED":
            counters["refused"] += 1
            raise CommandRefused(f"{self.name}: {name} refused: {msg['text']}", msg["reason"])
        return msg

    async def command(self, name: str, **values: Any) -> None:
        """A request whose answer is a bare ACK (or REFUSED)."""
        await self.request(name, **values)

    # -- fault bookkeeping --------------------------------------------------------------------
    def latch_fault(self, code: str, message: str) -> None:
        self.latched[code] = message
        self.update_health()

    def clear_latched(self, code: str | None = None) -> None:
        if code is None:
            self.latched.clear()
        else:
            self.latched.pop(code, None)
        self.update_health()

    def update_health(self) -> None:
        set_health = self.driver.set_health
        if not self._link_up:
            set_health(HealthState.OFFLINE, "LINK_DOWN", self._link_reason)
        elif self._no_answer:
            set_health(
                HealthState.OFFLINE,
                "NO_ANSWER",
                f"no answer after {self.timers.max_retries} retransmissions",
            )
        elif not self._answering:
            set_health(HealthState.OFFLINE, "IDENTIFYING", "waiting for IDENT")
        elif self._protocol_fault:
            set_health(HealthState.FAULT, "PROTOCOL_MISMATCH", self._protocol_fault)
        elif faults := [c for c in self.conditions if c in self.fault_conditions]:
            set_health(HealthState.FAULT, faults[0], ", ".join(faults))
        elif self.latched:
            code, msg = next(iter(self.latched.items()))
            set_health(HealthState.FAULT, code, msg)
        elif not self._identified:
            set_health(HealthState.OFFLINE, "IDENTIFYING", "waiting for IDENT")
        else:
            set_health(HealthState.ONLINE)

    # -- the poll loop ------------------------------------------------------------------------
    async def _poll_loop(self) -> None:
        me = asyncio.current_task()
        # Not ``while True``: the loop also ends once stop() has begun (it forgets the
        # task before cancelling it), so a cancellation lost below (e.g. Python 3.11's
        # wait_for, gh-86296) costs stop() at most one poll period, never a hang.
        while self._poll_task is me:
            try:
                if not self._identified:
                    await self._identify()
                if self._identified and self._need_resync:
                    reason, self._need_resync = self._need_resync, ""
                    sent = await self._resync(reason)
                    self.driver.counters["resyncs"] += 1
                    log.info("%s: resynchronised (%s, %d messages)", self.name, reason, sent)
                if self._identified:
                    await self._ping()
            except DeviceTimeout:
                self.misses += 1
                self.driver.counters["no_answer"] += 1
                await self._note_usb_timeout()
                if self.misses < self.offline_after:
                    continue  # poll again at once: one lost exchange is not a lost device
                self._no_answer = True
                self._lost("no answer")
            except LinkError as exc:
                self._lost(str(exc))
            except (CodecError, CommandRefused) as exc:
                self.driver.counters["poll_errors"] += 1
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

    # -- from the host end ------------------------------------------------------------------------
    def on_reflink_message(self, payload: bytes, wire: bytes) -> None:
        try:
            msg = self.profile.decode(payload, Sender.DEVICE)
        except MessageError as exc:
            self.driver.counters["bad_messages"] += 1
            log.warning("%s: undecodable message %s: %s", self.name, payload.hex(" "), exc)
            return
        self.driver.counters[f"rx.{msg.name}"] += 1
        try:
            self._on_message(msg, wire)
        except MessageError as exc:
            self.driver.counters["bad_messages"] += 1
            log.warning("%s: invalid %s: %s", self.name, msg.name, exc)

    def on_reflink_peer_restarted(self) -> None:
        self.driver.counters["device_restarts"] += 1
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
