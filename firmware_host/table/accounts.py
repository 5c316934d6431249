"""The shift's accounting (issue 34 item 2): what the table holds and what it earned
from the opener to the closer, as a casino's accounting department counts it.

A shift is five kinds of step, each a signed command (or its console verb) by the pit
(``pit_supervisor`` by default), each an entry of the audit chain (so ``tablectl audit
verify`` catches an amount changed in the journal) and each answered with the shift
so far, published retained on ``shift`` (``docs/mqtt.md``, "Shift accounting"):

- ``shift_open``: the opening inventory (the opener: the chips in the tray);
- ``fill`` and ``credit``: chips brought to the table from the cage, and taken back,
  each with its slip;
- ``drop``: the drop counted (the cash and markers in the drop box), with its slip;
  several boxes are several drops;
- ``shift_close``: the closing inventory (the closer). The table then computes, all in
  minor units and exact:

  - **win** = closer - opener + credits - fills + drop;
  - **hold** = win / drop (an exact fraction, and ``hold_pct`` its percentage to two
    places, rounded half to even; null without a drop);
  - the **game result**: the house's net (``totals.house_net``) of every round settled
    during the shift (``seq`` after the opener's, up to the closer's), its **rounds**
    and **voids**;
  - the **theoretical win**: the exact sum of those rounds' ``totals.theo_exact``,
    rounded once to the minor unit (``games/edges.py``: half to even);
  - the **variance**: win - theoretical win; and the **difference**: win - game
    result, zero when every chip that moved is accounted for (the report balances).

Refusals, each with its code: a step out of order (``NO_SHIFT_OPEN``: a fill, credit,
drop or closer without an opener; ``SHIFT_CLOSED``: after the closer, until the next
opener; ``SHIFT_ALREADY_OPEN``; ``SHIFT_ID_TAKEN``: a shift id of one of the last
:data:`RECENT_SHIFTS` shifts), during a round (``ROUND_IN_PROGRESS``: the chips on the
layout are in no count), a slip recorded before (``SLIP_ALREADY_RECORDED``), an amount
that is not a whole number (``AMOUNT_MALFORMED``), negative (``AMOUNT_NEGATIVE``), zero
for a fill, credit or drop (``AMOUNT_ZERO``), not a whole number of the table's payable
unit (``AMOUNT_NOT_WHOLE_UNIT``) or above :data:`MAX_AMOUNT` (``AMOUNT_TOO_LARGE``).
Unsigned requests and the wrong role are the floor's refusals, before any of these.

Dual control, for the steps ``[auth] two_person`` names (none by default: ``risks.py``
would refuse a table with fewer than two principals able to send one): the first confirmation is answered ``"recorded": false`` with
``confirmed_by``; the same step (same shift, slip and amount) confirmed by a second,
different principal records it. At the console the operator logged in records a step
at once (the console's dual control follows the commands' specs, which name none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from ..games.edges import theo_minor
from ..games.money import MoneyRules, fraction_str
from ..journal import AuditLog, Database, OutboxMessage, RequestStore, RoundStore
from ..jsonio import JSON
from ..schemas import PAYLOAD_SCHEMA_VERSION
from ..timefmt import iso_utc, utc_now
from .commands import CommandCall, Commands
from .reading import RequestError, identifier

#: The topic the shift is published on (retained), relative to the table's root.
SHIFT_TOPIC = "shift"
#: The largest amount a step may carry (minor units): far above any table's float.
MAX_AMOUNT = 10**15
MAX_SLIP = 64
#: The shifts whose ids a new shift's may not take again (about a year of three a day).
RECENT_SHIFTS = 1000
#: The audit chain's entry of each step.
KINDS = {
    "shift_open": "shift_opened",
    "fill": "shift_fill",
    "credit": "shift_credit",
    "drop": "shift_drop",
    "shift_close": "shift_closed",
}
_LISTS = {"fill": "fills", "credit": "credits", "drop": "drops"}


def read_amount(value: object, what: str, payable_unit: int, *, zero: bool) -> int:
    """``value`` as an amount in minor units, or the refusal's code (module docstring)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(
            "AMOUNT_MALFORMED", f"{what} must be a whole number of minor units, got {value!r}"
        )
    if value < 0:
        raise RequestError("AMOUNT_NEGATIVE", f"{what} must not be negative, got {value}")
    if value == 0 and not zero:
        raise RequestError("AMOUNT_ZERO", f"{what} must be more than zero")
    if value > MAX_AMOUNT:
        raise RequestError("AMOUNT_TOO_LARGE", f"{what} is above {MAX_AMOUNT}")
    if value % payable_unit:
        raise RequestError(
            "AMOUNT_NOT_WHOLE_UNIT",
            f"{what} {value} is not a whole number of the table's payable unit "
            f"({payable_unit} minor units)",
        )
    return value


def percent(x: Fraction) -> str:
    """``x`` as a percentage to two places, half to even (``"12.35"``)."""
    hundredths = round(x * 10_000)
    sign = "-" if hundredths < 0 else ""
    whole, cents = divmod(abs(hundredths), 100)
    return f"{sign}{whole}.{cents:02d}"


