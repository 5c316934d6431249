"""Every tablectl subcommand refuses wrong input with ONE line, ``tablectl COMMAND:
error: CODE: message``, naming the flag, file, device or broker at fault, exit status
2, never a Python exception's text nor a traceback (issue 17, Deliver 1; issue 30:
one error path, every flag checked before any work starts); ``--debug`` adds the
traceback. argparse's own usage errors keep argparse's format and name the option.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
from pathlib import Path

import pytest

from firmware_host.cli import build_parser, describe_error, main

ROOT = Path(__file__).resolve().parents[1]
ROULETTE = str(ROOT / "config" / "roulette.toml")
SICBO = str(ROOT / "config" / "sicbo.toml")

#: The one line: the subcommand (``tablectl audit verify``), a code, a message.
ONE_LINE = re.compile(r"^tablectl( [a-z][a-z0-9-]*)+: error: [A-Z][A-Z0-9_]+: \S.*$")
#: What a Python exception's own text looks like; never shown to a user.
PYTHON_TEXT = re.compile(
    r"Traceback|invalid literal for|could not convert|Errno|object has no attribute|"
    r"unsupported operand|division by zero|NoneType|KeyError|TypeError|ValueError"
)


def _files(tmp: Path) -> str:
    from firmware_host.auth import generate

    (tmp / "latin1.toml").write_bytes(b"\xff\xfe version = 1\n")
    (tmp / "deep.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    (tmp / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (tmp / "not-toml.toml").write_text("this is [ not toml\n")
    (tmp / "garbage.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    (tmp / "empty.sqlite3").write_bytes(b"")
    (tmp / "table.key").write_text("ab" * 32 + "\n")  # an audit key (mode 0600)
    (tmp / "table.key").chmod(0o600)
    (tmp / "afile").write_text("a file, not a directory\n")
    (tmp / "bad-registry.toml").write_text('[tables.X]\ngame = "roulette"\nkeys = ["no.pub"]\n')
    generate("p1", tmp / "keys")  # keys/p1.key, keys/p1.pub
    # The example roulette table without its wheel: check-config refuses it, and so does
    # run --simulate (which adds no device).
    doc = Path(ROULETTE).read_text()
    doc = re.sub(r'\[devices\.wheel\]\ndriver = "cammegh-ss2"\nport = "[^"]*"\n', "", doc)
    doc = doc.replace('keys = ["keys/', f'keys = ["{ROOT}/config/keys/')
    (tmp / "no-wheel.toml").write_text(doc)
    return str(tmp)


#: (argv with {tmp} and {roulette}, the code, a word the line must hold: what is at fault)
ERRORS: list[tuple[list[str], str, str]] = [
    # check-config: a FILE that cannot be read at all is refused first
    (["check-config", "{tmp}/missing.toml"], "FILE_NOT_FOUND", "missing.toml"),
    (["check-config", "{roulette}", "{tmp}"], "NOT_A_FILE", "is a directory"),
    # settle, math, score
    (["settle", "roulette", "--outcome", "{", "--bets", "[]"], "JSON_INVALID", "--outcome"),
    (
        ["settle", "roulette", "--outcome", "@{tmp}/missing.json", "--bets", "[]"],
        "FILE_UNREADABLE",
        "missing.json",
    ),
    (
        ["settle", "roulette", "--outcome", '{"number": 99}', "--bets", "[]"],
        "OUTCOME_INVALID",
        "0..36",
    ),
    (
        ["settle", "roulette", "--outcome", "@{tmp}/deep.json", "--bets", "[]"],
        "JSON_INVALID",
        "nested too deeply",
    ),
    (
        ["settle", "roulette", "--outcome", '{"number": 1}', "--bets", '{"a": 1}'],
        "BET_MALFORMED",
        "--bets",
    ),
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
        "CONFIG_INVALID",
        "latin1.toml",
    ),
    (
        ["settle", "roulette", "--outcome", "{}", "--bets", "[]", "--config", "{tmp}/no.toml"],
        "FILE_NOT_FOUND",
        "--config",
    ),
    (["math", "roulette", "--config", "{tmp}/missing.toml"], "FILE_NOT_FOUND", "missing.toml"),
    (["math", "roulette", "--config", SICBO], "CONFIG_GAME_MISMATCH", "sicbo"),
    (["math", "roulette", "--decks", "8"], "OPTION_NOT_APPLICABLE", "--decks"),
    (["math", "stud-poker", "--decks", "8"], "OPTION_NOT_APPLICABLE", "--decks"),
    (["math", "baccarat", "--rounds", "100"], "OPTION_NOT_APPLICABLE", "--rounds"),
    (["math", "baccarat", "--decks", "0"], "INVALID_VALUE", "--decks"),
    (["math", "baccarat", "--decks", "eight"], "INVALID_VALUE", "'eight'"),
    (["score", "mahjong", "--hand", "@{tmp}/hand.json"], "FILE_UNREADABLE", "hand.json"),
    (["score", "mahjong", "--hand", '{"stake": "25/50"}'], "MAHJONG_MALFORMED", "banker"),
    (["score", "roulette", "--hand", "{}"], "NOT_SUPPORTED", "roulette"),
    # run: every option checked before the daemon starts
    (["run", "--config", "{tmp}/missing.toml"], "FILE_NOT_FOUND", "missing.toml"),
    (["run", "--config", "{tmp}/deep.toml"], "CONFIG_INVALID", "nested too deeply"),
    (["run", "--config", "{tmp}/no-wheel.toml"], "CONFIG_INVALID", "no [devices.<name>]"),
    (
        ["run", "--config", "{tmp}/no-wheel.toml", "--simulate"],
        "CONFIG_INVALID",
        "no [devices.<name>]",
    ),
    (["run", "--config", "{roulette}", "--interval", "5"], "OPTION_NOT_APPLICABLE", "--simulate"),
    (
        ["run", "--config", "{roulette}", "--simulate", "--interval", "0"],
        "INVALID_VALUE",
        "--interval",
    ),
    (
        ["run", "--config", "{roulette}", "--runtime-dir", "{tmp}/afile/run"],
        "NOT_A_DIRECTORY",
        "--runtime-dir",
    ),
    (
        ["run", "--config", "{roulette}", "--state-dir", "{tmp}/afile"],
        "NOT_A_DIRECTORY",
        "--state-dir",
    ),
    (["run", "--config", "{roulette}", "--progress", "-1"], "INVALID_VALUE", "--progress"),
    # demo
    (["demo", "--speed", "0"], "INVALID_VALUE", "--speed"),
    (["demo", "--speed", "nan"], "INVALID_VALUE", "--speed"),
    (["demo", "--rounds", "-1"], "INVALID_VALUE", "--rounds"),
    (["demo", "--bets", "x"], "INVALID_VALUE", "--bets"),
    (["demo", "--broker", "foo://x"], "INVALID_VALUE", "foo"),
    (["demo", "--broker", "mqtt://localhost:notaport"], "INVALID_VALUE", "notaport"),
    (["demo", "--broker", "mqtt://:1883"], "INVALID_VALUE", "no host"),
    # console, status
    (["console", "--socket", "{tmp}/no.sock"], "CONSOLE_UNREACHABLE", "no.sock"),
    (["console", "--hash-pin", "--socket", "x"], "OPTION_NOT_APPLICABLE", "--socket"),
    (["status", "--socket", "{tmp}/no.sock"], "CONSOLE_UNREACHABLE", "no.sock"),
    (["status", "--json", "--socket", "{tmp}/no.sock"], "CONSOLE_UNREACHABLE", "no.sock"),
    # audit
    (["audit", "verify", "--journal", "{tmp}/missing.sqlite3"], "FILE_NOT_FOUND", "--journal"),
    (["audit", "verify", "--journal", "{tmp}/garbage.sqlite3"], "AUDIT_KEY_MISSING", "audit.key"),
    (
        [
            "audit",
            "verify",
            "--journal",
            "{tmp}/garbage.sqlite3",
            "--key",
            "{tmp}/table.key",
            "--anchor",
            "nope",
        ],
        "ANCHOR_INVALID",
        "--anchor",
    ),
    (
        ["audit", "verify", "--journal", "{tmp}/garbage.sqlite3", "--anchors", "{tmp}/no.jsonl"],
        "FILE_NOT_FOUND",
        "--anchors",
    ),
    (["audit", "events", "--journal", "{tmp}/missing.sqlite3"], "FILE_NOT_FOUND", "missing"),
    (["audit", "events", "--journal", "{tmp}/garbage.sqlite3"], "JOURNAL_CORRUPT", "garbage"),
    (["audit", "events", "--journal", "{tmp}/garbage.sqlite3", "-n", "0"], "INVALID_VALUE", "-n"),
    (["audit", "init-key", "--key", "{tmp}/afile/audit.key"], "NOT_A_DIRECTORY", "--key"),
    # sim, decode
    (["decode", "cammegh-ss2", "{tmp}/missing.log"], "FILE_NOT_FOUND", "missing.log"),
    (
        ["decode", "shoe-ref", "{tmp}/afile", "--pockets", "38"],
        "OPTION_NOT_APPLICABLE",
        "--pockets",
    ),
    (["sim", "shoe-ref", "--option", "decks=abc"], "INVALID_VALUE", "'abc' is not a number"),
    (["sim", "shoe-ref", "--option", "decks"], "INVALID_VALUE", "--option"),
    (["sim", "cammegh-ss2", "--tcp", "70000"], "INVALID_VALUE", "--tcp"),
    (["sim", "cammegh-ss2", "--faults", "drop=2"], "INVALID_VALUE", "--faults"),
    (["sim", "cammegh-ss2", "--interval", "-3"], "INVALID_VALUE", "--interval"),
    (["sim", "shoe-ref", "--speed", "2"], "OPTION_NOT_APPLICABLE", "--speed"),
    # keys
    (["keys", "generate", "bad name"], "INVALID_VALUE", "principal name"),
    (["keys", "generate", "p2", "--dir", "{tmp}/afile"], "NOT_A_DIRECTORY", "--dir"),
    (["keys", "generate", "p1", "--dir", "{tmp}/keys"], "KEY_EXISTS", "p1.key"),
    (["keys", "id", "{tmp}/missing.pub"], "FILE_NOT_FOUND", "missing.pub"),
    (["keys", "id", "{tmp}/table.key"], "KEY_INVALID", "table.key"),
    (
        ["keys", "sign", "--key", "{tmp}/no.key", "--principal", "p1", "--table", "T1", "{}"],
        "FILE_NOT_FOUND",
        "--key",
    ),
    (
        ["keys", "sign", "--key", "{tmp}/table.key", "--principal", "p1", "--table", "T1", "{}"],
        "KEY_INVALID",
        "table.key",
    ),
    (
        ["keys", "sign", "--key", "{tmp}/keys/p1.key", "--principal", "p1", "--table", "T 1", "{}"],
        "INVALID_VALUE",
        "--table",
    ),
    (
        ["keys", "sign", "--key", "{tmp}/keys/p1.key", "--principal", "p1", "--table", "T1", "[1]"],
        "JSON_INVALID",
        "REQUEST",
    ),
    (
        ["keys", "seal", "--key", "{tmp}/keys/p1.key", "--topic", "a/#", "{}"],
        "INVALID_VALUE",
        "--topic",
    ),
    (["keys", "identity", "--key", "{tmp}/afile/identity.key"], "NOT_A_DIRECTORY", "--key"),
    # verify-software, software-manifest
    (["verify-software"], "SOFTWARE_NOT_CONFIGURED", "--manifest"),
    (["verify-software", "--seed", "x"], "INVALID_VALUE", "--seed"),
    (["verify-software", "--manifest", "{tmp}/afile"], "INVALID_VALUE", "--public-key"),
    (["verify-software", "--root", "{tmp}/nodir"], "FILE_NOT_FOUND", "--root"),
    (
        ["software-manifest", "--key", "{tmp}/no.key", "--out", "{tmp}/m"],
        "FILE_NOT_FOUND",
        "--key",
    ),
    # view
    (["view", "--broker", "mqtt://localhost:notaport"], "INVALID_VALUE", "--broker"),
    (["view", "--broker", "mqtt://pit:secret@h:0"], "INVALID_VALUE", "pit:***@h"),
    (["view", "--listen", "nowhere"], "INVALID_VALUE", "HOST:PORT"),
    (["view", "--max-tables", "0"], "INVALID_VALUE", "--max-tables"),
    (["view", "--table", "a/b"], "INVALID_VALUE", "--table"),
    (["view", "--registry", "{tmp}/missing.toml"], "FILE_NOT_FOUND", "--registry"),
    (["view", "--registry", "{tmp}/bad-registry.toml"], "REGISTRY_INVALID", "no.pub"),
    (["view", "--prefix", "casino/#"], "INVALID_VALUE", "--prefix"),
    (["view", "--key", "x.pub", "--table", "T1", "--table", "T2"], "KEY_INVALID", "whose key"),
    (["view", "--config", "{tmp}/latin1.toml"], "CONFIG_INVALID", "latin1.toml"),
    # floor-ingest
    (["floor-ingest", "run", "--broker", "mqtts://x"], "INVALID_VALUE", "--broker"),
    (
        ["floor-ingest", "run", "--db", "{tmp}/nodir/floor.sqlite3"],
        "NOT_A_DIRECTORY",
        "--db",
    ),
    (["floor-ingest", "run", "--db", "mysql://x/y"], "INVALID_VALUE", "--db"),
    (["floor-ingest", "run", "--batch-max", "0"], "INVALID_VALUE", "--batch-max"),
    (["floor-ingest", "run", "--gap-grace", "-1"], "INVALID_VALUE", "--gap-grace"),
    (["floor-ingest", "run", "--worker", "a/b"], "INVALID_VALUE", "--worker"),
    (["floor-ingest", "run", "--key", "{tmp}/no.key"], "FILE_NOT_FOUND", "--key"),
    (
        ["floor-ingest", "run", "--db", "{tmp}/f.sqlite3", "--registry", "{tmp}/bad-registry.toml"],
        "REGISTRY_INVALID",
        "--registry",
    ),
    (["floor-ingest", "status", "--db", "{tmp}/missing.sqlite3"], "FILE_NOT_FOUND", "--db"),
    (
        ["floor-ingest", "status", "--db", "postgresql://ingest:pw@127.0.0.1:1/floor"],
        "DATABASE_ERROR",
        "ingest:***@127.0.0.1:1",
    ),
    (
        ["floor-ingest", "anchors", "--db", "{tmp}/empty.sqlite3", "--table", "T1"],
        "NOT_FOUND",
        "--table T1",
    ),
    (
        [
            "floor-ingest",
            "quarantine",
            "release",
            "--db",
            "{tmp}/empty.sqlite3",
            "--sha256",
            "xyz",
            "--by",
            "me",
            "--reason",
            "r",
        ],
        "INVALID_VALUE",
        "--sha256",
    ),
    (
        [
            "floor-ingest",
            "quarantine",
            "release",
            "--db",
            "{tmp}/empty.sqlite3",
            "--sha256",
            "0" * 64,
            "--by",
            "me",
            "--reason",
            "r",
        ],
        "RELEASE_REFUSED",
        "no quarantined message",
    ),
    (
        [
            "floor-ingest",
            "registry",
            "import",
            "{tmp}/bad-registry.toml",
            "--db",
            "{tmp}/f.sqlite3",
        ],
        "REGISTRY_INVALID",
        "no.pub",
    ),
    # provision, rollout (the floor's fleet tooling, issue 35)
    (["provision", "{tmp}/missing.csv", "--floor", "{roulette}", "--keys", "{tmp}",
      "--out", "{tmp}/out"], "FILE_NOT_FOUND", "missing.csv"),
    (["rollout", "wait", "--broker", "mqtt://127.0.0.1:1", "--table", "T", "--until", "ready",
      "--timeout", "0"], "INVALID_VALUE", "--timeout"),
    (["rollout", "wait", "--broker", "mqtt://127.0.0.1:1", "--table", "T", "--until", "ready",
      "--since", "yesterday"], "INVALID_VALUE", "--since"),
]


def _args(argv: list[str], tmp: str) -> list[str]:
    return [a.replace("{tmp}", tmp).replace("{roulette}", ROULETTE) for a in argv]


@pytest.mark.parametrize(
    ("argv", "code", "names"), ERRORS, ids=[" ".join(a[:3]) for a, _, _ in ERRORS]
)
def test_wrong_input_is_one_line_with_its_code_and_exit_2(
    argv: list[str], code: str, names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args(argv, _files(tmp_path))
    rc = main(args)
    out, err = capsys.readouterr()
    assert rc == 2, (args, out, err)
    assert out == "", (args, out)
    lines = err.splitlines()
    assert len(lines) == 1, (args, err)
    line = lines[0]
    assert ONE_LINE.match(line), line
    assert line.startswith(f"tablectl {args[0]}"), line
    assert f": error: {code}: " in line, line
    assert names in line, line
    assert not PYTHON_TEXT.search(line), line
    assert "secret" not in line and ":pw@" not in line  # a broker's password never shown


def test_the_table_covers_every_subcommand() -> None:
    """At least 30 wrong inputs, and every subcommand that takes input has some."""
    assert len(ERRORS) >= 30
    covered = {a[0] for a, _, _ in ERRORS}
    subs = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(subs) - covered == {"completion"}  # its one argument is a choice


def test_nested_subcommands_are_named_in_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "events", "--journal", str(tmp_path / "none.sqlite3")]) == 2
    assert capsys.readouterr().err.startswith("tablectl audit events: error: FILE_NOT_FOUND: ")
    assert main(["floor-ingest", "run", "--batch-max", "0"]) == 2
    assert capsys.readouterr().err.startswith("tablectl floor-ingest run: error: INVALID_VALUE: ")


def test_every_number_option_is_checked() -> None:
    """No option of any subcommand takes a bare int() or float(): each number goes
    through a check that says which flag and what it must be (cliargs.number)."""
    bare: list[str] = []

    def walk(p: argparse.ArgumentParser) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sp in action.choices.values():
                    walk(sp)
            elif action.type in (int, float) and not action.choices:
                bare.append(f"{p.prog} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser())
    assert bare == []


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["check-config", "{tmp}/latin1.toml"], "not UTF-8"),
        (["check-config", "{tmp}/deep.toml"], "nested too deeply"),
        (["check-config", "{tmp}/not-toml.toml"], "not valid TOML"),
        (["check-config", "{tmp}/no-wheel.toml"], "no [devices.<name>] section has a wheel"),
    ],
)
def test_check_config_reports_a_files_errors_on_its_output(
    argv: list[str], text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check-config's verdict on a file it can read is its report (every error with its
    path, then the count; exit 1), as documented; not an error of the command line."""
    args = _args(argv, _files(tmp_path))
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert err == "" and text in out and out.splitlines()[-1].endswith("error(s)")


