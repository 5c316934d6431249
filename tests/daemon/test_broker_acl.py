"""The broker as a second wall (issue 14 item 4): the documented mosquitto ACL,
``config/broker/acl.example``, loaded as is into a real mosquitto with a password file,
and every account kind tried on every topic of two tables.

What each account may do is written out here independently of the file (a table its
own root, terminals ``bets/request`` only, a dealer its own table's commands...), so a
wrong line in the file fails the test. Publications are tried over MQTT 5 at QoS 1: the
broker's PUBACK says whether it took them (mosquitto answers 0x87 Not authorized).
Reads are tried by subscribing to ``casino/tables/#`` and having an administrator
publish once on every topic: mosquitto's ``acl_file`` grants every subscription and
filters each message at delivery, so what arrives is what the account may read.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _acl_support import ACL_EXAMPLE, Probe, acl_broker, need_mosquitto_tools

from tablesim.broker import MosquittoProcess

pytestmark = [pytest.mark.mosquitto]

R = "casino/tables/MO-R-07"  # the table of the example's dealer
B = "casino/tables/MO-B-01"  # another table
SUFFIXES = (
    "state",
    "rounds",
    "events",
    "jackpot",
    "anchor",
    "board",
    "stats",
    "limits",
    "alerts",
    "devices/wheel",
    "bets/request",
    "bets/response",
    "commands/request",
    "commands/response",
)
#: What the floor ingest publishes: its signed record of each table, its lag and faults.
REC_R, REC_B = "casino/floor/records/MO-R-07", "casino/floor/records/MO-B-01"
FLOOR = [REC_R, REC_B, "casino/floor/ingest/floor-ingest/lag",
         "casino/floor/ingest/floor-ingest/faults"]  # fmt: skip
ALL = [f"{root}/{s}" for root, s in itertools.product((R, B), SUFFIXES)] + FLOOR
OUT = ("state", "rounds", "events", "jackpot", "anchor", "board", "stats", "limits", "alerts",
       "devices/wheel", "bets/response", "commands/response")  # fmt: skip
ADMIN = "acl-test-admin@test"

USERS = {
    "MO-R-07": "pw-table-r",
    "MO-B-01": "pw-table-b",
    "pos-17@terminal": "pw-terminal",
    "dealer-MO-R-07@dealer": "pw-dealer",
    "pit-2@pit": "pw-pit",
    "floor@floor": "pw-floor",
    "floor-ingest@ingest": "pw-ingest",
    "monitor@monitor": "pw-monitor",
    ADMIN: "pw-admin",
}


def both(*suffixes: str) -> set[str]:
    return {f"{root}/{s}" for root in (R, B) for s in suffixes}


#: What each account may publish (everything else must be refused).
MAY_WRITE: dict[str, set[str]] = {
    "MO-R-07": {f"{R}/{s}" for s in OUT},
    "MO-B-01": {f"{B}/{s}" for s in OUT},
    "pos-17@terminal": both("bets/request"),
    "dealer-MO-R-07@dealer": {f"{R}/commands/request"},
    "pit-2@pit": both("commands/request"),
    "floor@floor": both("bets/request", "commands/request"),
    "floor-ingest@ingest": both("commands/request") | set(FLOOR),
    "monitor@monitor": set(),
}
#: What each account may receive (everything else must not reach it).
MAY_READ: dict[str, set[str]] = {
    "MO-R-07": {f"{R}/{s}" for s in ("bets/request", "commands/request", "state", "anchor")}
    | {REC_R},
    "MO-B-01": {f"{B}/{s}" for s in ("bets/request", "commands/request", "state", "anchor")}
    | {REC_B},
    "pos-17@terminal": both("bets/response", "state"),
    "dealer-MO-R-07@dealer": {f"{R}/commands/response", f"{R}/state", f"{R}/events"},
    "pit-2@pit": both("commands/response", "state", "events", "rounds", "jackpot"),
    "floor@floor": set(ALL),
    "floor-ingest@ingest": both("rounds", "anchor", "state", "commands/response"),
    "monitor@monitor": both(
        "state", "devices/wheel", "jackpot", "rounds", "events", "board", "stats", "limits",
        "alerts",
    )
    | set(FLOOR[2:]),
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MosquittoProcess]:
    need_mosquitto_tools()
    acl = ACL_EXAMPLE.read_text() + f"\n# test only\nuser {ADMIN}\ntopic readwrite #\n"
    b = acl_broker(tmp_path_factory.mktemp("acl"), acl, USERS)
    try:
        yield b
    finally:
        b.close()


def test_every_account_in_the_example_is_tested() -> None:
    users = [ln.split()[1] for ln in ACL_EXAMPLE.read_text().splitlines() if ln.startswith("user ")]
    assert set(users) <= set(MAY_WRITE), set(users) - set(MAY_WRITE)
    assert all("@" in u for u in users), "an account that is not a table must have '@' in its name"


@pytest.mark.parametrize("user", sorted(MAY_WRITE))
def test_what_each_account_may_publish(broker: MosquittoProcess, user: str) -> None:
    p = Probe(broker, user, USERS[user])
    try:
        assert p.connected, p.connect_rc
        accepted = {t for t in ALL if not p.publish(t).is_failure}
    finally:
        p.close()
    assert accepted == MAY_WRITE[user], (
        f"{user}: refused though allowed {sorted(MAY_WRITE[user] - accepted)}; "
        f"accepted though not allowed {sorted(accepted - MAY_WRITE[user])}"
    )


@pytest.mark.parametrize("user", sorted(MAY_READ))
def test_what_each_account_may_read(broker: MosquittoProcess, user: str) -> None:
    reader = Probe(broker, user, USERS[user])
    admin = Probe(broker, ADMIN, USERS[ADMIN])
    try:
        assert reader.connected and admin.connected
        reader.subscribe("casino/tables/#", "casino/floor/#")
        time.sleep(0.1)
        for t in ALL:
            assert not admin.publish(t, t.encode()).is_failure
        reader.wait_received(len(MAY_READ[user]), timeout=2.0)
        time.sleep(0.2)  # anything that should not have come
        got = {topic for topic, _ in reader.received}
    finally:
        reader.close()
        admin.close()
    assert got == MAY_READ[user], (
        f"{user}: not delivered though allowed {sorted(MAY_READ[user] - got)}; "
        f"delivered though not allowed {sorted(got - MAY_READ[user])}"
    )


def test_no_account_no_entry(broker: MosquittoProcess) -> None:
    """Anonymous clients and wrong passwords are refused at CONNECT."""
    for user, pw in (("", ""), ("MO-R-07", "wrong"), ("nobody@terminal", "x")):
        p = Probe(broker, user, pw)
        try:
            assert not p.connected, f"{user!r} connected"
        finally:
            p.close()


def test_a_table_cannot_forge_requests_or_reach_another_table(broker: MosquittoProcess) -> None:
    """The points of the wall, said once more in words: a table writes neither its own
    request topics nor anything under another table's root (MQTT 5 PUBACK 0x87)."""
    p = Probe(broker, "MO-R-07", USERS["MO-R-07"])
    try:
        for topic in (f"{R}/commands/request", f"{R}/bets/request", f"{B}/rounds", f"{B}/state"):
            rc = p.publish(topic)
            assert rc.is_failure and rc.value == 0x87, (topic, rc)
    finally:
        p.close()


