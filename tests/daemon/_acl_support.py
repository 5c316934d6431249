"""Brokers with accounts and access control for the tests, and a probe client.

- :func:`acl_broker`: mosquitto with a password file (``mosquitto_passwd``) and an
  ``acl_file``; :func:`dynsec_broker`: mosquitto with its dynamic-security plugin
  (roles whose ACL also refuses SUBSCRIBE, which ``acl_file`` never does: it grants
  every subscription and filters at delivery).
- :class:`Probe`: a paho client (MQTT 5 or 3.1.1) that reports what the broker said:
  the PUBACK reason code of each QoS 1 publication, the SUBACK codes, and what it
  received.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from tablesim.broker import MosquittoProcess, find_mosquitto

REPO = Path(__file__).resolve().parents[2]
ACL_EXAMPLE = REPO / "config" / "broker" / "acl.example"
FLOOR_CONF = REPO / "config" / "broker" / "mosquitto-floor.conf"


def shipped_limits() -> dict[str, int | None]:
    """``max_queued_messages`` and ``max_inflight_messages`` as the shipped floor
    broker configuration sets them (None: not set, mosquitto's default)."""
    found: dict[str, int | None] = {"max_queued_messages": None, "max_inflight_messages": None}
    for line in FLOOR_CONF.read_text().splitlines():
        key, _, value = line.partition("#")[0].strip().partition(" ")
        if key in found:
            found[key] = int(value)
    return found


#: The queue limits the link is tried under (``MosquittoProcess`` keywords): how mosquitto
#: answers a refused publication, and the Receive Maximum it announces, depend on them.
BROKER_LIMITS: dict[str, dict[str, int | None]] = {
    # No limits (the tests' default): mosquitto closes the connection after a refusal.
    "unlimited": {"max_queued_messages": 0, "max_inflight_messages": 0},
    # mosquitto's defaults (1000 queued, 20 in flight): it keeps the connection.
    "defaults": {"max_queued_messages": None, "max_inflight_messages": None},
    # config/broker/mosquitto-floor.conf.
    "shipped": shipped_limits(),
    # Small: 2 queued, 2 in flight (a Receive Maximum of 2, below the link's window).
    "small": {"max_queued_messages": 2, "max_inflight_messages": 2},
}
DYNSEC_PLUGIN_PATHS = (
    "/usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so",
    "/usr/lib/aarch64-linux-gnu/mosquitto_dynamic_security.so",
    "/usr/lib/arm-linux-gnueabihf/mosquitto_dynamic_security.so",
    "/usr/lib/mosquitto_dynamic_security.so",
    "/usr/local/lib/mosquitto_dynamic_security.so",
)


def need_mosquitto_tools() -> None:
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    if shutil.which("mosquitto_passwd") is None:
        pytest.skip("mosquitto_passwd is not installed")


def write_passwd(directory: Path, users: Mapping[str, str]) -> Path:
    """A mosquitto password file for ``users`` (name -> password)."""
    path = directory / "passwd"
    path.unlink(missing_ok=True)
    for i, (name, pw) in enumerate(users.items()):
        args = ["mosquitto_passwd", "-b"] + (["-c"] if i == 0 else []) + [str(path), name, pw]
        subprocess.run(args, check=True, capture_output=True)
    return path


def acl_broker(
    directory: Path, acl_text: str, users: Mapping[str, str], **limits: int | None
) -> MosquittoProcess:
    """mosquitto on loopback with ``users`` and the ACL ``acl_text`` (started);
    ``limits``: its ``max_queued_messages`` / ``max_inflight_messages`` (0 unless given)."""
    directory.mkdir(parents=True, exist_ok=True)
    passwd = write_passwd(directory, users)
    acl = directory / "acl"
    acl.write_text(acl_text)
    b = MosquittoProcess(
        directory / "mosq",
        persistence=False,
        allow_anonymous=False,
        extra_config=f"password_file {passwd}\nacl_file {acl}\nset_tcp_nodelay true",
        **limits,
    )
    b.start()
    return b


def reload_broker(broker: MosquittoProcess) -> None:
    """SIGHUP: mosquitto reads its password and ACL files again."""
    assert broker.proc is not None
    broker.proc.send_signal(1)
    time.sleep(0.3)


def dynsec_plugin() -> str | None:
    for p in DYNSEC_PLUGIN_PATHS:
        if os.path.exists(p):
            return p
    return None


def _dynsec_password(password: str, salt: bytes, iterations: int = 101) -> str:
    # mosquitto's dynamic security: PBKDF2-HMAC-SHA512, 64 bytes, base64 (as
    # ``mosquitto_ctrl dynsec init`` writes it).
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations, 64)
    return base64.b64encode(digest).decode()