def test_an_unreadable_journal_is_the_audits_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """audit verify on a journal it cannot read: the audit FAILED (exit 1, its verdict,
    as a row that fails), in one line naming the journal."""
    tmp = _files(tmp_path)
    rc = main(["audit", "verify", "--journal", f"{tmp}/garbage.sqlite3", "--key",
               f"{tmp}/table.key"])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 1 and out == ""
    assert err.count("\n") == 1 and "audit FAILED" in err and "garbage.sqlite3" in err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["demo", "--game", "poker"], "--game"),
        (["settle", "poker", "--outcome", "{}", "--bets", "[]"], "game"),
        (["run"], "--config"),
        (["frobnicate"], "COMMAND"),
        (["decode", "cammegh-ss2", "--pockets", "40"], "--pockets"),
        (["completion", "zsh"], "shell"),
        (["math", "roulette", "--frobs", "2"], "--frobs"),
    ],
)
def test_usage_errors_are_argparse_messages_naming_the_option(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: tablectl" in err and "Traceback" not in err
    assert flag in err.splitlines()[-1], err


def test_debug_adds_the_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tmp = _files(tmp_path)
    rc = main(["--debug", "audit", "events", "--journal", f"{tmp}/garbage.sqlite3"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "Traceback (most recent call last)" in err and "firmware_host/journal" in err
    assert err.splitlines()[-1].startswith("tablectl audit events: error: JOURNAL_CORRUPT: ")
    # a flag refused as the command line is read, too
    assert main(["--debug", "demo", "--speed", "0"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("tablectl demo: error: ")


def test_a_bug_is_an_internal_error_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from firmware_host.subcommands import rules

    def boom(*_: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(rules, "_money_lines", boom)
    assert main(["math", "roulette"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ONE_LINE.match(err.strip())
    assert "INTERNAL_ERROR: a bug" in err and "--debug" in err


def test_describe_error_names_file_and_code() -> None:
    assert describe_error(FileNotFoundError(2, "No such file or directory", "x.json")) == (
        "OS_ERROR: x.json: No such file or directory"
    )
    assert describe_error(sqlite3.DatabaseError("file is not a database")).startswith(
        "JOURNAL_ERROR:"
    )
    assert describe_error(RecursionError()).startswith("INPUT_TOO_DEEP:")
    assert "INTERNAL_ERROR: a bug: KeyError" in describe_error(KeyError("k"))
    assert describe_error(ValueError("invalid literal for int() with base 10: 'x'")) == (
        "INVALID_VALUE: 'x' is not a number"
    )
    assert json.dumps(describe_error(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad")))


def test_the_readme_documents_the_format_and_every_code() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "`tablectl COMMAND: error: CODE: message`" in readme
    assert "tablectl: error: CODE" not in readme
    modules = [
        ROOT / "tablecommon" / "cliargs.py",
        *sorted((ROOT / "firmware_host" / "subcommands").glob("*.py")),
        ROOT / "drivers" / "cli.py",
        ROOT / "tableview" / "cli.py",
        ROOT / "flooringest" / "cli.py",
    ]
    codes: set[str] = set()
    for path in modules:
        text = path.read_text()
        codes |= set(re.findall(r'code="([A-Z][A-Z0-9_]+)"', text))
        codes |= set(re.findall(r'BadValue\([^)]*?"([A-Z][A-Z0-9_]+)"\)', text, re.S))
    assert {"INVALID_VALUE", "OPTION_NOT_APPLICABLE", "FILE_NOT_FOUND"} <= codes
    missing = sorted(c for c in codes if f"`{c}`" not in readme)
    assert missing == [], f"codes not in README.md: {missing}"
