"""The progressive jackpot controller: the stud poker jackpot (61/2004 art. 10-11)
made durable, with a meter maximum, overflow, parameter changes after the next hit,
two-step hits, audit meters and a rate-limited display.

The rules of the pool are the pure component ``firmware_host/games/jackpot.py``; this
module adds what a casino's meter needs on top, also as pure functions
(:func:`apply_meter`), the controller that keeps it in the journal
(:class:`JackpotController`, which takes part in each round's settle transaction
through the round engine) and its display (:class:`JackpotDisplay`, a
:class:`~firmware_host.table.extension.TableExtension` that follows the rounds):

- **Maximum and overflow.** With ``[jackpot] meter_max`` set, the meter never shows
  more: contributions above it go to ``overflow``, a reserve that is added back to
  the pool after the next hit (up to the maximum again). Nothing is lost.
- **Parameter changes** (console ``jackpot-param``) wait in ``pending`` and take
  effect right after the next hit, so a hand is never paid under rules changed
  mid-cycle.
- **Two-step hits.** A hit is recorded in the same journal transaction that settles
  its round (step 1); the payment is confirmed later by the attendant (console
  ``jackpot-paid`` or the ``jackpot_paid`` command, step 2). A crash between the two
  neither loses nor repeats the hit: its id is unique and both steps are idempotent.
- **Audit meters.** ``credited``, ``paid_from_pool``, ``seeded``, ``adjusted`` add up
  over the meter's life so that, always, ``pool + overflow == initial_seed +
  credited - paid_from_pool + seeded + adjusted``. A mismatch at start-up latches
  the ``JACKPOT_METER_MISMATCH`` fault, which stops play until cleared.
- **Display.** ``jackpot`` on MQTT and the jackpot sign are updated at once on a hit
  (and on a privileged change) and at most every ``display_ms`` while the pool grows.
- **Jackpot lock** (issue 19). From a hit until its payment is confirmed, every
  linked display shows the pending prize: the sign holds the hit (``show_hit`` with
  no time limit), the retained ``jackpot`` says ``locked`` (the hit, its amount, how
  many wait) and the live view shows it. Simultaneous hits are paid one at a time in
  the order they were recorded, which is the regulation's order of payment (61/2004
  art. 10 4), 7): left to right from the croupier's left, royal flushes of one game
  together, then across games the earlier first): a payment confirmed out of that
  order is refused ``JACKPOT_HIT_OUT_OF_ORDER``; each confirmation moves the displays
  on to the next hit, and the last one back to the pool.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from tablecommon.settings import FieldSpec, register_section, validate_fields

from ..games import jackpot as jp
from ..games.base import Bet, Game, Settlement
from ..games.errors import CodedError
from ..games.money import MoneyRules
from ..journal import Database, JackpotHit, JackpotStore, RoundRecord
from ..jsonio import JSON
from ..timefmt import iso_utc, utc_now
from .admission import Refusal
from .extension import RoundHistory, TableExtension, TableExtensions

log = logging.getLogger(__name__)

NAME = "progressive"
#: The stud poker jackpot bet's type (61/2004 art. 10: the optional progressive bet).
BET_TYPE = "jackpot"
#: Where a round's payload carries the jackpot's part (``rounds``: ``jackpot``).
PAYLOAD_KEY = "jackpot"

JACKPOT_SPECS: dict[str, FieldSpec] = {
    "meter_max": FieldSpec(
        "int", 0, doc="most the meter may show, minor units (0: no maximum)", range=(0, 10**13)
    ),
    "display_ms": FieldSpec(
        "int",
        1000,
        doc="minimum interval of display updates while the pool grows",
        range=(100, 60000),
    ),
    "sign": FieldSpec("str", "", doc="device name of the jackpot sign ('' = MQTT only)"),
}


def _validate(data: Any, path: str, errors: list[str]) -> dict[str, Any]:
    return validate_fields(JACKPOT_SPECS, data, path, errors)


register_section("jackpot", _validate)


@dataclass(frozen=True)
class JackpotSettings:
    """``[jackpot]`` as the daemon reads it (only on a table that offers a jackpot)."""

    meter_max: int | None = None
    display_ms: int = 1000
    sign: str | None = None

    @staticmethod
    def from_section(section: Mapping[str, Any] | None) -> JackpotSettings:
        if section is None:
            return JackpotSettings()
        return JackpotSettings(
            meter_max=section["meter_max"] or None,
            display_ms=section["display_ms"],
            sign=section["sign"] or None,
        )


@dataclass(frozen=True)
class Meter:
    """Everything persisted for the jackpot (``Journal.jackpot_state("progressive")``)."""

    state: jp.JackpotState
    initial_seed: int
    meter_max: int | None = None
    overflow: int = 0
    pending: jp.JackpotParams | None = None
    credited: int = 0
    paid_from_pool: int = 0
    seeded: int = 0
    adjusted: int = 0
    hits: int = 0

    @property
    def pool(self) -> int:
        return self.state.pool

    def expected_total(self) -> int:
        return self.initial_seed + self.credited - self.paid_from_pool + self.seeded + self.adjusted

    def balanced(self) -> bool:
        return self.pool + self.overflow == self.expected_total()

    def to_json(self) -> dict[str, JSON]:
        return {
            "state": self.state.to_json(),
            "initial_seed": self.initial_seed,
            "meter_max": self.meter_max,
            "overflow": self.overflow,
            "pending_params": self.pending.to_json() if self.pending else None,
            "meters": {
                "credited": self.credited,
                "paid_from_pool": self.paid_from_pool,
                "seeded": self.seeded,
                "adjusted": self.adjusted,
                "hits": self.hits,
            },
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Meter:
        m = data.get("meters", {})
        pending = data.get("pending_params")
        return Meter(
            state=jp.JackpotState.from_json(data["state"]),
            initial_seed=int(data["initial_seed"]),
            meter_max=data.get("meter_max"),
            overflow=int(data.get("overflow", 0)),
            pending=jp.JackpotParams.from_json(pending) if pending else None,
            credited=int(m.get("credited", 0)),
            paid_from_pool=int(m.get("paid_from_pool", 0)),
            seeded=int(m.get("seeded", 0)),
            adjusted=int(m.get("adjusted", 0)),
            hits=int(m.get("hits", 0)),
        )


def new_meter(params: jp.JackpotParams, meter_max: int | None = None) -> Meter:
    return Meter(jp.initial_state(params), params.seed, meter_max)


def _cap(meter: Meter) -> Meter:
    """Move anything above the maximum into overflow."""
    if meter.meter_max is not None and meter.pool > meter.meter_max:
        excess = meter.pool - meter.meter_max
        return replace(
            meter,
            state=replace(meter.state, pool=meter.meter_max),
            overflow=meter.overflow + excess,
        )
    return meter


def apply_meter(meter: Meter, jr: jp.JackpotRound) -> Meter:
    """Fold one round's jackpot result into the meter (pure).

    Contributions and payments come from the pure component; then, after a hit, the
    overflow reserve flows back into the pool and pending parameters take effect;
    finally the maximum caps the pool again.
    """
    paid = sum(p.from_pool for p in jr.payments)
    m = replace(
        meter,
        state=jr.state,
        credited=meter.credited + jr.credited,
        paid_from_pool=meter.paid_from_pool + paid,
        seeded=meter.seeded + jr.seeded,
        hits=meter.hits + len(jr.payments),
    )
    if jr.payments:
        if m.overflow:
            m = replace(m, state=replace(m.state, pool=m.pool + m.overflow), overflow=0)
        if m.pending is not None:
            m = replace(m, state=replace(m.state, params=m.pending), pending=None)
    return _cap(m)


def adjust_meter(meter: Meter, amount: int) -> Meter:
    """A privileged adjustment (the pool never goes below zero)."""
    if meter.pool + amount < 0:
        raise ValueError(f"an adjustment of {amount} would make the pool negative ({meter.pool})")
    m = replace(
        meter,
        state=replace(meter.state, pool=meter.pool + amount),
        adjusted=meter.adjusted + amount,
    )
    return _cap(m)


def reset_meter(meter: Meter) -> Meter:
    """A privileged reset to the seed (recorded as an adjustment; overflow kept)."""
    return adjust_meter(meter, meter.state.params.seed - meter.pool)


PARAM_KEYS = tuple(f.name for f in dataclasses.fields(jp.JackpotParams))


def with_param(params: jp.JackpotParams, key: str, value: str) -> jp.JackpotParams:
    if key not in PARAM_KEYS:
        raise ValueError(f"unknown jackpot parameter {key!r}; known: {', '.join(PARAM_KEYS)}")
    data = params.to_json()
    data[key] = value
    return jp.JackpotParams.from_json(data)


@dataclass(frozen=True, slots=True)
class JackpotShare:
    """The jackpot's part of a round's settle (or void) transaction."""

    settlement: Settlement | None
    #: The round payload's ``jackpot`` object.
    summary: dict[str, JSON]
    #: The hits to record with the settlement (step 1 of 2).
    hits: list[JackpotHit]
    #: The meter after the round, journaled in the same transaction.
    state: dict[str, JSON]
    #: The bet ids of a void round's jackpot bets, carried to the next game and so not
    #: refunded (61/2004 art. 11 1), 4)).
    carried: frozenset[str] = frozenset()

    @property
    def extras(self) -> dict[str, JSON]:
        """What the share adds to the round's payload: its ``jackpot`` object."""
        return {PAYLOAD_KEY: self.summary}


