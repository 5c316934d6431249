"""The player-banker table shared by Super Pan 9 (261/96/M) and P'ai Kao (195/92/M).

Both regulations describe the same table around a different hand: one player holds
the bank with a capital he puts on the table; four dice, counted counter-clockwise
from the banker, decide which place is served first; every other place is compared
with the banker's hand; bets are paid or collected "from right to left", never more
than the banker's capital; the casino and other players may co-bank behind him; the
house takes 5% of every win. This module is that shared part, pure:

- :class:`RoundSetup`: places, banker's place, capital, the dice and the banker's
  declared add/subtract, and from them the place served first and the service order
  (261/96/M art. 2 2)-3), 195/92/M art. 2 (b)-(c)).
- :func:`parse_dice`: four dice; a die stacked, tilted or out of the bowl means a
  re-shake (:class:`DiceReshake`, code ``DICE_RESHAKE``; 261/96/M art. 2 4),
  195/92/M art. 2 (e)).
- :func:`settle_bank`: the capital-bounded settlement. The bank is a stack of
  layers: the banker first, then the players who co-bank in the order they placed
  their capital, the casino last (261/96/M art. 5 5), Chinese text: 正庄先行,
  幫庄注碼按次序放在正庄後面, 場方幫庄排至最尾). Bets are settled one after the other;
  a payment is taken from the first layer that still has money, a collection goes
  to the first layer that has not yet won its capital; no layer ever wins or loses
  more than its capital (art. 5 3)). What no layer can pay is not paid; what no
  layer can take is handed back.
- :class:`BankerHands`, :func:`parse_hands_outcome`: the outcome both games settle
  (the setup and each place's two cards or tiles) and its JSON.
- :class:`BankerDeal`: the deal both games share (:class:`~base.Deal`): the dice,
  then two cards or tiles a place in the service order; each game says what it
  deals and what its set cannot hold.
- :class:`BankerGame`: the :class:`~base.Game` part both games share (bet types
  ``place`` and ``co_bank``, settlement, the JSON of the bank).
- :class:`BankTurn`: banker rotation (at most two games a turn, art. 5 1)-2), 4)).

Decisions where the texts are silent are listed in ``docs/rules/super-pan-9.md`` and
``docs/rules/paikao.md`` and marked *decision* below.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar, Generic, Literal, Protocol, Self, TypeVar

from .base import (
    JSON,
    Bet,
    BetResult,
    BetType,
    Deal,
    Expect,
    Game,
    Settlement,
    Totals,
    unit_problems,
)
from .describe import DemoRound, Rng
from .errors import (
    BetError,
    InvalidSelection,
    Misdeal,
    OutcomeError,
    RoundStateError,
    RulesError,
)
from .money import MAX_STAKE, Amounts, MoneyRules, fraction_str

#: The house's commission on every win (261/96/M art. 9, 195/92/M art. 9): 5%.
COMMISSION_RATE = Fraction(1, 20)

#: A bank turn lasts at most this many games unless every other place agrees
#: (261/96/M art. 5 1), 195/92/M art. 5 (a)).
MAX_BANK_GAMES = 2

#: Values accepted in place of a die face for a die stacked, tilted or out of the bowl.
BAD_DIE_WORDS = frozenset({"stacked", "tilted", "out", "void"})

SETTLEMENT_ORDERS = ("served", "placed")


class DiceReshake(OutcomeError):
    """A die stacked, tilted or out of the bowl: the banker shakes again (art. 2 4))."""

    code = "DICE_RESHAKE"


# -- places and dice -----------------------------------------------------------------


def parse_dice(raw: JSON, what: str = "dice") -> tuple[int, int, int, int]:
    """Four dice faces 1..6.

    A die read as ``null``, ``"stacked"``, ``"tilted"``, ``"out"`` or ``"void"`` (it
    is not lying flat in the bowl, or it fell out) raises :class:`DiceReshake`: the
    banker must shake again (261/96/M art. 2 4), 195/92/M art. 2 (e)).
    """
    if not isinstance(raw, list) or len(raw) != 4:
        raise OutcomeError(
            f"{what}: four dice faces 1..6 expected, got {raw!r}", code="DICE_INVALID"
        )
    for d in raw:
        if d is None or (isinstance(d, str) and d.strip().lower() in BAD_DIE_WORDS):
            raise DiceReshake(
                f"{what}: a die is stacked, tilted or out of the bowl ({raw!r}): the banker must "
                "shake the four dice again (261/96/M art. 2 4); 195/92/M art. 2 (e))"
            )
    if not all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 6 for d in raw):
        raise OutcomeError(
            f"{what}: four dice faces 1..6 expected, got {raw!r}", code="DICE_INVALID"
        )
    return (raw[0], raw[1], raw[2], raw[3])


def next_place(place: int, places: int, steps: int = 1) -> int:
    """The place ``steps`` positions counter-clockwise from ``place``.

    *Decision*: places are numbered 1..N counter-clockwise round the table (seen from
    above), so counter-clockwise is increasing number, wrapping from N to 1. Seen from
    the croupier facing the players this is "from right to left" (art. 2 3)).
    """
    return (place - 1 + steps) % places + 1


def first_place(banker: int, count: int, places: int) -> int:
    """The place served first: count ``count`` places counter-clockwise, the banker being 1.

    261/96/M art. 2 2), 195/92/M art. 2 (b): "A contar do banqueiro, no sentido oposto
    ao dos ponteiros do relógio, a soma dos pontos dos dados determina o lugar a receber
    as primeiras cartas". *Decision*: the banker's own place counts as one (a count of
    1, 1 + N, 1 + 2N ... serves the banker first), and a count of zero or less (a
    banker who subtracted more than the dice show) keeps counting the same way,
    modulo the number of places.
    """
    return next_place(banker, places, count - 1)


def service_order(first: int, places: int) -> tuple[int, ...]:
    """Every place, from ``first`` counter-clockwise ("da direita para a esquerda")."""
    return tuple(next_place(first, places, k) for k in range(places))


@dataclass(frozen=True, slots=True)
class RoundSetup:
    """What is fixed before the cards or tiles are dealt.

    ``declared`` is the banker's declared add (positive) or subtract (negative) of
    261/96/M art. 2 3); P'ai Kao forbids it (195/92/M art. 2 (c)) and always has 0.
    """

    places: int
    banker: int
    banker_capital: int
    casino_capital: int
    dice: tuple[int, int, int, int]
    declared: int = 0
    #: Bet ids in the order the bets were placed, when it differs from the bet list.
    bet_order: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not 2 <= self.places <= 99:
            raise OutcomeError(f"a table has 2..99 places, got {self.places}")
        if not 1 <= self.banker <= self.places:
            raise OutcomeError(
                f"banker place {self.banker} is not a place of this table (1..{self.places})",
                code="BANKER_PLACE_INVALID",
            )
        if self.banker_capital <= 0:
            raise OutcomeError(
                "the banker must put a positive capital on the table before the dice are shaken "
                f"(261/96/M art. 5 3); 195/92/M art. 5 (c)), got {self.banker_capital}",
                code="BANKER_CAPITAL_INVALID",
            )
        if self.casino_capital < 0:
            raise OutcomeError(
                f"casino co-banking capital cannot be negative, got {self.casino_capital}",
                code="CASINO_CAPITAL_INVALID",
            )
        for what, amount in (("banker", self.banker_capital), ("casino", self.casino_capital)):
            if amount > MAX_STAKE:  # a capital is staked like a bet: the same ceiling
                raise OutcomeError(
                    f"the {what}'s capital {amount} is above {MAX_STAKE}, the largest amount a "
                    "table accepts",
                    code=f"{what.upper()}_CAPITAL_INVALID",
                )

    @property
    def dice_total(self) -> int:
        return sum(self.dice)

    @property
    def count(self) -> int:
        """The dice total with the banker's declared add/subtract (art. 2 3))."""
        return self.dice_total + self.declared

    @property
    def first_place(self) -> int:
        return first_place(self.banker, self.count, self.places)

    @property
    def service_order(self) -> tuple[int, ...]:
        return service_order(self.first_place, self.places)

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "banker": self.banker,
            "banker_capital": self.banker_capital,
            "casino_capital": self.casino_capital,
            "dice": list(self.dice),
            "declared": self.declared,
            "dice_total": self.dice_total,
            "first_place": self.first_place,
            "service_order": list(self.service_order),
        }
        if self.bet_order is not None:
            out["bet_order"] = list(self.bet_order)
        return out


