"""TLS and credentials against mosquitto: a CA, a server certificate and a client
certificate generated with openssl for the test, a password file from mosquitto_passwd."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from _mqtt_support import Collector, Received, play_round

from firmware_host.journal import Journal
from firmware_host.mqtt import FloorLink, MqttSettings
from tablesim.broker import MosquittoProcess, find_mosquitto

pytestmark = [pytest.mark.mosquitto]

ROOT = "casino/tables/t1"


def _need_tools() -> None:
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    for tool in ("openssl", "mosquitto_passwd"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")


def _run(*cmd: str, cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_tools()
    d = tmp_path_factory.mktemp("pki")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _run("openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
         "-subj", "/CN=tablectl-test-ca", cwd=d)  # fmt: skip
    for name, cn, ext in (
        ("server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
        ("client", "tablectl-t1", "extendedKeyUsage=clientAuth"),
    ):
        _run(
            "openssl",
            "req",
            *ec,
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN={cn}",
            cwd=d,
        )
        (d / f"{name}.ext").write_text(ext + "\n")
        _run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=d)  # fmt: skip
    _run("mosquitto_passwd", "-c", "-b", "passwd", "table-t1", "correct horse", cwd=d)
    (d / "table.pw").write_text("correct horse\n")
    (d / "wrong.pw").write_text("battery staple\n")
    return d


def tls_broker(tmp_path: Path, pki: Path, *, client_cert: bool) -> MosquittoProcess:
    conf = [
        f"cafile {pki / 'ca.crt'}",
        f"certfile {pki / 'server.crt'}",
        f"keyfile {pki / 'server.key'}",
        f"password_file {pki / 'passwd'}",
        f"require_certificate {'true' if client_cert else 'false'}",
    ]
    b = MosquittoProcess(
        tmp_path / "mosq", persistence=False, allow_anonymous=False, extra_config="\n".join(conf)
    )
    b.start()
    return b


def floor_tls(pki: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
    return ctx


async def _collect(b: Any, pki: Path) -> Collector:
    class TlsCollector(Collector):
        async def _run(self) -> None:
            while True:
                try:
                    async with aiomqtt.Client(
                        self.host, self.port, identifier=self.client_id, username="table-t1",
                        password="correct horse", tls_context=floor_tls(pki),
                    ) as c:  # fmt: skip
                        await c.subscribe(self.topic_filter, qos=1)
                        self._connected.set()
                        async for m in c.messages:
                            self.messages.append(
                                Received(m.topic.value, bytes(m.payload), bool(m.retain), 0.0)
                            )
                except aiomqtt.MqttError:
                    await asyncio.sleep(0.05)

    return await TlsCollector(b.host, b.port, f"{ROOT}/rounds", "floor-tls", True).start()


async def test_tls_with_ca_and_password_file_delivers_rounds(tmp_path: Path, pki: Path) -> None:
    b = tls_broker(tmp_path, pki, client_cert=False)
    try:
        s = MqttSettings(host="127.0.0.1", port=b.port, tls=True, tls_ca=str(pki / "ca.crt"),
                         username="table-t1", password_file=str(pki / "table.pw"))  # fmt: skip
        col = await _collect(b, pki)
        with Journal(tmp_path / "j.sqlite3") as j:
            async with FloorLink(s, "t1", j.outbox) as link:
                ids = [play_round(j) for _ in range(5)]
                await link.wait_idle(15)
            await col.wait_for(lambda: len(col.messages) >= 5, what="rounds over TLS")
            assert [m.json()["round_id"] for m in col.messages] == ids
        await col.stop()
    finally:
        b.close()


@pytest.mark.parametrize(
    ("case", "expect"),
    [
        ("wrong password", "not authori"),
        ("unknown CA", "certificate verify failed"),
    ],
)
async def test_bad_credentials_or_untrusted_broker_never_connect(
    tmp_path: Path, pki: Path, case: str, expect: str
) -> None:
    b = tls_broker(tmp_path, pki, client_cert=False)
    try:
        if case == "wrong password":
            s = MqttSettings(host="127.0.0.1", port=b.port, tls=True, tls_ca=str(pki / "ca.crt"),
                             username="table-t1", password_file=str(pki / "wrong.pw"),
                             reconnect_min_ms=20, reconnect_max_ms=50)  # fmt: skip
        else:  # system CAs do not know the test CA
            s = MqttSettings(host="127.0.0.1", port=b.port, tls=True, username="table-t1",
                             password_file=str(pki / "table.pw"), reconnect_min_ms=20, reconnect_max_ms=50)  # fmt: skip
        with Journal(tmp_path / "j.sqlite3") as j:
            async with FloorLink(s, "t1", j.outbox) as link:
                play_round(j)
                await asyncio.sleep(0.6)
                assert not link.connected and link.stats.connects == 0
                assert link.stats.connect_failures >= 2
                assert expect in link.stats.last_error.lower(), link.stats.last_error
                assert j.outbox.pending_count() == 3  # the round and its two anchors
    finally:
        b.close()


async def test_insecure_flag_skips_verification_for_tests(tmp_path: Path, pki: Path) -> None:
    b = tls_broker(tmp_path, pki, client_cert=False)
    try:
        s = MqttSettings(host="127.0.0.1", port=b.port, tls=True, tls_insecure=True,
                         username="table-t1", password_file=str(pki / "table.pw"))  # fmt: skip
        with Journal(tmp_path / "j.sqlite3") as j:
            async with FloorLink(s, "t1", j.outbox) as link:
                await link.wait_connected(10)
    finally:
        b.close()


async def test_client_certificate_is_required_and_used(tmp_path: Path, pki: Path) -> None:
    b = tls_broker(tmp_path, pki, client_cert=True)
    try:
        base = {"host": "127.0.0.1", "port": b.port, "tls": True, "tls_ca": str(pki / "ca.crt"),
                "username": "table-t1", "password_file": str(pki / "table.pw"),
                "reconnect_min_ms": 20, "reconnect_max_ms": 50, "connect_timeout_ms": 300}  # fmt: skip
        with Journal(tmp_path / "j.sqlite3") as j:
            async with FloorLink(MqttSettings(**base), "t1", j.outbox) as link:
                await asyncio.sleep(0.8)
                assert not link.connected and link.stats.connect_failures >= 1
            s = MqttSettings(
                **base, tls_cert=str(pki / "client.crt"), tls_key=str(pki / "client.key")
            )
            async with FloorLink(s, "t1", j.outbox) as link:
                await link.wait_connected(10)
    finally:
        b.close()
