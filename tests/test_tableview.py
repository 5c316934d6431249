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
import pytest
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from firmware_host.auth.identity import TableIdentity
from firmware_host.mqtt import MqttSettings
from tableview.caps import Caps
from tableview.model import Pit, Selection
from tableview.server import ViewServer, _Page
from tests.test_tablesim_boundary import RUNTIME

ROOT = Path(__file__).resolve().parents[1]


def msg(body: dict[str, Any], table: str = "T1") -> bytes:
    """A table's payload as it publishes it: its ``table_id``, and a signature member
    (the view accepts it, and drops it when it does not verify signatures)."""
    return json.dumps({"table_id": table, **body, "signature": "A" * 88}).encode()


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
    assert pit.apply("casino/tables/T1/state", b"[" * 5000 + b"]" * 5000) is None  # too deep
    assert pit.apply("casino/tables/T1/state", b"[" + b"[]," * 25_000 + b"[]]") is None  # too many
    t = pit.to_json()["tables"][0]
    assert t["board"] == {"table_id": "T1", "message": "result"}  # its signature dropped
    assert t["devices"]["board"]["state"] == "offline"
    assert [x["round_id"] for x in t["rounds"]] == ["T1-1"] and t["rounds"][0]["bets_count"] == 0
    # a retained message cleared carries no table id: the table keeps what it showed
    assert pit.apply("casino/tables/T1/board", b"") is None
    assert pit.to_json()["tables"][0]["board"]["message"] == "result"
    assert pit.ignored["malformed"] == 4
    assert json.loads(pit.text() + b"}") == pit.to_json()


def test_another_tables_message_never_replaces_a_tables_state() -> None:
    """Issue 29 item 7: the topic's table and the payload's ``table_id`` must agree."""
    pit = Pit("casino", selection=Selection(["MO-R-07"]))
    assert pit.apply("casino/tables/MO-R-07/state", msg({"phase": "open"}, "MO-R-07")) == "MO-R-07"
    stranger = msg({"phase": "closed", "availability": "offline"}, "FAKE-1")
    assert pit.apply("casino/tables/MO-R-07/state", stranger) is None
    no_id = json.dumps({"phase": "closed"}).encode()
    assert pit.apply("casino/tables/MO-R-07/state", no_id) is None
    assert pit.apply("casino/tables/FAKE-1/state", stranger) is None  # not followed
    assert pit.to_json()["tables"] == [
        {**pit.tables["MO-R-07"].to_json(), "state": {"table_id": "MO-R-07", "phase": "open"}}
    ]
    assert pit.ignored["table_mismatch"] == 2 and pit.ignored["not_followed"] == 1


def test_the_tables_followed_by_id_and_prefix() -> None:
    sel = Selection(["MO-R-07", "MO-B-", "SB*"])
    assert "MO-R-07" in sel and "MO-R-070" not in sel and "MO-B-03" in sel and "SB9" in sel
    assert "MO-S-01" not in sel and "MO-B-/x" not in sel and "+" not in sel
    assert sel.filters() == ["+"] and sel.describe() == "MO-R-07, MO-B-*, SB*"
    assert Selection(["T1", "T2"]).filters() == ["T1", "T2"]
    assert Selection([]).every and Selection(["*"]).every and "ANY-1" in Selection([])
    for bad in ("a/b", "#", "+", "", "-x"):
        with pytest.raises(ValueError):
            Selection([bad])


def test_3000_fake_tables_leave_the_pit_bounded() -> None:
    """Issue 29 item 7: what the view keeps is capped: tables, history, devices, bytes per
    message and per table; each message over a cap is counted, never kept."""
    caps = Caps(tables=20, history=5, devices=3, bets=4, message_bytes=4096, table_bytes=14_000)
    pit = Pit("casino", caps=caps)  # every table
    for i in range(3000):
        tid = f"FAKE-{i:04d}"
        pit.apply(f"casino/tables/{tid}/state", msg({"pad": "x" * 500}, tid))
    assert len(pit.tables) == 20 and pit.ignored["too_many_tables"] == 2980
    t = pit.tables["FAKE-0000"]
    for i in range(40):
        bets = [{"bet_id": f"b{k}", "stake": 1} for k in range(10)]
        pit.apply(
            "casino/tables/FAKE-0000/rounds", msg({"round_id": f"r{i}", "bets": bets}, "FAKE-0000")
        )
        pit.apply("casino/tables/FAKE-0000/events", msg({"kind": "x", "n": i}, "FAKE-0000"))
        pit.apply(f"casino/tables/FAKE-0000/devices/d{i}", msg({"state": "ok"}, "FAKE-0000"))
    j = t.to_json()
    assert [r["round_id"] for r in j["rounds"]] == ["r39", "r38", "r37", "r36", "r35"]
    assert len(j["rounds"][0]["bets"]) == 4 and j["rounds"][0]["bets_count"] == 10
    assert len(j["events"]) == 5 and len(j["devices"]) == 3
    assert pit.ignored["too_many_devices"] == 37
    assert pit.apply("casino/tables/FAKE-0000/board", msg({"pad": "y" * 5000}, "FAKE-0000")) is None
    assert pit.ignored["too_large"] == 1
    # a table's bytes: history makes room for the present, never the other way round
    for name in ("board", "stats", "jackpot"):
        assert pit.apply(f"casino/tables/FAKE-0000/{name}", msg({"p": "z" * 3900}, "FAKE-0000"))
    assert t.size <= caps.table_bytes and len(t.text()) <= caps.table_bytes + 200
    assert len(t.rounds) < 5  # the oldest rounds made room
    pit.apply("casino/tables/FAKE-0000/alerts", msg({"p": "z" * 3900}, "FAKE-0000"))
    assert pit.ignored["over_budget"] >= 1 and t.snapshots.get("alerts") is None
    assert len(pit.text()) <= caps.tables * (caps.table_bytes + 200)


