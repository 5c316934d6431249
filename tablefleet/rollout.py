"""What a rolling update asks a table over MQTT (``tablectl rollout``; the playbook
``deploy/ansible/update.yml`` runs it from the controller).

- :func:`command`: one signed command (``maintenance``, ``end_maintenance``, ``status``)
  and the table's answer, through the reference signing client
  (``tablesim.floor_client.FloorClient``): the answer is the one naming our request id
  and our principal.
- :func:`wait`: until the table's retained ``state`` meets a condition:

  - ``maintenance-idle``: online, in maintenance and no round in flight (``phase``
    ``idle``): the round that was in progress when maintenance was asked is over;
  - ``ready``: online on a connection made at ``since`` or later with
    ``software_version`` VERSION: the restarted daemon is up (it publishes ``online``
    once it has subscribed to its requests, after READY);
  - ``in-play``: online and not in maintenance.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from firmware_host.auth import Signer
from firmware_host.jsonio import JSON
from tablesim.floor_client import FloorClient

CONDITIONS = ("maintenance-idle", "ready", "in-play")


@dataclass(frozen=True)
class Broker:
    host: str
    port: int
    username: str | None = None
    password: str | None = None
    prefix: str = "casino"


def _client(broker: Broker, table_id: str) -> FloorClient:
    return FloorClient(
        broker.host, broker.port, table_id, prefix=broker.prefix,
        client_id=f"rollout-{uuid.uuid4().hex[:16]}",
        username=broker.username, password=broker.password,
    )  # fmt: skip


async def command(
    broker: Broker,
    table_id: str,
    signer: Signer,
    name: str,
    args: Mapping[str, JSON],
    *,
    timeout: float = 30.0,
) -> JSON:
    """Send the signed command ``name`` with ``args`` and return the table's answer."""
    async with _client(broker, table_id) as floor:
        body = floor.command_body(name, **dict(args))
        return await floor.request("commands", body, timeout, signer=signer)


def condition(until: str, *, version: str | None, since: datetime | None) -> Callable[[JSON], bool]:
    """The test of a ``state`` payload for ``until`` (module docstring)."""

    def online(st: JSON) -> bool:
        return isinstance(st, dict) and st.get("availability") == "online"

    def holds(st: JSON) -> bool:
        if not online(st):
            return False
        assert isinstance(st, dict)
        if until == "maintenance-idle":
            return st.get("maintenance") is not None and st.get("phase") == "idle"
        if until == "in-play":
            return st.get("maintenance") is None
        if version is not None and st.get("software_version") != version:
            return False
        if since is not None:
            try:
                return datetime.fromisoformat(str(st.get("since"))) >= since
            except ValueError:
                return False
        return True

    return holds


async def wait(
    broker: Broker,
    table_id: str,
    until: str,
    *,
    version: str | None = None,
    since: datetime | None = None,
    timeout: float = 600.0,
) -> JSON:
    """The table's ``state`` once it meets ``until``; TimeoutError naming what was
    last seen."""
    test = condition(until, version=version, since=since)
    async with _client(broker, table_id) as floor:
        try:
            await floor.until(lambda: test(floor.state), timeout, until)
        except TimeoutError:
            st = floor.state if isinstance(floor.state, dict) else {}
            seen = {k: st.get(k) for k in ("availability", "phase", "round_id", "maintenance",
                                            "software_version", "since")}  # fmt: skip
            raise TimeoutError(
                f"table {table_id}: {until} not seen within {timeout:g} s; last state: {seen}"
            ) from None
        return floor.state