Item = TypeVar("Item")  # a card or a tile


@dataclass(frozen=True, slots=True)
class BankerHands(Generic[Item]):
    """A dealt game of a player-banked table, the outcome both games settle: the
    setup (banker, capital, dice, declaration) and each place's two cards or tiles."""

    setup: RoundSetup
    #: ``hands[p - 1]`` is place ``p``'s two cards or tiles in the order dealt.
    hands: tuple[tuple[Item, Item], ...]

    def hand(self, place: int) -> tuple[Item, Item]:
        return self.hands[place - 1]


#: Keys of the round setup in an outcome's JSON (the game adds ``hands`` or the deal).
SETUP_KEYS = frozenset(
    {"banker", "banker_capital", "casino_capital", "dice", "declared", "bet_order"}
)
#: Keys ``outcome_json`` adds for readers; accepted back and checked.
DERIVED_KEYS = frozenset({"dice_total", "first_place", "service_order"})


def _int_field(raw: Mapping[str, Any], key: str, default: int | None, what: str) -> int:
    value = raw.get(key, default)
    if value is None:
        raise OutcomeError(f"{what}: {key!r} is required", code="OUTCOME_MISSING_FIELD")
    if isinstance(value, bool) or not isinstance(value, int):
        raise OutcomeError(f"{what}: {key!r} must be an integer, got {value!r}")
    return value


def parse_setup(
    raw: Mapping[str, Any],
    *,
    places: int,
    default_casino_capital: int,
    declaration_allowed: bool,
    what: str,
) -> RoundSetup:
    """The setup part of an outcome's JSON (see the games' docs for the full form)."""
    declared = _int_field(raw, "declared", 0, what)
    if declared and not declaration_allowed:
        raise OutcomeError(
            f"{what}: the banker may not add or subtract points to the dice (195/92/M art. 2 (c)), "
            f"got declared={declared}",
            code="DECLARATION_NOT_ALLOWED",
        )
    bet_order = raw.get("bet_order")
    if bet_order is not None:
        if not isinstance(bet_order, list) or not all(isinstance(b, str) for b in bet_order):
            raise OutcomeError(f"{what}: bet_order must be a list of bet ids, got {bet_order!r}")
        if len(set(bet_order)) != len(bet_order):
            raise OutcomeError(f"{what}: bet_order lists a bet twice: {bet_order!r}")
        bet_order = tuple(bet_order)
    setup = RoundSetup(
        places=places,
        banker=_int_field(raw, "banker", None, what),
        banker_capital=_int_field(raw, "banker_capital", None, what),
        casino_capital=_int_field(raw, "casino_capital", default_casino_capital, what),
        dice=parse_dice(raw.get("dice"), f"{what}: dice"),
        declared=declared,
        bet_order=bet_order,
    )
    for key in DERIVED_KEYS & set(raw):
        want = setup.to_json()[key]
        if raw[key] != want:
            raise OutcomeError(
                f"{what}: {key} {raw[key]!r} does not follow from the dice and the banker's place "
                f"(expected {want!r})",
                code="OUTCOME_INCONSISTENT",
            )
    return setup


def parse_place_key(key: object, places: int, what: str) -> int:
    """A place number given as a JSON object key ("3") or an int."""
    if isinstance(key, str) and key.strip().isdigit():
        key = int(key.strip())
    if isinstance(key, bool) or not isinstance(key, int) or not 1 <= key <= places:
        raise OutcomeError(f"{what}: {key!r} is not a place 1..{places}", code="PLACE_INVALID")
    return key


# -- the capital-bounded settlement -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Wager:
    """A bet on a place, with what the hands decided: does the place beat the banker?"""

    bet_id: str
    seat: int
    place: int
    stake: int
    place_wins: bool


@dataclass(frozen=True, slots=True)
class Layer:
    """One share of the bank: the banker, a co-banking player, or the casino."""

    who: str  # "banker" | "co_bank" | "casino"
    capital: int
    bet_id: str = ""
    seat: int | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """One wager settled against the bank: what was owed, what moved, who moved it.

    ``transfer`` is from the bank to the player (negative: collected from the
    player); ``shares[i]`` is layer ``i``'s part of it (its change is ``-shares[i]``).
    """

    wager: Wager
    owed: int  # the full amount the rules say (stake x 1), paid or collected
    transfer: int
    shares: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LayerResult:
    layer: Layer
    #: Gross result of this layer over the game (before commission).
    gross: int
    amounts: Amounts


@dataclass(frozen=True, slots=True)
class BankSettlement:
    """The whole bank side of one game, and the player side, in integers."""

    steps: tuple[Step, ...]
    layers: tuple[LayerResult, ...]
    wagers: tuple[tuple[Wager, Amounts], ...]
    #: The exact 5% of every commissioned win (art. 9), before any rounding.
    commission_exact: Fraction = Fraction(0)

    @property
    def commission(self) -> int:
        return sum(a.commission for _, a in self.wagers) + sum(
            lr.amounts.commission for lr in self.layers
        )

    @property
    def breakage(self) -> Fraction:
        """Exact rounding kept by the house: each winner's exact net minus what he got."""
        return sum((a.breakage for _, a in self.wagers), Fraction(0)) + sum(
            (lr.amounts.breakage for lr in self.layers), Fraction(0)
        )


def _win_amounts(gross: int, rate: Fraction, money: MoneyRules) -> Amounts:
    """A gross win of ``gross`` less ``rate`` commission: the net rounded "house never
    overpays" to the payable unit, the commission the regulation's rate of ``gross``
    (to the minor unit), the rest breakage (``payout = net + commission``)."""
    exact_net = gross * (1 - rate)
    net = min(gross, money.round_gain(exact_net))
    commission = money.round_commission(gross * rate)
    return Amounts("win", net + commission, commission, net, exact_net - net)


