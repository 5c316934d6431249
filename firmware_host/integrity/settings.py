"""``[integrity]``: the detectors' settings (``docs/integrity.md``, ``docs/configuration.md``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..config import FieldSpec, register_section, validate_fields

INTEGRITY_SPECS: dict[str, FieldSpec] = {
    "wheel_serial": FieldSpec(
        "str", "", doc="the wheel's serial number (the SS2 does not report it); default: the "
        "wheel device's name. Statistics are kept per serial: a new wheel starts afresh",
    ),
    "spins_per_hour": FieldSpec(
        "int", 60, range=(1, 600),
        doc="results an hour the false-alarm budget assumes (less than one bias alert a year)",
    ),
    "chi_square_every": FieldSpec(
        "int", 1000, range=(100, 100000), doc="results between two chi-square tests"
    ),
    "chi_square_window": FieldSpec(
        "int", 3700, range=(370, 1000000), doc="results each chi-square test counts (the last N)"
    ),
    "repeat_limit": FieldSpec(
        "int", 5, range=(2, 20), doc="the same number this many times in a row: REPEATED_NUMBER"
    ),
    "spin_min_ms": FieldSpec(
        "int", 0, range=(0, 600000),
        doc="a spin (ball in the rim to winning number) shorter than this: SPIN_TOO_FAST (0: off)",
    ),
    "spin_max_ms": FieldSpec(
        "int", 0, range=(0, 600000), doc="a spin longer than this: SPIN_TOO_SLOW (0: off)"
    ),
    "rotor_rpm_min": FieldSpec(
        "int", 0, range=(0, 100), doc="rotor speed below this at the result: WHEEL_ROTOR_SPEED (0: off)"
    ),
    "rotor_rpm_max": FieldSpec(
        "int", 0, range=(0, 100), doc="rotor speed above this at the result: WHEEL_ROTOR_SPEED (0: off)"
    ),
    "alternate_direction": FieldSpec(
        "bool", False, doc="the house procedure requires the rotor to change direction every spin"
    ),
    "shoe_unseen_max": FieldSpec(
        "int", 0, range=(0, 624),
        doc="cards a shoe may leave never seen at its end (behind the cut card): more is "
        "SHOE_CARDS_MISSING (0: off)",
    ),
    "shoe_coups_min": FieldSpec(
        "int", 0, range=(0, 1000), doc="a shoe dealing fewer coups: SHOE_LENGTH (0: off)"
    ),
    "shoe_coups_max": FieldSpec(
        "int", 0, range=(0, 1000), doc="a shoe dealing more coups: SHOE_LENGTH (0: off)"
    ),
    "clock_unsync_max_s": FieldSpec(
        "int", 900, range=(0, 7 * 86400),
        doc="seconds the clock may stay unsynchronised (or of unknown state) before the "
        "latched CLOCK_UNSYNCHRONISED warning (0: off)",
    ),
    "clock_check_s": FieldSpec(
        "int", 60, range=(5, 3600), doc="seconds between two checks of the clock's synchronisation"
    ),
    "shift_start_hour": FieldSpec(
        "int", 6, range=(0, 23), doc="local hour the first shift of the day starts"
    ),
    "shift_hours": FieldSpec(
        "int", 8, range=(1, 24), doc="hours of a shift: the pace report is published at its end"
    ),
    "large_transaction": FieldSpec(
        "int", 0, range=(0, 10**15),
        doc="a bet (its stake or its most possible payout, when placed) or a payout (when "
        "settled) at or above this, minor units, raises LARGE_TRANSACTION and a "
        "large_transaction event (0: off; MOP 500,000 = 50000000)",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class IntegritySettings:
    wheel_serial: str = ""
    spins_per_hour: int = 60
    chi_square_every: int = 1000
    chi_square_window: int = 3700
    repeat_limit: int = 5
    spin_min_ms: int = 0
    spin_max_ms: int = 0
    rotor_rpm_min: int = 0
    rotor_rpm_max: int = 0
    alternate_direction: bool = False
    shoe_unseen_max: int = 0
    shoe_coups_min: int = 0
    shoe_coups_max: int = 0
    clock_unsync_max_s: int = 900
    clock_check_s: int = 60
    shift_start_hour: int = 6
    shift_hours: int = 8
    large_transaction: int = 0

    @staticmethod
    def from_section(section: Mapping[str, Any] | None) -> IntegritySettings:
        if section is None:
            return IntegritySettings()
        return IntegritySettings(**{f.name: section[f.name] for f in fields(IntegritySettings)})


#: Settings no wheel's protocol can serve: refused with the reason, not as unknown keys.
UNSUPPORTED = ("ball_revs_min", "ball_revs_max")


def _validate(data: Any, path: str, errors: list[str]) -> dict[str, Any]:
    if isinstance(data, Mapping) and any(k in data for k in UNSUPPORTED):
        for key in [k for k in UNSUPPORTED if k in data]:
            errors.append(
                f"{path}.{key}: not supported: no wheel this table drives reports the ball's "
                "revolutions (the Cammegh SS2's status line carries the rotor's speed and "
                "direction, not the ball's; the GPIO wheel sees the ball only at rest), so a "
                "band on them could never fire; remove it (docs/integrity.md)"
            )
        data = {k: v for k, v in data.items() if k not in UNSUPPORTED}
    return validate_fields(INTEGRITY_SPECS, data, path, errors)


register_section("integrity", _validate)
