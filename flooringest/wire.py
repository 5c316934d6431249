"""What the ingest worker does on the wire itself, apart from the worker
(``flooringest.worker``): the PUBACKs of a batch in one write, the live lane's reads
of every packet waiting, and the end of its tasks (the floor's signed record of a
table is ``messages.record_message``)."""

from __future__ import annotations

import asyncio
import select
import struct
from typing import Any

import aiomqtt

from firmware_host.timefmt import iso_utc

#: ``schema_version`` of the faults document.
FAULTS_SCHEMA_VERSION = 1


def _iso(t: float) -> str:
    from datetime import UTC, datetime

    return iso_utc(datetime.fromtimestamp(t, UTC))


async def _end_tasks(tasks: list[asyncio.Task[Any]], every_s: float = 0.5) -> None:
    """Cancel ``tasks`` and return once every one has ended, cancelling again every
    ``every_s`` those still running (one that swallowed its cancellation, :meth:`run`).
    A cancellation of the caller meanwhile does not cut this short (the tasks would be
    left running): it is raised once they have ended."""
    cancelled: asyncio.CancelledError | None = None
    pending = {t for t in tasks if not t.done()}
    while pending:
        for t in pending:
            t.cancel()
        try:
            _, pending = await asyncio.wait(pending, timeout=every_s)
        except asyncio.CancelledError as exc:
            cancelled = exc
            pending = {t for t in pending if not t.done()}
    for t in tasks:  # retrieved: no "exception was never retrieved" for those ended
        if not t.cancelled():
            t.exception()
    if cancelled is not None:
        raise cancelled


_PUBACK = 0x40


def _puback_all(client: aiomqtt.Client, mids: list[int]) -> None:
    """PUBACK each of ``mids``, in order, in ONE write to the socket.

    paho's ``ack`` queues one 4-byte packet per message and writes each with its own
    ``send``: at a thousand rounds a second those sends were the worker's largest cost
    (a profile: 37,000 sends, 5.7 s of 18 s of CPU in 20 s). A PUBACK of a QoS 1
    message with reason Success and no properties is the same 4 bytes in MQTT 3.1.1
    and 5 (fixed header 0x40, remaining length 2, packet id: MQTT 5 section 3.4.2.1,
    a Remaining Length of 2 means Success), so the batch's PUBACKs are joined and
    queued as one write, through the same queue paho's ``ack`` uses (in order, after
    what is queued already). Where paho lacks that queue (another version), each is
    acknowledged with ``ack``."""
    paho = client._client
    queue = getattr(paho, "_packet_queue", None)
    if queue is None or not getattr(paho, "_manual_ack", False):
        for mid in mids:
            paho.ack(mid, 1)
        return
    packet = b"".join(struct.pack("!BBH", _PUBACK, 2, mid) for mid in mids)
    queue(_PUBACK, packet, 0, 1)


#: Packets one read of the live lane's connection takes, at most.
READ_MOST = 256


def read_all_waiting(client: aiomqtt.Client, most: int = READ_MOST) -> None:
    """Make each read of ``client``'s connection take every packet waiting (up to
    ``most``), not one.

    aiomqtt reads a connection when the event loop finds its socket readable, with one
    call of paho's ``loop_read``, and paho reads in one call as many packets as it has
    publications of its own unacknowledged, at least one (its ``max_packets`` argument
    is not used). The live lane publishes nothing: one packet per turn of the event
    loop. During a drain a turn of the worker's loop is long (the session's reads, the
    checks and commits of a batch: 10-20 turns a second), and the lane's 55 rounds a
    second and their anchors and states waited in its socket: 0.5-2.2 s from the
    table's publication to the worker (issue 36, the diagnostic run of 2026-11-28 20:36Z). Here each
    read goes on while the socket (or TLS's buffer) holds more, ``most`` at most, so a
    turn takes what the lane has; paho's own reading, and errors (raised to aiomqtt as
    before), are unchanged."""
    paho = client._client
    read = paho.loop_read

    def loop_read(max_packets: int = 1) -> Any:
        rc = read(max_packets)
        for _ in range(most - 1):
            sock = paho.socket()
            if rc != 0 or sock is None or not _waiting(sock):
                break
            rc = read(max_packets)
        return rc

    paho.loop_read = loop_read  # type: ignore[method-assign]


def _waiting(sock: Any) -> bool:
    """Whether a read of ``sock`` would find data (TLS's decrypted buffer, or bytes in
    the socket), without waiting."""
    pending = getattr(sock, "pending", None)
    if pending is not None and pending() > 0:
        return True
    try:  # poll, not select: no limit on the descriptor's number
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):  # closed meanwhile: paho's next read says so
        return False
