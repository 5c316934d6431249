"""The blackjack game: bet types, the outcome (a finished :class:`~.deal.BlackjackDeal`),
settlement (every bet of a round from its hands, :mod:`.verdicts`) and the house
edge, a seeded simulation of a basic strategy (:mod:`.simulate`) with the random
number generator its caller passes: the rules core holds none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, ClassVar

from ..base import (
    JSON,
    Bet,
    BetResult,
    BetType,
    Deal,
    Expect,
    Game,
    MathLine,
    MathReport,
    Settlement,
    Totals,
)
from ..describe import Demo, DemoRound, Display, Rng
from ..edges import EdgeBasis
from ..errors import (
    BetError,
    BetNotOffered,
    ConfigError,
    InvalidSelection,
    RulesError,
    StakeNotPayable,
)
from ..money import MoneyRules, Verdict, settle_amounts
from .deal import BlackjackDeal, Insurance, replay
from .rules import BlackjackRules
from .simulate import DEFAULT_ROUNDS, DEFAULT_SEED, Shuffler, simulate
from .theory import blackjack_edges
from .verdicts import (
    deciders,
    hand_verdicts,
    insurance_verdict,
    over_under_verdict,
    pair_verdict,
    sevens_verdict,
)

# -- the game -------------------------------------------------------------------------

_BET_TYPES = (
    BetType("main", "Aposta inicial: a place's hand against the dealer",
            "56/2004 art. 9-11, art. 10 2)-7), art. 15, 18, 19",
            "1:1; blackjack 3:2; special prize 3:1; five cards 1:2; surrender loses 1/2"),
    BetType("pair", "Qualquer par (any pair)", "56/2004 art. 13 1), art. 14 1)", "11:1 per pair"),
    BetType("sevens", "Setes (sevens)", "56/2004 art. 13 2), art. 14 2)", "50, 150, 500 or 5000:1"),
    BetType("over_under_13", "Acima e abaixo de 13 (over / under 13)",
            "56/2004 art. 13 3), art. 14 3)", "1:1"),
    BetType("split", "Aposta separada: the stake of a hand made by a split (from a decision)",
            "56/2004 art. 16 2)", "as the hand"),
    BetType("double", "Aposta dobrada: the added stake of a double (from a decision)",
            "56/2004 art. 17, art. 10 7)", "as the hand"),
    BetType("insurance", "Aposta de seguro (from a decision)", "56/2004 art. 12", "2:1"),
)  # fmt: skip

#: Bet types that only arise from decisions recorded in the outcome.
DECISION_BET_TYPES = frozenset({"split", "double", "insurance"})

#: Complete rounds under the default rules (shoe procedure, six decks).
SAMPLE_ROUNDS: tuple[JSON, ...] = (
    # One seat stands on 19; the dealer draws from 16 to 21.
    {"seats": [1], "cards": ["9S", "6H", "KD", "TC", "5C"],
     "decisions": [{"seat": 1, "action": "stand"}]},
    # Split eights, a double, a resplit; a blackjack; the dealer busts.
    {"seats": [1, 2, 4],
     "cards": ["8S", "TH", "AC", "6D", "8H", "9C", "KS",
               "3D", "TC", "8C", "2S", "5H", "JD", "TD", "7S"],
     "decisions": [{"seat": 1, "action": "split"}, {"seat": 1, "action": "double"},
                   {"seat": 1, "action": "split"}, {"seat": 1, "action": "double"},
                   {"seat": 1, "action": "stand"}, {"seat": 2, "action": "stand"}]},
    # Insurance against an ace, the dealer has blackjack.
    {"seats": [3], "cards": ["9S", "AH", "9D", "KC"],
     "decisions": [{"seat": 3, "action": "insurance", "amount": 50},
                   {"seat": 3, "action": "stand"}]},
)  # fmt: skip


# -- what people see, and how a demonstration plays it ------------------------------------
def demo_seats(rules: BlackjackRules, rng: Rng, rnd: DemoRound) -> list[dict[str, JSON]]:
    """Three players take seats: a main bet each, now and then the any-pair side bet."""
    bets: list[dict[str, JSON]] = []
    for s in rng.sample(range(1, 8), 3):
        stake = 2500 * rng.randint(1, 8)
        bets.append({"bet_id": f"{rnd.tag}m{s}", "seat": s, "bet_type": "main", "stake": stake})
        if rng.random() < 0.3:
            bets.append({"bet_id": f"{rnd.tag}p{s}", "seat": s, "bet_type": "pair", "stake": 2500})
    return bets


def hand_total(deal: Deal, seat: int | None, hand: int | None) -> int:
    """A hand's total as the deal reports it (``summary_json``), 12 when not found."""
    summary = getattr(deal, "summary_json", None)
    for place in summary().get("places", []) if summary else []:
        if place.get("seat") == seat:
            return int(place["hands"][hand or 0]["total"])
    return 12


