"""``tablectl view`` (issue 16 item 4): the pit model from MQTT messages, the web
server over a real broker, and the package boundary: the daemon never imports it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt

from firmware_host.mqtt import MqttSettings
from tableview.model import Pit
from tableview.server import ViewServer
from tests.test_tablesim_boundary import RUNTIME

ROOT = Path(__file__).resolve().parents[1]


def msg(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def test_the_pit_keeps_snapshots_rounds_once_and_ignores_requests() -> None:
    pit = Pit("casino")
    assert pit.apply("casino/tables/T1/board", msg({"message": "result"})) == "T1"
    assert pit.apply("casino/tables/T1/devices/board", msg({"state": "offline"})) == "T1"
    r = {"round_id": "T1-1", "seq": 1, "status": "settled", "bets": [], "totals": {}}
    assert pit.apply("casino/tables/T1/rounds", msg(r)) == "T1"
    assert pit.apply("casino/tables/T1/rounds", msg(r)) is None  # a QoS 1 re-delivery
    assert pit.apply("casino/tables/T1/bets/request", msg({"request_id": "x"})) is None
    assert pit.apply("other/tables/T1/board", msg({})) is None
    assert pit.apply("casino/tables/T1/state", b"not json") is None
    t = pit.to_json()["tables"][0]
    assert t["board"] == {"message": "result"} and t["devices"]["board"]["state"] == "offline"
    assert [x["round_id"] for x in t["rounds"]] == ["T1-1"]
    assert pit.apply("casino/tables/T1/board", b"") == "T1"  # retained message cleared
    assert pit.to_json()["tables"][0]["board"] is None


async def test_the_view_serves_the_page_and_streams_changes(mosquitto_broker: Any) -> None:
    ep = mosquitto_broker.endpoint
    view = ViewServer(MqttSettings(host=ep.host, port=ep.port), tables=["T9"], port=0)
    async with view:
        await view.wait_subscribed()
        async with aiohttp.ClientSession() as http:
            async with http.get(view.url) as r:
                assert r.status == 200 and "view.js" in await r.text()
            async with http.get(view.url + "static/view.js") as r:
                assert r.status == 200
            async with http.get(view.url + "events") as stream:
                first = await stream.content.readuntil(b"\n\n")
                assert first.startswith(b"event: snapshot")
                async with aiomqtt.Client(ep.host, ep.port) as pub:
                    await pub.publish(
                        "casino/tables/T9/board", msg({"message": "void"}), qos=1, retain=True
                    )
                    await pub.publish("casino/tables/T8/board", msg({"message": "x"}), qos=1)
                event = await asyncio.wait_for(stream.content.readuntil(b"\n\n"), 10)
                assert event.startswith(b"event: table")
                data = json.loads(event.split(b"data: ", 1)[1])
                assert data["table_id"] == "T9" and data["board"] == {"message": "void"}
            async with http.get(view.url + "api/tables") as r:
                tables = (await r.json())["tables"]
        assert [t["table_id"] for t in tables] == ["T9"]  # T8 is not followed


def test_tablectl_view_refuses_a_bad_listen_address() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "firmware_host", "view", "--listen", "nowhere"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "HOST:PORT" in proc.stderr and "Traceback" not in proc.stderr


def test_the_runtime_never_imports_the_view() -> None:
    """The daemon's modules never import tableview (only tablectl's subcommand list
    names it), and loading all of them loads neither tableview nor aiohttp."""
    offenders = []
    for package in RUNTIME:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "import tableview" in text or "from tableview" in text:
                offenders.append(path.relative_to(ROOT).as_posix())
    assert offenders == []
    code = (
        "import importlib, pkgutil, sys\n"
        f"for pkg in {RUNTIME!r}:\n"
        "    root = importlib.import_module(pkg)\n"
        "    for m in pkgutil.walk_packages(root.__path__, pkg + '.'):\n"
        "        if not m.name.endswith(('__main__', '.cli')):\n"
        "            importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('tableview', 'aiohttp')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