def test_given_the_keys_only_what_each_table_signed_is_shown() -> None:
    real, other = TableIdentity.generate(), TableIdentity.generate()
    keys = {"MO-R-07": (load_pem_public_key(real.public_pem()),)}
    pit = Pit("casino", keys=keys)  # type: ignore[arg-type]
    assert pit.verifying
    state = {"table_id": "MO-R-07", "phase": "open", "schema_version": 6}
    assert pit.apply("casino/tables/MO-R-07/state", real.seal("state", state)) == "MO-R-07"
    assert pit.tables["MO-R-07"].to_json()["state"] == state  # without its signature
    forged = {**state, "phase": "closed"}
    assert pit.apply("casino/tables/MO-R-07/state", other.seal("state", forged)) is None
    unsigned = json.dumps(forged).encode()
    assert pit.apply("casino/tables/MO-R-07/state", unsigned) is None
    # signed for another topic: the board's bytes replayed as the state
    assert pit.apply("casino/tables/MO-R-07/state", real.seal("board", forged)) is None
    # a table with no key is never added to the page, signed or not
    fake = {"table_id": "FAKE-1", "phase": "open"}
    assert pit.apply("casino/tables/FAKE-1/state", other.seal("state", fake)) is None
    assert list(pit.tables) == ["MO-R-07"] and pit.ignored["unverified"] == 4
    assert pit.tables["MO-R-07"].to_json()["state"]["phase"] == "open"


async def test_the_view_serves_the_page_and_streams_changes(mosquitto_broker: Any) -> None:
    ep = mosquitto_broker.endpoint
    view = ViewServer(MqttSettings(host=ep.host, port=ep.port), tables=["T9"], port=0)
    async with view:
        await view.wait_subscribed()
        async with aiohttp.ClientSession() as http:
            # the pit page, a table's page, its board; their scripts and words
            for page, script in (("", "pit.js"), ("table/T9", "table.js"), ("board/T9", "board.js"),
                                 ("board", "board.js")):  # fmt: skip
                async with http.get(view.url + page) as r:
                    assert r.status == 200 and script in await r.text(), page
            for static in ("common.js", "pit.js", "table.js", "board.js", "link.js", "i18n.json",
                           "board.css", "view.css"):  # fmt: skip
                async with http.get(view.url + "static/" + static) as r:
                    assert r.status == 200, static
            async with http.get(view.url + "events") as stream:
                first = await stream.content.readuntil(b"\n\n")
                assert first.startswith(b"event: snapshot")
                async with aiomqtt.Client(ep.host, ep.port) as pub:
                    await pub.publish(
                        "casino/tables/T9/board", msg({"message": "void"}, "T9"), qos=1, retain=True
                    )
                    await pub.publish("casino/tables/T8/board", msg({"message": "x"}, "T8"), qos=1)
                event = await asyncio.wait_for(stream.content.readuntil(b"\n\n"), 10)
                assert event.startswith(b"event: table")
                data = json.loads(event.split(b"data: ", 1)[1])
                assert data["table_id"] == "T9"
                assert data["board"] == {"table_id": "T9", "message": "void"}
                # another table's payload on T9's topic: not taken, and the page is told
                async with aiomqtt.Client(ep.host, ep.port) as pub:
                    await pub.publish("casino/tables/T9/board", msg({"message": "x"}, "T8"), qos=1)
                event = await asyncio.wait_for(stream.content.readuntil(b"\n\n"), 10)
                assert event.startswith(b"event: link")
                link = json.loads(event.split(b"data: ", 1)[1])
                assert link["ignored"]["table_mismatch"] == 1 and "topics" not in link
            async with http.get(view.url + "api/tables") as r:
                api = await r.json()
        assert [t["table_id"] for t in api["tables"]] == ["T9"]  # T8 is not followed
        assert api["tables"][0]["board"]["message"] == "void"
        assert api["link"]["following"] == "T9" and api["link"]["verifying"] is False
        assert "casino/tables/T9/board" in api["link"]["topics"]
        # a page that reads slowly is owed each changed table once, as it is now
        page = _Page()
        view._pages.add(page)
        for _ in range(100):
            view._changed("T9")
        assert list(page.tables) == ["T9"]


