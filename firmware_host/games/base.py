"""The shapes every game shares: bets, settled bets, settlements, limits, the game
interface the daemon, the CLI and ``tablectl math`` use, and the one deal interface
(:class:`Deal`, :class:`Expect`) of the games dealt card by card or tile by tile.

A game's folder defines a frozen ``Rules`` dataclass (its pay table and house options,
declared with :func:`options.option`) and a :class:`Game` subclass. Games whose round
is one physical outcome and whose bets are independent (roulette, dice, fantan,
baccarat) subclass :class:`DiscreteGame` and only say, for one bet and one outcome,
what the :class:`~money.Verdict` is; settlement and exact house edges follow.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from ..jsonio import JSON as JSON
from .describe import Demo, Display
from .edges import EdgeBasis, Verdicts, merge_verdicts
from .errors import (
    BetError,
    InvalidSelection,
    OutcomeError,
    RoundStateError,
    RulesError,
    StakeNotPayable,
    StakeOutOfLimits,
    UnknownBetType,
)
from .money import Amounts, MoneyRules, Verdict, check_stake, fraction_str, settle_amounts
from .options import build_rules, rules_json

if TYPE_CHECKING:
    from .jackpot import JackpotParams
R = TypeVar("R")  # a game's Rules dataclass
Out = TypeVar("Out")  # a game's Outcome type

#: Keys a bet may carry on the wire (MQTT ``bets/request`` and ``tablectl settle --bets``).
BET_KEYS = frozenset({"bet_id", "seat", "bet_type", "selection", "stake"})


@dataclass(frozen=True, slots=True)
class Bet:
    """One validated bet. ``selection`` is in the game's canonical JSON form."""

    bet_id: str
    seat: int
    bet_type: str
    selection: JSON
    stake: int

    def to_json(self) -> dict[str, JSON]:
        return {
            "bet_id": self.bet_id,
            "seat": self.seat,
            "bet_type": self.bet_type,
            "selection": self.selection,
            "stake": self.stake,
        }


@dataclass(frozen=True, slots=True)
class BetResult:
    bet: Bet
    amounts: Amounts
    reason: str = ""

    def to_json(self) -> dict[str, JSON]:
        a = self.amounts
        out = self.bet.to_json()
        out.update(
            result=a.result,
            payout=a.payout,
            commission=a.commission,
            net=a.net,
            breakage=fraction_str(a.breakage),
        )
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class Totals:
    stakes: int
    payout: int
    commission: int
    #: Sum of players' net results; the house's result is ``-net``.
    net: int
    breakage: Fraction

    @staticmethod
    def of(results: Iterable[BetResult]) -> Totals:
        rs = list(results)
        return Totals(
            stakes=sum(r.bet.stake for r in rs),
            payout=sum(r.amounts.payout for r in rs),
            commission=sum(r.amounts.commission for r in rs),
            net=sum(r.amounts.net for r in rs),
            # Most breakages are zero: adding only the others keeps a 100-bet round cheap.
            breakage=sum((r.amounts.breakage for r in rs if r.amounts.breakage), Fraction(0)),
        )

    def to_json(self) -> dict[str, JSON]:
        return {
            "stakes": self.stakes,
            "payout": self.payout,
            "commission": self.commission,
            "net": self.net,
            "house_net": -self.net,
            "breakage": fraction_str(self.breakage),
        }


@dataclass(frozen=True, slots=True)
class Settlement:
    game: str
    outcome: JSON
    results: tuple[BetResult, ...]
    totals: Totals
    #: Game-specific extras (jackpot contributions and hits, banker capital use...).
    extras: Mapping[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "game": self.game,
            "outcome": self.outcome,
            "bets": [r.to_json() for r in self.results],
            "totals": self.totals.to_json(),
        }
        if self.extras:
            out.update(self.extras)
        return out