def settle_bank(
    layers: Sequence[Layer],
    wagers: Sequence[Wager],
    money: MoneyRules,
    rate: Fraction = COMMISSION_RATE,
    *,
    house_layers: Collection[str] = ("casino",),
) -> BankSettlement:
    """Settle ``wagers`` (already in settlement order) against the stacked ``layers``.

    Each wager is even money (261/96/M art. 7, 195/92/M art. 7). A winning place is
    paid from the first layer with money left (its capital plus what it has collected
    so far); a losing stake is collected into the first layer that has not yet won its
    capital (art. 5 3): "Em caso algum poderá o ganho ou perda do banqueiro exceder o
    montante do seu capital em cada jogada"). Afterwards the 5% commission (art. 9) is
    taken from every winner: from a player's prize, from a layer's net win of the game
    (*decision*: a bank share is one "jogada ganha", so its commission is on its net
    result of the game, not on each collected stake). Layers whose ``who`` is in
    ``house_layers`` (the casino's own co-banking) pay no commission to themselves.
    """
    caps = [ly.capital for ly in layers]
    nets = [0] * len(layers)
    steps: list[Step] = []
    for w in wagers:
        shares = [0] * len(layers)
        if w.place_wins:
            owed = w.stake
            for i, cap in enumerate(caps):
                give = min(owed, cap + nets[i])
                if give > 0:
                    nets[i] -= give
                    shares[i] = give
                    owed -= give
            transfer = w.stake - owed
        else:
            due = w.stake
            for i, cap in enumerate(caps):
                take = min(due, cap - nets[i])
                if take > 0:
                    nets[i] += take
                    shares[i] = -take
                    due -= take
            transfer = -(w.stake - due)
        steps.append(Step(w, w.stake, transfer, tuple(shares)))

    wager_amounts: list[tuple[Wager, Amounts]] = []
    commission_exact = Fraction(0)
    for s in steps:
        if s.transfer > 0:
            amounts = _win_amounts(s.transfer, rate, money)
            commission_exact += s.transfer * rate
        elif s.transfer < 0:
            amounts = Amounts("lose", 0, 0, s.transfer, Fraction(0))
        else:
            amounts = Amounts("push", 0, 0, 0, Fraction(0))
        wager_amounts.append((s.wager, amounts))

    layer_results = []
    for ly, gross in zip(layers, nets, strict=True):
        if gross > 0 and ly.who not in house_layers:
            amounts = _win_amounts(gross, rate, money)
            commission_exact += gross * rate
        elif gross > 0:
            amounts = Amounts("win", gross, 0, gross, Fraction(0))
        elif gross < 0:
            amounts = Amounts("lose", 0, 0, gross, Fraction(0))
        else:
            amounts = Amounts("push", 0, 0, 0, Fraction(0))
        layer_results.append(LayerResult(ly, gross, amounts))
    return BankSettlement(
        tuple(steps), tuple(layer_results), tuple(wager_amounts), commission_exact
    )


def order_wagers(wagers: Sequence[Wager], served: Sequence[int], mode: str) -> list[Wager]:
    """Put ``wagers`` (given in the order placed) in settlement order.

    ``served``: place by place in the service order, "da direita para a esquerda"
    (261/96/M art. 2 3), 195/92/M art. 2 (c): "a distribuição ... e a sequência das
    apostas processam-se da direita para a esquerda"; Chinese 派牌及殺賠之順序應由右至左),
    and within one place in the order the bets were placed. ``placed``: strictly in
    the order placed, whatever the place.
    """
    if mode == "placed":
        return list(wagers)
    if mode != "served":
        raise RulesError(f"unknown settlement order {mode!r}", code="CONFIG_INVALID")
    rank = {p: i for i, p in enumerate(served)}
    return sorted(wagers, key=lambda w: rank[w.place])  # sorted() is stable


# -- the Game part both games share --------------------------------------------------------


class BankerRules(Protocol):
    @property
    def settlement_order(self) -> str: ...

    @property
    def casino_co_bank(self) -> int: ...


RB = TypeVar("RB", bound=BankerRules)
T = TypeVar("T")
OB = TypeVar("OB", bound=BankerHands[Any])


@dataclass(frozen=True, slots=True)
class PlaceVerdict:
    """One place's hand against the banker's."""

    place: int
    place_wins: bool
    reason: str
    detail: Mapping[str, JSON] = field(default_factory=dict)


class BankerGame(Game[RB, OB]):
    """The :class:`~base.Game` part of a player-banked table (settlement, bet types).

    Bet types: ``place`` (selection: the place number; even money, less 5% on a
    win) and ``co_bank`` (no selection; the stake is the capital entrusted to the
    banker). Each game says how a place's hand compares with the banker's.
    """

    #: Article strings for the bet type table (set by the game).
    place_article: str
    co_bank_article: str

    @abc.abstractmethod
    def places(self, rules: RB) -> int:
        """Number of places at the table, the banker's included."""

    @abc.abstractmethod
    def place_verdicts(self, rules: RB, outcome: OB) -> Sequence[PlaceVerdict]:
        """Every place but the banker's, compared with the banker's hand."""

    @abc.abstractmethod
    def banker_detail(self, rules: RB, outcome: OB) -> Mapping[str, JSON]:
        """The banker's hand, for the settlement's JSON."""

    def money_problems(self, rules: RB, money: MoneyRules) -> list[str]:
        """The casino's co-banking capital is paid and collected bet by bet: a whole
        number of payable units, like the stakes it meets."""
        return unit_problems(
            [(f"rules.{self.game_id}.casino_co_bank", rules.casino_co_bank)],
            money,
            "the bank's payments out of it could not be made exactly",
        )

    def bet_types(self, rules: RB) -> Sequence[BetType]:
        return (
            BetType("place", "Bet on a place against the banker", self.place_article,
                    "1:1 less 5% commission, within the banker's capital"),
            BetType("co_bank", "Co-banking: capital entrusted to the banker", self.co_bank_article,
                    "shares the bank's result after the banker, in the order placed; "
                    "5% on a net win"),
        )  # fmt: skip

    def canonical_selection(self, rules: RB, bet_type: str, selection: JSON) -> JSON:
        n = self.places(rules)
        if bet_type == "place":
            if isinstance(selection, list) and len(selection) == 1:
                selection = selection[0]
            if (
                isinstance(selection, bool)
                or not isinstance(selection, int)
                or not 1 <= selection <= n
            ):
                raise InvalidSelection(
                    f"place: selection must be a place 1..{n}, got {selection!r}"
                )
            return selection
        if bet_type == "co_bank":
            if selection is not None:
                raise InvalidSelection(f"co_bank: takes no selection, got {selection!r}")
            return None
        raise InvalidSelection(f"unknown bet type {bet_type!r}")  # pragma: no cover

    def check_bets(self, setup: RoundSetup, bets: Sequence[Bet]) -> list[Bet]:
        """Cross-bet checks; returns the bets in the order they were placed."""
        for b in bets:
            if b.bet_type == "place" and b.selection == setup.banker:
                raise InvalidSelection(
                    f"bet {b.bet_id}: place {setup.banker} is the banker's; a bet with the banker "
                    "is a co_bank bet (261/96/M art. 5 5); 195/92/M art. 5 (e))",
                    code="BET_ON_BANKER_PLACE",
                )
        co_seats = {b.seat for b in bets if b.bet_type == "co_bank"}
        both = sorted({b.seat for b in bets if b.bet_type == "place"} & co_seats)
        if both:
            raise BetError(
                f"seat(s) {both} co-bank and also bet on a place: a player who co-banks may "
                "not bet separately on other places (261/96/M art. 5 5); 195/92/M art. 5 (e))",
                code="CO_BANKER_ALSO_BETS",
            )
        ids = [b.bet_id for b in bets]
        if len(set(ids)) != len(ids):
            raise BetError("two bets share one bet_id", code="BET_DUPLICATE_ID")
        if setup.bet_order is None:
            return list(bets)
        if sorted(setup.bet_order) != sorted(ids):
            raise OutcomeError(
                f"bet_order {list(setup.bet_order)} does not list exactly the bets {ids}",
                code="BET_ORDER_MISMATCH",
            )
        by_id = {b.bet_id: b for b in bets}
        return [by_id[i] for i in setup.bet_order]

    def settle(self, rules: RB, outcome: OB, bets: Sequence[Bet], money: MoneyRules) -> Settlement:
        setup = outcome.setup
        unit = money.payable_unit
        for what, amount in (("banker", setup.banker_capital), ("casino", setup.casino_capital)):
            # the bank pays and collects whole chips, like the stakes it meets: a capital
            # that is not a whole number of payable units could not be paid out exactly
            if amount % unit:
                raise OutcomeError(
                    f"the {what}'s capital {amount} is not a whole number of the table's payable "
                    f"unit {unit} (261/96/M art. 5 3), 195/92/M art. 5 (c): the bank pays and "
                    "collects up to it)",
                    code="CAPITAL_PAYABLE_UNIT",
                )
        placed = self.check_bets(setup, bets)
        verdicts = {v.place: v for v in self.place_verdicts(rules, outcome)}
        wagers = [
            Wager(b.bet_id, b.seat, b.selection, b.stake, verdicts[b.selection].place_wins)
            for b in placed
            if b.bet_type == "place"
        ]
        ordered = order_wagers(wagers, setup.service_order, rules.settlement_order)
        layers = [Layer("banker", setup.banker_capital)]
        layers += [
            Layer("co_bank", b.stake, b.bet_id, b.seat) for b in placed if b.bet_type == "co_bank"
        ]
        if setup.casino_capital:
            layers.append(Layer("casino", setup.casino_capital))
        bank = settle_bank(layers, ordered, money)

        by_bet: dict[str, tuple[Amounts, str]] = {}
        for step, (w, amounts) in zip(bank.steps, bank.wagers, strict=True):
            v = verdicts[w.place]
            reason = v.reason
            if step.transfer == 0:
                reason += "; the bank could not pay or take any of it: stake returned (art. 5 3))"
            elif abs(step.transfer) < w.stake:
                verb = "paid" if step.transfer > 0 else "collected"
                reason += (
                    f"; only {abs(step.transfer)} of {w.stake} {verb}: the bank's capital is "
                    "reached (art. 5 3))"
                )
            by_bet[w.bet_id] = (amounts, reason)
        for lr in bank.layers:
            if lr.layer.who == "co_bank":
                by_bet[lr.layer.bet_id] = (
                    lr.amounts,
                    "co-banking after the banker, in the order placed (art. 5 5))",
                )
        results = tuple(BetResult(b, *by_bet[b.bet_id]) for b in bets)

        banker = bank.layers[0]
        casino_net = sum(lr.amounts.net for lr in bank.layers if lr.layer.who == "casino")
        totals = Totals(
            stakes=sum(b.stake for b in bets) + setup.banker_capital,
            payout=sum(r.amounts.payout for r in results) + banker.amounts.payout,
            commission=bank.commission,
            net=sum(r.amounts.net for r in results) + banker.amounts.net,
            breakage=bank.breakage,
        )
        extras: dict[str, JSON] = {
            "banker": {
                "place": setup.banker,
                "capital": setup.banker_capital,
                **self.banker_detail(rules, outcome),
                **_amounts_json(banker),
            },
            "places": [
                {"place": p, **({"wins": verdicts[p].place_wins, "reason": verdicts[p].reason}),
                 **verdicts[p].detail}
                for p in setup.service_order
                if p != setup.banker
            ],
            "bank": {
                "layers": [
                    {"who": lr.layer.who, "bet_id": lr.layer.bet_id or None,
                     "seat": lr.layer.seat, "capital": lr.layer.capital, **_amounts_json(lr)}
                    for lr in bank.layers
                ],
                "steps": [
                    {"bet_id": s.wager.bet_id, "place": s.wager.place,
                     "owed": s.owed if s.wager.place_wins else -s.owed,
                     "transfer": s.transfer, "shares": list(s.shares)}
                    for s in bank.steps
                ],
                "casino_net": casino_net,
            },
            "settlement_order": [w.bet_id for w in ordered],
            "commission_exact": fraction_str(bank.commission_exact),
        }  # fmt: skip
        return Settlement(self.game_id, self.outcome_json(outcome), results, totals, extras)


