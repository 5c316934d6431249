"""Game procedures: the regulation's own sequence, driven by devices and dealer inputs."""

from .base import (
    DiceProcedure,
    KeypadProcedure,
    ManualProcedure,
    Procedure,
    ShoeProcedure,
    WheelProcedure,
    make_procedure,
)

__all__ = [
    "DiceProcedure",
    "KeypadProcedure",
    "ManualProcedure",
    "Procedure",
    "ShoeProcedure",
    "WheelProcedure",
    "make_procedure",
]
