"""``tablectl provision`` (issue 35): the inventory made into every table's files and the
floor's; every table file passes ``check-config``; a second run changes nothing; a new
table adds its files; secrets are 0600; the registry is the ingest's; the broker accepts
each table with its password (real mosquitto) and holds it to its own root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from firmware_host.auth import generate
from firmware_host.auth.identity import TableIdentity
from flooringest.registry import load_file
from tablefleet.broker import password_matches, read_password_file, table_patterns
from tablefleet.inventory import InventoryError, parse

ROOT = Path(__file__).resolve().parents[2]
FLOOR = ROOT / "config" / "provision" / "floor.toml"
HEADER = "table_id,game,pit,devices,dealers\n"
#: One table of each kind of result source the inventory can say.
LINES = [
    "T-R-1,roulette,pit-1,wheel=cammegh-ss2:/dev/table-wheel,dealer-a;dealer-b",
    "T-B-1,baccarat,pit-1,shoe=shoe-ref:/dev/table-shoe;board=board-ref:/dev/table-board,dealer-a",
    "T-S-1,sicbo,pit-2,shaker=shaker-ref:/dev/table-shaker,dealer-b",
    "T-F-1,fantan,pit-2,,dealer-b",
    "T-P-1,stud-poker,pit-2,,dealer-a",
    "T-M-1,mahjong,pit-3,,dealer-c",
]


def _keys(tmp: Path) -> Path:
    d = tmp / "pubkeys"
    for name in ("pit-boss-01", "floor-pos", "attendant-01", "dealer-a", "dealer-b", "dealer-c"):
        generate(name, d)
    return d


def _provision(tmp: Path, inventory: Path, keys: Path) -> subprocess.CompletedProcess[str]:
    out = tmp / "out"
    return subprocess.run(
        [sys.executable, "-m", "firmware_host", "provision", str(inventory), "--floor", str(FLOOR),
         "--keys", str(keys), "--out", str(out), "--etc-dir", f"{out}/tables/{{table}}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode & 0o777)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_every_table_checked_a_second_run_a_no_op_a_new_table_adds(tmp_path: Path) -> None:
    keys = _keys(tmp_path)
    inv = tmp_path / "inventory.csv"
    inv.write_text(HEADER + "\n".join(LINES) + "\n")
    first = _provision(tmp_path, inv, keys)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "out"
    tables = sorted((out / "tables").glob("*/table.toml"))
    assert len(tables) == len(LINES)
    check = subprocess.run(
        [sys.executable, "-m", "firmware_host", "check-config", *map(str, tables)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(": ok (table ") == len(LINES)
    # Secrets: 0600; public files 0644.
    for t in tables:
        d = t.parent
        for secret in ("identity.key", "audit.key", "mqtt-password"):
            assert (d / secret).stat().st_mode & 0o777 == 0o600, d / secret
        assert (d / "table.toml").stat().st_mode & 0o777 == 0o644
    assert (out / "floor" / "broker" / "passwd").stat().st_mode & 0o777 == 0o600
    # A second run: nothing written, not even a file's time.
    before = _snapshot(out)
    again = _provision(tmp_path, inv, keys)
    assert again.returncode == 0, again.stderr
    assert "0 file(s) created, 0 changed" in again.stdout
    assert _snapshot(out) == before
    # A new line (inserted, not appended): its files, and the floor's files change.
    inv.write_text(HEADER + "T-X-9,roulette,pit-3,,dealer-c\n" + "\n".join(LINES) + "\n")
    third = _provision(tmp_path, inv, keys)
    assert third.returncode == 0, third.stderr
    after = _snapshot(out)
    changed = sorted(k for k in after if before.get(k) != after[k])
    new_table = [k for k in changed if k.startswith("tables/T-X-9/")]
    assert {Path(k).name for k in new_table} >= {"table.toml", "identity.key", "audit.key"}
    others = [k for k in changed if not k.startswith("tables/T-X-9/")]
    assert sorted(others) == [
        "floor/broker/acl", "floor/broker/passwd", "floor/keys/T-X-9.pub", "floor/tables.toml"
    ]  # fmt: skip
    # The registry is the ingest's, with each table's own identity key.
    reg = load_file(out / "floor" / "tables.toml")
    assert len(reg) == len(LINES) + 1 and reg.tables["T-R-1"].pit == "pit-1"
    ident = TableIdentity.load(out / "tables" / "T-R-1" / "identity.key")
    assert reg.tables["T-R-1"].key_ids == (ident.key_id,)
    # Each table's broker password verifies against the floor's password file.
    accounts = read_password_file((out / "floor" / "broker" / "passwd").read_text())
    for tid in (*[line.split(",")[0] for line in LINES], "T-X-9"):
        pw = (out / "tables" / tid / "mqtt-password").read_text().strip()
        assert password_matches(pw, accounts[tid]) and not password_matches(pw + "x", accounts[tid])


def test_a_secret_opened_up_is_closed_again_and_a_key_never_replaced(tmp_path: Path) -> None:
    keys = _keys(tmp_path)
    inv = tmp_path / "inventory.csv"
    inv.write_text(HEADER + LINES[3] + "\n")
    assert _provision(tmp_path, inv, keys).returncode == 0
    d = tmp_path / "out" / "tables" / "T-F-1"
    key = (d / "identity.key").read_bytes()
    os.chmod(d / "audit.key", 0o644)
    r = _provision(tmp_path, inv, keys)
    assert r.returncode == 0 and "1 changed" in r.stdout, r.stdout
    assert (d / "audit.key").stat().st_mode & 0o777 == 0o600
    assert (d / "identity.key").read_bytes() == key


def test_a_principal_without_its_key_is_refused_and_nothing_written(tmp_path: Path) -> None:
    keys = _keys(tmp_path)
    inv = tmp_path / "inventory.csv"
    inv.write_text(HEADER + "T-F-1,fantan,pit-2,,dealer-zz\n")
    r = _provision(tmp_path, inv, keys)
    assert r.returncode == 2
    assert "principal dealer-zz: no public key" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out" / "tables").exists()


def test_each_problem_of_an_inventory_is_one_line_naming_its_place() -> None:
    text = HEADER + (
        "T-1,roulette,pit-1,,d\n"
        "T-1,roulette,pit-1,,d\n"
        "bad id,roulette,pit-1,,d\n"
        "T-2,poker,pit 1,wheel=nope:/dev/x;junk,d@x\n"
    )
    with pytest.raises(InventoryError) as exc:
        parse(text, "inv.csv")
    lines = exc.value.lines
    assert "inv.csv: line 3: table_id: T-1 is on line 2 too" in lines
    assert any(line.startswith("inv.csv: line 4: table_id: 'bad id'") for line in lines)
    line5 = [line for line in lines if line.startswith("inv.csv: line 5:")]
    assert [line.split(": ")[2] for line in line5] == [
        "game", "pit", "devices", "devices", "dealers"
    ]  # fmt: skip
    with pytest.raises(InventoryError, match="the header must name"):
        parse("id,game\nx,y\n")


def test_the_tables_acl_lines_are_the_examples() -> None:
    """One definition of what a table may do on the broker: the example ACL (tested
    against mosquitto by tests/daemon/test_broker_acl.py) has the same pattern lines."""
    example = (ROOT / "config" / "broker" / "acl.example").read_text().splitlines()
    assert [line for line in example if line.startswith("pattern")] == table_patterns("casino")


@pytest.mark.mosquitto
def test_the_broker_takes_each_table_with_its_password_and_holds_it_to_its_root(
    tmp_path: Path,
) -> None:
    from tablesim.broker import MosquittoProcess
    from tests.daemon._acl_support import Probe

    keys = _keys(tmp_path)
    inv = tmp_path / "inventory.csv"
    inv.write_text(HEADER + "\n".join(LINES[:2]) + "\n")
    assert _provision(tmp_path, inv, keys).returncode == 0
    floor = tmp_path / "out" / "floor" / "broker"
    b = MosquittoProcess(
        tmp_path / "mosq", persistence=False, allow_anonymous=False,
        extra_config=f"password_file {floor / 'passwd'}\nacl_file {floor / 'acl'}",
        max_queued_messages=None, max_inflight_messages=None,
    )  # fmt: skip
    b.start()
    try:
        pw = (tmp_path / "out" / "tables" / "T-R-1" / "mqtt-password").read_text().strip()
        t = Probe(b, "T-R-1", pw)
        assert t.connected
        assert not t.publish("casino/tables/T-R-1/state").is_failure
        assert t.publish("casino/tables/T-B-1/state").is_failure  # another table's root
        t.close()
        wrong = Probe(b, "T-R-1", pw + "x")
        assert not wrong.connected
        wrong.close()
    finally:
        b.stop()


def test_the_runtime_never_imports_the_fleet_tooling() -> None:
    """``tablefleet`` is the floor's: the table's runtime names it only in tablectl's
    subcommand list (``firmware_host/cli.py``)."""
    import ast

    offenders = []
    for package in ("firmware_host", "drivers", "tablecommon"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                if any(n.split(".")[0] == "tablefleet" for n in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders
