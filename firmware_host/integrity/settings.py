"""``[integrity]``: the detectors' settings (``docs/integrity.md``, ``docs/configuration.md``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from tablecommon.settings import FieldSpec, register_section, validate_fields

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
    "bias_warnings_per_week": FieldSpec(
        "int", 1, range=(0, 100),
        doc="the bias detectors' warning tier: CUSUMs tuned to a pocket or a face at 1.2 times "
        "its fair probability raise WHEEL_BIAS_WARNING / DICE_BIAS_WARNING for review, at about "
        "this many false warnings a week per wheel and per shaker (0: off)",
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
    "ball_revs_min": FieldSpec(
        "int", 0, range=(0, 200),
        doc="a spin whose ball ran fewer revolutions on the track: WHEEL_BALL_REVS (0: off); "
        "only for a wheel with a ball-track sensor (gpio-wheel ball_track_pin)",
    ),
    "ball_revs_max": FieldSpec(
        "int", 0, range=(0, 200),
        doc="a spin whose ball ran more revolutions: WHEEL_BALL_REVS (0: off); as ball_revs_min",
    ),
    "alternate_direction": FieldSpec(
        "bool", False, doc="the house procedure requires the rotor to change direction every spin"
    ),
    "shoe_unseen_max": FieldSpec(
        "int", 0, range=(0, 624),
        doc="cards a shoe may leave never seen at its end (behind the cut card): more is "
        "SHOE_CARDS_MISSING (0: off)",
    ),
    "shoe_deck_check": FieldSpec(
        "bool", True,
        doc="ask the shoe for its own deck check (CHECK_DECK) at every new shoe and at the end "
        "of each shoe, where the shoe offers one: a missing or an extra card raises "
        "SHOE_CARDS_MISSING / SHOE_CARD_EXCESS",
    ),
    "shoe_deck_check_timeout_s": FieldSpec(
        "int", 120, range=(5, 3600),
        doc="a deck check asked for and not answered within this: SHOE_DECK_UNCHECKED",
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
    "clock_step_tolerance_ms": FieldSpec(
        "int", 1000, range=(0, 3_600_000),
        doc="the wall clock stepping against the monotonic clock by more than this between two "
        "ticks raises CLOCK_STEP (both times journaled, clock_step event) (0: off)",
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
    bias_warnings_per_week: int = 1
    repeat_limit: int = 5
    spin_min_ms: int = 0
    spin_max_ms: int = 0
    rotor_rpm_min: int = 0
    rotor_rpm_max: int = 0
    ball_revs_min: int = 0
    ball_revs_max: int = 0
    alternate_direction: bool = False
    shoe_unseen_max: int = 0
    shoe_deck_check: bool = True
    shoe_deck_check_timeout_s: int = 120
    shoe_coups_min: int = 0
    shoe_coups_max: int = 0
    clock_unsync_max_s: int = 900
    clock_check_s: int = 60
    clock_step_tolerance_ms: int = 1000
    shift_start_hour: int = 6
    shift_hours: int = 8
    large_transaction: int = 0

    @staticmethod
    def from_section(section: Mapping[str, Any] | None) -> IntegritySettings:
        if section is None:
            return IntegritySettings()
        return IntegritySettings(**{f.name: section[f.name] for f in fields(IntegritySettings)})


def _validate(data: Any, path: str, errors: list[str]) -> dict[str, Any]:
    out = validate_fields(INTEGRITY_SPECS, data, path, errors)
    low, high = out.get("ball_revs_min"), out.get("ball_revs_max")
    if isinstance(low, int) and isinstance(high, int) and low and high and low > high:
        errors.append(f"{path}.ball_revs_min: {low} is above ball_revs_max {high}")
    return out


def ball_revs_problems(settings: IntegritySettings, devices: Iterable[Any]) -> list[str]:
    """A band on the ball's revolutions needs a wheel that reports them (its driver's
    ``reports_ball_revs(settings)``: the GPIO wheel with a ball-track sensor). Anywhere
    else the band could never fire: a configuration error saying why."""
    keys = [k for k in ("ball_revs_min", "ball_revs_max") if getattr(settings, k)]
    if not keys:
        return []
    from drivers.registry import driver_class

    wheels = [d for d in devices if d.enabled and d.kind == "wheel"]
    if not wheels:
        why = "this table has no wheel"
    else:
        blind = [d for d in wheels
                 if not getattr(driver_class(d.driver), "reports_ball_revs", lambda s: False)(
                     d.settings)]  # fmt: skip
        if not blind:
            return []
        d = blind[0]
        why = (
            f"devices.{d.name} (a gpio-wheel) has no ball-track sensor: set ball_track_pin"
            if d.driver == "gpio-wheel"
            else f"devices.{d.name} ({d.driver}) does not report the ball's revolutions (the "
            "Cammegh SS2's status line carries the rotor's speed and direction, not the ball's)"
        )
    return [
        f"integrity.{key}: a band on the ball's revolutions needs a wheel that counts them "
        f"(a gpio-wheel with a ball-track sensor), and {why}; without it the band could "
        "never fire: remove it (docs/integrity.md)"
        for key in keys
    ]


def spin_time_problems(settings: IntegritySettings, devices: Iterable[Any]) -> list[str]:
    """Bounds on the spin's time (ball in the rim to the result) need every enabled
    wheel to say when the ball is in the rim (state 3): its driver's
    ``reports_ball_in_rim(settings)``, true where the driver does not say (the Cammegh
    SS2 sends state 3); a gpio-wheel only with a ball-track sensor."""
    keys = [k for k in ("spin_min_ms", "spin_max_ms") if getattr(settings, k)]
    if not keys:
        return []
    from drivers.registry import driver_class

    blind = [d for d in devices if d.enabled and d.kind == "wheel"
             and not getattr(driver_class(d.driver), "reports_ball_in_rim", lambda s: True)(
                 d.settings)]  # fmt: skip
    if not blind:
        return []
    d = blind[0]
    return [
        f"integrity.{key}: the spin is timed from the ball in the rim (state 3), and "
        f"devices.{d.name} ({d.driver}) cannot see it without a ball-track sensor: set "
        "ball_track_pin, or remove the bound; without it the check could never fire "
        "(docs/integrity.md)"
        for key in keys
    ]


register_section("integrity", _validate)