def test_the_view_counts_what_its_mqtt_client_drops() -> None:
    """A flood faster than the view fills its MQTT client's queue: each message dropped
    is counted (``dropped``), not logged one by one."""
    view = ViewServer(MqttSettings(), tables=["T1"])
    for _ in range(3):
        view._mqtt_log.warning("Message queue is full. Discarding message.")
    assert view.pit.ignored["dropped"] == 3


def test_the_keys_given_to_tablectl_view(tmp_path: Path) -> None:
    from tableview.trust import key_options, registry_keys

    a, b = TableIdentity.generate(), TableIdentity.generate()
    (tmp_path / "a.pub").write_bytes(a.public_pem())
    (tmp_path / "b.pub").write_bytes(b.public_pem())
    keys = key_options([f"T1={tmp_path / 'a.pub'}", f"T1={tmp_path / 'b.pub'}"], ["T1", "T2"])
    assert list(keys) == ["T1"] and len(keys["T1"]) == 2  # a rotation: both verify
    assert list(key_options([str(tmp_path / "a.pub")], ["T1"])) == ["T1"]
    for specs, follow, why in (
        ([str(tmp_path / "a.pub")], ["T1", "T2"], "whose key"),
        ([str(tmp_path / "a.pub")], ["MO-R-"], "whose key"),
        ([f"T1={tmp_path / 'none.pub'}"], ["T1"], "cannot read"),
        ([f"a/b={tmp_path / 'a.pub'}"], ["T1"], "not a table id"),
    ):
        with pytest.raises(ValueError, match=why):
            key_options(specs, follow)
    (tmp_path / "tables.toml").write_text(
        '[tables.MO-R-07]\ngame = "roulette"\nkeys = ["a.pub"]\n'
        '[tables.MO-B-01]\ngame = "baccarat"\nkeys = ["b.pub"]\n'
    )
    assert sorted(registry_keys(str(tmp_path / "tables.toml"))) == ["MO-B-01", "MO-R-07"]
    (tmp_path / "bad.toml").write_text('[tables.X]\ngame = "roulette"\nkeys = ["nope.pub"]\n')
    with pytest.raises(ValueError, match=r"bad\.toml: table X: keys"):
        registry_keys(str(tmp_path / "bad.toml"))


