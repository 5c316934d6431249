"""Every phase from commands: the floor's ``commands/request`` and the console."""

from __future__ import annotations

from .base import Procedure


class ManualProcedure(Procedure):
    """Every phase from commands (floor MQTT ``commands/request`` or the console): a
    table whose game has no result device (mah-jong, P'ai Kao: declared by the
    inspector) or that has none configured."""