def _amounts_json(lr: LayerResult) -> dict[str, JSON]:
    a = lr.amounts
    return {
        "gross": lr.gross,
        "result": a.result,
        "commission": a.commission,
        "net": a.net,
        "breakage": fraction_str(a.breakage),
    }


# -- math: one place against the banker ---------------------------------------------------


def one_place_lines(
    p_place_wins: Fraction, rate: Fraction = COMMISSION_RATE
) -> tuple[tuple[Fraction, tuple[tuple[Fraction, Fraction], ...]], ...]:
    """Exact (edge, distribution) of a unit on a place and of the banker against it.

    The place wins ``1 - rate``, or loses 1 (no pushes: every tie goes to the banker,
    art. 8). The banker against that one unit wins ``1 - rate`` or loses 1. The
    ``edge`` is minus the expected net per unit, as for any bet.
    """
    p_bank = 1 - p_place_wins
    place_dist = ((1 - rate, p_place_wins), (Fraction(-1), p_bank))
    bank_dist = ((1 - rate, p_bank), (Fraction(-1), p_place_wins))
    place_edge = -sum((n * p for n, p in place_dist), Fraction(0))
    bank_edge = -sum((n * p for n, p in bank_dist), Fraction(0))
    return (place_edge, place_dist), (bank_edge, bank_dist)


# -- banker rotation ------------------------------------------------------------------------


class BankRotationError(RoundStateError):
    code = "BANK_ROTATION"


@dataclass(frozen=True, slots=True)
class BankTurn:
    """Who holds the bank, for how many games so far, and with what.

    261/96/M art. 5 1): every place may hold the bank in turn, at most two games at a
    time unless every other place agrees; 2) a place whose turn it is may refuse, and
    the bank passes to the next place counter-clockwise ("à sua direita" in
    195/92/M art. 5 (b): the neighbour on a seated player's right is the next place
    counter-clockwise), who may take it only if he bet in the previous game; 4) a
    banker who won his first game and keeps the bank must keep all his winnings on
    the table with his capital, may add to it, and may never reduce it.
    """

    places: int
    banker: int
    #: Games this banker has played in the current turn.
    games: int = 0
    #: Capital of the last game played, and the banker's net result in it.
    capital: int = 0
    last_net: int = 0

    def played(self, capital: int, net: int) -> BankTurn:
        """Record a finished game of this turn."""
        return BankTurn(self.places, self.banker, self.games + 1, capital, net)

    def may_keep(self, *, all_agree: bool = False) -> bool:
        return self.games < MAX_BANK_GAMES or all_agree

    def minimum_capital(self) -> int:
        """The least capital for the next game of this turn (art. 5 4))."""
        if self.games == 0:
            return 1
        if self.last_net > 0:
            return self.capital + self.last_net
        # *Decision*: art. 5 4) binds a banker who won; after a loss he may go on with
        # any capital (he cannot have more than what is left unless he adds to it).
        return 1

    def keep(self, new_capital: int, *, all_agree: bool = False) -> BankTurn:
        """The banker keeps the bank for another game with ``new_capital``."""
        if not self.may_keep(all_agree=all_agree):
            raise BankRotationError(
                f"place {self.banker} has held the bank for {self.games} games; the limit is "
                f"{MAX_BANK_GAMES} unless every other place agrees (art. 5 1))",
                code="BANK_TURN_OVER",
            )
        need = self.minimum_capital()
        if new_capital < need:
            raise BankRotationError(
                f"the banker won {self.last_net} with a capital of {self.capital}: to keep the "
                f"bank his new capital must be at least {need}, got {new_capital} (art. 5 4))",
                code="BANK_CAPITAL_REDUCED",
            )
        return self

    def pass_on(
        self, *, declines: Collection[int] = (), bet_previous: Collection[int] | None = None
    ) -> BankTurn:
        """The bank moves on counter-clockwise.

        The next place takes it unless it declines (art. 5 2)); a place the bank is
        *passed* to after a refusal may take it only if it bet in the previous game
        (``bet_previous``; None means every place did). Raises ``NO_BANKER`` if no
        place can take the bank.
        """
        for k in range(1, self.places):
            cand = next_place(self.banker, self.places, k)
            if cand in declines:
                continue
            if k > 1 and bet_previous is not None and cand not in bet_previous:
                continue
            return BankTurn(self.places, cand)
        raise BankRotationError("no place can take the bank (art. 5 2))", code="NO_BANKER")