def demo_decide(rules: BlackjackRules, rng: Rng, exp: Expect, deal: Deal) -> dict[str, JSON]:
    """A player's decision: split half the time it may, double on 10 and 11, hit below
    17, else stand."""
    allowed = tuple(exp.allowed)
    total = hand_total(deal, exp.seat, exp.hand)
    if "split" in allowed and rng.random() < 0.5:
        action = "split"
    elif "double" in allowed and total in (10, 11):
        action = "double"
    elif "hit" in allowed and total < 17:
        action = "hit"
    else:
        action = "stand" if "stand" in allowed else allowed[0]
    return {"seat": exp.seat, "hand": exp.hand, "action": action}


def _words(o: Any) -> str:
    places = "; ".join(
        f"seat {p['seat']}: "
        + " | ".join(f"{' '.join(h['cards'])} ({h['total']} {h['status']})" for h in p["hands"])
        for p in o["places"]
    )
    d = o["dealer"]
    return f"dealer {' '.join(d['cards'])} ({d['total']}); {places}"


class Blackjack(Game[BlackjackRules, BlackjackDeal]):
    game_id = "blackjack"
    math_options = frozenset({"decks", "rounds", "seed"})
    result_device = "shoe"
    device_kinds = frozenset({"shoe", "board"})
    title = "Blackjack (Vinte e um)"
    regulation = "56/2004"
    rules_type = BlackjackRules
    math_needs_rng = True
    display = Display(words=_words)
    demo = Demo(seated=demo_seats, decide=demo_decide)

    def bet_types(self, rules: BlackjackRules) -> Sequence[BetType]:
        off = {
            "pair": not rules.any_pair,
            "sevens": not rules.sevens,
            "over_under_13": not rules.over_under_13,
        }
        return tuple(bt for bt in _BET_TYPES if not off.get(bt.name, False))

    def fresh_deck_each_round(self, rules: BlackjackRules) -> bool:
        """The metal box holds one deck, shuffled again after each round (56/2004 art. 2
        2) 3)); a shoe is dealt to its cut card (art. 2 2) 1))."""
        return rules.procedure == "metal_box"

    def start_deal(
        self, rules: BlackjackRules, bets: Sequence[Bet], setup: Mapping[str, JSON] | None = None
    ) -> BlackjackDeal:
        """The places with a main bet are dealt (art. 5 1))."""
        return BlackjackDeal.start(rules, sorted({b.seat for b in bets if b.bet_type == "main"}))

    def decide(
        self, rules: BlackjackRules, deal: Any, decision: Mapping[str, JSON]
    ) -> BlackjackDeal:
        """Hit, stand, double, split, insurance... (art. 6); ``hand``, ``amount`` and
        ``bet_id`` as :meth:`BlackjackDeal.decide` takes them."""
        extra = {k: decision[k] for k in ("hand", "amount", "bet_id") if k in decision}
        new: BlackjackDeal = deal.decide(decision.get("seat"), decision.get("action"), **extra)
        return new

    def canonical_selection(self, rules: BlackjackRules, bet_type: str, selection: JSON) -> JSON:
        if bet_type in DECISION_BET_TYPES:
            raise BetError(
                f"{bet_type} stakes come from the decisions recorded in the outcome, not from --bets",
                code="BET_FROM_DECISION",
            )
        if bet_type == "main":
            if selection in (None, "seated"):
                return None
            if selection == "standing":
                return "standing"
            raise InvalidSelection(
                f'main: selection is null (seated) or "standing", got {selection!r}'
            )
        if bet_type in ("pair", "sevens"):
            if not getattr(rules, "any_pair" if bet_type == "pair" else "sevens"):
                raise BetNotOffered(f"this table does not offer {bet_type}")  # pragma: no cover
            if selection is not None:
                raise InvalidSelection(f"{bet_type}: takes no selection, got {selection!r}")
            return None
        if bet_type == "over_under_13":
            if selection not in ("over", "under"):
                raise InvalidSelection(
                    f'over_under_13: selection is "over" or "under", got {selection!r}'
                )
            return selection
        raise InvalidSelection(f"unknown blackjack bet type {bet_type!r}")  # pragma: no cover

    def sample_outcomes(self, rules: BlackjackRules) -> list[BlackjackDeal]:
        """A few complete rounds (for contract tests and examples)."""
        return [replay(rules, raw) for raw in SAMPLE_ROUNDS]

    def parse_outcome(self, rules: BlackjackRules, raw: JSON) -> BlackjackDeal:
        return replay(rules, raw, require_complete=True)

    def outcome_json(self, outcome: BlackjackDeal) -> JSON:
        return {**outcome.to_json(), **outcome.summary_json()}

    def settle(
        self, rules: BlackjackRules, outcome: BlackjackDeal, bets: Sequence[Bet], money: MoneyRules
    ) -> Settlement:
        deal = outcome.outcome()
        seats = set(deal.seats)
        mains: dict[int, list[Bet]] = {}
        for b in bets:
            if b.seat not in seats:
                raise BetError(
                    f"bet {b.bet_id}: seat {b.seat} received no cards this round (seats {sorted(seats)})",
                    code="BET_SEAT_NOT_DEALT",
                )
            if b.bet_type in DECISION_BET_TYPES:
                raise BetError(
                    f"bet {b.bet_id}: {b.bet_type} stakes come from the outcome's decisions",
                    code="BET_FROM_DECISION",
                )
            if b.bet_type == "main":
                mains.setdefault(b.seat, []).append(b)
        missing = sorted(seats - set(mains))
        if missing:
            raise BetError(
                f"seat(s) {missing} were dealt cards but hold no main bet (56/2004 art. 5 1))",
                code="SEAT_WITHOUT_MAIN_BET",
            )
        who = deciders(rules, bets)
        insured: dict[str, Insurance] = {}
        for place in deal.places:
            for ins in place.insurance:
                target = self._insured_bet(place.seat, ins, mains[place.seat])
                if target.bet_id in insured:
                    raise BetError(
                        f"bet {target.bet_id} is insured twice", code="INSURANCE_ALREADY"
                    )
                if ins.amount % money.payable_unit:  # docs/rules/money.md: every door
                    raise StakeNotPayable(
                        f"insurance of {ins.amount} on bet {target.bet_id} is not a whole "
                        f"number of the table's payable unit {money.payable_unit}: its prize "
                        "(2 to 1, 56/2004 art. 12 2)) could not be paid exactly"
                    )
                lo = rules.insurance_min * target.stake
                hi = rules.insurance_max * target.stake
                if not lo <= ins.amount <= hi:
                    raise BetError(
                        f"insurance of {ins.amount} on bet {target.bet_id} (stake {target.stake}) is "
                        f"outside {lo}..{hi} (56/2004 art. 12 1))",
                        code="INSURANCE_AMOUNT",
                    )
                insured[target.bet_id] = ins

        results: list[BetResult] = []

        def add(bet: Bet, v: Verdict) -> None:
            results.append(BetResult(bet, settle_amounts(bet.stake, v, money), v.reason))

        for b in bets:
            place = deal.place(b.seat)
            if b.bet_type == "main":
                for k, hand in enumerate(place.hands):
                    base, dbl = hand_verdicts(rules, deal.dealer, hand)
                    part = (
                        b
                        if k == 0
                        else Bet(
                            f"{b.bet_id}.h{k}",
                            b.seat,
                            "split",
                            {"of": b.bet_id, "hand": k},
                            b.stake,
                        )
                    )
                    add(part, base)
                    if hand.doubled:
                        add(Bet(f"{b.bet_id}.h{k}.double", b.seat, "double",
                                {"of": b.bet_id, "hand": k}, b.stake), dbl)  # fmt: skip
                taken = insured.get(b.bet_id)
                if taken is not None:
                    add(Bet(f"{b.bet_id}.insurance", b.seat, "insurance", {"of": b.bet_id}, taken.amount),
                        insurance_verdict(deal.dealer))  # fmt: skip
            elif b.bet_type == "pair":
                add(b, pair_verdict(place))
            elif b.bet_type == "sevens":
                add(b, sevens_verdict(place))
            elif b.bet_type == "over_under_13":
                add(b, over_under_verdict(place, b.selection))
            else:  # pragma: no cover - parse_bets refuses other types
                raise BetError(f"unknown bet type {b.bet_type!r}", code="BET_UNKNOWN_TYPE")
        extras: dict[str, JSON] = {"deciders": {str(s): bid for s, bid in sorted(who.items())}}
        return Settlement(
            self.game_id, self.outcome_json(deal), tuple(results), Totals.of(results), extras
        )

    @staticmethod
    def _insured_bet(seat: int, ins: Insurance, mains: Sequence[Bet]) -> Bet:
        if ins.bet_id is None:
            if len(mains) != 1:
                raise BetError(
                    f"seat {seat}: {len(mains)} main bets share the place; the insurance decision "
                    "must name its bet_id",
                    code="INSURANCE_BET_AMBIGUOUS",
                )
            return mains[0]
        for b in mains:
            if b.bet_id == ins.bet_id:
                return b
        raise BetError(
            f"seat {seat}: insurance names bet {ins.bet_id!r}, which is not a main bet of the place",
            code="INSURANCE_BET_UNKNOWN",
        )

    # -- math ---------------------------------------------------------------------------
    edge_basis: ClassVar[EdgeBasis] = "strategy"

    def bet_edge(
        self, rules: BlackjackRules, bet: Bet, money: MoneyRules, *, jackpot_pool: int | None = None
    ) -> Fraction | None:
        """Under the basic strategy (:mod:`.theory`): a main bet's per initial unit;
        the side bets' and insurance's settled at the bet's stake; a split or a double
        is in its main bet's (None)."""
        edges = blackjack_edges(rules)
        if bet.bet_type == "main":
            return edges.main
        side = {"pair": "pair", "sevens": "sevens", "insurance": "insurance"}.get(bet.bet_type)
        if bet.bet_type == "over_under_13":
            side = "over" if bet.selection == "over" else "under"
        return None if side is None else edges.side[side].edge(bet.stake, money)

    def math(self, rules: BlackjackRules, **options: Any) -> MathReport:
        """House edges by a seeded simulation of a basic strategy (:mod:`.simulate`).

        The rules core holds no random number generator: the caller passes ``rng``, a
        factory that makes one from the seed (``tablectl math`` passes
        ``random.Random``), and the same seed gives the same figures.
        """
        rng: Callable[[int], Shuffler] | None = options.pop("rng", None)
        unknown = sorted(set(options) - {"rounds", "seed", "decks"})
        if unknown:
            raise RulesError(
                f"blackjack math takes --rounds, --seed and --decks, not {unknown}",
                code="MATH_OPTION_UNSUPPORTED",
            )
        decks = options.get("decks")
        if decks is not None:
            if isinstance(decks, bool) or not isinstance(decks, int) or not 1 <= decks <= 12:
                raise RulesError(
                    f"--decks must be 1..12, got {decks!r}", code="MATH_OPTION_INVALID"
                )
            try:
                rules = dataclasses.replace(rules, decks=decks)
            except ConfigError as exc:
                raise RulesError(exc.message, code="MATH_OPTION_INVALID") from exc
        if rng is None:
            raise RulesError(
                "blackjack's house edge is a seeded simulation: pass the random number "
                "generator it shuffles with (rng=random.Random, made from the seed; "
                "tablectl math does)",
                code="MATH_NEEDS_RNG",
            )
        rounds = options.get("rounds") or DEFAULT_ROUNDS
        seed = options.get("seed")
        seed = DEFAULT_SEED if seed is None else seed
        if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 10**8:
            raise RulesError(
                f"--rounds must be 1..10^8, got {rounds!r}", code="MATH_OPTION_INVALID"
            )
        sim = simulate(rules, rounds=rounds, rng=rng(seed))
        lines = []
        intervals: dict[str, JSON] = {}
        for line in sim.lines:
            edge = -line.mean
            lo, hi = line.interval()
            label = line.bet if line.selection is None else f"{line.bet} {line.selection}"
            intervals[label] = {
                "house_edge": float(edge),
                "ci95": [-hi, -lo],
                "samples": line.count,
            }
            note = f"95% CI {100 * -hi:.3f}%..{100 * -lo:.3f}% over {line.count} samples"
            if line.note:
                note += f"; {line.note}"
            lines.append(MathLine(line.bet, line.selection, edge, line.distribution(), note))
        details: dict[str, JSON] = {
            "simulation": {
                "rounds": rounds,
                "seed": seed,
                "decks": rules.decks,
                "procedure": rules.procedure,
                "strategy": "basic strategy without a hole-card peek (blackjack/simulate.py)",
                "shoe": sim.shoe_note,
            },
            "intervals": intervals,
        }
        return MathReport(self.game_id, self.rules_json(rules), "simulation", tuple(lines), details)


GAME = Blackjack()
