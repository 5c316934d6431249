"""The device end of a reflink profile, sans-I/O: what a simulator (or firmware) does.

A :class:`DeviceModel` answers the host's requests (``handle`` is the link's
responder, its return value rides back in the ACK) and queues its own messages
(events) in ``outbox``; a runner moves them to the link. The common messages
(HELLO, PING) are answered here so each profile only writes its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .messages import LINK_VERSION, Message, MessageError, Profile, RefusedReason, Sender


class Refuse(Exception):
    """Raised by a model's request handler to answer REFUSED."""

    def __init__(self, reason: RefusedReason, text: str) -> None:
        super().__init__(text)
        self.reason = reason
        self.text = text


class DeviceModel:
    """Base of the simulated devices: common messages, outbox, conditions."""

    profile: Profile
    vendor = "reference"
    model = "simulator"
    firmware = "1.0"

    def __init__(self) -> None:
        self.outbox: list[bytes] = []
        self.on_output: Callable[[], None] | None = None
        self.requests: list[Message] = []
        self.refused = 0

    # -- to the host ---------------------------------------------------------------
    def emit(self, name: str, **values: Any) -> bytes:
        payload = self.profile.encode(name, **values)
        self.outbox.append(payload)
        if self.on_output is not None:
            self.on_output()
        return payload

    def take_outbox(self) -> list[bytes]:
        out, self.outbox = self.outbox, []
        return out

    # -- from the host -------------------------------------------------------------
    def handle(self, address: int, payload: bytes) -> bytes:
        """The link responder: the ACK payload answering one DATA frame from the host."""
        try:
            msg = self.profile.decode(payload, Sender.HOST)
        except MessageError as exc:
            self.refused += 1
            reason = (
                RefusedReason.UNKNOWN_REQUEST
                if payload and payload[0] not in self.profile.by_id
                else RefusedReason.BAD_ARGUMENT
            )
            return self.profile.encode(
                "REFUSED",
                request=payload[0] if payload else 0,
                reason=int(reason),
                text=str(exc)[:120],
            )
        self.requests.append(msg)
        if msg.name == "HELLO":
            p = self.profile
            return p.encode(
                "IDENT",
                link_version=LINK_VERSION,
                profile=p.profile_id,
                major=p.major,
                minor=p.minor,
                vendor=self.vendor,
                model=self.model,
                firmware=self.firmware,
            )
        if msg.name == "PING":
            return self.profile.encode("STATUS", conditions=self.conditions())
        try:
            return self.on_request(msg)
        except Refuse as exc:
            self.refused += 1
            return self.profile.encode(
                "REFUSED", request=msg.defn.type_id, reason=int(exc.reason), text=exc.text[:120]
            )

    def on_request(self, msg: Message) -> bytes:
        """Carry out a profile request; return the reply payload (b"" for a bare ACK)."""
        raise Refuse(RefusedReason.UNKNOWN_REQUEST, f"{msg.name} not supported")

    def conditions(self) -> int:
        """The STATUS bit set of active conditions."""
        return 0