@dataclass
class RoundsEarned:
    """What the rounds of a span earned the house."""

    rounds: int = 0
    voids: int = 0
    #: Settled rounds whose totals the journal no longer holds (none: summaries are kept).
    missing: int = 0
    house_net: int = 0
    theo_exact: Fraction = Fraction(0)

    def add(self, status: str, totals: object) -> None:
        if status != "settled":
            self.voids += 1
            return
        self.rounds += 1
        if not isinstance(totals, dict):
            self.missing += 1
            return
        net = totals.get("house_net", 0)
        self.house_net += net if isinstance(net, int) else 0
        theo = totals.get("theo_exact")
        self.theo_exact += Fraction(theo) if isinstance(theo, str) else 0


def rounds_earned(rounds: RoundStore, table_id: str, after_seq: int, upto_seq: int) -> RoundsEarned:
    """The game result and theoretical win of the finished rounds in ``(after, upto]``."""
    out = RoundsEarned()
    for _seq, status, summary in rounds.finished_between(table_id, after_seq, upto_seq):
        totals = summary.get("totals") if isinstance(summary, dict) else None
        out.add(status, totals)
    return out


@dataclass
class Shift:
    """One shift's steps, as the audit chain holds them."""

    shift_id: str
    opener: int
    after_seq: int
    opened_at: str
    opened_by: Any
    fills: list[dict[str, JSON]] = field(default_factory=list)
    credits: list[dict[str, JSON]] = field(default_factory=list)
    drops: list[dict[str, JSON]] = field(default_factory=list)
    closed: dict[str, JSON] | None = None

    def slips(self) -> set[str]:
        return {str(s["slip"]) for s in (*self.fills, *self.credits, *self.drops)}


def _total(items: list[dict[str, JSON]]) -> int:
    return sum(int(str(i["amount"])) for i in items)


