"""Issue 28 item 2: the floor's registry of tables (``flooringest/registry.py``): a
TOML file of tables and their public keys, checked whole, every problem one line
naming the file, the table and the member; ``floor-ingest registry import|list``."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from firmware_host.auth.keys import key_id, public_pem
from firmware_host.cliargs import CliError
from flooringest.registry import RegistryError, load_file


def key_file(path: Path) -> Ed25519PrivateKey:
    k = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(public_pem(k.public_key()))
    return k


def test_a_registry_file_with_a_rotation(tmp_path: Path) -> None:
    a = key_file(tmp_path / "keys" / "MO-R-07.pub")
    a2 = key_file(tmp_path / "keys" / "MO-R-07.next.pub")
    b = key_file(tmp_path / "keys" / "MO.B.01.pub")
    f = tmp_path / "tables.toml"
    f.write_text(
        "[tables.MO-R-07]\n"
        'game = "roulette"\n'
        'keys = ["keys/MO-R-07.pub", "keys/MO-R-07.next.pub"]\n'
        'pit = "pit-2"\n'
        '[tables."MO.B.01"]\n'
        'game = "baccarat"\n'
        f'keys = ["{tmp_path / "keys" / "MO.B.01.pub"}"]\n'  # an absolute path
    )
    reg = load_file(f)
    assert set(reg.tables) == {"MO-R-07", "MO.B.01"} and len(reg) == 2
    e = reg.tables["MO-R-07"]
    assert (e.game, e.pit) == ("roulette", "pit-2")
    assert e.key_ids == (key_id(a.public_key()), key_id(a2.public_key()))
    assert reg.keys("MO.B.01") is not None and reg.keys("FAKE-99") is None
    assert "MO-R-07" in reg and "FAKE-99" not in reg
    raw = b.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    keys = reg.keys("MO.B.01") or ()
    assert [k.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            for k in keys] == [raw]  # fmt: skip
    # The same content, the same digest (what the workers compare).
    assert load_file(f).digest == reg.digest


def test_an_empty_registry_knows_no_table(tmp_path: Path) -> None:
    f = tmp_path / "tables.toml"
    f.write_text("# no table yet\n")
    reg = load_file(f)
    assert len(reg) == 0 and reg.keys("MO-R-07") is None


def test_every_problem_is_one_line_naming_file_table_and_member(tmp_path: Path) -> None:
    k = key_file(tmp_path / "k1.pub")
    (tmp_path / "k2.pub").write_bytes(
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    (tmp_path / "k3.pub").write_text("not a key")
    key_file(tmp_path / "k4.pub")
    key_file(tmp_path / "k5.pub")
    del k
    f = tmp_path / "tables.toml"
    f.write_text(
        "colour = 1\n"
        "[tables.A-1]\n"  # no game
        'keys = ["k1.pub"]\n'
        "[tables.B-1]\n"
        'game = "roulette"\n'
        'keys = ["k2.pub", "k3.pub", "k4.pub"]\n'  # three; an EC key; not a key
        'seat = "x"\n'
        "[tables.C-1]\n"
        'game = "roulette"\n'
        'keys = ["missing.pub", "k1.pub"]\n'  # a missing file; A-1's key
        '[tables."bad@id"]\n'
        'game = "roulette"\n'
        'keys = ["k5.pub"]\n'
        "[tables.D-1]\n"
        'game = "roulette"\n'
        'keys = ["k5.pub", "k5.pub"]\n'
    )
    with pytest.raises(RegistryError) as err:
        load_file(f)
    lines = err.value.lines
    name = str(f)
    assert all(line.startswith(f"{name}: ") for line in lines), lines
    assert all("\n" not in line and "Traceback" not in line for line in lines)
    expect = [
        "colour: unknown",
        "table A-1: game: missing",
        "table B-1: seat: unknown member",
        "table B-1: keys: 3 keys; at most 2",
        "table B-1: keys[0]: k2.pub: not an Ed25519 public key",
        "table B-1: keys[1]: k3.pub: not a PEM public key",
        "table C-1: keys[0]: missing.pub: cannot read the key file",
        "table C-1: keys[1]: k1.pub: the key of table A-1 too",
        "table bad@id: the table id must be",
        "table D-1: keys[1]: k5.pub: the same key twice",
    ]
    for e in expect:
        assert any(e in line for line in lines), (e, lines)
    assert len(lines) == len(expect), lines


def test_a_file_that_is_not_toml_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "tables.toml"
    f.write_text("[tables.A\n")
    with pytest.raises(RegistryError) as err:
        load_file(f)
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith(f"{f}: not valid TOML")
    with pytest.raises(RegistryError) as err:
        load_file(tmp_path / "absent.toml")
    assert err.value.lines[0].startswith(f"{tmp_path / 'absent.toml'}: cannot read")


def test_registry_import_and_list_commands(tmp_path: Path) -> None:
    from flooringest.cli import cmd_registry_import, cmd_registry_list

    key_file(tmp_path / "keys" / "MO-R-07.pub")
    f = tmp_path / "tables.toml"
    f.write_text('[tables.MO-R-07]\ngame = "roulette"\nkeys = ["keys/MO-R-07.pub"]\n')
    db = str(tmp_path / "floor.sqlite3")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cmd_registry_import(argparse.Namespace(file=str(f), db=db)) == 0
        assert cmd_registry_list(argparse.Namespace(db=db, json=False)) == 0
    text = out.getvalue()
    assert "1 tables (1 added, 0 changed, 0 removed)" in text
    assert "MO-R-07" in text and "roulette" in text and "ed25519:" in text
    # A broken file: one line naming it (exit 2), the database's registry unchanged.
    f.write_text('[tables.MO-R-07]\ngame = "roulette"\nkeys = ["keys/gone.pub"]\n')
    with pytest.raises(CliError) as refused:
        cmd_registry_import(argparse.Namespace(file=str(f), db=db))
    assert refused.value.code == "REGISTRY_INVALID"
    assert refused.value.message.startswith(f"{f}: table MO-R-07: keys[0]: keys/gone.pub:")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cmd_registry_list(argparse.Namespace(db=db, json=True))
    assert '"table_id": "MO-R-07"' in out.getvalue()