def dynsec_broker(
    directory: Path,
    clients: Mapping[str, tuple[str, str]],
    roles: Mapping[str, Iterable[tuple[str, str]]],
) -> MosquittoProcess:
    """mosquitto with the dynamic-security plugin: ``clients`` name -> (password,
    role), ``roles`` name -> [(acltype, topic)] allowed (everything else denied)."""
    plugin = dynsec_plugin()
    if plugin is None:
        pytest.skip("mosquitto's dynamic security plugin is not installed")
    directory.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "defaultACLAccess": {
            "publishClientSend": False,
            "publishClientReceive": True,
            "subscribe": False,
            "unsubscribe": True,
        },
        "clients": [],
        "roles": [
            {
                "rolename": name,
                "acls": [
                    {"acltype": t, "topic": topic, "allow": True, "priority": 0}
                    for t, topic in acls
                ],
            }
            for name, acls in roles.items()
        ],
    }
    for i, (name, (pw, role)) in enumerate(clients.items()):
        salt = bytes([i + 1]) * 12
        doc["clients"].append(
            {
                "username": name,
                "password": _dynsec_password(pw, salt),
                "salt": base64.b64encode(salt).decode(),
                "iterations": 101,
                "roles": [{"rolename": role}],
            }
        )
    path = directory / "dynsec.json"
    path.write_text(json.dumps(doc))
    b = MosquittoProcess(
        directory / "mosq",
        persistence=False,
        allow_anonymous=False,
        extra_config=f"plugin {plugin}\nplugin_opt_config_file {path}\nset_tcp_nodelay true",
    )
    b.start()
    return b


class Probe:
    """A blocking paho client that records what the broker answers."""

    def __init__(
        self, broker: MosquittoProcess, user: str, password: str, *, v5: bool = True
    ) -> None:
        self.v5 = v5
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"probe-{user}-{time.monotonic_ns()}",
            protocol=mqtt.MQTTv5 if v5 else mqtt.MQTTv311,
        )
        self.client.username_pw_set(user, password)
        # mosquitto 2.0 closes the connection after refusing a publication: come back
        # at once (paho waits 1 s by default).
        self.client.reconnect_delay_set(min_delay=0.01, max_delay=0.05)  # type: ignore[arg-type]
        self._acks: dict[int, Any] = {}
        self._subacks: dict[int, list[Any]] = {}
        self.received: list[tuple[str, bytes]] = []
        self._cond = threading.Condition()
        self.connect_rc: Any = None
        c = self.client
        c.on_connect = self._on_connect
        c.on_publish = self._on_publish
        c.on_subscribe = self._on_subscribe
        c.on_message = self._on_message
        c.connect(broker.host, broker.port, keepalive=30)
        c.loop_start()
        with self._cond:
            self._cond.wait_for(lambda: self.connect_rc is not None, 5)

    @property
    def connected(self) -> bool:
        return self.connect_rc is not None and not self.connect_rc.is_failure

    def _on_connect(self, client: Any, userdata: Any, flags: Any, rc: Any, props: Any) -> None:
        with self._cond:
            self.connect_rc = rc
            self._cond.notify_all()

    def _on_publish(self, client: Any, userdata: Any, mid: int, rc: Any, props: Any) -> None:
        with self._cond:
            self._acks[mid] = rc
            self._cond.notify_all()

    def _on_subscribe(self, client: Any, userdata: Any, mid: int, rcs: Any, props: Any) -> None:
        with self._cond:
            self._subacks[mid] = list(rcs)
            self._cond.notify_all()

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        with self._cond:
            self.received.append((msg.topic, bytes(msg.payload)))
            self._cond.notify_all()

    def publish(self, topic: str, payload: bytes = b"x", *, retain: bool = False) -> Any:
        """The PUBACK's reason code (always success on MQTT 3.1.1)."""
        info = self.client.publish(topic, payload, qos=1, retain=retain)
        with self._cond:
            assert self._cond.wait_for(lambda: info.mid in self._acks, 5), f"no PUBACK for {topic}"
            return self._acks.pop(info.mid)

    def subscribe(self, *topics: str) -> list[Any]:
        """The SUBACK's codes, one per topic."""
        _, mid = self.client.subscribe([(t, 1) for t in topics])
        with self._cond:
            assert self._cond.wait_for(lambda: mid in self._subacks, 5), "no SUBACK"
            return self._subacks.pop(mid)

    def wait_received(self, n: int, timeout: float = 2.0) -> None:
        with self._cond:
            self._cond.wait_for(lambda: len(self.received) >= n, timeout)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
