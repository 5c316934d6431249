"""tablectl settle / math / check-config as a supervisor uses them."""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from firmware_host.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_settle_prints_the_contract_shape(capsys: pytest.CaptureFixture[str]) -> None:
    bets = [
        {"bet_id": "a", "seat": 1, "bet_type": "straight", "selection": [17], "stake": 2500},
        {"bet_id": "b", "seat": 2, "bet_type": "red", "stake": 5000},
    ]
    rc, out, _ = run(
        capsys,
        "settle",
        "roulette",
        "--outcome",
        '{"number": 17}',
        "--bets",
        json.dumps(bets),
        "--config",
        str(ROOT / "config" / "roulette.toml"),
    )
    assert rc == 0
    data = json.loads(out)
    assert [b["net"] for b in data["bets"]] == [35 * 2500, -5000]
    assert set(data["bets"][0]) >= {
        "seat",
        "bet_type",
        "selection",
        "stake",
        "result",
        "payout",
        "commission",
        "net",
    }
    assert data["totals"]["net"] == 35 * 2500 - 5000
    assert data["rules"]["regulation"] == "60/2004"


def test_settle_fantan_reports_the_remainder(capsys: pytest.CaptureFixture[str]) -> None:
    # 58/2004 art. 7 1) (4), art. 9: Sé-Sam-Hong MOP 100 pays 33.33.. less 5%; chips of MOP 1.
    rc, out, _ = run(
        capsys,
        "settle",
        "fantan",
        "--outcome",
        '{"number": 3}',
        "--bets",
        '[{"bet_type": "sam_hong", "selection": [1, 2, 3], "stake": 10000}]',
        "--config",
        str(ROOT / "config" / "fantan.toml"),
    )
    assert rc == 0
    bet = json.loads(out)["bets"][0]
    exact = Fraction(10000, 3) * Fraction(95, 100)
    assert bet["net"] == 3100 and bet["net"] % 100 == 0
    assert Fraction(bet["breakage"]) == exact - 3100


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--outcome", '{"number": 37}', "--bets", "[]"], "OUTCOME_INVALID"),
        (
            [
                "--outcome",
                '{"number": 1}',
                "--bets",
                '[{"bet_type": "split", "selection": [1, 5], "stake": 1}]',
            ],
            "BET_INVALID_SELECTION",
        ),
        (
            [
                "--outcome",
                '{"number": 1}',
                "--bets",
                '[{"bet_type": "straight", "selection": 1, "stake": -1}]',
            ],
            "BET_INVALID_STAKE",
        ),
        (
            [
                "--outcome",
                '{"number": 1}',
                "--bets",
                '[{"bet_type": "straight", "selection": 1, "stake": 1.5}]',
            ],
            "BET_INVALID_STAKE",
        ),
        (
            [
                "--outcome",
                '{"number": 1}',
                "--bets",
                '[{"bet_type": "straight", "selection": 1, "stake": 1, "x": 1}]',
            ],
            "BET_UNKNOWN_FIELD",
        ),
        (
            ["--outcome", '{"number": 1}', "--bets", '[{"bet_type": "basket", "stake": 1}]'],
            "BET_UNKNOWN_TYPE",
        ),
        (["--outcome", "{not json", "--bets", "[]"], "JSON_INVALID"),
    ],
)
def test_settle_errors_name_the_problem(
    capsys: pytest.CaptureFixture[str], args: list[str], code: str
) -> None:
    rc, _, err = run(capsys, "settle", "roulette", *args)
    assert rc == 2
    assert code in err


def test_settle_checks_table_limits(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(
        capsys,
        "settle",
        "roulette",
        "--outcome",
        "1",
        "--bets",
        '[{"bet_type": "straight", "selection": 1, "stake": 100}]',
        "--config",
        str(ROOT / "config" / "roulette.toml"),
    )
    assert rc == 2 and "BET_STAKE_OUT_OF_LIMITS" in err and "below the table minimum 2500" in err


def test_math_roulette_json_every_edge_is_1_in_37(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "math", "roulette", "--json")
    assert rc == 0
    data = json.loads(out)
    assert data["game"] == "roulette" and data["method"] == "exact"
    assert {b["house_edge_exact"] for b in data["bets"]} == {"1/37"}
    for b in data["bets"]:
        assert sum(Fraction(o["probability"]) for o in b["outcomes"]) == 1
        assert -sum(
            Fraction(o["net"]) * Fraction(o["probability"]) for o in b["outcomes"]
        ) == Fraction(1, 37)


def test_math_sicbo_follows_the_configured_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(
        capsys, "math", "sicbo", "--json", "--config", str(ROOT / "config" / "sicbo.toml")
    )
    data = json.loads(out)
    edge = {
        (b["bet"], json.dumps(b["selection"])): Fraction(b["house_edge_exact"])
        for b in data["bets"]
    }
    # config/sicbo.toml: total_5 = 30; P(total 5) = 6/216.
    assert edge[("total", "5")] == 1 - 31 * Fraction(6, 216)


def test_math_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "math", "fantan")
    assert rc == 0 and "3.7500%" in out and "3/80" in out