# -- dealing two cards/tiles per place -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class BankerDeal(Deal, Generic[Item, OB]):
    """A game of a player-banked table being dealt, two cards or tiles a place.

    Immutable: each verb returns the next state. The banker's place and capital (and
    his declared add/subtract, 261/96/M art. 2 3)) are fixed before the shake (art. 5
    3)); then ``shake(dice)`` (a bad shake raises ``DICE_RESHAKE`` and the state stays
    as it was), ``deal(item)`` two a place in the service order ("da direita para a
    esquerda", art. 2 3); 195/92/M art. 2 (c)), and ``outcome()``. Each game says what
    it deals (:attr:`noun`, :meth:`parse_item`), which item the set cannot hold
    (:meth:`refusal`) and what its outcome is (:meth:`make_outcome`).
    """

    places: int
    banker: int
    banker_capital: int
    casino_capital: int
    declared: int = 0
    dice: tuple[int, int, int, int] | None = None
    #: The cards or tiles dealt so far, in order.
    dealt: tuple[Item, ...] = ()

    #: What the game deals: ``"card"`` or ``"tile"`` (also the kind of its :class:`Expect`).
    noun: ClassVar[Literal["card", "tile"]]
    game_id: ClassVar[str]
    #: The article a card or tile dealt before the dice breaks, and the text (with its
    #: article) of a deal where every place has its two.
    before_dice: ClassVar[str]
    all_dealt: ClassVar[str]

    @abc.abstractmethod
    def parse_item(self, raw: object) -> Item:
        """A card or tile from its text (or itself)."""

    @abc.abstractmethod
    def refusal(self, item: Item) -> Misdeal | None:
        """Why the set cannot hold ``item`` now (a card dealt twice...), or None."""

    @abc.abstractmethod
    def make_outcome(self, setup: RoundSetup, hands: tuple[tuple[Item, Item], ...]) -> OB:
        """The game's outcome from its setup and every place's two items."""

    def _setup(self) -> RoundSetup:
        if self.dice is None:
            raise RoundStateError("the dice have not been shaken yet", code="DICE_NOT_SHAKEN")
        return RoundSetup(
            self.places,
            self.banker,
            self.banker_capital,
            self.casino_capital,
            self.dice,
            self.declared,
        )

    def expect(self) -> Expect:
        if self.dice is None:
            return Expect("dice")
        i = len(self.dealt) // 2  # each place takes two in a row
        order = self._setup().service_order
        return Expect(self.noun, order[i]) if i < len(order) else Expect("complete")

    def shake(self, dice: JSON) -> Self:
        if self.dice is not None:
            raise RoundStateError(
                "the dice are already shaken for this game", code="DICE_ALREADY_SHAKEN"
            )
        return replace(self, dice=parse_dice(list(dice) if isinstance(dice, tuple) else dice))

    def deal(self, item: object) -> Self:
        x = self.parse_item(item)
        exp = self.expect()
        if exp.kind == "dice":
            raise Misdeal(
                f"{self.noun} {x} dealt before the dice were shaken ({self.before_dice})",
                code="MISDEAL_BEFORE_DICE",
            )
        if exp.kind == "complete":
            raise Misdeal(
                f"{self.noun} {x} dealt after {self.all_dealt}",
                code=f"MISDEAL_EXTRA_{self.noun.upper()}",
            )
        why = self.refusal(x)
        if why is not None:
            raise why
        return replace(self, dealt=(*self.dealt, x))

    def outcome(self) -> OB:
        if self.expect().kind != "complete":
            raise RoundStateError("the deal is not complete", code="ROUND_INCOMPLETE")
        setup = self._setup()
        hands: dict[int, tuple[Item, Item]] = {}
        for i, p in enumerate(setup.service_order):
            hands[p] = (self.dealt[2 * i], self.dealt[2 * i + 1])
        return self.make_outcome(setup, tuple(hands[p] for p in range(1, self.places + 1)))

    def to_json(self) -> dict[str, JSON]:
        return {
            "game": self.game_id,
            "banker": self.banker,
            "banker_capital": self.banker_capital,
            "casino_capital": self.casino_capital,
            "dice": list(self.dice) if self.dice is not None else None,
            f"{self.noun}s": [str(x) for x in self.dealt],
        }

    def replayed(self, data: Mapping[str, Any]) -> Self:
        """This deal fed the dice and the items of its journal form (:meth:`to_json`)."""
        deal = self
        if data.get("dice") is not None:
            deal = deal.shake(data["dice"])
        for x in data.get(f"{self.noun}s", []):
            deal = deal.deal(x)
        return deal


