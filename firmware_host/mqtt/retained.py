"""The table's own retained messages, read once at start-up on a separate connection
(the daemon compares its journal with them: ``firmware_host/table/floorcheck.py``)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Mapping

import aiomqtt

from ..topics import check_topic
from .settings import MqttSettings


class BrokerUnreachable(ConnectionError):
    """The broker could not be reached (or refused us) while reading retained messages."""


async def read_retained(
    settings: MqttSettings,
    table_id: str,
    suffixes: tuple[str, ...],
    *,
    others: Mapping[str, str] | None = None,
    quiet: float = 0.5,
) -> dict[str, bytes]:
    """The table's own retained messages on ``suffixes`` (relative to its root), read
    once, before the floor link publishes anything (the daemon compares its journal with
    them at start-up: ``firmware_host/table/floorcheck.py``).

    A separate connection with a clean session under ``<client_id>-check``, so the
    link's persistent session is not touched. After the SUBACK it waits until every
    suffix has arrived, or until ``quiet`` seconds pass without one (a suffix the broker
    holds nothing for is absent from the result). Raises :class:`BrokerUnreachable`.

    ``others``: more retained messages to read, name -> full topic (the floor's own
    record of this table, ``<prefix>/floor/records/<table_id>``), returned by name.
    """
    root = check_topic(f"{settings.prefix}/tables/{table_id}")
    wanted = {f"{root}/{check_topic(s)}": s for s in suffixes}
    wanted.update({check_topic(topic): name for name, topic in (others or {}).items()})
    v5 = settings.protocol == "5"
    client = aiomqtt.Client(
        settings.host,
        settings.port,
        username=settings.username or None,
        password=settings.read_password(),
        identifier=f"{settings.client_id or f'tablectl-{table_id}'}-check",
        protocol=aiomqtt.ProtocolVersion.V5 if v5 else aiomqtt.ProtocolVersion.V311,
        clean_session=None if v5 else True,
        keepalive=settings.keepalive,
        timeout=settings.connect_timeout_ms / 1000,
        tls_context=settings.tls_context(),
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    )
    got: dict[str, bytes] = {}
    try:
        async with client:
            await client.subscribe([(t, 1) for t in wanted])
            messages = aiter(client.messages)
            while len(got) < len(wanted):
                try:  # asyncio.timeout, not wait_for (gh-86296: a cancellation swallowed)
                    async with asyncio.timeout(quiet):
                        message = await anext(messages)
                except (TimeoutError, StopAsyncIteration):
                    break
                suffix = wanted.get(message.topic.value)
                if suffix is None or not message.retain:
                    continue
                raw = message.payload
                got[suffix] = (
                    bytes(raw) if isinstance(raw, bytes | bytearray) else str(raw).encode()
                )
    except (aiomqtt.MqttError, OSError, ssl.SSLError) as exc:
        raise BrokerUnreachable(f"{settings.host}:{settings.port}: {exc}") from exc
    return got
