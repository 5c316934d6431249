"""Issue 29: a policy that cannot be misconfigured into an open door. Each finding of
the issue, as a technician wrote it: ``tablectl check-config`` refuses it with its code
(or warns, for a role mixing duties), the daemon refuses to start with the same lines
(one code path, ``assembly.read_plan``), and ``[auth] accept_risks`` lets a table run
with a named risk, visibly (a warning, the plan's and the retained state's
``accepted_risks``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from firmware_host.assembly import read_plan
from firmware_host.cli import main
from firmware_host.config import ConfigInvalid, load_config
from firmware_host.daemon import TableDaemon
from firmware_host.journal import AuditKey
from tablesim.principals import make_principals
from tablesim.tables import to_toml

STUD = {
    "table": {"id": "P1", "game": "stud-poker", "result_source": "manual"},
    "pay_table": {"stud-poker": {"jackpot_offered": True}},
}
ROULETTE = {
    "table": {"id": "P1", "game": "roulette", "result_source": "manual"},
}
ROLES = {
    "dealer-01": ("dealer",),
    "pit-01": ("pit_supervisor",),
    "attendant-01": ("jackpot_attendant",),
    "pos": ("floor_system",),
}


def write(tmp_path: Path, base: dict[str, Any], **auth: Any) -> Path:
    """A table file with fresh principals' keys, ``auth`` merged into ``[auth]``, its
    journal (and key files) in ``tmp_path/state``."""
    principals = make_principals(tmp_path / "keys", ROLES)
    section = principals.auth_section()
    for name, spec in auth.pop("principals", {}).items():
        section["principals"][name] = {**section["principals"].get(name, {}), **spec}
    section.update(auth)
    doc = {
        "version": 1,
        **base,
        "journal": {"path": str(tmp_path / "state" / "journal.sqlite3")},
        "auth": section,
    }
    f = tmp_path / "table.toml"
    f.write_text(to_toml(doc))
    return f


def check(f: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(["check-config", str(f)])
    return rc, capsys.readouterr().out


def daemon_refuses(f: Path) -> list[str]:
    """The daemon's own refusal of ``f`` (its constructor reads the plan, no I/O)."""
    with pytest.raises(ConfigInvalid) as exc:
        TableDaemon(load_config(f))
    return exc.value.errors