def parse_two_each(
    raw: Mapping[str, Any],
    *,
    places: int,
    service_order: Sequence[int],
    key: str,
    noun: str,
    parse_items: Callable[[JSON, str], Sequence[T]],
    article: str,
    what: str,
) -> dict[int, tuple[T, T]]:
    """Every place's two cards or tiles, given by place (``hands``) or in dealing order
    (``key``: ``cards``/``tiles``), which goes two by two along the service order."""
    if ("hands" in raw) == (key in raw):
        raise OutcomeError(
            f"{what}: give either 'hands' (place -> two {noun}s) or '{key}' (in dealing order)",
            code="OUTCOME_MISSING_FIELD",
        )
    hands: dict[int, tuple[T, T]] = {}
    if "hands" in raw:
        h = raw["hands"]
        if not isinstance(h, Mapping):
            raise OutcomeError(f"{what}: hands must map each place to its two {noun}s, got {h!r}")
        for k, items in h.items():
            place = parse_place_key(k, places, f"{what}: hands")
            if place in hands:
                raise OutcomeError(f"{what}: place {place} is given twice")
            parsed = parse_items(items, f"{what}: place {place}")
            if len(parsed) != 2:
                raise OutcomeError(
                    f"{what}: place {place} must hold two {noun}s ({article}), got {len(parsed)}",
                    code="HAND_SIZE",
                )
            hands[place] = (parsed[0], parsed[1])
        missing = [p for p in range(1, places + 1) if p not in hands]
        if missing:
            raise OutcomeError(
                f"{what}: every place receives two {noun}s ({article}); missing place(s) {missing}",
                code="HAND_MISSING",
            )
        return hands
    items = parse_items(raw[key], f"{what}: {key}")
    if len(items) != 2 * places:
        raise OutcomeError(
            f"{what}: {places} places take {2 * places} {noun}s in dealing order ({article}), "
            f"got {len(items)}",
            code="HAND_SIZE",
        )
    for i, p in enumerate(service_order):
        hands[p] = (items[2 * i], items[2 * i + 1])
    return hands


def parse_hands_outcome(
    raw: JSON,
    *,
    what: str,
    places: int,
    default_casino_capital: int,
    declaration_allowed: bool,
    key: str,
    noun: str,
    parse_items: Callable[[JSON, str], Sequence[T]],
    article: str,
    extra_keys: frozenset[str] = frozenset(),
) -> tuple[Mapping[str, Any], RoundSetup, tuple[tuple[T, T], ...]]:
    """What both games' outcome JSON holds: the setup (:func:`parse_setup`) and every
    place's two cards or tiles (:func:`parse_two_each`), no key but those and
    ``extra_keys``. Returns the JSON object, the setup and the hands by place."""
    if not isinstance(raw, Mapping):
        raise OutcomeError(f"{what} must be a JSON object, got {type(raw).__name__}")
    allowed = SETUP_KEYS | DERIVED_KEYS | {"hands", key} | extra_keys
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise OutcomeError(f"{what}: unknown key(s) {unknown}; known: {sorted(allowed)}")
    setup = parse_setup(
        raw,
        places=places,
        default_casino_capital=default_casino_capital,
        declaration_allowed=declaration_allowed,
        what=what,
    )
    hands = parse_two_each(
        raw,
        places=places,
        service_order=setup.service_order,
        key=key,
        noun=noun,
        parse_items=parse_items,
        article=article,
        what=what,
    )
    return raw, setup, tuple(hands[p] for p in range(1, places + 1))


# -- what people see, and how a demonstration plays it ------------------------------------
def hands_words(o: Any) -> str:
    """A dealt game of a player-banked table in words: the banker, the dice, the first
    place served and every place's two cards or tiles."""
    hands = " ".join(f"{k}:{'+'.join(v)}" for k, v in o["hands"].items())
    dice = " ".join(str(d) for d in o["dice"])
    return (
        f"banker at place {o['banker']}, dice {dice}, first served place "
        f"{o['first_place']}; {hands}"
    )


#: The demo's banker's capital, and the limits its place bets are drawn within.
DEMO_CAPITAL = 1_000_000
DEMO_TABLE: dict[str, Any] = {"limits": {"min_stake": 2500, "max_stake": 5000000}}


def declared_round(
    game: BankerGame[Any, Any],
    rules: Any,
    rng: Rng,
    rnd: DemoRound,
    items: Sequence[Any],
    start: Callable[[int, list[Bet], list[int]], Deal],
) -> tuple[list[dict[str, JSON]], JSON]:
    """A game dealt by hand and declared by the inspector (the demo has no card or tile
    reader for it): the set (``items``) shuffled, the banker's place drawn and the dice
    shaken; a place bet at the other places, the first ``rnd.bets`` of them placed, in
    that order; two cards or tiles laid before each place, dealt as the game's deal
    (``start(banker, bets, dice)``) asks for them, dice and items. Returns the bets and
    the dealt game as declared (with the order of the bets)."""
    places = game.places(rules)
    shuffled = [str(x) for x in items]
    rng.shuffle(shuffled)
    banker = rng.randint(1, places)
    dice = [rng.randint(1, 6) for _ in range(4)]
    every = [
        {"bet_id": f"{rnd.tag}b{p}", "seat": p, "bet_type": "place", "selection": p,
         "stake": 2500 * rng.randint(1, 10)}
        for p in range(1, places + 1) if p != banker
    ]  # fmt: skip
    bets = every[: max(1, rnd.bets)]
    deal = start(banker, game.parse_bets(rules, bets), dice)
    laid = {p: shuffled[2 * (p - 1) : 2 * p] for p in range(1, places + 1)}
    while (exp := deal.expect()).kind != "complete":
        is_dice = exp.kind == "dice"
        deal = deal.shake(dice) if is_dice else deal.deal(laid[int(exp.to or 0)].pop(0))
    outcome = game.outcome_json(deal.outcome())
    assert isinstance(outcome, dict)
    outcome["bet_order"] = [b["bet_id"] for b in bets]
    return bets, outcome
