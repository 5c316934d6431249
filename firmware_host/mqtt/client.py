"""The MQTT client: aiomqtt, with the broker's refusals made visible (PUBACK and SUBACK
reason codes) and incoming packets read in bursts."""

from __future__ import annotations

import asyncio
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiomqtt
from paho.mqtt.client import MQTT_ERR_SUCCESS
from paho.mqtt.reasoncodes import ReasonCode

from .settings import READ_BURST

# ---------------------------------------------------------------------------
# the client: aiomqtt, with the broker's refusals made visible


@dataclass(frozen=True, slots=True)
class Sent:
    """A publication handed to the client (:meth:`_AckClient.send`), its PUBACK awaited
    with :meth:`_AckClient.acked`. ``done`` is None when nothing is awaited (QoS 0, or
    the answer goes to an ``on_ack`` callback)."""

    mid: int
    done: asyncio.Event | None


#: What :meth:`_AckClient.send` hands the broker's answer to: its refusal, or None.
OnAck = Callable[[ReasonCode | None], None]


class _AckNotice:
    """Stands for an ``asyncio.Event`` in aiomqtt's table of pending publications: its
    ``set()`` (aiomqtt's ``_on_publish``, on the PUBACK, inside paho's read) schedules
    ``callback(refusal or None)`` for the next loop step. No task and no
    ``wait_for`` per publication: those cost about 25 us each here (three times that
    with cold caches, three publications a round), right while the broker forwards the
    round to the floor on the same CPUs."""

    __slots__ = ("callback", "client", "mid")

    def __init__(self, client: _AckClient, mid: int, callback: OnAck) -> None:
        self.client, self.mid, self.callback = client, mid, callback

    def set(self) -> None:
        self.client._loop.call_soon(self.callback, self.client.refused.pop(self.mid, None))