@dataclass
class JackpotController:
    """The table's jackpot: meter state, its part of each settle and void, privileged
    changes. Watchers (:meth:`watch`) hear of every committed change of the meter.

    ``store``: the journal's jackpot part (states, hits); ``db``: its database (a
    payment's watchers are told once the transaction that confirms it commits)."""

    store: JackpotStore
    db: Database
    params: jp.JackpotParams
    meter_max: int | None = None
    currency: str = "MOP"
    meter: Meter = field(init=False)
    _pending_meter: Meter | None = None
    _watchers: list[Callable[[bool], None]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        saved = self.store.state(NAME)
        if saved is None:
            self.meter = new_meter(self.params, self.meter_max)
            self.store.save_state(
                self.meter.to_json(),
                name=NAME,
                events=[("jackpot_installed", {"seed": self.params.seed})],
            )
        else:
            self.meter = replace(Meter.from_json(saved), meter_max=self.meter_max)
            if self.params != self.meter.state.params and self.params != self.meter.pending:
                # The configured parameters changed: they take effect after the next hit.
                self.meter = replace(self.meter, pending=self.params)
                self.store.save_state(
                    self.meter.to_json(),
                    name=NAME,
                    events=[
                        (
                            "jackpot_param_pending",
                            {"source": "configuration", "effective": "after the next hit"},
                        )
                    ],
                )

    def watch(self, callback: Callable[[bool], None]) -> None:
        """Call ``callback(urgent)`` after every committed change of the meter;
        ``urgent`` for a hit or a privileged change (the display shows it at once)."""
        self._watchers.append(callback)

    def _changed(self, urgent: bool) -> None:
        for cb in list(self._watchers):
            try:
                cb(urgent)
            except Exception:  # a display must never stop the table
                log.exception("jackpot watcher failed")

    def carried_bet(self, seat: int) -> jp.JackpotBet | None:
        """The jackpot bet a void game carried to ``seat``'s next game (61/2004 art. 11
        1), 4)), or None."""
        return next((b for b in self.meter.state.carried if b.seat == seat), None)

    def admit(self, bet: Bet, rnd: RoundRecord) -> Refusal | None:
        """The jackpot table's admission rule (an :data:`~.admission.AdmissionRule`,
        registered by whoever builds the table): 61/2004 art. 11 1), 4), a jackpot bet
        carried from a void game plays in the seat's next game, so a second one there
        (which could never be settled) is refused ``JACKPOT_ALREADY_CARRIED``."""
        if bet.bet_type != BET_TYPE:
            return None
        held = self.carried_bet(bet.seat)
        if held is None:
            return None
        return Refusal(
            "JACKPOT_ALREADY_CARRIED",
            f"seat {bet.seat} already has jackpot bet {held.bet_id!r} carried from a "
            "void game; it plays in this game (61/2004 art. 11 1))",
        )

    # -- settlement (called by the round engine inside its settle) ---------------
    def settle(
        self,
        game: Game[Any, Any],
        rules: Any,
        outcome: Any,
        bets: Sequence[Bet],
        money: MoneyRules,
        round_id: str,
    ) -> JackpotShare:
        """Settle a round with the jackpot. The new meter becomes current only when
        :meth:`committed` is called after the journal commit."""
        settle_with_jackpot = getattr(game, "settle_with_jackpot", None)
        if settle_with_jackpot is None:
            raise TypeError(f"{game.game_id} has no progressive jackpot to settle")
        settlement, new_state = settle_with_jackpot(rules, outcome, bets, money, self.meter.state)
        info = settlement.extras.get("jackpot")
        if info is None:  # no jackpot bet in play: the state may still have changed (carried)
            meter = replace(self.meter, state=new_state)
            payments: list[JSON] = []
            contributions: list[JSON] = []
            credited = 0
        else:
            jr = _round_from(info, new_state)
            meter = apply_meter(self.meter, jr)
            payments = list(info["payments"])
            contributions = list(info["contributions"])
            credited = jr.credited
        hits = [
            JackpotHit(
                f"{round_id}:{p['bet_id']}",
                p["prize"],
                round_id,
                {"seat": p["seat"], "hand": p["hand"], "basis": p["basis"], "bet_id": p["bet_id"]},
                NAME,
            )
            for p in payments
        ]
        self._pending_meter = meter
        summary = {
            "contributions": contributions,
            "hits": [dict(p, hit_id=h.hit_id) for p, h in zip(payments, hits, strict=True)],
            "credited": credited,
            "pool_before": self.meter.pool,
            "pool_after": meter.pool,
            "overflow": meter.overflow,
        }
        return JackpotShare(settlement, summary, hits, meter.to_json())

    def void(self, bets: Sequence[Bet]) -> JackpotShare:
        """Art. 11 1), 4): the jackpot bets of a void game are carried to the next."""
        carried = [b for b in bets if b.bet_type == BET_TYPE]
        meter = replace(
            self.meter,
            state=jp.void_round(
                self.meter.state, [jp.JackpotBet(b.seat, b.stake, b.bet_id) for b in carried]
            ),
        )
        self._pending_meter = meter
        summary: dict[str, JSON] = {
            "contributions": [],
            "hits": [],
            "carried": [b.to_json() for b in carried],
        }
        return JackpotShare(
            None, summary, [], meter.to_json(), frozenset(b.bet_id for b in carried)
        )

    def committed(self, hit: bool) -> None:
        """The journal committed the round: make the new meter current."""
        pending = self._pending_meter
        if pending is not None:
            self.meter = pending
            self._pending_meter = None
        self._changed(hit)

    def discard(self) -> None:
        self._pending_meter = None

    # -- privileged operations (console) ------------------------------------------
    def _save(self, meter: Meter, event: str, data: Mapping[str, JSON]) -> JSON:
        self.store.save_state(meter.to_json(), name=NAME, events=[(event, dict(data))])
        self.meter = meter
        self._changed(True)
        return self.get_status()

    def adjust(self, amount: int, *, reason: str, who: str) -> JSON:
        return self._save(
            adjust_meter(self.meter, amount),
            "jackpot_adjusted",
            {"amount": amount, "reason": reason, "operator": who, "pool": self.meter.pool + amount},
        )

    def reset(self, *, reason: str, who: str) -> JSON:
        return self._save(
            reset_meter(self.meter),
            "jackpot_reset",
            {"reason": reason, "operator": who, "from": self.meter.pool},
        )

    def set_param(self, key: str, value: str, *, reason: str, who: str) -> JSON:
        base = self.meter.pending or self.meter.state.params
        new = with_param(base, key, value)
        return self._save(
            replace(self.meter, pending=new),
            "jackpot_param_pending",
            {
                "key": key,
                "value": value,
                "reason": reason,
                "operator": who,
                "effective": "after the next hit",
            },
        )

    def confirm_payment(self, hit_id: str, *, who: str | Sequence[str], reason: str = "") -> JSON:
        """Step 2 of a hit; ``who``: the principal(s) who confirmed it (two, where the
        two-person rule applies: ``[auth] two_person``). Hits are paid in the order they
        were recorded (the module docstring): an earlier unpaid hit is paid first."""
        first = self.locked()
        hit = self.store.hit(hit_id)
        if first is not None and hit is not None and not hit.paid and first.hit_id != hit_id:
            raise CodedError(
                f"hit {hit_id} waits for hit {first.hit_id} (recorded first) to be paid: "
                "simultaneous hits are paid in the regulation's order",
                code="JACKPOT_HIT_OUT_OF_ORDER",
            )
        by: JSON = who if isinstance(who, str) else list(who)
        record, changed = self.store.confirm_payment(hit_id, {"by": by, "note": reason})
        if changed:
            self.db.after_commit(lambda: self._changed(True))  # the lock moves on
        return {"hit_id": hit_id, "paid": True, "already": not changed, "amount": record.amount}

    def locked(self) -> Any:
        """The first hit not yet paid (what every display shows until it is), or None."""
        unpaid = [h for h in self.store.unpaid_hits() if h.name == NAME]
        return unpaid[0] if unpaid else None

    def lock_payload(self) -> JSON:
        """``locked`` of the ``jackpot`` topic: the hit every display shows, or None."""
        unpaid = [h for h in self.store.unpaid_hits() if h.name == NAME]
        if not unpaid:
            return None
        h = unpaid[0]
        details = h.details if isinstance(h.details, dict) else {}
        return {
            "hit_id": h.hit_id,
            "amount": h.amount,
            "round_id": h.round_id,
            "seat": details.get("seat"),
            "hand": details.get("hand"),
            "recorded_at": h.recorded_at,
            "waiting": len(unpaid),
        }

    # -- status ----------------------------------------------------------------------
    def display_payload(self) -> dict[str, JSON]:
        """The ``jackpot`` topic's payload (``jackpot.json``, without its common head)."""
        hits = self.store.hits(1, name=NAME)
        last: JSON = None
        if hits:  # as jackpot.json's `hit` says (the journal's record has more)
            h = hits[0]
            details = h.details if isinstance(h.details, dict) else {}
            last = {"hit_id": h.hit_id, "amount": h.amount, "at": h.recorded_at,
                    "round_id": h.round_id, "seat": details.get("seat"),
                    "hand": details.get("hand")}  # fmt: skip
        return {
            "name": NAME,
            "amount": self.meter.pool,
            "currency": self.currency,
            "last_hit": last,
            "fault": None if self.meter.balanced() else "JACKPOT_METER_MISMATCH",
            "locked": self.lock_payload(),
        }

    def get_status(self) -> dict[str, JSON]:
        m = self.meter
        return {
            "pool": m.pool,
            "currency": self.currency,
            "overflow": m.overflow,
            "meter_max": m.meter_max,
            "params": m.state.params.to_json(),
            "pending_params": m.pending.to_json() if m.pending else None,
            "carried_bets": [b.to_json() for b in m.state.carried],
            "meters": m.to_json()["meters"],
            "balanced": m.balanced(),
            "unpaid_hits": [h.to_json() for h in self.store.unpaid_hits()],
            "last_hits": [h.to_json() for h in self.store.hits(25, name=NAME)],
            "at": iso_utc(utc_now()),
        }


@runtime_checkable
class JackpotSign(Protocol):
    """The jackpot sign as the display uses it (``drivers.sign.driver.SignDriver``)."""

    def show_amount(self, amount: int, currency: str | None = None) -> Awaitable[bool]: ...


class JackpotDisplay(TableExtension):
    """The jackpot on MQTT (``jackpot``, retained) and on the sign: at once after a hit or
    a privileged change, at most every ``display_ms`` while the pool grows, and again
    after a restart; a hit's message and prize on the sign. The sign's writes run on
    their own tasks: an offline sign never holds up a round (its driver keeps the state
    and sends it again when the sign answers; its health is the device's own)."""

    name = "jackpot-display"

    def __init__(
        self,
        controller: JackpotController,
        extensions: TableExtensions,
        *,
        publish: Callable[[Mapping[str, JSON]], None],
        sign: JackpotSign | None = None,
        display_ms: int = 1000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.controller = controller
        self.publish = publish
        self.sign = sign
        self.display_ms = display_ms
        self._clock = clock
        self._last = float("-inf")
        self._due = False
        self._sign_tasks: set[asyncio.Task[bool]] = set()
        #: What the sign was last asked to show: ("amount" | "hit", amount).
        self._shown: tuple[str, int] | None = None
        controller.watch(self._changed)
        extensions.add(self)

    def _changed(self, urgent: bool) -> None:
        self.display(force=urgent)

    def display(self, *, force: bool = False) -> None:
        now = self._clock()
        if not force and now - self._last < self.display_ms / 1000:
            self._due = True
            return
        self._last = now
        self._due = False
        c = self.controller
        try:
            payload = c.display_payload()
            self.publish(payload)
        except Exception:
            log.exception("jackpot display on MQTT failed")
            return
        if self.sign is None:
            return
        locked = payload.get("locked")
        show_hit = getattr(self.sign, "show_hit", None)
        if isinstance(locked, dict) and isinstance(locked.get("amount"), int):
            want: tuple[str, int] = ("hit", int(locked["amount"]))
        else:
            want = ("amount", c.meter.pool)
        if want == self._shown and not force:
            return
        self._shown = want
        try:
            if want[0] == "hit" and show_hit is not None:
                # held until the payment is confirmed (no time limit: the jackpot lock)
                coro = show_hit(want[1], "JACKPOT", seconds=0)
            else:
                coro = self.sign.show_amount(want[1], c.currency)
            task = asyncio.ensure_future(coro)
        except Exception:
            log.exception("jackpot sign update failed")
        else:
            self._sign_tasks.add(task)
            task.add_done_callback(self._sign_done)

    def _sign_done(self, task: asyncio.Task[bool]) -> None:
        self._sign_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("jackpot sign update failed: %s", task.exception())

    # -- hooks -----------------------------------------------------------------------
    def round_settled(self, payload: Mapping[str, JSON]) -> None:
        """A hit: every display shows the first unpaid hit's prize (the jackpot lock)
        until its payment is confirmed; never awaited by the settlement."""
        jackpot = payload.get("jackpot")
        hits = jackpot.get("hits") if isinstance(jackpot, Mapping) else None
        if hits:
            self.display(force=True)

    def resumed(self, resolved: Sequence[Mapping[str, JSON]], history: RoundHistory) -> None:
        self.display(force=True)

    def tick(self) -> None:
        """Publish a display update that the rate limit held back."""
        if self._due:
            self.display(force=False)


def _round_from(info: Mapping[str, Any], state: jp.JackpotState) -> jp.JackpotRound:
    """Rebuild the parts of a JackpotRound that apply_meter needs from its JSON."""
    payments = tuple(
        jp.Payment(
            p["seat"],
            p["bet_id"],
            p["hand"],
            p["prize"],
            p["basis"],
            p["from_pool"],
            p["house_funded"],
            p["pool_before"],
            p["pool_after"],
            p["seeded"],
            p.get("shared_by", 1),
        )
        for p in info["payments"]
    )
    return jp.JackpotRound(
        info["pool_before"], (), info["credited"], payments, info["seeded"], state
    )