class ShiftAccounts:
    """The shift's accounting of one table (module docstring): its steps journaled in
    the audit chain and read back from it at start-up, the shift published on
    ``shift``."""

    def __init__(
        self,
        db: Database,
        chain: AuditLog,
        rounds: RoundStore,
        approvals: RequestStore,
        *,
        table_id: str,
        money: MoneyRules,
        round_in_flight: Callable[[], bool],
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.db = db
        self.chain = chain
        self.rounds = rounds
        self.approvals = approvals
        self.table_id = table_id
        self.money = money
        self.round_in_flight = round_in_flight
        self.clock = clock
        self.shift: Shift | None = self._read_back()

    # -- the chain ---------------------------------------------------------------------
    def _read_back(self) -> Shift | None:
        """The last shift the chain holds, with its steps."""
        opened = self.chain.events(1, kind=KINDS["shift_open"])
        if not opened:
            return None
        ev = opened[-1]
        d = ev.data
        assert isinstance(d, dict)
        shift = Shift(str(d["shift_id"]), int(str(d["amount"])), int(str(d["after_seq"])),
                      ev.at, d.get("by"))  # fmt: skip
        for command, name in _LISTS.items():
            for e in self.chain.events(100_000, after_id=ev.id, kind=KINDS[command]):
                assert isinstance(e.data, dict)
                getattr(shift, name).append(dict(e.data, at=e.at))
        closed = self.chain.events(1, after_id=ev.id, kind=KINDS["shift_close"])
        if closed:
            shift.closed = dict(closed[0].data, at=closed[0].at)
        return shift

    def _forget(self) -> None:
        self.shift = self._read_back()

    def register_commands(self, commands: Commands) -> None:
        """The table's commands this answers (``firmware_host/commands.py``)."""
        for name in KINDS:
            commands.register(name, self.step)
        commands.register("shift_status", self.status)

    # -- the steps ---------------------------------------------------------------------
    def status(self, call: CommandCall) -> JSON:
        """``shift_status``: the shift so far (not journaled)."""
        return self.report() if self.shift is not None else {"shift_id": None}

    def step(self, call: CommandCall) -> JSON:
        """One step of the shift (module docstring), checked, confirmed by two where
        the table says so, journaled with the shift as published."""
        name = call.name
        args = call.args
        unit = self.money.payable_unit
        inventory = name in ("shift_open", "shift_close")
        amount = read_amount(args.get("amount"), f"{name}'s 'amount'", unit, zero=inventory)
        shift = self.shift
        if name == "shift_open":
            shift_id = identifier(args.get("shift_id"), "shift_open's 'shift_id'", MAX_SLIP)
            if shift is not None and shift.closed is None:
                raise RequestError(
                    "SHIFT_ALREADY_OPEN",
                    f"shift {shift.shift_id} is open; close it (shift_close) first",
                )
            if any(isinstance(e.data, dict) and e.data.get("shift_id") == shift_id
                   for e in self.chain.events(RECENT_SHIFTS, kind=KINDS["shift_open"])):  # fmt: skip
                raise RequestError("SHIFT_ID_TAKEN", f"shift {shift_id} was opened before")
            slip = "open"
        else:
            if shift is None:
                raise RequestError("NO_SHIFT_OPEN", f"{name}: no shift was opened at this table")
            if shift.closed is not None:
                raise RequestError(
                    "SHIFT_CLOSED",
                    f"{name}: shift {shift.shift_id} is closed; open the next one first",
                )
            shift_id = shift.shift_id
            if name == "shift_close":
                slip = "close"
            else:
                slip = identifier(args.get("slip"), f"{name}'s 'slip'", MAX_SLIP)
                if slip in shift.slips():
                    raise RequestError(
                        "SLIP_ALREADY_RECORDED", f"slip {slip} is recorded in shift {shift_id}"
                    )
        if inventory and self.round_in_flight():
            raise RequestError(
                "ROUND_IN_PROGRESS",
                f"{name}: a round is in progress; count the inventory between rounds",
            )
        who: JSON = call.operator
        if call.two_person:
            subject = f"{shift_id}/{slip}/{amount}"
            before = self.approvals.approvals(name, subject)
            if call.operator in before:
                raise RequestError(
                    "SECOND_PRINCIPAL_REQUIRED",
                    f"{name} {subject} is confirmed by {call.operator}; a second, different "
                    "principal must confirm it",
                )
            approved = self.approvals.approve(name, subject, call.operator, call.request_id or "")
            if len(approved) < 2:
                return {"shift_id": shift_id, "step": name, "slip": slip, "amount": amount,
                        "recorded": False, "confirmed_by": approved}  # fmt: skip
            self.approvals.clear_approvals(name, subject)
            who = list(approved)
        return self._record(name, shift_id, slip, amount, who, call.source)

    def _record(
        self, name: str, shift_id: str, slip: str, amount: int, who: JSON, source: str
    ) -> JSON:
        data: dict[str, JSON] = {"shift_id": shift_id, "amount": amount, "by": who,
                                 "source": source}  # fmt: skip
        if name == "shift_open":
            data["after_seq"] = self.rounds.last_seq(self.table_id)
        elif name == "shift_close":
            data["upto_seq"] = self.rounds.last_seq(self.table_id)
        else:
            data["slip"] = slip
        now = self.clock()
        at = iso_utc(now)
        shift = self.shift
        if name == "shift_open":
            shift = Shift(shift_id, amount, int(str(data["after_seq"])), at, who)
        else:
            assert shift is not None
            step = dict(data, at=at)
            if name == "shift_close":
                shift.closed = step
            else:
                getattr(shift, _LISTS[name]).append(step)
        self.shift = shift
        # kept beside the journal: read back from the chain if the transaction rolls back
        self.db.on_rollback(self._forget)
        try:
            report = self.report()
            # the step and the shift as published, in one transaction
            self.chain.append_event(
                KINDS[name], data, at=now, outbox=[OutboxMessage(SHIFT_TOPIC, report, retain=True)]
            )
        except BaseException:
            self._forget()
            raise
        return {**report, "recorded": True, "step": name}

    # -- the report --------------------------------------------------------------------
    def report(self) -> dict[str, JSON]:
        """The shift as published on ``shift`` (``docs/mqtt.md``, "Shift accounting")."""
        s = self.shift
        assert s is not None
        closed = s.closed
        upto = int(str(closed["upto_seq"])) if closed else self.rounds.last_seq(self.table_id)
        earned = rounds_earned(self.rounds, self.table_id, s.after_seq, upto)
        fills, credits, drop = _total(s.fills), _total(s.credits), _total(s.drops)
        theo = theo_minor(earned.theo_exact)
        out: dict[str, JSON] = {
            "schema_version": PAYLOAD_SCHEMA_VERSION,
            "table_id": self.table_id,
            "shift_id": s.shift_id,
            "status": "closed" if closed else "open",
            "currency": self.money.currency,
            "minor_digits": self.money.minor_digits,
            "opened_at": s.opened_at,
            "opened_by": s.opened_by,
            "closed_at": closed["at"] if closed else None,
            "closed_by": closed["by"] if closed else None,
            "opener": s.opener,
            "fills": [_slip(x) for x in s.fills],
            "credits": [_slip(x) for x in s.credits],
            "drops": [_slip(x) for x in s.drops],
            "fills_total": fills,
            "credits_total": credits,
            "drop": drop,
            "closer": None,
            "win": None,
            "hold": None,
            "hold_pct": None,
            "rounds": earned.rounds,
            "voids": earned.voids,
            "first_seq": s.after_seq + 1,
            "last_seq": upto,
            "game_result": earned.house_net,
            "theo_exact": fraction_str(earned.theo_exact),
            "theo": theo,
            "variance": None,
            "difference": None,
        }
        if closed:
            closer = int(str(closed["amount"]))
            win = closer - s.opener + credits - fills + drop
            out.update(closer=closer, win=win, variance=win - theo,
                       difference=win - earned.house_net)  # fmt: skip
            if drop:
                hold = Fraction(win, drop)
                out.update(hold=fraction_str(hold), hold_pct=percent(hold))
        return out


def _slip(x: Mapping[str, JSON]) -> dict[str, JSON]:
    return {"slip": x["slip"], "amount": x["amount"], "at": x["at"], "by": x["by"]}