class _AckClient(aiomqtt.Client):
    """aiomqtt's client, telling which publications the broker refused.

    MQTT 5 lets a broker refuse a QoS 1 publication in its PUBACK (reason code 0x80 or
    above, e.g. 0x87 *Not authorized* from mosquitto's ACL). paho-mqtt 2.x passes that
    reason code to ``on_publish`` (callback API 2), but aiomqtt 2.x (``_on_publish``)
    drops it and ``publish()`` returns as if the message had been accepted. This
    subclass keeps the refusals by message id and :meth:`acked` returns the refusal of
    its own publication. It depends on private parts of aiomqtt 2.x (``_on_publish``,
    ``_pending_publishes``, ``_on_socket_register_write``; pinned by ``aiomqtt<3``);
    the tests in ``tests/daemon/test_mqtt_refusals.py`` fail if an upgrade breaks it.

    It also reads incoming packets in bursts (:meth:`_read_bursts`) and hands each
    message to ``deliver`` as it is read (:meth:`_on_message`), so that requests reach
    the link's queues as soon as they arrive (``tests/daemon/test_mqtt_requests.py``).

    Publications go out at once: :meth:`send` hands one to paho and writes it to the
    socket in the same call, on the event loop's thread (aiomqtt registers a writer
    that writes it one or two loop iterations later, behind whatever work was queued
    meanwhile), and :meth:`acked` awaits its PUBACK (or the ``on_ack`` given to
    :meth:`send` gets the broker's answer); several may be in flight.
    """

    def __init__(
        self,
        *args: Any,
        deliver: Callable[[str, bytes, bool], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.refused: dict[int, ReasonCode] = {}
        #: MQTT 5: the broker's Receive Maximum from its CONNACK (QoS 1 publications it
        #: takes unanswered at once; mosquitto: its ``max_inflight_messages``), or None
        #: (MQTT 3.1.1, or a broker that sets no limit).
        self.receive_maximum: int | None = None
        self._deliver = deliver
        #: The event loop's thread (the client is made there): writes from it go out at
        #: once; paho's connect runs in an executor thread and keeps aiomqtt's writer.
        self._loop_thread = threading.get_ident()

    def _on_connect(
        self,
        client: Any,
        userdata: Any,
        flags: Any,
        reason_code: Any,
        properties: Any = None,
    ) -> None:
        """Keep the broker's Receive Maximum (MQTT 5 CONNACK): the link never has more
        publications in flight than it (paho does not bound them by it)."""
        limit = getattr(properties, "ReceiveMaximum", None)
        self.receive_maximum = limit if isinstance(limit, int) and limit > 0 else None
        super()._on_connect(client, userdata, flags, reason_code, properties)

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        """Incoming messages go straight to ``deliver(topic, payload, retain)`` (the
        link's queues), on the packet's arrival: aiomqtt's message iterator hands them
        over one per few event-loop iterations, so a burst would wait there in arrival
        order, a dealer's command behind every bet before it."""
        if self._deliver is None:
            super()._on_message(client, userdata, message)
            return
        self._deliver(message.topic, bytes(message.payload), bool(message.retain))

    def _on_publish(
        self,
        client: Any,
        userdata: Any,
        mid: int,
        reason_code: ReasonCode,
        properties: Any,
    ) -> None:
        if reason_code.is_failure:
            self.refused[mid] = reason_code
        super()._on_publish(client, userdata, mid, reason_code, properties)

    def _on_socket_register_write(self, client: Any, userdata: Any, sock: Any) -> None:
        """paho has bytes to write: on the loop's thread, write them now (what paho
        itself does without an external loop); a writer is registered only for what
        the socket did not take."""
        if threading.get_ident() == self._loop_thread:
            try:
                client.loop_write()
            except Exception as exc:  # as aiomqtt's writer: the connection is broken
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)
                return
            if not client.want_write():
                return  # all written; paho dropped its write interest
            if sock.fileno() < 0:
                return  # closed by that write (the broker closed the connection): no writer
        super()._on_socket_register_write(client, userdata, sock)

    def send(
        self,
        topic: str,
        payload: bytes,
        *,
        qos: int,
        retain: bool,
        on_ack: OnAck | None = None,
    ) -> Sent:
        """Hand one publication to paho and write it now (see the class docstring).

        Without ``on_ack`` its PUBACK is awaited with :meth:`acked`; with it,
        ``on_ack(refusal or None)`` is called from the event loop once the broker
        answers (or at once, next loop step, when nothing is awaited: QoS 0), unless
        :meth:`forget` is called first.

        Raises :class:`aiomqtt.MqttCodeError` when paho cannot take it (no connection),
        ``ValueError``/``TypeError`` for an unpublishable one (too large)."""
        info = self._client.publish(topic, payload, qos, retain)
        if info.rc != MQTT_ERR_SUCCESS:
            exc = self._disconnected.exception() if self._disconnected.done() else None
            raise aiomqtt.MqttCodeError(info.rc, "Could not publish message") from exc
        if info.is_published():
            if on_ack is not None:
                self._loop.call_soon(on_ack, None)
            return Sent(info.mid, None)
        if info.mid in self._pending_publishes:
            raise RuntimeError(f'There already exists a pending call for message ID "{info.mid}"')
        self.refused.pop(info.mid, None)  # a stale refusal of an earlier use of this id
        if on_ack is not None:
            # set() by _on_publish on the PUBACK, as aiomqtt's own events are
            notice = _AckNotice(self, info.mid, on_ack)
            self._pending_publishes[info.mid] = notice  # type: ignore[assignment]
            return Sent(info.mid, None)
        done = asyncio.Event()
        self._pending_publishes[info.mid] = done  # set by _on_publish on the PUBACK
        return Sent(info.mid, done)

    def forget(self, mid: int) -> None:
        """No answer wanted any more for publication ``mid`` (sent with ``on_ack``)."""
        if isinstance(self._pending_publishes.get(mid), _AckNotice):
            del self._pending_publishes[mid]
        self.refused.pop(mid, None)

    async def acked(self, sent: Sent, timeout: float) -> ReasonCode | None:
        """Wait for ``sent``'s PUBACK; the broker's refusal, or None. Raises
        :class:`aiomqtt.MqttError` after ``timeout`` seconds."""
        if sent.done is None:
            return None
        try:
            await self._wait_for(sent.done.wait(), timeout=timeout)
        finally:
            if self._pending_publishes.get(sent.mid) is sent.done:
                del self._pending_publishes[sent.mid]
        return self.refused.pop(sent.mid, None)

    def _on_socket_open(self, client: Any, userdata: Any, sock: Any) -> None:
        super()._on_socket_open(client, userdata, sock)
        # Runs after aiomqtt's own add_reader (call_soon_threadsafe keeps the order).
        self._loop.call_soon_threadsafe(self._read_bursts, sock)

    def _read_bursts(self, sock: Any) -> None:
        """Read every packet waiting on the socket at each wake-up, not one.

        aiomqtt's reader reads one packet per event-loop iteration (paho's
        ``loop_read`` reads one when nothing of ours is in flight), so a burst of
        requests sits in the socket in arrival order and a dealer's command behind
        a flood of bets is read only after every bet before it was handled: the
        separate queues could not put it first. Reading the socket dry (up to
        :data:`READ_BURST` packets per wake-up) moves the requests into the link's
        queues at once."""
        try:
            fd = sock.fileno()
        except OSError:
            return
        if fd < 0:
            return
        self._loop.remove_reader(fd)
        self._loop.add_reader(fd, self._read_burst, sock)

    def _read_burst(self, sock: Any) -> None:
        paho = self._client
        try:
            for _ in range(READ_BURST):
                paho.loop_read()
                current: Any = paho.socket()
                if current is None or current.fileno() != sock.fileno():
                    break  # closed meanwhile
                if hasattr(current, "pending") and current.pending() > 0:
                    continue  # TLS: decrypted bytes already buffered
                if not select.select([current], [], [], 0)[0]:
                    break
        except Exception as exc:  # as aiomqtt's reader: the connection is broken
            if not self._disconnected.done():
                self._disconnected.set_exception(exc)


def _refusal(code: int | ReasonCode) -> str | None:
    """The text of a refusing SUBACK/PUBACK code, or None if it grants.

    MQTT 3.1.1 SUBACK says 0x80 for a refused filter; MQTT 5 has reason codes 0x80 and
    above (0x87 Not authorized...). paho gives ints or ReasonCodes depending on the
    protocol and callback API."""
    if isinstance(code, ReasonCode):
        return f"{code.getName()} (0x{code.value:02x})" if code.is_failure else None
    return f"refused (0x{code:02x})" if code >= 0x80 else None