def test_the_examples_pass_and_the_stud_example_keeps_two_people(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = Path(__file__).resolve().parents[2]
    rc, out = check(root / "config" / "stud-poker.toml", capsys)
    assert rc == 0 and "ROLE_MIXES_DUTIES" not in out, out


def test_one_key_shared_by_two_principals_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The finding: one public key shared by two principals; then one key holder pays a
    # jackpot that requires two people (SECOND_PRINCIPAL_REQUIRED defeated).
    write(tmp_path, STUD)  # the keys, in tmp_path/keys
    shutil.copy(tmp_path / "keys" / "pit-01.pub", tmp_path / "keys" / "copy.pub")  # same key
    f = write(
        tmp_path / "b", STUD,
        principals={"attendant-01": {"keys": [str(tmp_path / "keys" / "copy.pub")]},
                    "pit-01": {"keys": [str(tmp_path / "keys" / "pit-01.pub")]}},
    )  # fmt: skip
    rc, out = check(f, capsys)
    assert rc == 1, out
    assert "SHARED_KEY" in out and "attendant-01, pit-01" in out
    # ... which is also a two-person rule one key holder satisfies
    assert "TWO_PERSON_TOO_FEW" in out and "jackpot_paid" in out
    errors = daemon_refuses(f)
    assert [e for e in errors if "SHARED_KEY" in e or "TWO_PERSON" in e] == [
        line.split(": ", 1)[1] for line in out.splitlines() if "SHARED_KEY" in line
        or "TWO_PERSON" in line
    ]  # fmt: skip
    # Accepted in so many words: a warning, and the plan (the state) lists them.
    ok = write(
        tmp_path / "c", STUD, accept_risks=["SHARED_KEY", "TWO_PERSON_TOO_FEW"],
        principals={"attendant-01": {"keys": [str(tmp_path / "keys" / "copy.pub")]},
                    "pit-01": {"keys": [str(tmp_path / "keys" / "pit-01.pub")]}},
    )  # fmt: skip
    rc, out = check(ok, capsys)
    assert rc == 0, out
    assert "warning: auth.principals.attendant-01.keys, auth.principals.pit-01.keys: " \
        "SHARED_KEY" in out and "(accepted: [auth] accept_risks)" in out  # fmt: skip
    plan = read_plan(load_config(ok))
    assert plan.accepted_risks == ("SHARED_KEY", "TWO_PERSON_TOO_FEW") and not plan.problems
    assert len(plan.accepted_risk_lines) == 2


def test_a_two_person_rule_needs_two_people_who_may_send_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Only the pit supervisor may confirm a jackpot payment (the attendant gone): the
    # rule can be satisfied by nobody; and a command nobody may send is no open door.
    f = write(tmp_path, STUD, principals={"attendant-01": {"roles": ["observer"]}})
    rc, out = check(f, capsys)
    assert rc == 1 and "TWO_PERSON_TOO_FEW" in out and "only pit-01 may send it" in out, out
    f = write(tmp_path / "v", ROULETTE, two_person=["void_round"])
    rc, out = check(f, capsys)
    assert rc == 1 and "TWO_PERSON_TOO_FEW" in out and "void_round" in out, out
    # jackpot_paid on a table without a jackpot: refused NOT_SUPPORTED anyway, not checked
    f = write(tmp_path / "r", ROULETTE, principals={"attendant-01": {"roles": ["observer"]}})
    assert check(f, capsys)[0] == 0


def test_an_empty_two_person_list_on_a_jackpot_table_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, STUD, two_person=[])
    rc, out = check(f, capsys)
    assert rc == 1 and "auth.two_person: TWO_PERSON_OFF" in out, out
    assert any("TWO_PERSON_OFF" in e for e in daemon_refuses(f))
    # the same list on a table without a jackpot: nothing to pay, nothing to refuse
    assert check(write(tmp_path / "r", ROULETTE, two_person=[]), capsys)[0] == 0
    accepted = write(tmp_path / "a", STUD, two_person=[], accept_risks=["TWO_PERSON_OFF"])
    rc, out = check(accepted, capsys)
    assert rc == 0 and "warning: auth.two_person: TWO_PERSON_OFF" in out, out


def test_a_freshness_window_above_the_maximum_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, ROULETTE, max_age_s=3600)
    rc, out = check(f, capsys)
    assert rc == 1 and "auth.max_age_s: FRESHNESS_WINDOW_LONG: 3600 s" in out, out
    assert "at most 120 s" in out
    assert any("FRESHNESS_WINDOW_LONG" in e for e in daemon_refuses(f))
    assert check(write(tmp_path / "ok", ROULETTE, max_age_s=120), capsys)[0] == 0


def test_a_dealer_role_that_voids_pays_and_bets_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The finding: a dealer role given void, jackpot_paid and place.
    dealer = ["open_betting", "close_betting", "result", "void_round", "jackpot_paid", "place"]
    f = write(tmp_path, ROULETTE, roles={"dealer": dealer})
    rc, out = check(f, capsys)
    assert rc == 0, out  # a warning, not an error
    line = next(ln for ln in out.splitlines() if "ROLE_MIXES_DUTIES" in ln)
    assert "warning: auth.roles.dealer: ROLE_MIXES_DUTIES" in line
    assert "close_betting, open_betting, place, result" in line
    assert "jackpot_paid, void_round" in line
    # a principal holding a dealing role and a supervising one together, likewise
    f = write(
        tmp_path / "p", ROULETTE, principals={"pit-01": {"roles": ["dealer", "pit_supervisor"]}}
    )
    rc, out = check(f, capsys)
    assert rc == 0 and "auth.principals.pit-01.roles: ROLE_MIXES_DUTIES" in out, out
    # the built-in roles keep the duties apart
    rc, out = check(write(tmp_path / "b", ROULETTE), capsys)
    assert rc == 0 and "ROLE_MIXES_DUTIES" not in out, out