@dataclass(frozen=True, slots=True)
class Limits:
    """Stake limits of a table, in minor units; per bet type overrides the table's.

    ``payable_unit`` is the table's smallest payable amount (``[table]
    payable_unit``): a stake must be a whole number of it, or the table could not pay
    its prize, a whole multiple of the stake (60/2004 art. 7; 57/2004, 59/2004 art. 6),
    exactly. Every door a bet comes through (MQTT, console, ``tablectl settle``)
    parses it with these limits, so every door refuses such a stake the same way.
    """

    min_stake: int = 1
    max_stake: int | None = None
    per_bet_type: Mapping[str, tuple[int, int | None]] = field(default_factory=dict)
    payable_unit: int = 1

    def check(self, bet_type: str, stake: int) -> None:
        lo, hi = self.per_bet_type.get(bet_type, (self.min_stake, self.max_stake))
        if stake < lo:
            raise StakeOutOfLimits(f"stake {stake} for {bet_type} is below the table minimum {lo}")
        if hi is not None and stake > hi:
            raise StakeOutOfLimits(f"stake {stake} for {bet_type} is above the table maximum {hi}")
        self.check_payable(bet_type, stake)

    def check_payable(self, what: str, stake: int) -> None:
        """``stake`` (of a bet, or an amount a player's decision stakes: blackjack's
        insurance) is a whole number of the payable unit, or :class:`StakeNotPayable`."""
        unit = self.payable_unit
        if stake % unit:
            raise StakeNotPayable(
                f"stake {stake} for {what} is not a whole number of the table's payable "
                f"unit {unit} (the smallest amount it pays): its prize could not be paid "
                "exactly"
            )


@dataclass(frozen=True, slots=True)
class BetType:
    """A bet type as the rules core knows it: API name, what it pays, where the law says so."""

    name: str
    title: str
    article: str
    pays: str


