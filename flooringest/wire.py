"""What the ingest worker writes to the broker itself, apart from the worker
(``flooringest.worker``): the PUBACKs of a batch in one write, and the end of its
tasks (the floor's signed record of a table is ``messages.record_message``)."""

from __future__ import annotations

import asyncio
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
