"""Every tablectl subcommand given wrong input answers with one clear line naming what
is at fault and a non-zero exit status, never a traceback (issue 17, Deliver 1);
``--debug`` shows the traceback."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from firmware_host.cli import describe_error, main
from firmware_host.journal.errors import JournalError

ROOT = Path(__file__).resolve().parents[1]


def _files(tmp: Path) -> dict[str, str]:
    (tmp / "latin1.toml").write_bytes(b"\xff\xfe version = 1\n")
    (tmp / "deep.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    (tmp / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (tmp / "not-toml.toml").write_text("this is [ not toml\n")
    (tmp / "garbage.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    (tmp / "empty.sqlite3").write_bytes(b"")
    return {"tmp": str(tmp)}


#: (argv with {tmp}, a word the one line must contain: the thing at fault)
WRONG: list[tuple[list[str], str]] = [
    (["check-config", "{tmp}/missing.toml"], "missing.toml"),
    (["check-config", "{tmp}/latin1.toml"], "not UTF-8"),
    (["check-config", "{tmp}/deep.toml"], "nested too deeply"),
    (["check-config", "{tmp}/not-toml.toml"], "not valid TOML"),
    (["settle", "roulette", "--outcome", "{", "--bets", "[]"], "--outcome"),
    (["settle", "roulette", "--outcome", "@{tmp}/missing.json", "--bets", "[]"], "missing.json"),
    (["settle", "roulette", "--outcome", '{"number": 99}', "--bets", "[]"], "OUTCOME_INVALID"),
    (["settle", "roulette", "--outcome", "@{tmp}/deep.json", "--bets", "[]"], "nested too deeply"),
    (["settle", "roulette", "--outcome", '{"number": 1}', "--bets", '{"a": 1}'], "--bets"),
    (
        [
            "settle",
            "roulette",
            "--outcome",
            '{"number": 1}',
            "--bets",
            "[]",
            "--config",
            "{tmp}/latin1.toml",
        ],
        "latin1.toml",
    ),
    (["math", "roulette", "--config", "{tmp}/missing.toml"], "missing.toml"),
    (["math", "roulette", "--config", str(ROOT / "config" / "sicbo.toml")], "sicbo"),
    (["score", "mahjong", "--hand", "@{tmp}/hand.json"], "hand.json"),
    (["score", "mahjong", "--hand", '{"stake": "25/50"}'], "MAHJONG"),
    (["score", "roulette", "--hand", "{}"], "NOT_SUPPORTED"),
    (["run", "--config", "{tmp}/missing.toml"], "missing.toml"),
    (["run", "--config", "{tmp}/deep.toml"], "nested too deeply"),
    (["console", "--socket", "{tmp}/no.sock"], "no.sock"),
    (["status", "--socket", "{tmp}/no.sock"], "no.sock"),
    (["status", "--json", "--socket", "{tmp}/no.sock"], "no.sock"),
    (["audit", "verify", "--journal", "{tmp}/missing.sqlite3"], "missing.sqlite3"),
    (["audit", "verify", "--journal", "{tmp}/garbage.sqlite3"], "garbage.sqlite3"),
    (["audit", "events", "--journal", "{tmp}/missing.sqlite3"], "missing.sqlite3"),
    (["audit", "events", "--journal", "{tmp}/garbage.sqlite3"], "garbage.sqlite3"),
    (["decode", "cammegh-ss2", "{tmp}/missing.log"], "missing.log"),
    (["sim", "shoe-ref", "--option", "decks=abc"], "abc"),
    (["demo", "--broker", "foo://x"], "foo"),
]


@pytest.mark.parametrize(("argv", "names"), WRONG, ids=[" ".join(a[:2]) for a, _ in WRONG])
def test_wrong_input_is_one_line_without_traceback(
    argv: list[str], names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = _files(tmp_path)["tmp"]
    args = [a.replace("{tmp}", tmp) for a in argv]
    rc = main(args)
    out, err = capsys.readouterr()
    assert rc != 0, (args, out, err)
    assert "Traceback" not in out + err
    # check-config's report of a file's errors is its output; every other error is on
    # standard error
    text = out if args[0] == "check-config" else err
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines, (args, out, err)
    assert names in text, (args, text)
    assert len(lines) <= 2, text  # check-config adds its count of errors


@pytest.mark.parametrize(
    "argv",
    [["demo", "--game", "poker"], ["settle", "poker", "--outcome", "{}", "--bets", "[]"],
     ["run"], ["frobnicate"]],
)  # fmt: skip
def test_usage_errors_are_argparse_messages(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: tablectl" in err and "Traceback" not in err


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    with pytest.raises(JournalError):  # raised as it is, with its traceback
        main(["--debug", "audit", "events", "--journal", str(tmp_path)])  # a directory


def test_describe_error_names_file_and_code() -> None:
    assert describe_error(FileNotFoundError(2, "No such file or directory", "x.json")) == (
        "OS_ERROR: x.json: No such file or directory"
    )
    assert describe_error(sqlite3.DatabaseError("file is not a database")).startswith(
        "JOURNAL_ERROR:"
    )
    assert describe_error(RecursionError()).startswith("INPUT_TOO_DEEP:")
    assert "INTERNAL_ERROR: KeyError" in describe_error(KeyError("k"))
    assert json.dumps(describe_error(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad")))
