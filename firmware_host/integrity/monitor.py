"""The integrity detectors at the table: an extension that follows the rounds (bias,
repeated numbers, large transactions) and listens to the devices' events (the wheel's
spin, rotor and misfires), raising alerts (``docs/integrity.md``).

It never takes part in a round: a hook that fails is logged by the extension point and
the table plays on. The statistics are pure (``bias.py``, ``stats.py``).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from tablecommon.events.base import DeviceEvent
from tablecommon.events.shoe import (
    CardDealt,
    CardMisread,
    DeckChecked,
    DuplicateCard,
    ShuffleFinished,
    ShuffleStarted,
)
from tablecommon.events.wheel import GameStateChanged, GameVoided, WheelWarning, WinningNumber

from ..games.base import Bet, DiscreteGame, Game
from ..games.money import MoneyRules, settle_amounts
from ..journal import AuditLog
from ..jsonio import JSON
from ..table.extension import RoundHistory, TableExtension, TableExtensions
from ..timefmt import utc_now
from .alerts import Alerts
from .bias import DiceBias, Finding, WheelBias
from .deckcheck import ShoeDeckCheck
from .events import table_event
from .settings import IntegritySettings
from .shoe import ShoeComposition

log = logging.getLogger(__name__)

#: What the wheel reports as a misfire or a launch failure (warning codes, void reasons).
MISFIRES = frozenset({"MISS_SPIN", "LAUNCH_FAILURE", "NO_BALL"})
#: The wheel's ball-track sensor failed: a spin's revolutions unknown (gpio-wheel).
BALL_TRACK_FAULTS = frozenset({"BALL_REVS_UNKNOWN", "BALL_TRACK_SENSOR_STUCK"})


def max_payout_of(
    game: Game[Any, Any], rules: Any, money: MoneyRules
) -> Callable[[Bet], int] | None:
    """The most a bet can be paid (the gross prize, ``payout``, as settlement pays it):
    the largest over every outcome of a game decided by one outcome from a finite set
    (roulette, sic bo, fantan, fish-prawn-crab), settled by the rules core itself. None
    for a dealt game (baccarat, blackjack, stud poker...): its outcomes are not
    enumerated here, and its bets are reported at placement by their stake alone."""
    if not isinstance(game, DiscreteGame):
        return None
    outcomes = [o for o, _ in game.outcome_space(rules)]

    # Settling one bet against all 216 outcomes of sic bo costs about 0.8 ms: a table
    # sees the same few bets at the same few stakes all day, so each is settled once.
    @functools.lru_cache(maxsize=4096)
    def settled(bet_type: str, selection: str, stake: int) -> int:
        bet = Bet("max-payout", 1, bet_type, json.loads(selection), stake)
        return max(settle_amounts(stake, game.verdict(rules, o, bet), money).payout
                   for o in outcomes)  # fmt: skip

    def most(bet: Bet) -> int:
        return settled(bet.bet_type, json.dumps(bet.selection, sort_keys=True), bet.stake)

    return most


class IntegrityMonitor(TableExtension):
    """The table's detectors, by the device that carries the game's result
    (``Game.result_device``): a wheel (roulette), a shaker (sic bo, fish-prawn-crab),
    a shoe (the composition); large transactions on every table."""

    name = "integrity"

    def __init__(
        self,
        extensions: TableExtensions,
        *,
        alerts: Alerts,
        chain: AuditLog,
        table_id: str,
        result_device: str | None,
        settings: IntegritySettings,
        wheel_name: str = "wheel",
        shaker_name: str = "shaker",
        shoe_name: str = "shoe",
        decks: int = 8,
        currency: str | None = None,
        max_payout: Callable[[Bet], int] | None = None,
        clock: Callable[[], datetime] = utc_now,
        deck_check: Callable[[], Awaitable[None]] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.alerts = alerts
        self.currency = currency
        #: The most a bet can be paid (:func:`max_payout_of`), None: not known.
        self.max_payout = max_payout
        self.chain = chain
        self.table_id = table_id
        self.result_device = result_device
        self.settings = settings
        self.clock = clock
        s = settings
        self.serial = s.wheel_serial or wheel_name
        self.wheel: WheelBias | None = None
        self.dice: DiceBias | None = None
        if result_device == "wheel":
            self.wheel = WheelBias(
                self.serial, window=s.chi_square_window, chi_every=s.chi_square_every,
                rate=s.spins_per_hour, warnings_per_week=s.bias_warnings_per_week,
            )  # fmt: skip
        elif result_device == "shaker":
            self.dice = DiceBias(
                shaker_name, 3, window=s.chi_square_window, chi_every=s.chi_square_every,
                rate=s.spins_per_hour, warnings_per_week=s.bias_warnings_per_week,
            )  # fmt: skip
        self.shoe: ShoeComposition | None = None
        if result_device == "shoe":
            self.shoe = ShoeComposition(
                shoe_name, decks=decks, unseen_max=s.shoe_unseen_max,
                coups_min=s.shoe_coups_min, coups_max=s.shoe_coups_max,
            )  # fmt: skip
        #: The shoe's own deck check (``deck_check``: the driver's request; None, or
        #: ``[integrity] shoe_deck_check`` false: never asked).
        self.deck: ShoeDeckCheck | None = None
        if self.shoe is not None:
            self.deck = ShoeDeckCheck(
                shoe_name, deck_check if s.shoe_deck_check else None,
                timeout_s=s.shoe_deck_check_timeout_s, monotonic=monotonic,
                unavailable=self._deck_unavailable,
            )  # fmt: skip
        self._last_number: int | None = None
        self._run = 0
        self._rim_at: float | None = None
        self._last_direction: str | None = None
        self.misfires = 0
        extensions.add(self)

    # -- rounds --------------------------------------------------------------------------
    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        self._large(payload)
        self._raise(self._observe(payload.get("outcome")))
        if self.shoe is not None:
            self.shoe.coup()

    def new_shoe(self, data: Mapping[str, JSON]) -> None:
        """The table's new shoe (the shoe's shuffle, or the ``new_shoe`` command)."""
        if self.shoe is None:
            return
        shuffle = data.get("shuffle")
        self._start_shoe(None, shuffle if isinstance(shuffle, int) else 0)

    def _start_shoe(self, decks: int | None, number: int) -> None:
        """A new shoe: the one before ends (its coups and cards to the event log,
        ``shoe_finished``; what its end shows raised). The same shuffle told twice
        (the procedure's ``new_shoe``, then the shoe's own event) starts it once."""
        shoe = self.shoe
        assert shoe is not None
        if shoe.started and number and number == shoe.number and not shoe.coups and not shoe.cards:
            if decks:
                shoe.decks = decks
            return
        ended = shoe.summary() if shoe.started else None
        if ended is not None and self.deck is not None and (shoe.cards or shoe.coups):
            self.deck.ask("end_of_shoe", shoe.number)  # the shoe's count of what it dealt
        found = shoe.new_shoe(decks, number)
        if ended is not None:
            self._event("shoe_finished", ended, None)  # coups per shoe, on `events` too
        self._raise(found)

    def tick(self) -> None:
        """Deck checks due again, or given up (``SHOE_DECK_UNCHECKED``)."""
        if self.deck is None:
            return
        for a in self.deck.tick():
            self._raise([Finding(
                "SHOE_DECK_UNCHECKED", f"{self.deck.shoe}:{a.shoe}:check",
                f"shoe {self.deck.shoe}: the deck check asked {a.purpose.replace('_', ' ')} "
                f"(shoe {a.shoe}) was not answered within {self.deck.timeout_s:g} s"
                + (f" ({a.error})" if a.error else ""),
                {"shoe": self.deck.shoe, "shuffle": a.shoe, "purpose": a.purpose,
                 "timeout_s": self.deck.timeout_s, "tries": a.tries,
                 "acknowledged": a.acknowledged, "error": a.error},
            )])  # fmt: skip

    def _deck_unavailable(self, why: str) -> None:
        """The shoe refused the deck check as not offered: journaled once."""
        assert self.deck is not None
        self._event("deck_check_unavailable", {"shoe": self.deck.shoe, "refused": why[:200]}, None)

    def _deck_checked(self, event: DeckChecked) -> list[Finding]:
        """The shoe's count: journaled (``deck_check``, on ``events`` too), and what it
        misses or holds too many raised."""
        assert self.shoe is not None
        ask = self.deck.answered() if self.deck is not None else None
        purpose, number = (ask.purpose, ask.shoe) if ask is not None else ("device", event.shuffle)
        data: dict[str, JSON] = {
            "shoe": self.shoe.shoe, "purpose": purpose, "shuffle": number,
            "device_shuffle": event.shuffle, "decks": event.decks, "counted": event.counted,
            "missing": list(event.missing), "extra": list(event.extra), "ok": event.ok,
        }  # fmt: skip
        self._event("deck_check", data, None)
        return self.shoe.deck_check(
            event.missing, event.extra, shuffle=number, purpose=purpose,
            counted=event.counted, decks=event.decks,
        )  # fmt: skip

    def _observe(self, outcome: JSON) -> list[Finding]:
        if not isinstance(outcome, dict):
            return []
        found: list[Finding] = []
        if self.wheel is not None and isinstance(outcome.get("number"), int):
            number = int(outcome["number"])
            found += self.wheel.spin(number)
            found += self._repeat(number)
        elif self.dice is not None and isinstance(outcome.get("dice"), list):
            dice = outcome["dice"]
            assert isinstance(dice, list)
            if len(dice) == self.dice.dice and all(isinstance(d, int) for d in dice):
                found += self.dice.throw([int(d) for d in dice])
        return found

    def _repeat(self, number: int) -> list[Finding]:
        self._run = self._run + 1 if number == self._last_number else 1
        self._last_number = number
        if self._run < self.settings.repeat_limit:
            return []
        return [Finding(
            "REPEATED_NUMBER", f"{self.serial}:{number}",
            f"wheel {self.serial}: {number} came up {self._run} times in a row",
            {"serial": self.serial, "number": number, "times": self._run,
             "limit": self.settings.repeat_limit},
        )]  # fmt: skip

    def resumed(self, resolved: Sequence[Mapping[str, JSON]], history: RoundHistory) -> None:
        """Rebuild the statistics from the journal's last rounds (oldest first), without
        raising again what was raised before the restart."""
        if self.wheel is None and self.dice is None:
            return
        rounds = history.recall(self.settings.chi_square_window)
        for r in reversed(rounds):
            s = r.settlement
            if isinstance(s, dict) and s.get("status") == "settled":
                self._observe(s.get("outcome"))

    # -- large transactions -------------------------------------------------------------
    def bet_placed(self, round_id: str, bet: Bet) -> None:
        """A bet whose stake, or the most it can be paid, is at or above the threshold:
        raised when it is placed, in the transaction that journals it (exactly once:
        a retried request is answered from the journal and places nothing)."""
        limit = self.settings.large_transaction
        if not limit:
            return
        top = self.max_payout(bet) if self.max_payout is not None else None
        over: list[JSON] = [w for w, a in (("stake", bet.stake), ("max_payout", top))
                            if a is not None and a >= limit]  # fmt: skip
        if not over:
            return
        data: dict[str, JSON] = {
            "kind": "bet", "amount": bet.stake, "max_payout": top, "over": over,
            "threshold": limit, "currency": self.currency, "bet_id": bet.bet_id,
            "seat": bet.seat, "bet_type": bet.bet_type,
        }  # fmt: skip
        self._event("large_transaction", data, round_id)
        most = "" if top is None else f", paying at most {top}"
        self.alerts.raise_(
            "LARGE_TRANSACTION",
            f"bet of {bet.stake} minor units{most} (threshold {limit}) placed in round "
            f"{round_id}, seat {bet.seat}",
            subject=f"{round_id}:{bet.bet_id}:stake",
            evidence={**data, "round_id": round_id},
        )

    def _large(self, payload: Mapping[str, JSON]) -> None:
        """At settlement: every payout at or above the threshold (the stakes were
        reported when placed)."""
        limit = self.settings.large_transaction
        bets = payload.get("bets")
        if not limit or not isinstance(bets, list):
            return
        rid = payload.get("round_id")
        for b in bets:
            if not isinstance(b, dict):
                continue
            amount = b.get("payout")
            if isinstance(amount, int) and amount >= limit:
                data: dict[str, JSON] = {
                    "kind": "payout", "amount": amount, "threshold": limit,
                    "currency": payload.get("currency"), "bet_id": b.get("bet_id"),
                    "seat": b.get("seat"), "bet_type": b.get("bet_type"),
                }  # fmt: skip
                self._event("large_transaction", data, rid if isinstance(rid, str) else None)
                self.alerts.raise_(
                    "LARGE_TRANSACTION",
                    f"payout of {amount} minor units (threshold {limit}) in round "
                    f"{rid}, seat {b.get('seat')}",
                    subject=f"{rid}:{b.get('bet_id')}:payout",
                    evidence={**data, "round_id": rid},
                )

    def _event(self, kind: str, data: Mapping[str, JSON], round_id: str | None) -> None:
        """An event of the audit log, published on ``events`` in the same transaction."""
        table_event(self.chain, self.table_id, kind, data, at=self.clock(), round_id=round_id)

    # -- devices ------------------------------------------------------------------------
    async def on_device_event(self, device: str, event: DeviceEvent) -> None:
        """Every event of every device (the daemon hands them here after the procedure)."""
        try:
            self._raise(self._device(event))
        except Exception:  # a detector must never stop the devices' pump
            log.exception("integrity: %s event %s", device, event.kind)

    def _device(self, event: DeviceEvent) -> list[Finding]:
        if self.shoe is not None:
            if isinstance(event, ShuffleStarted):
                self._start_shoe(event.decks, event.shuffle)
                return []
            if isinstance(event, CardDealt):
                return self.shoe.card(event.card)
            if isinstance(event, DuplicateCard) and event.card:
                return self.shoe.card(event.card)  # dealt although the decks hold no more
            if isinstance(event, ShuffleFinished) and self.deck is not None:
                self.deck.ask("new_shoe", event.shuffle)  # the shoe's count of its new set
            elif isinstance(event, CardMisread):
                self.shoe.misread()
            elif isinstance(event, DeckChecked):
                return self._deck_checked(event)
            return []
        s = self.settings
        w = self.serial
        found: list[Finding] = []
        if isinstance(event, GameStateChanged):
            if event.state == 3 and event.previous != 3:
                self._rim_at = event.monotonic
            return found
        if isinstance(event, WinningNumber):
            if self._rim_at is not None:
                ms = round((event.monotonic - self._rim_at) * 1000)
                if s.spin_min_ms and ms < s.spin_min_ms:
                    found.append(Finding("SPIN_TOO_FAST", w,
                        f"wheel {w}: spin {event.spin} took {ms} ms (minimum {s.spin_min_ms})",
                        {"serial": w, "spin": event.spin, "ms": ms, "min_ms": s.spin_min_ms}))  # fmt: skip
                if s.spin_max_ms and ms > s.spin_max_ms:
                    found.append(Finding("SPIN_TOO_SLOW", w,
                        f"wheel {w}: spin {event.spin} took {ms} ms (maximum {s.spin_max_ms})",
                        {"serial": w, "spin": event.spin, "ms": ms, "max_ms": s.spin_max_ms}))  # fmt: skip
            self._rim_at = None
            rpm = event.speed / 10
            low, high = s.rotor_rpm_min, s.rotor_rpm_max
            if (low and rpm < low) or (high and rpm > high):
                found.append(Finding("WHEEL_ROTOR_SPEED", w,
                    f"wheel {w}: rotor at {rpm:g} rpm, outside {low}-{high or '...'} rpm",
                    {"serial": w, "spin": event.spin, "rpm_x10": event.speed,
                     "min_rpm": low, "max_rpm": high}))  # fmt: skip
            if (
                s.alternate_direction
                and self._last_direction is not None
                and event.direction == self._last_direction
            ):
                found.append(Finding("WHEEL_DIRECTION", w,
                    f"wheel {w}: spin {event.spin} turned {event.direction} again; the house "
                    "procedure requires the direction to alternate",
                    {"serial": w, "spin": event.spin, "direction": event.direction}))  # fmt: skip
            self._last_direction = event.direction
            found += self._ball_revs(event)
            return found
        if isinstance(event, WheelWarning) and event.code in BALL_TRACK_FAULTS:
            found.append(Finding("WHEEL_BALL_TRACK", w,
                f"wheel {w}: {event.message}",
                {"serial": w, "spin": event.spin, "reason": event.code}))  # fmt: skip
            return found
        # counted once: the void of a misfire, or a misfire warned without a void
        code, spin = "", getattr(event, "spin", None)
        if isinstance(event, WheelWarning) and event.code in MISFIRES:
            code = event.code if event.action in ("warn", "fault") else ""
        elif isinstance(event, GameVoided) and event.reason in MISFIRES:
            code = event.reason
        if code:
            self.misfires += 1
            found.append(Finding("WHEEL_MISFIRE", w,
                f"wheel {w}: {code.lower().replace('_', ' ')} (spin {spin}); "
                f"{self.misfires} since start-up",
                {"serial": w, "spin": spin, "reason": code, "count": self.misfires}))  # fmt: skip
        return found

    def _ball_revs(self, event: WinningNumber) -> list[Finding]:
        """The spin's ball revolutions (a wheel with a ball-track sensor) against the
        band; a spin whose revolutions are unknown is the sensor's fault, raised from
        the wheel's warning, never a spin of 0 revolutions."""
        s, w, revs = self.settings, self.serial, event.ball_revs
        low, high = s.ball_revs_min, s.ball_revs_max
        if revs is None or not ((low and revs < low) or (high and revs > high)):
            return []
        return [Finding("WHEEL_BALL_REVS", w,
            f"wheel {w}: the ball ran {revs} revolutions in spin {event.spin}, outside "
            f"{low or '...'}-{high or '...'}",
            {"serial": w, "spin": event.spin, "revs": revs, "min_revs": low, "max_revs": high,
             "rev_ms": list(event.ball_rev_ms), "number": event.number})]  # fmt: skip

    def _raise(self, findings: Sequence[Finding]) -> None:
        for f in findings:
            self.alerts.raise_(f.code, f.message, subject=f.subject, evidence=f.evidence)