def test_settle_refuses_a_stake_the_table_cannot_pay(capsys: pytest.CaptureFixture[str]) -> None:
    # issue 12 point 1, 60/2004 art. 7 1): 35 x 2550 cannot be paid in the MOP 1 chips of
    # config/roulette.toml; the bet is refused with a code naming the payable unit.
    rc, _, err = run(
        capsys, "settle", "roulette", "--outcome", '{"number": 17}', "--bets",
        '[{"bet_type": "straight", "selection": [17], "stake": 2550}]',
        "--config", str(ROOT / "config" / "roulette.toml"),
    )  # fmt: skip
    assert rc == 2 and "BET_STAKE_PAYABLE_UNIT" in err and "payable unit 100" in err


HUGE = "1" + "0" * 4999  # a 5,000-digit stake: more than Python converts from text


def test_settle_refuses_a_5000_digit_stake_as_an_invalid_stake(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run(
        capsys, "settle", "roulette", "--outcome", '{"number": 17}', "--bets",
        f'[{{"bet_type": "straight", "selection": [17], "stake": {HUGE}}}]',
    )  # fmt: skip
    assert rc == 2 and out == ""
    assert "BET_INVALID_STAKE" in err and "an integer of 5000 digits" in err


def test_the_floor_door_refuses_a_5000_digit_stake_with_its_request_id(tmp_path: Path) -> None:
    # issue 12 point 7: the same bet on bets/request once answered INTERNAL_ERROR with a
    # null request id; the MQTT door now gets the rules core's refusal, like every door.
    from firmware_host.auth import Authenticator, AuthSettings
    from firmware_host.config import load_config
    from firmware_host.journal import Journal
    from firmware_host.table.engine import RoundEngine
    from firmware_host.table.floor import FloorRequests
    from firmware_host.table.procedures import ManualProcedure, ProcedureContext

    j = Journal(tmp_path / "j.db")
    e = RoundEngine(load_config(ROOT / "config" / "roulette.toml"), j)
    rid = e.open_betting().round_id
    # an unsigned table: the rules core's refusal is what this test is about
    floor = FloorRequests(
        e,
        ManualProcedure(ProcedureContext(e)),
        j,
        auth=Authenticator(AuthSettings(signatures=False), e.cfg.table_id),
    )
    payload = (
        f'{{"request_id": "r-1", "action": "place", "round_id": "{rid}", '
        '"bet": {"bet_id": "a", "seat": 1, '
        f'"bet_type": "straight", "selection": [17], "stake": {HUGE}}}}}'
    ).encode()
    answer = floor.handle_bet_request(payload)
    assert (answer["request_id"], answer["status"], answer["code"]) == (
        "r-1",
        "rejected",
        "BET_INVALID_STAKE",
    )
    payload = payload.replace(HUGE.encode(), b"2550").replace(b"r-1", b"r-2")
    answer = floor.handle_bet_request(payload)
    assert (answer["status"], answer["code"]) == ("rejected", "BET_STAKE_PAYABLE_UNIT")


def test_math_reports_the_commission_and_the_breakage_apart_art_9(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # issue 12 point 5, 58/2004 art. 7 1) (3), art. 9, config/fantan.toml (payable unit
    # 100, minimum 10000): a winning Nga of 10000 is a prize of 5000, commission 5% = 250,
    # exact net 4750, paid 4700: 50 of breakage. It wins on two numbers in four.
    rc, out, _ = run(
        capsys, "math", "fantan", "--json", "--config", str(ROOT / "config" / "fantan.toml")
    )
    assert rc == 0
    data = json.loads(out)
    nga = next(b for b in data["money"]["bets"] if b["bet"] == "nga")
    win = Fraction(2, 4)
    assert nga["stake"] == 10000
    assert Fraction(nga["commission_exact"]) == 250 * win / 10000
    assert Fraction(nga["breakage_exact"]) == 50 * win / 10000
    # the regulation's exact edges are unchanged: the commission is the whole of them
    edges = {b["bet"]: Fraction(b["house_edge_exact"]) for b in data["bets"]}
    assert edges["nga"] == 250 * win / 10000 == Fraction(1, 80)
    rc, text, _ = run(capsys, "math", "fantan", "--config", str(ROOT / "config" / "fantan.toml"))
    assert "1/80, 1/400" in text and "payable unit 100" in text


def test_math_without_breakage_has_no_money_section(capsys: pytest.CaptureFixture[str]) -> None:
    # Every roulette prize is a whole multiple (60/2004 art. 7): at a MOP 1 unit nothing is
    # rounded, and the report stays what it was.
    rc, out, _ = run(
        capsys, "math", "roulette", "--json", "--config", str(ROOT / "config" / "roulette.toml")
    )
    assert rc == 0 and "money" not in json.loads(out)


def test_figure_names_work_at_every_door_59_2004_art_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # issue 12 point 3: the audit's command answered OUTCOME_INVALID ... expected [1, 5, 6].
    bets = '[{"bet_type": "figure", "selection": "crab", "stake": 2000}]'
    rc, out, err = run(
        capsys, "settle", "fish-prawn-crab", "--outcome", '{"dice":["fish","crab","rooster"]}',
        "--bets", bets, "--config", str(ROOT / "config" / "fish-prawn-crab.toml"),
    )  # fmt: skip
    assert rc == 0, err
    data = json.loads(out)
    assert data["outcome"]["dice"] == [1, 5, 6] and data["bets"][0]["net"] == 2000  # art. 6 3)
    # the MQTT door: a result entered by command on a table without a shaker
    from firmware_host.auth import Authenticator, AuthSettings
    from firmware_host.config import load_config
    from firmware_host.journal import Journal
    from firmware_host.table.engine import RoundEngine
    from firmware_host.table.floor import FloorRequests
    from firmware_host.table.procedures import ManualProcedure, ProcedureContext

    cfg = load_config(ROOT / "config" / "fish-prawn-crab.toml")
    j = Journal(tmp_path / "j.db")
    e = RoundEngine(cfg, j)
    rid = e.open_betting().round_id
    e.close_betting()
    floor = FloorRequests(
        e,
        ManualProcedure(ProcedureContext(e)),
        j,
        auth=Authenticator(AuthSettings(signatures=False), e.cfg.table_id),
    )
    answer = floor.handle_command_request(
        b'{"request_id": "r", "command": "result", "round_id": "%s", "args": {"outcome": '
        b'{"dice": ["fish", "crab", "rooster"]}}}' % rid.encode()
    )
    assert answer["status"] == "ok", answer
    assert j.rounds.round(answer["data"]["round_id"]).outcome["dice"] == [1, 5, 6]


def test_fantan_zero_with_buttons_from_the_command_line_art_3_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # issue 12 point 4: {"number": 0, "buttons": 8} once failed "number 0 disagrees".
    rc, out, err = run(
        capsys, "settle", "fantan", "--outcome", '{"number": 0, "buttons": 8}',
        "--bets", '[{"bet_type": "fan", "selection": 4, "stake": 10000}]',
    )  # fmt: skip
    assert rc == 0, err
    data = json.loads(out)
    assert data["outcome"] == {"number": 4, "buttons": 8}
    assert data["bets"][0]["commission"] == 3 * 10000 * 5 // 100  # art. 7 1) (1), art. 9


def test_settle_prints_each_bets_theoretical_win(capsys: pytest.CaptureFixture[str]) -> None:
    # issue 34: 60/2004 art. 7, 8: a straight pays 35:1 and red 1:1, 1 and 18 pockets
    # of 37 win: each edge 1 - 36/37 = 1 - 2 * 18/37 = 1/37; theoretical win stake/37,
    # rounded to the minor unit, an exact half to the even one; the round's sum rounded once
    bets = [
        {"bet_id": "a", "seat": 1, "bet_type": "straight", "selection": [17], "stake": 2500},
        {"bet_id": "b", "seat": 2, "bet_type": "red", "stake": 5000},
    ]
    rc, out, _ = run(capsys, "settle", "roulette", "--outcome", '{"number": 4}', "--bets",
                     json.dumps(bets), "--config", str(ROOT / "config" / "roulette.toml"))  # fmt: skip
    assert rc == 0
    data = json.loads(out)
    assert [b["edge"] for b in data["bets"]] == ["1/37", "1/37"]
    assert [Fraction(b["theo_exact"]) for b in data["bets"]] == [Fraction(2500, 37),
                                                                 Fraction(5000, 37)]  # fmt: skip
    assert [b["theo"] for b in data["bets"]] == [68, 135]  # 67.57.., 135.13..
    assert Fraction(data["totals"]["theo_exact"]) == Fraction(7500, 37)
    assert data["totals"]["theo"] == 203  # 202.70.. (the bets' rounded sum is also 203)
    assert data["theo_basis"] == "exact"
