"""Every alert code the integrity detectors raise: severity, whether it is a lasting
condition, and what it means (``docs/integrity.md`` lists them; a test keeps both
equal)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AlertCode:
    code: str
    severity: str
    #: A condition holds until the detector says it is over (else: momentary).
    condition: bool
    doc: str


ALERT_CODES: dict[str, AlertCode] = {
    a.code: a
    for a in (
        AlertCode("RESULT_DISPUTED", "critical", False,
                  "the round's two readings of its result disagree, or the witness did not "
                  "read in time: the round is held, nothing settled, until a supervisor "
                  "resolves it or voids it (docs/witness.md)"),
        AlertCode("WHEEL_BIAS_POCKET", "critical", False,
                  "a pocket of a roulette wheel (per serial number) comes up more often than a fair "
                  "wheel allows: its one-sided CUSUM crossed the threshold"),
        AlertCode("WHEEL_BIAS_SECTOR", "critical", False,
                  "a sector of the wheel comes up more often than a fair wheel allows (CUSUM)"),
        AlertCode("WHEEL_BIAS_WARNING", "warning", False,
                  "warning tier, for review: a pocket comes up more often than expected (its "
                  "CUSUM tuned to a 1.2x bias crossed a threshold a fair wheel crosses about once "
                  "a week)"),
        AlertCode("WHEEL_CHI_SQUARE", "warning", False,
                  "the pocket or sector counts of a wheel fail the chi-square test of a fair "
                  "wheel at the configured significance"),
        AlertCode("WHEEL_DIRECTION", "warning", False,
                  "the rotor turned the same way as the previous spin where the house "
                  "procedure requires it to alternate"),
        AlertCode("WHEEL_ROTOR_SPEED", "warning", False,
                  "the rotor's speed is outside the configured band"),
        AlertCode("WHEEL_BALL_REVS", "warning", False,
                  "the ball's revolutions on the track in a spin (counted by the wheel's "
                  "ball-track sensor) are outside the configured band"),
        AlertCode("WHEEL_BALL_TRACK", "warning", False,
                  "the wheel's ball-track sensor gave no pulse in a spin that had a result, or "
                  "stuck: that spin's revolutions are unknown (a sensor fault)"),
        AlertCode("SPIN_TOO_FAST", "warning", False,
                  "a spin (ball launched to winning number) took less than the configured time"),
        AlertCode("SPIN_TOO_SLOW", "warning", False,
                  "a spin took longer than the configured time"),
        AlertCode("REPEATED_NUMBER", "info", False,
                  "the same number came up more times in a row than configured"),
        AlertCode("WHEEL_MISFIRE", "warning", False,
                  "the wheel reported a misfire or a launch failure (counted per wheel)"),
        AlertCode("DICE_BIAS_FACE", "critical", False,
                  "a die's face counts fail the chi-square test of fair dice, or a face's CUSUM "
                  "crossed its threshold"),
        AlertCode("DICE_BIAS_TOTAL", "critical", False,
                  "the distribution of the dice totals fails the chi-square test of fair dice"),
        AlertCode("DICE_BIAS_WARNING", "warning", False,
                  "warning tier, for review: a die's face comes up more often than expected (its "
                  "CUSUM tuned to a 1.2x bias crossed a threshold fair dice cross about once a "
                  "week)"),
        AlertCode("SHOE_CARD_EXCESS", "critical", False,
                  "the shoe's deck check counted a card more often than the decks hold, or a card "
                  "was dealt more often in one shoe"),
        AlertCode("SHOE_CARDS_MISSING", "warning", False,
                  "the shoe's deck check misses cards the decks hold, or (a shoe without a deck "
                  "check) more cards than the cut leaves were not seen by the end of a shoe"),
        AlertCode("SHOE_DECK_UNCHECKED", "warning", False,
                  "the shoe's deck check, asked for at a new shoe or at the end of a shoe, was "
                  "not answered in time (the shoe offers one)"),
        AlertCode("SHOE_LENGTH", "warning", False,
                  "a shoe dealt fewer or more coups than the configured band"),
        AlertCode("LARGE_TRANSACTION", "info", False,
                  "a bet or a payout at or above the configured threshold"),
        AlertCode("CLOCK_UNSYNCHRONISED", "warning", True,
                  "the system clock has not been synchronised for longer than the bound"),
        AlertCode("CLOCK_STEP", "warning", False,
                  "the wall clock stepped against the monotonic clock by more than the tolerance "
                  "(both times journaled; durations are measured on the monotonic clock)"),
        AlertCode("SWITCH_OPENED_IN_ROUND", "critical", False,
                  "a switch of the table (its lid, a door, the drop box...) opened while a round "
                  "was in flight (betting open or closed) and its section does not allow it"),
        AlertCode("SWITCH_OPENED_UNATTENDED", "warning", False,
                  "a switch of the table opened between rounds with no technician logged in at "
                  "the console (critical for a tamper loop, a tilt switch, the drop box, the cash "
                  "box, the controller's enclosure)"),
        AlertCode("SWITCH_FAULT", "warning", True,
                  "a switch's state is unknown: its changeover contacts read alike, it chatters "
                  "beyond contact bounce, or its pin cannot be read (a device fault; critical for "
                  "a tamper loop or a tilt switch)"),
        AlertCode("SOFTWARE_MISMATCH", "critical", True,
                  "an installed file does not match the signed manifest (a latched fault stops "
                  "play)"),
    )
}  # fmt: skip
