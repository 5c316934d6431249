"""Game procedures: the regulation's own sequence, driven by devices and dealer inputs.

A procedure is chosen by the kind of device that carries the game's result
(:attr:`~firmware_host.games.base.Game.result_device`, a kind of
as its drivers declare it, ``drivers.registry.kind_of``), never by the game: it asks the game what it needs
(the deal, the decisions, the bets a decision creates). One module per procedure:

- :class:`ManualProcedure` (``manual``): everything from dealer/floor commands; mah-jong
  and P'ai Kao results are declared by the inspector, and a table without its result
  device enters results by command;
- :class:`WheelProcedure` (``wheel``): roulette by the wheel's states, 60/2004 art. 2-4;
- :class:`DiceProcedure` (``shaker``): the dice games by the shaker, bell and dome,
  57/2004 and 59/2004 art. 2-3;
- :class:`KeypadProcedure` (``keypad``): fantan by the dealer's keypad, 58/2004 art. 4-5;
- :class:`ShoeProcedure` (``shoe``): card games card by card from the shoe.
"""

from __future__ import annotations

from collections.abc import Callable

from ...games.errors import RulesError
from .base import Device, Procedure, ProcedureContext
from .dice import DiceProcedure
from .keypad import KeypadProcedure
from .manual import ManualProcedure
from .shoe import ShoeProcedure
from .wheel import WheelProcedure

#: Device kind carrying a game's result -> the procedure it drives.
PROCEDURES: dict[str, Callable[[ProcedureContext, Device], Procedure]] = {
    "wheel": WheelProcedure,
    "shaker": DiceProcedure,
    "keypad": KeypadProcedure,
    "shoe": ShoeProcedure,
}


def make_procedure(ctx: ProcedureContext) -> Procedure:
    """The procedure for the table's game and the devices it has: the one driven by the
    kind of device that carries the game's result, if the table has such a device;
    else the manual procedure (results entered or declared by command)."""
    kind = ctx.engine.game.result_device
    device = ctx.device_of_kind(kind) if kind is not None else None
    if kind is not None and device is None and ctx.engine.cfg.result_source != "manual":
        # The configuration refuses this (config._check_result_source); never fall back
        # to entering results by command without the table saying so.
        raise RulesError(
            f"this {ctx.engine.game.game_id} table reads its results from a {kind} and has "
            'none; say table.result_source = "manual" if people enter the results',
            code="RESULT_DEVICE_MISSING",
        )
    if kind is None or device is None or kind not in PROCEDURES:
        return ManualProcedure(ctx)
    return PROCEDURES[kind](ctx, device)


__all__ = [
    "PROCEDURES",
    "Device",
    "DiceProcedure",
    "KeypadProcedure",
    "ManualProcedure",
    "Procedure",
    "ProcedureContext",
    "ShoeProcedure",
    "WheelProcedure",
    "make_procedure",
]
