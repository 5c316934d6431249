"""The demo's table documents: one table file per game, as a technician would write it.

:func:`table_document` is the configuration the demo, the benchmarks and the tests
run (limits that let the simulated players bet, and what the game's demo sets beside
them: ``Game.demo.table``, the stud poker progressive jackpot among them);
:func:`to_toml` writes it as the TOML file ``tablectl run`` and ``tablectl
check-config`` read. :data:`DEMO_DRIVERS` says which simulated driver plays each kind
of result device.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from firmware_host.games.base import Game

#: Result device kind (``Game.result_device``) -> the driver the demo simulates for it.
#: A kind missing here (the fantan keypad on GPIO) has no simulator on a serial line:
#: the demo's croupier enters that game's results by command.
DEMO_DRIVERS: dict[str, str] = {
    "wheel": "cammegh-ss2",
    "shaker": "shaker-ref",
    "shoe": "shoe-ref",
}


#: The demo table's doors (``[switches.<name>]``, ``docs/integrity.md``): on its mock pins
#: they start closed and stay quiet; a test opens one by driving its pin.
DEMO_SWITCHES: dict[str, dict[str, Any]] = {
    "lid": {"kind": "lid", "pin": 17},
    "drop_box": {"kind": "drop_box", "pin": 22, "pin_b": 23},
    "cash_box": {"kind": "cash_box", "pin": 24},
    "tray": {"kind": "tray", "pin": 25, "open_in_round": True, "technician": False},
}


def table_document(
    game: str,
    devices: Mapping[str, Any],
    *,
    mqtt: Mapping[str, Any] | None = None,
    auth: Mapping[str, Any] | None = None,
    table_id: str | None = None,
) -> dict[str, Any]:
    """The demo's table of ``game`` with ``devices`` (``[devices.<name>]`` sections) and,
    when given, an ``[mqtt]`` and an ``[auth]`` section
    (:meth:`tablesim.principals.Principals.auth_section`); ``table_id`` defaults to
    ``demo-<game>``.

    A game whose result device the demo does not simulate (:data:`DEMO_DRIVERS`: the
    fantan keypad) says ``result_source = "manual"``: its croupier enters the results
    by command, which the table then requires in so many words."""
    base: dict[str, Any] = {
        "version": 1,
        "table": {
            "id": table_id or f"demo-{game}",
            "game": game,
            "name": f"Demo {game}",
            "currency": "MOP",
            "payable_unit": 100,
        },
        "limits": {"min_stake": 2500, "max_stake": 500000},
        "devices": dict(devices),
        "switches": copy.deepcopy(DEMO_SWITCHES),
        "daemon": {"simulated": True},
    }
    if mqtt is not None:
        base["mqtt"] = dict(mqtt)
    if auth is not None:
        base["auth"] = dict(auth)
    kind = _result_device(game)
    if kind is not None and not any(
        isinstance(d, Mapping) and _kind_of(d.get("driver")) == kind for d in devices.values()
    ):
        base["table"]["result_source"] = "manual"
    base.update(copy.deepcopy(dict(_game(game).demo.table)))
    return base


def _game(game: str) -> Game[Any, Any]:
    from firmware_host.games import get_game

    return get_game(game)


def _result_device(game: str) -> str | None:
    return _game(game).result_device


def _kind_of(driver: object) -> str | None:
    from drivers.registry import declarations

    found = declarations().get(str(driver))
    return None if found is None else found.kind


def to_toml(doc: Mapping[str, Any]) -> str:
    """A table document as TOML (scalars, lists, nested tables: what table files hold)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(f"cannot write {v!r} as TOML")

    lines: list[str] = []

    def table(path: list[str], d: Mapping[str, Any]) -> None:
        scalars = {k: v for k, v in d.items() if not isinstance(v, Mapping)}
        subs = {k: v for k, v in d.items() if isinstance(v, Mapping)}
        if path and (scalars or not subs):
            lines.append(
                "["
                + ".".join(
                    json.dumps(p) if not p.replace("_", "").replace("-", "").isalnum() else p
                    for p in path
                )
                + "]"
            )
        for k, v in scalars.items():
            lines.append(f"{k} = {value(v)}")
        if scalars:
            lines.append("")
        for k, v in subs.items():
            table([*path, k], v)

    table([], doc)
    return "\n".join(lines) + "\n"