def test_with_a_table_file_the_view_verifies_with_the_tables_own_key(tmp_path: Path) -> None:
    """``tablectl view --config FILE``: the table's id, and the public key beside its
    identity key ([journal]); without that file, the page says it does not verify."""
    TableIdentity.create(tmp_path / "identity.key")
    cfg = tmp_path / "table.toml"
    cfg.write_text(
        'version = 1\n[table]\nid = "MO-R-07"\ngame = "roulette"\n'
        f'[journal]\npath = "{tmp_path / "journal.sqlite3"}"\n'
    )
    for verified in (True, False):
        proc = subprocess.Popen(
            [sys.executable, "-m", "firmware_host", "view", "--config", str(cfg),
             "--broker", "mqtt://127.0.0.1:9", "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
        finally:
            proc.terminate()
            proc.wait(10)
        assert "following MO-R-07" in line
        assert ("signatures verified with the keys of 1 table" in line) == verified, line
        (tmp_path / "identity.pub").unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--listen", "nowhere"], "HOST:PORT"),
        (["--table", "a/b"], "a table id"),
        (["--max-tables", "0"], "--max-tables must be a whole number, at least 1"),
        (["--key", "x.pub", "--table", "T1", "--table", "T2"], "whose key"),
        (["--registry", "/nonexistent/tables.toml"], "/nonexistent/tables.toml: no such file"),
    ],
)
def test_tablectl_view_refuses_bad_options(args: list[str], why: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "firmware_host", "view", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and why in proc.stderr and "Traceback" not in proc.stderr


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


def test_the_pit_adds_up_each_tables_settled_rounds_once() -> None:
    """Issue 33: the pit page's handle and win, from the settled rounds the view received:
    each round once, however often delivered; a void is no handle; the figures are the
    rounds' own totals added up here."""
    pit = Pit("casino")
    rounds = [
        {"round_id": "T1-1", "status": "settled", "currency": "MOP", "minor_digits": 2,
         "totals": {"stakes": 168800, "house_net": 26200},
         "timestamps": {"opened": "2026-05-09T07:00:00.000Z", "settled": "2026-05-09T07:01:00.000Z"}},
        {"round_id": "T1-2", "status": "void", "totals": {"stakes": 5000, "house_net": 0},
         "timestamps": {"opened": "2026-05-09T07:02:00.000Z", "void": "2026-05-09T07:02:30.000Z"}},
        {"round_id": "T1-3", "status": "settled", "currency": "MOP", "minor_digits": 2,
         "totals": {"stakes": 10000, "house_net": -35000},
         "timestamps": {"opened": "2026-05-09T07:03:00.000Z", "settled": "2026-05-09T07:04:00.000Z"}},
    ]  # fmt: skip
    for r in [*rounds, rounds[0], rounds[2]]:  # two re-deliveries
        pit.apply("casino/tables/T1/rounds", msg(r))
    caps = Caps(history=1)  # the totals do not depend on the rounds kept
    small = Pit("casino", caps=caps)
    for r in rounds:
        small.apply("casino/tables/T1/rounds", msg(r))
    for p in (pit, small):
        tot = p.to_json()["tables"][0]["totals"]
        assert (tot["rounds"], tot["voids"]) == (2, 1)
        assert tot["handle"] == 168800 + 10000 and tot["win"] == 26200 - 35000
        assert (tot["first_at"], tot["last_at"]) == ("2026-05-09T07:00:00.000Z",
                                                     "2026-05-09T07:04:00.000Z")  # fmt: skip
        assert tot["currency"] == "MOP" and tot["since"]
    assert len(small.to_json()["tables"][0]["rounds"]) == 1
    # one table's stream: the others are left out
    pit.apply("casino/tables/T2/state", msg({"phase": "open"}, "T2"))
    assert [t["table_id"] for t in json.loads(pit.text("T2") + b"}")["tables"]] == ["T2"]
    assert json.loads(pit.text("T9") + b"}")["tables"] == []


def test_the_pits_handle_leaves_out_the_bankers_capital() -> None:
    """A player-banked table (Super Pan 9, P'ai Kao): the round's ``totals.stakes`` holds
    the banker's capital beside the places' bets (``bank.layers[].capital``,
    docs/rules/super-pan-9.md); the banker stakes it against the places, not with the
    house, so the pit's handle is the bets: here 45,000 + 5,000 of 1,045,000 + 5,000."""
    pit = Pit("casino")
    banked = {"round_id": "T1-1", "status": "settled", "currency": "MOP", "minor_digits": 2,
              "totals": {"stakes": 1045000, "house_net": 2300},
              "bank": {"layers": [{"capital": 1000000, "net": 42700, "who": "banker"}]},
              "timestamps": {"opened": "2026-05-09T07:00:00.000Z"}}  # fmt: skip
    plain = {"round_id": "T1-2", "status": "settled", "totals": {"stakes": 5000, "house_net": 100},
             "bank": {"layers": "not a list"}, "timestamps": {"opened": "2026-05-09T07:01:00.000Z"}}  # fmt: skip
    for r in (banked, plain):
        pit.apply("casino/tables/T1/rounds", msg(r))
    tot = pit.to_json()["tables"][0]["totals"]
    assert tot["handle"] == 45000 + 5000 and tot["win"] == 2300 + 100


def test_the_view_imports_nothing_of_the_daemons_runtime() -> None:
    """Issue 33: what the board shows comes from the table's signed topics; the view uses
    the project's shared helpers (signatures, bounded JSON, MQTT settings, progress
    lines, the command line's checks) and never the daemon's parts."""
    allowed = {
        "firmware_host.auth.evidence", "firmware_host.auth.keys", "firmware_host.auth.identity",
        "firmware_host.boundedjson", "firmware_host.mqtt", "firmware_host.progress",
        "firmware_host.cliargs", "firmware_host.config", "firmware_host.logsetup",
    }  # fmt: skip
    import ast

    found = {}
    for path in sorted((ROOT / "tableview").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ("firmware_host", "drivers", "tablesim"):
                    found.setdefault(name, path.name)
    assert set(found) <= allowed, {k: v for k, v in found.items() if k not in allowed}
    assert "firmware_host.config" not in {k for k, v in found.items() if v != "cli.py"}