@dataclass(frozen=True, slots=True)
class MathLine:
    bet: str
    selection: JSON
    house_edge: Fraction
    outcomes: tuple[tuple[Fraction, Fraction], ...]  # (net per unit, probability)
    note: str = ""

    def to_json(self) -> dict[str, JSON]:
        out = {
            "bet": self.bet,
            "selection": self.selection,
            "house_edge": float(self.house_edge),  # display only; exact below
            "house_edge_exact": fraction_str(self.house_edge),
            "outcomes": [
                {"net": fraction_str(n), "probability": fraction_str(p)} for n, p in self.outcomes
            ],
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True, slots=True)
class MathReport:
    game: str
    rules: JSON
    method: str  # "exact" or "simulation"
    lines: tuple[MathLine, ...]
    details: Mapping[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        out = {
            "game": self.game,
            "rules": self.rules,
            "method": self.method,
            "bets": [ln.to_json() for ln in self.lines],
        }
        out.update(self.details)
        return out


def unit_problems(amounts: Iterable[tuple[str, int]], money: MoneyRules, why: str) -> list[str]:
    """Configuration errors for the ``(path, amount)`` pairs that are not a whole
    number of ``money.payable_unit`` (zero stands for "none" and is never one)."""
    unit = money.payable_unit
    return [
        f"{path}: {amount} is not a whole number of the payable unit table.payable_unit = "
        f"{unit}: {why}"
        for path, amount in amounts
        if amount % unit
    ]


def parse_bet_envelope(raw: object) -> tuple[str, int, str, JSON, int]:
    """Check the game-independent part of a bet's JSON; returns its fields."""
    if not isinstance(raw, Mapping):
        raise BetError(
            f"a bet must be a JSON object, got {type(raw).__name__}", code="BET_MALFORMED"
        )
    unknown = set(raw) - BET_KEYS
    if unknown:
        raise BetError(
            f"unknown field(s) in bet: {', '.join(sorted(map(str, unknown)))}",
            code="BET_UNKNOWN_FIELD",
        )
    missing = {"bet_type", "stake"} - set(raw)
    if missing:
        raise BetError(f"bet is missing {', '.join(sorted(missing))}", code="BET_MISSING_FIELD")
    bet_id = raw.get("bet_id", "")
    if not isinstance(bet_id, str) or len(bet_id) > 64:
        raise BetError(
            f"bet_id must be a string of at most 64 characters, got {bet_id!r}",
            code="BET_MALFORMED",
        )
    seat = raw.get("seat", 0)
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat <= 99:
        raise BetError(f"seat must be an integer 0..99, got {seat!r}", code="BET_INVALID_SEAT")
    bet_type = raw["bet_type"]
    if not isinstance(bet_type, str):
        raise UnknownBetType(f"bet_type must be a string, got {bet_type!r}")
    stake = check_stake(raw["stake"])
    return bet_id, seat, bet_type, raw.get("selection"), stake


#: What a deal can need next (:attr:`Expect.kind`).
ExpectKind = Literal["card", "tile", "dice", "decision", "complete", "void"]


@dataclass(frozen=True, slots=True)
class Expect:
    """What a deal needs next: the one answer of every game's :meth:`Deal.expect`.

    - ``"card"`` or ``"tile"``: the next card or tile, going ``to`` a side (baccarat:
      ``"player"``, ``"banker"``), a hand (blackjack: ``"player"`` with ``seat`` and
      ``hand``, ``"dealer"``, or ``"burn"``; stud poker: ``"seat"`` with ``seat``, or
      ``"dealer"``) or a place number (the banker games);
    - ``"dice"``: the dice, before the first card or tile (the banker games);
    - ``"decision"``: a decision of ``seat`` (on ``hand``), one of ``allowed``;
    - ``"complete"``: the deal is over and its :meth:`Deal.outcome` settles the round;
    - ``"void"``: the deal cannot go on (an error the rules do not correct).

    ``reason`` cites the article that decides, where the game gives one.
    """

    kind: ExpectKind
    to: str | int | None = None
    seat: int | None = None
    hand: int | None = None
    allowed: tuple[str, ...] = ()
    reason: str = ""

    def to_json(self) -> dict[str, JSON]:
        """``kind`` and every field that is set (the unset ones are left out)."""
        out: dict[str, JSON] = {"kind": self.kind}
        if self.to is not None:
            out["to"] = self.to
        if self.seat is not None:
            out["seat"] = self.seat
        if self.hand is not None:
            out["hand"] = self.hand
        if self.allowed:
            out["allowed"] = list(self.allowed)
        if self.reason:
            out["reason"] = self.reason
        return out


class Deal(abc.ABC):
    """The deal every game dealt card by card or tile by tile shares: an immutable
    state fed what leaves the shoe (or the set) in that order, each step returning
    the next state (``BaccaratDeal``, ``BlackjackDeal``, ``StudDeal``, and the banker
    games' ``SuperPan9Deal`` and ``PaiKaoDeal``).

    :meth:`Game.start_deal` starts one; :meth:`expect` says what is due; :meth:`deal`
    takes a card or tile and :meth:`shake` the dice; :meth:`Game.decide` takes a
    player's decision (and :meth:`Game.decision_bets` names the bets it creates);
    :meth:`outcome` is the finished deal, what :meth:`Game.settle` takes. What the
    rules do not allow raises :class:`~.errors.Misdeal` (a card or tile) or
    :class:`~.errors.RoundStateError` (anything else), each with a stable code.
    """

    __slots__ = ()

    @abc.abstractmethod
    def expect(self) -> Expect:
        """What the deal needs next."""

    @abc.abstractmethod
    def deal(self, item: Any) -> Deal:
        """The next card or tile out of the shoe or the set (raises :class:`Misdeal`)."""

    def shake(self, dice: JSON) -> Deal:
        """The dice that decide the dealing order (only where :meth:`expect` asks)."""
        raise RoundStateError("this deal takes no dice", code="DICE_NOT_DUE")

    @abc.abstractmethod
    def outcome(self) -> Any:
        """The finished deal as the game's outcome (raises unless it is complete)."""

    @property
    def complete(self) -> bool:
        return self.expect().kind == "complete"


class Game(abc.ABC, Generic[R, Out]):
    """Interface of one game of the rules core."""

    game_id: ClassVar[str]
    title: ClassVar[str]
    regulation: ClassVar[str]
    rules_type: ClassVar[type[Any]]
    #: The kind of device whose events carry this game's result (``"wheel"``,
    #: ``"shaker"``, ``"keypad"``, ``"shoe"``), or None when the result is entered or
    #: declared by people (mah-jong, P'ai Kao). Kinds are those of
    #: those the drivers declare (``drivers.registry.kind_of``); the rules core names them,
    #: never imports them.
    result_device: ClassVar[str | None] = None
    #: Every device kind a table of this game can use (the result device, the result
    #: board, the jackpot sign). A configured device of another kind is refused.
    device_kinds: ClassVar[frozenset[str]] = frozenset({"board"})
    #: The keys of the setup a deal needs before its first card (Super Pan 9: the
    #: banker's place, capital and declaration, and the dice); empty: no setup.
    deal_setup_keys: ClassVar[frozenset[str]] = frozenset()
    #: Whether :meth:`math` is a seeded simulation that shuffles with a random number
    #: generator its caller makes from the seed (``rng=random.Random``): the rules core
    #: holds none.
    math_needs_rng: ClassVar[bool] = False
    #: The options :meth:`math` takes (``decks``, ``rounds``, ``seed``); ``tablectl
    #: math`` refuses the others before any work, naming the flag.
    math_options: ClassVar[frozenset[str]] = frozenset()
    #: What people see of a table of the game: its result board, its statistics, its
    #: outcome in words (:class:`~.describe.Display`; by default none of them).
    display: ClassVar[Display] = Display()
    #: How a demonstration plays it: its players' bets, its croupier's part
    #: (:class:`~.describe.Demo`; by default from its catalogue and sample outcomes).
    demo: ClassVar[Demo] = Demo()
    #: How :meth:`bet_edge` obtains its edges (:mod:`.edges`): ``exact``, ``strategy``
    #: or ``none`` (the house is not a party to the bets).
    edge_basis: ClassVar[EdgeBasis] = "none"

    # -- rules -----------------------------------------------------------------
    def default_rules(self) -> R:
        return self.rules_type()  # type: ignore[no-any-return]

    def rules_from_config(
        self, sections: Mapping[str, Mapping[str, Any] | None], errors: list[str]
    ) -> R | None:
        return build_rules(self.rules_type, sections, self.game_id, errors)

    def rules_json(self, rules: R) -> dict[str, JSON]:
        return {"regulation": self.regulation, **rules_json(rules)}

    def money_problems(self, rules: R, money: MoneyRules) -> list[str]:
        """Amounts of the pay table (fixed stakes, fixed prizes, caps) that are not a
        whole number of the table's payable unit, each as a configuration error with
        its path: the table could not take or pay them exactly. None by default."""
        return []

    # -- bets ------------------------------------------------------------------
    @abc.abstractmethod
    def bet_types(self, rules: R) -> Sequence[BetType]:
        """Every bet type this table offers under ``rules``."""

    @abc.abstractmethod
    def canonical_selection(self, rules: R, bet_type: str, selection: JSON) -> JSON:
        """Validate a selection for ``bet_type``; return its canonical JSON form.

        Raises :class:`UnknownBetType` or :class:`InvalidSelection`.
        """

    def parse_bet(self, rules: R, raw: object, limits: Limits | None = None) -> Bet:
        bet_id, seat, bet_type, selection, stake = parse_bet_envelope(raw)
        names = {bt.name for bt in self.bet_types(rules)}
        if bet_type not in names:
            raise UnknownBetType(
                f"{self.game_id} has no bet type {bet_type!r}; known: {', '.join(sorted(names))}"
            )
        canonical = self.canonical_selection(rules, bet_type, selection)
        if limits is not None:
            limits.check(bet_type, stake)
        return Bet(bet_id, seat, bet_type, canonical, stake)

    def parse_bets(
        self, rules: R, raws: Iterable[object], limits: Limits | None = None
    ) -> list[Bet]:
        bets = []
        for i, raw in enumerate(raws):
            try:
                bet = self.parse_bet(rules, raw, limits)
            except BetError as exc:
                raise type(exc)(f"bet #{i}: {exc.message}", code=exc.code) from exc
            if not bet.bet_id:
                bet = Bet(f"b{i + 1}", bet.seat, bet.bet_type, bet.selection, bet.stake)
            bets.append(bet)
        return bets

    # -- outcomes and settlement ---------------------------------------------
    @abc.abstractmethod
    def parse_outcome(self, rules: R, raw: JSON) -> Out:
        """Validate a round's outcome as read from the hardware (raises OutcomeError)."""

    @abc.abstractmethod
    def outcome_json(self, outcome: Out) -> JSON:
        """The outcome in the JSON form published and accepted by ``parse_outcome``."""

    def same_outcome(self, rules: R, a: Out, b: Out) -> bool:
        """Whether two readings of a round's result are the same result (a table's
        witness, ``docs/witness.md``): by default their published forms are equal; a game
        whose outcome does not depend on an order its readers may list differently says
        so (the dice games: three dice are not told apart)."""
        return bool(self.outcome_json(a) == self.outcome_json(b))

    @abc.abstractmethod
    def settle(self, rules: R, outcome: Out, bets: Sequence[Bet], money: MoneyRules) -> Settlement:
        """Settle every bet of a round."""

    # -- the deal, card by card (games read from a shoe): see :class:`Deal` ------
    def start_deal(
        self, rules: R, bets: Sequence[Bet], setup: Mapping[str, JSON] | None = None
    ) -> Deal:
        """The deal of a round whose bets are ``bets`` (``setup``: see
        :attr:`deal_setup_keys`). Raises :class:`RulesError` ``NOT_SUPPORTED`` for a
        game whose table does not deal it from a shoe (its result is entered)."""
        raise RulesError(
            f"{self.game_id} is not dealt from a shoe here; enter its result by command",
            code="NOT_SUPPORTED",
        )

    def fresh_deck_each_round(self, rules: R) -> bool:
        """Whether every round is dealt from a freshly shuffled deck, rather than from a
        shoe until its cut card (what a shoe or a simulator shuffles by). Default: no."""
        return False

    def decide(self, rules: R, deal: Deal, decision: Mapping[str, JSON]) -> Deal:
        """A player's decision (``seat``, ``action`` and the game's own keys) applied
        to ``deal``. Raises :class:`RulesError` (``NOT_SUPPORTED`` if the game takes none)."""
        raise RulesError(f"{self.title} takes no player decisions", code="NOT_SUPPORTED")

    def decision_bets(
        self, rules: R, deal_before: Deal, seat: int, action: str, bets: Sequence[Bet]
    ) -> list[dict[str, JSON]]:
        """The raw bets a decision creates after betting closed (the stud raise), to be
        validated by :meth:`parse_bet` and journaled: the one place a game says so.
        Default: none."""
        return []

    # -- progressive jackpot ----------------------------------------------------
    def jackpot_params(self, rules: R) -> JackpotParams | None:
        """The progressive jackpot a table of this game offers under ``rules``, or None."""
        return None

    # -- math ------------------------------------------------------------------
    @abc.abstractmethod
    def math(self, rules: R, **options: Any) -> MathReport:
        """House edge of every bet type under ``rules``."""

    def bet_edge(
        self, rules: R, bet: Bet, money: MoneyRules, *, jackpot_pool: int | None = None
    ) -> Fraction | None:
        """The house edge of ``bet`` as the table settles it (:mod:`.edges`): a
        fraction of its stake, obtained as :attr:`edge_basis` says; None where the
        bet's expectation is counted in another bet's edge (a blackjack double, the
        stud raise) or the house is not a party (``edge_basis = "none"``).
        ``jackpot_pool``: the progressive pool the round was played with (the jackpot
        bet's edge depends on it). Pure; games cache what they enumerate."""
        return None


class DiscreteGame(Game[R, Out]):
    """A game decided by one outcome from a finite, enumerable set, bets independent."""

    @abc.abstractmethod
    def verdict(self, rules: R, outcome: Out, bet: Bet) -> Verdict:
        """What the regulation says of ``bet`` when ``outcome`` comes."""

    @abc.abstractmethod
    def outcome_space(self, rules: R) -> Sequence[tuple[Out, Fraction]]:
        """Every outcome with its exact probability (summing to 1)."""

    @abc.abstractmethod
    def math_bets(self, rules: R) -> Sequence[tuple[str, JSON]]:
        """Representative (bet_type, selection) pairs for the house-edge table."""

    def settle(self, rules: R, outcome: Out, bets: Sequence[Bet], money: MoneyRules) -> Settlement:
        results = []
        for bet in bets:
            v = self.verdict(rules, outcome, bet)
            results.append(BetResult(bet, settle_amounts(bet.stake, v, money), v.reason))
        return Settlement(
            self.game_id, self.outcome_json(outcome), tuple(results), Totals.of(results)
        )

    edge_basis: ClassVar[EdgeBasis] = "exact"

    def bet_verdicts(self, rules: R, bet_type: str, selection: JSON) -> Verdicts:
        """Every verdict a bet of ``bet_type`` on ``selection`` (canonical) can get,
        with its exact probability over :meth:`outcome_space` (merged when they pay the
        same); cached per rules, bet type and selection."""
        key = (rules, bet_type, _selection_key(selection))
        cache = _VERDICTS.setdefault(self.game_id, {})
        got = cache.get(key)
        if got is None:
            bet = Bet("edge", 0, bet_type, selection, 1)
            space = self.outcome_space(rules)
            got = merge_verdicts((self.verdict(rules, o, bet), p) for o, p in space)
            if len(cache) >= _VERDICTS_MAX:
                cache.clear()
            cache[key] = got
        return got

    def bet_edge(
        self, rules: R, bet: Bet, money: MoneyRules, *, jackpot_pool: int | None = None
    ) -> Fraction | None:
        """Exact: every outcome of :meth:`outcome_space` settled at the bet's stake
        (cached per rules, bet type, selection, stake and money rules: a table's stakes
        repeat)."""
        # Kept as plain ints under str/int keys: the collector stops tracking such
        # tuples, so a full cache does not lengthen every full collection of the daemon.
        per_rules = _EDGES.setdefault(self.game_id, {})
        cache = per_rules.get((rules, money))
        if cache is None:
            if len(per_rules) >= _EDGES_RULES_MAX:
                per_rules.clear()
            cache = per_rules[(rules, money)] = {}
        key = (bet.bet_type, _selection_key(bet.selection), bet.stake)
        got = cache.get(key)
        if got is None:
            edge = self.bet_verdicts(rules, bet.bet_type, bet.selection).edge(bet.stake, money)
            if len(cache) >= _EDGES_MAX:
                cache.clear()
            cache[key] = (edge.numerator, edge.denominator)
            return edge
        return Fraction(*got)

    def math(self, rules: R, **options: Any) -> MathReport:
        if options:
            raise RulesError(
                f"{self.game_id} math is an exact enumeration of its outcomes; it takes no "
                f"options ({', '.join(sorted(options))})",
                code="MATH_OPTION_INVALID",
            )
        space = self.outcome_space(rules)
        assert sum(p for _, p in space) == 1, "outcome probabilities must sum to 1"
        lines = []
        for bet_type, selection in self.math_bets(rules):
            canonical = self.canonical_selection(rules, bet_type, selection)
            bet = Bet("math", 0, bet_type, canonical, 1)
            dist: dict[Fraction, Fraction] = {}
            for outcome, p in space:
                n = self.verdict(rules, outcome, bet).net_per_unit()
                dist[n] = dist.get(n, Fraction(0)) + p
            edge = -sum((n * p for n, p in dist.items()), Fraction(0))
            lines.append(
                MathLine(bet_type, canonical, edge, tuple(sorted(dist.items(), reverse=True)))
            )
        return MathReport(self.game_id, self.rules_json(rules), "exact", tuple(lines))

    def money_math(self, rules: R, money: MoneyRules, limits: Limits) -> tuple[MoneyLine, ...]:
        """What the table's payable unit does to each bet of :meth:`math`, at the bet
        type's minimum stake: the expected commission and breakage per unit staked,
        apart (58/2004 art. 9: the commission is 5% of the prize; the rounding to the
        payable unit is not part of it). Settled as a real bet would be."""
        space = self.outcome_space(rules)
        out = []
        for bet_type, selection in self.math_bets(rules):
            canonical = self.canonical_selection(rules, bet_type, selection)
            lo, _ = limits.per_bet_type.get(bet_type, (limits.min_stake, limits.max_stake))
            unit = limits.payable_unit
            stake = max(lo, unit) + (-max(lo, unit)) % unit  # the smallest stake accepted
            bet = Bet("math", 0, bet_type, canonical, stake)
            commission = breakage = Fraction(0)
            for outcome, p in space:
                v = self.verdict(rules, outcome, bet)
                if v.result == "win":  # the regulation's commission, exact
                    commission += p * v.odds * v.commission_rate
                breakage += p * settle_amounts(stake, v, money).breakage / stake
            out.append(MoneyLine(bet_type, canonical, stake, commission, breakage))
        return tuple(out)


#: Per game, the verdicts of each (rules, bet type, selection) seen (:meth:`DiscreteGame.bet_verdicts`).
_VERDICTS: dict[str, dict[tuple[Any, str, str], Verdicts]] = {}
_VERDICTS_MAX = 4096
#: Per game and (rules, money rules), the edge of each (bet type, selection, stake) seen,
#: as its numerator and denominator.
_EDGES: dict[str, dict[tuple[Any, Any], dict[tuple[str, str, int], tuple[int, int]]]] = {}
_EDGES_MAX = 65536
_EDGES_RULES_MAX = 16


def _selection_key(selection: JSON) -> str:
    """A hashable, exact key of a canonical selection."""
    return repr(selection)


def winning_areas(game: Game[Any, Any], rules: Any, outcome: JSON) -> tuple[str, ...]:
    """The areas of ``game``'s board that ``outcome`` (as published) lights, in lamp
    order: those whose bet the game's own verdict says wins. Empty without a board."""
    board = game.display.board
    if board is None:
        return ()
    parsed = game.parse_outcome(rules, outcome)
    bets = [
        Bet(a.name, 0, a.bet_type, game.canonical_selection(rules, a.bet_type, a.selection), 1)
        for a in board.areas
    ]
    verdict = getattr(game, "verdict", None)  # the games of one outcome and independent bets
    if callable(verdict):
        return tuple(b.bet_id for b in bets if verdict(rules, parsed, b).result == "win")
    settled = game.settle(rules, parsed, bets, MoneyRules())
    return tuple(r.bet.bet_id for r in settled.results if r.amounts.result == "win")


@dataclass(frozen=True, slots=True)
class MoneyLine:
    """One bet of ``tablectl math`` at a real stake: the regulation's commission and the
    payable unit's breakage, each as an exact expected amount per unit staked."""

    bet: str
    selection: JSON
    stake: int
    commission: Fraction
    breakage: Fraction

    def to_json(self) -> dict[str, JSON]:
        return {
            "bet": self.bet,
            "selection": self.selection,
            "stake": self.stake,
            "commission_exact": fraction_str(self.commission),
            "breakage_exact": fraction_str(self.breakage),
        }


def require(cond: bool, message: str) -> None:
    """Raise InvalidSelection(message) unless ``cond``."""
    if not cond:
        raise InvalidSelection(message)


def as_int_list(selection: JSON, what: str) -> list[int]:
    """A selection that must be a list of integers (or a single integer)."""
    if isinstance(selection, int) and not isinstance(selection, bool):
        return [selection]
    if not isinstance(selection, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in selection
    ):
        raise InvalidSelection(f"{what}: selection must be a list of integers, got {selection!r}")
    return list(selection)


def check_derived(given: JSON, published: Mapping[str, JSON], game: str) -> None:
    """Accept an outcome in its published form only if its derived fields agree.

    Every game's ``parse_outcome`` must accept what its ``outcome_json`` produces
    (the journal stores the published form and a restart parses it back).
    """
    if isinstance(given, Mapping):
        for key, value in given.items():
            if key in published and published[key] != value:
                raise OutcomeError(
                    f"{game} outcome: {key} {value!r} disagrees with the rest of the outcome "
                    f"(expected {published[key]!r})"
                )
