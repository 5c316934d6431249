"""Rules-core subcommands of tablectl: ``check-config``, ``settle``, ``math``, ``score``.

These are the supervisor's tools: "is this table file valid", "what should this
round have paid", "what is the house edge of every bet under this pay table".
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..cliargs import CliError, count, existing_file, number, one_of
from ..config import ConfigInvalid, TableConfig, default_config, load_config
from ..games import GAME_IDS, get_game
from ..games.base import DiscreteGame, MoneyLine
from ..games.errors import RulesError
from ..games.money import fraction_str, parse_json_int
from ..table.theo import with_theo


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check-config",
        help="validate a table configuration file",
        description="Validate a table file as the daemon reads it; print every error with "
        "its path; exit 1 if any (a FILE that cannot be read at all is refused first, "
        "exit 2).",
    )
    p.add_argument("files", nargs="+", metavar="FILE", type=existing_file)
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser(
        "settle",
        help="settle a round from its outcome and bets (prints JSON)",
        description="Settle every bet of one round exactly as the daemon would. JSON "
        "arguments may be given inline or as @FILE.",
    )
    p.add_argument("game", choices=GAME_IDS)
    p.add_argument("--outcome", required=True, help="outcome JSON (or @FILE)")
    p.add_argument("--bets", required=True, help="JSON list of bets (or @FILE)")
    p.add_argument(
        "--config", type=existing_file, help="table configuration (pay table, options, money)"
    )
    p.set_defaults(func=cmd_settle)

    p = sub.add_parser(
        "math",
        help="exact house edge of every bet type under the configured pay table",
        description="The house edge of every bet type under the pay table of --config (or "
        "the regulation's defaults). --decks applies to baccarat, blackjack and "
        "super-pan-9; --rounds and --seed to the simulated games (blackjack, stud-poker); "
        "another game refuses them.",
    )
    p.add_argument("game", choices=GAME_IDS)
    p.add_argument("--config", type=existing_file, help="table configuration")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--decks", type=count(1), help="number of decks (card games)")
    p.add_argument("--rounds", type=count(1), help="rounds to simulate (simulated games)")
    p.add_argument(
        "--seed", type=number(integer=True), help="seed of a simulation (simulated games)"
    )
    p.set_defaults(func=cmd_math)

    p = sub.add_parser(
        "score",
        help="score a declared hand (mah-jong) for a floor inspector",
    )
    p.add_argument("game", choices=GAME_IDS)
    p.add_argument("--hand", required=True, help="declared hand JSON (or @FILE)")
    p.add_argument("--config", type=existing_file, help="table configuration")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_score)


def read_json_arg(value: str, what: str) -> Any:
    """Parse a JSON argument given inline or as ``@FILE`` (``@-`` is standard input)."""
    text = value
    if value.startswith("@"):
        name = value[1:]
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        except OSError as exc:
            raise RulesError(
                f"{what}: cannot read {name}: {exc.strerror or exc}", code="FILE_UNREADABLE"
            ) from exc
        except UnicodeDecodeError as exc:
            raise RulesError(f"{what}: {name} is not UTF-8 text", code="FILE_UNREADABLE") from exc
        what = f"{what} ({name})"
    try:
        # an integer too long to be an amount stays a marker the checks refuse by name
        return json.loads(text, parse_int=parse_json_int)
    except json.JSONDecodeError as exc:
        raise RulesError(f"{what} is not valid JSON: {exc}", code="JSON_INVALID") from exc
    except RecursionError as exc:
        raise RulesError(f"{what} is nested too deeply", code="JSON_INVALID") from exc


def _config_for(game_id: str, path: str | None) -> TableConfig:
    if path is None:
        return default_config(game_id)
    cfg = load_config(path)
    if cfg.game_id != game_id:
        raise RulesError(
            f"{path} configures {cfg.game_id!r}, not {game_id!r}", code="CONFIG_GAME_MISMATCH"
        )
    return cfg


def checked_table(path: str, *, simulated: bool = False) -> TableConfig:
    """The table file as ``check-config`` checks it, and ``run`` before it starts (its
    keys, then what the daemon would refuse: options never read, GPIO pins missing, a
    result device absent), raising :class:`ConfigInvalid` with every problem.
    ``simulated``: as ``run --simulate`` runs it, with ``[daemon] simulated = true``
    (mock GPIO pins); nothing else differs."""
    import tomllib

    from ..config import validate_document

    cfg = load_config(path)
    if simulated:
        doc: dict[str, Any] = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        doc["daemon"] = {**dict(doc.get("daemon") or {}), "simulated": True}
        cfg = validate_document(doc, path, require_version=True)
    _check_assembly(cfg)
    return cfg


def cmd_check_config(args: argparse.Namespace) -> int:
    rc = 0
    for f in args.files:
        try:
            cfg = checked_table(f)
        except ConfigInvalid as exc:
            for e in exc.errors:
                print(f"{f}: {e}")
            print(f"{f}: {len(exc.errors)} error(s)")
            rc = 1
            continue
        if not args.quiet:
            print(f"{f}: ok (table {cfg.table_id}, game {cfg.game_id}, version {cfg.version})")
        from ..assembly import assembly_warnings

        for w in assembly_warnings(cfg):
            print(f"{f}: warning: {w}")
    return rc


def _check_assembly(cfg: TableConfig) -> None:
    """What the daemon itself would refuse: options set but never read, GPIO missing."""
    from ..assembly import assembly_problems

    problems = assembly_problems(cfg)
    if problems:
        raise ConfigInvalid(cfg.source, problems)


def cmd_settle(args: argparse.Namespace) -> int:
    cfg = _config_for(args.game, args.config)
    game = cfg.game
    outcome = game.parse_outcome(cfg.rules, read_json_arg(args.outcome, "--outcome"))
    raw_bets = read_json_arg(args.bets, "--bets")
    if not isinstance(raw_bets, list):
        raise RulesError("--bets must be a JSON list of bets", code="BET_MALFORMED")
    bets = game.parse_bets(cfg.rules, raw_bets, cfg.limits)
    settlement = game.settle(cfg.rules, outcome, bets, cfg.money)
    # each bet's house edge and theoretical win, and the round's, as the table publishes them
    out = with_theo(game, cfg.rules, cfg.money, settlement.to_json())
    out["rules"] = game.rules_json(cfg.rules)
    out["currency"] = cfg.money.currency
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def math_options(game_id: str, options: dict[str, Any]) -> None:
    """Refuse an option of ``tablectl math`` the game does not take, naming the flag and
    the games that take it (before any work)."""
    takes = get_game(game_id).math_options
    for name in options:
        if name not in takes:
            others = [g for g in GAME_IDS if name in get_game(g).math_options]
            raise CliError(
                f"--{name} does not apply to {game_id} (its math "
                + (
                    f"takes {one_of('--' + t for t in sorted(takes))}"
                    if takes
                    else "takes no option"
                )
                + f"); --{name} applies to {one_of(others)}",
                code="OPTION_NOT_APPLICABLE",
            )


def cmd_math(args: argparse.Namespace) -> int:
    options: dict[str, Any] = {
        k: getattr(args, k) for k in ("decks", "rounds", "seed") if getattr(args, k) is not None
    }
    math_options(args.game, options)
    cfg = _config_for(args.game, args.config)
    if cfg.game.math_needs_rng:
        options["rng"] = random.Random
    report = cfg.game.math(cfg.rules, **options)
    money = _money_lines(cfg)
    data = report.to_json()
    if money:
        data["money"] = {
            "payable_unit": cfg.money.payable_unit,
            "rounding": cfg.money.rounding.value,
            "note": "each bet at its minimum stake; per unit staked, exact: the commission "
            "the regulation fixes and the breakage the payable unit adds to the house edge",
            "bets": [m.to_json() for m in money],
        }
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    print(f"{cfg.game.title} ({cfg.game.regulation}), {report.method}")
    for key, value in report.details.items():
        print(f"  {key}: {json.dumps(value, ensure_ascii=False)}")
    width = max((len(ln.bet) for ln in report.lines), default=3)
    print(f"{'bet':<{width}}  {'selection':<22} {'house edge':>12}  exact")
    for ln in report.lines:
        sel = json.dumps(ln.selection, ensure_ascii=False)
        pct = f"{100 * ln.house_edge.numerator / ln.house_edge.denominator:.4f}%"
        exact = data["bets"][report.lines.index(ln)]["house_edge_exact"]
        note = f"  ({ln.note})" if ln.note else ""
        print(f"{ln.bet:<{width}}  {sel:<22} {pct:>12}  {exact}{note}")
    if money:
        print(
            f"at this table (payable unit {cfg.money.payable_unit}, rounding "
            f"{cfg.money.rounding.value}), each bet at its minimum stake, per unit staked:"
        )
        print(f"{'bet':<{width}}  {'selection':<22} {'stake':>9} {'commission':>12} "
              f"{'breakage':>12}  exact")  # fmt: skip
        for m in money:
            sel = json.dumps(m.selection, ensure_ascii=False)
            print(
                f"{m.bet:<{width}}  {sel:<22} {m.stake:>9} {_pct(m.commission):>12} "
                f"{_pct(m.breakage):>12}  {fraction_str(m.commission)}, "
                f"{fraction_str(m.breakage)}"
            )
    return 0


def _pct(x: Fraction) -> str:
    return f"{100 * x.numerator / x.denominator:.4f}%"


def _money_lines(cfg: TableConfig) -> tuple[MoneyLine, ...]:
    """The commission and breakage of each bet at this table's payable unit, when the
    unit leaves a breakage on some bet (58/2004 art. 9: shown apart from the 5%);
    nothing for a table where every bet is paid exactly, whose report is unchanged."""
    game = cfg.game
    if not isinstance(game, DiscreteGame) or cfg.money.payable_unit == 1:
        return ()
    lines = game.money_math(cfg.rules, cfg.money, cfg.limits)
    return lines if any(m.breakage for m in lines) else ()


def cmd_score(args: argparse.Namespace) -> int:
    if getattr(get_game(args.game), "score_report", None) is None:
        raise RulesError(f"{args.game} has no hand scoring; use settle", code="NOT_SUPPORTED")
    cfg = _config_for(args.game, args.config)
    data, text = cfg.game.score_report(  # type: ignore[attr-defined]
        cfg.rules, read_json_arg(args.hand, "--hand"), money=cfg.money
    )
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else text)
    return 0