def test_patterns_are_tied_to_the_user_name(tmp_path: Path) -> None:
    """The example's table patterns use the user name (``%u``): a table account named
    after another table id would get that root, so table accounts are named exactly
    by their table id and the example keeps no per-table ``topic`` line for tables."""
    text = ACL_EXAMPLE.read_text()
    patterns = [ln for ln in text.splitlines() if ln.startswith("pattern ")]
    assert patterns and all(
        "casino/tables/%u/" in ln or ln == "pattern read casino/floor/records/%u" for ln in patterns
    )
    assert not any(ln.startswith("user MO-") for ln in text.splitlines())


def test_a_table_reads_the_floors_record_of_it_and_cannot_write_it(
    broker: MosquittoProcess,
) -> None:
    """Issue 28: the floor's record of a table is an anchor the table cannot overwrite:
    only the ingest's account writes it (retained), the table reads its own and no
    other table's, and cannot write any record, its own included (MQTT 5 PUBACK 0x87)."""
    ingest = Probe(broker, "floor-ingest@ingest", USERS["floor-ingest@ingest"])
    table = Probe(broker, "MO-R-07", USERS["MO-R-07"])
    other = Probe(broker, "MO-B-01", USERS["MO-B-01"])
    try:
        for topic in (REC_R, REC_B, "casino/floor/ingest/floor-ingest/faults"):
            rc = table.publish(topic, b"forged", retain=True)
            assert rc.is_failure and rc.value == 0x87, (topic, rc)
        assert not ingest.publish(REC_R, b"the floor's record", retain=True).is_failure
        # Retained: read at start-up, by the table it names only.
        late = Probe(broker, "MO-R-07", USERS["MO-R-07"])
        try:
            late.subscribe(REC_R)
            late.wait_received(1)
            assert late.received == [(REC_R, b"the floor's record")]
        finally:
            late.close()
        other.subscribe("casino/floor/#")
        time.sleep(0.3)
        assert other.received == []
    finally:
        ingest.close()
        table.close()
        other.close()


def test_the_ingest_takes_rounds_through_its_shared_subscription(broker: MosquittoProcess) -> None:
    ingest = Probe(broker, "floor-ingest@ingest", USERS["floor-ingest@ingest"])
    table = Probe(broker, "MO-R-07", USERS["MO-R-07"])
    try:
        ingest.subscribe("$share/floor-ingest/casino/tables/+/rounds", "casino/tables/+/anchor")
        time.sleep(0.1)
        assert not table.publish(f"{R}/anchor", b"a").is_failure
        assert not table.publish(f"{R}/rounds", b"r").is_failure
        ingest.wait_received(2)
        assert ingest.received == [(f"{R}/anchor", b"a"), (f"{R}/rounds", b"r")]
        # It cannot publish what a table says.
        rc = ingest.publish(f"{R}/rounds", b"forged")
        assert rc.is_failure and rc.value == 0x87
    finally:
        ingest.close()
        table.close()