@pytest.mark.parametrize(
    ("key", "code"),
    [("audit.key", "AUDIT_KEY_EXPOSED"), ("identity.key", "TABLE_IDENTITY_EXPOSED")],
)
def test_a_key_file_open_to_others_is_refused_as_the_daemon_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, code: str
) -> None:
    # The finding: an audit key with mode 0644; check-config said ok, then the daemon
    # refused to start with AUDIT_KEY_EXPOSED.
    f = write(tmp_path, ROULETTE)
    state = tmp_path / "state"
    plan = read_plan(load_config(f))
    plan.journal.open().close()  # a table that ran: its journal and its keys
    assert check(f, capsys)[0] == 0
    os.chmod(state / key, 0o644)
    rc, out = check(f, capsys)
    assert rc == 1 and code in out, out
    assert "accept_risks" not in out.split(code, 1)[1].splitlines()[0]  # never accepted
    errors = daemon_refuses(f)
    assert [e for e in errors if code in e] == [
        ln.split(": ", 1)[1] for ln in out.splitlines() if code in ln
    ]
    # principals' public key files are public: their mode is not a problem
    os.chmod(state / key, 0o600)
    for pub in (tmp_path / "keys").glob("*.pub"):
        os.chmod(pub, 0o644)
    assert check(f, capsys)[0] == 0
    # an invalid audit key is the daemon's refusal too
    if key == "audit.key":
        (state / key).write_text("not a key\n")
        rc, out = check(f, capsys)
        assert rc == 1 and "AUDIT_KEY_INVALID" in out, out
        with pytest.raises(Exception, match="AUDIT_KEY_INVALID"):
            AuditKey.load(state / key)  # the daemon's own loader says the same


def test_accept_risks_names_only_known_risks_and_says_when_one_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = check(write(tmp_path, ROULETTE, accept_risks=["AUDIT_KEY_EXPOSED"]), capsys)
    assert rc == 1 and "auth.accept_risks: no such risk to accept: AUDIT_KEY_EXPOSED" in out
    rc, out = check(write(tmp_path / "b", ROULETTE, accept_risks=["SHARED_KEY"]), capsys)
    assert rc == 0 and "SHARED_KEY is accepted, but this configuration does not have it" in out
    plan = read_plan(load_config(tmp_path / "b" / "table.toml"))
    assert plan.accepted_risks == ()


def test_the_retained_state_lists_the_accepted_risks(tmp_path: Path) -> None:
    from firmware_host.schemas import validate
    from firmware_host.table.extension import TableExtensions
    from firmware_host.table.state import LatchedFaults, TableState

    f = write(tmp_path, ROULETTE, max_age_s=300, accept_risks=["FRESHNESS_WINDOW_LONG"])
    plan = read_plan(load_config(f))
    assert plan.accepted_risks == ("FRESHNESS_WINDOW_LONG",)
    published: list[dict[str, Any]] = []

    class NoFaults:
        def active(self) -> list[Any]:
            return []

    state = TableState(
        TableExtensions(),
        publish=lambda **fields: published.append(fields),
        game_id="roulette",
        faults=LatchedFaults(NoFaults()),
        accepted_risks=plan.accepted_risks,
        refused=lambda: {"since": "2026-05-09T07:00:00.000Z", "total": 0, "by": []},
    )
    state.refresh()
    assert published[-1]["accepted_risks"] == ["FRESHNESS_WINDOW_LONG"]
    from firmware_host.schemas import PAYLOAD_SCHEMA_VERSION
    from tests.signing import as_published

    payload = {
        "schema_version": PAYLOAD_SCHEMA_VERSION, "table_id": "P1", "availability": "online",
        "software_version": "x", "since": "2026-05-09T07:00:00.000Z",
        "updated_at": "2026-05-09T07:00:00.000Z", **published[-1],
    }  # fmt: skip
    validate("state", as_published("state", payload))
