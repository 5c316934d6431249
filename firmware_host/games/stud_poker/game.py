"""The stud poker game: bet types (ante, raise, jackpot), the outcome (the dealt
hands, :mod:`.deal`), settlement of art. 6 and 9 with the progressive jackpot of art.
10 and 11 (:mod:`firmware_host.games.jackpot`, reported in
``Settlement.extras["jackpot"]``), and the house edge: a simulation (:mod:`.simulate`)
and an exact jackpot line (hand counts)."""

from __future__ import annotations

import math as _math
from collections.abc import Mapping, Sequence
from dataclasses import replace
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
    require,
    unit_problems,
)
from ..cards import cards_str, deck, parse_cards
from ..describe import Demo, DemoRound, Display, Rng
from ..edges import EdgeBasis
from ..errors import BetError, BetNotOffered, OutcomeError, RulesError
from ..jackpot import (
    JACKPOT_HANDS,
    JackpotBet,
    JackpotParams,
    JackpotRound,
    JackpotState,
    fixed_return,
    initial_state,
    prize_for,
    round_bets,
    settle_round,
)
from ..money import Amounts, MoneyRules, Verdict, settle_amounts
from .deal import ACTIONS, SeatHand, StudDeal, StudOutcome
from .hands import category, category_name, hand_counts, hand_value, qualifies
from .rules import CAPPED, SEATS, StudPokerRules
from .simulate import DEFAULT_ROUNDS, DEFAULT_SEED, STRATEGY, simulate
from .theory import ante_edge, jackpot_edge

# -- the game --------------------------------------------------------------------------

_BET_TYPES = (
    BetType("ante", "Aposta inicial (ante)", "61/2004 art. 5 1), art. 6 2), art. 9", "1:1"),
    BetType("raise", "Aposta adicional (raise, twice the ante)", "61/2004 art. 5 3), art. 6 5)-6), art. 9 5)",
            "1:1 to 100:1 by the player's hand"),
    BetType("jackpot", "Jackpot progressivo", "61/2004 art. 5 2), art. 6 3), art. 10",
            "fixed sums or a share of the pool"),
)  # fmt: skip

_SEAT_DERIVED = frozenset({"hand", "beats_dealer"})
_TOP_DERIVED = frozenset({"dealer_hand", "dealer_qualifies", "up_card"})


# -- what people see, and how a demonstration plays it ------------------------------------
def demo_seats(rules: StudPokerRules, rng: Rng, rnd: DemoRound) -> list[dict[str, JSON]]:
    """Three players take seats: an ante each, most of them the jackpot bet too."""
    bets: list[dict[str, JSON]] = []
    for s in rng.sample(range(1, 8), 3):
        stake = 10000 * rng.randint(1, 4)
        bets.append({"bet_id": f"{rnd.tag}a{s}", "seat": s, "bet_type": "ante", "stake": stake})
        if rng.random() < 0.6:
            bets.append(
                {"bet_id": f"{rnd.tag}j{s}", "seat": s, "bet_type": "jackpot", "stake": 2000}
            )
    return bets


def demo_decide(rules: StudPokerRules, rng: Rng, exp: Expect, deal: Deal) -> dict[str, JSON]:
    """A player raises (twice the ante) most of the time, else folds."""
    return {"seat": exp.seat, "action": "raise" if rng.random() < 0.7 else "fold"}


def _words(o: Any) -> str:
    seats = "; ".join(
        f"seat {k}: {' '.join(v['cards'])} {v['hand']} {v['action']}" for k, v in o["seats"].items()
    )
    q = "qualifies" if o["dealer_qualifies"] else "does not qualify"
    return f"dealer {' '.join(o['dealer'])} {o['dealer_hand']} ({q}); {seats}"


#: The demo's table: the progressive jackpot offered (and the limits its bets need).
DEMO_TABLE: dict[str, Any] = {
    "limits": {
        "min_stake": 10000,
        "max_stake": 4000000,  # no bet type's max above the table's (issue 12)
        "bet_types": {
            "ante": {"max": 2000000},
            "raise": {"min": 20000, "max": 4000000},
            "jackpot": {"min": 2000, "max": 2000},
        },
    },
    "pay_table": {
        "stud-poker": {
            "jackpot_offered": True,
            "jackpot_stake": 2000,
            "jackpot_contribution_rate": "7/10",
            "jackpot_seed": 20000000,
        }
    },
}


class StudPoker(Game[StudPokerRules, StudOutcome]):
    game_id = "stud-poker"
    math_options = frozenset({"rounds", "seed"})
    result_device = "shoe"
    device_kinds = frozenset({"shoe", "board", "sign"})
    title = "Stud poker"
    regulation = "61/2004"
    rules_type = StudPokerRules
    display = Display(words=_words)
    demo = Demo(table=DEMO_TABLE, seated=demo_seats, decide=demo_decide)

    edge_basis: ClassVar[EdgeBasis] = "strategy"

    def bet_edge(
        self, rules: StudPokerRules, bet: Bet, money: MoneyRules, *, jackpot_pool: int | None = None
    ) -> Fraction | None:
        """The ante's under the published strategy (:mod:`.theory`), the raise's in the
        ante's (None), the jackpot bet's exact at the pool the round was played with
        (``jackpot_pool``; the seed if None)."""
        if bet.bet_type == "ante":
            return ante_edge(rules.royal_flush)
        if bet.bet_type == "jackpot":
            params = rules.jackpot_params()
            total = _math.comb(52, 5)
            probs = {h: Fraction(n, total) for h, n in hand_counts().items()}
            return jackpot_edge(params, probs, params.seed if jackpot_pool is None else jackpot_pool)
        return None

    def bet_types(self, rules: StudPokerRules) -> Sequence[BetType]:
        return _BET_TYPES if rules.jackpot_offered else _BET_TYPES[:2]

    def money_problems(self, rules: StudPokerRules, money: MoneyRules) -> list[str]:
        """The jackpot bet's fixed stake and the fixed sums announced on the table
        (61/2004 art. 10 1)-3)) and the house maximum (art. 9 5) (7)-(9)) must be
        whole numbers of the payable unit: the table takes and pays them as they are."""
        path = "pay_table.stud-poker."
        amounts = [(path + "max_payout", rules.max_payout)]
        if rules.jackpot_offered:
            amounts.append((path + "jackpot_stake", rules.jackpot_stake))
            amounts += [
                (f"{path}jackpot_{h}_fixed", rules.jackpot_params().fixed(h)) for h in JACKPOT_HANDS
            ]
        return unit_problems(amounts, money, "the table could not take or pay it exactly")

    def fresh_deck_each_round(self, rules: StudPokerRules) -> bool:
        """One 52-card deck (61/2004 art. 1 1)), shuffled for each game (art. 3): seven
        places and the croupier take up to 40 of its cards."""
        return True

    # -- the deal
    def start_deal(
        self, rules: StudPokerRules, bets: Sequence[Bet], setup: Mapping[str, JSON] | None = None
    ) -> StudDeal:
        """Every place with a bet is dealt (art. 6)."""
        return StudDeal.start(rules, sorted({b.seat for b in bets}))

    def decide(self, rules: StudPokerRules, deal: Any, decision: Mapping[str, JSON]) -> StudDeal:
        """A place raises or folds (art. 6 5)-7))."""
        new: StudDeal = deal.decide(decision.get("seat"), decision.get("action"))
        return new

    def decision_bets(
        self, rules: StudPokerRules, deal_before: Any, seat: int, action: str, bets: Sequence[Bet]
    ) -> list[dict[str, JSON]]:
        """A raise is a bet of exactly twice the place's ante (art. 6 6))."""
        if action != "raise":
            return []
        ante = next(b for b in bets if b.seat == seat and b.bet_type == "ante")
        return [
            {
                "bet_id": f"{ante.bet_id}.raise",
                "seat": seat,
                "bet_type": "raise",
                "stake": 2 * ante.stake,
            }
        ]

    def jackpot_params(self, rules: StudPokerRules) -> JackpotParams | None:
        """The progressive jackpot, if the table offers it (art. 10)."""
        return rules.jackpot_params() if rules.jackpot_offered else None

    def canonical_selection(self, rules: StudPokerRules, bet_type: str, selection: JSON) -> JSON:
        require(
            selection is None,
            f"{bet_type}: takes no selection (the seat is the bet's 'seat'), got {selection!r}",
        )
        return None

    # -- outcomes
    def parse_outcome(self, rules: StudPokerRules, raw: JSON) -> StudOutcome:
        """``{"dealer": [5 cards], "seats": {"1": {"cards": [5 cards], "action":
        "raise"|"fold"}, ...}, "jackpot": {"pool": N, ...}?}``; all cards different."""
        if not isinstance(raw, Mapping) or "dealer" not in raw or "seats" not in raw:
            raise OutcomeError(
                'stud poker outcome is {"dealer": [5 cards], "seats": {"1": {"cards": [...], '
                f'"action": "raise"}}}}, got {raw!r}'
            )
        unknown = set(raw) - {"dealer", "seats", "jackpot"} - _TOP_DERIVED
        if unknown:
            raise OutcomeError(
                f"unknown key(s) in stud poker outcome: {', '.join(sorted(unknown))}"
            )
        dealer = parse_cards(raw["dealer"])
        seats_raw = raw["seats"]
        if not isinstance(seats_raw, Mapping) or not seats_raw:
            raise OutcomeError(f"seats: a table of place -> hand, got {seats_raw!r}")
        hands = []
        for key, entry in seats_raw.items():
            try:
                seat = int(key)
            except (TypeError, ValueError):
                raise OutcomeError(f"seats: {key!r} is not a place number 1..7") from None
            if seat not in SEATS:
                raise OutcomeError(f"seats: place {seat} is not 1..7 (61/2004 art. 2 1))")
            if not isinstance(entry, Mapping) or not {"cards", "action"} <= set(entry):
                raise OutcomeError(f'seats.{key}: {{"cards": [...], "action": "raise"|"fold"}}')
            extra = set(entry) - {"cards", "action"} - _SEAT_DERIVED
            if extra:
                raise OutcomeError(f"seats.{key}: unknown key(s) {', '.join(sorted(extra))}")
            if entry["action"] not in ACTIONS:
                raise OutcomeError(f"seats.{key}.action: raise or fold, got {entry['action']!r}")
            hands.append(SeatHand(seat, parse_cards(entry["cards"]), entry["action"]))
        hands.sort(key=lambda h: h.seat)
        every = [*dealer, *(c for h in hands for c in h.cards)]
        if len(dealer) != 5 or any(len(h.cards) != 5 for h in hands):
            raise OutcomeError("every hand, the croupier's too, has five cards (61/2004 art. 7)")
        if len(set(every)) != len(every):
            dup = sorted({str(c) for c in every if every.count(c) > 1})
            raise OutcomeError(
                f"cards dealt twice from one deck (61/2004 art. 1 1)): {dup}",
                code="OUTCOME_DUPLICATE_CARD",
            )
        state = None
        if raw.get("jackpot") is not None:
            state = JackpotState.from_json(raw["jackpot"], rules.jackpot_params())
        return StudOutcome(dealer, tuple(hands), state)

    def outcome_json(self, outcome: StudOutcome) -> JSON:
        dv = hand_value(outcome.dealer)
        out: dict[str, JSON] = {
            "dealer": cards_str(outcome.dealer),
            "dealer_hand": category_name(dv),
            "dealer_qualifies": qualifies(dv),
            "up_card": str(outcome.dealer[4]),
            "seats": {
                str(h.seat): {
                    "cards": cards_str(h.cards),
                    "action": h.action,
                    "hand": category_name(hand_value(h.cards)),
                    "beats_dealer": hand_value(h.cards) > dv,
                }
                for h in outcome.hands
            },
        }
        if outcome.jackpot is not None:
            out["jackpot"] = outcome.jackpot.to_json()
        return out

    def sample_outcomes(self, rules: StudPokerRules) -> list[StudOutcome]:
        """Games dealt from one deck in its fixed order, rotated (for contract tests)."""
        cards, out = deck(), []
        for k in range(8):
            c = cards[7 * k :] + cards[: 7 * k]
            hands = (SeatHand(1, c[5:10], "raise"), SeatHand(4, c[10:15], "fold"))
            out.append(StudOutcome(c[0:5], hands))
        return out

    # -- settlement
    def verdict(self, rules: StudPokerRules, outcome: StudOutcome, bet: Bet) -> Verdict:
        """What art. 6 7) and art. 9 say of an ``ante`` or ``raise`` bet (jackpot bets
        are settled by :mod:`.jackpot`, see :meth:`settle_with_jackpot`)."""
        if bet.bet_type not in ("ante", "raise"):
            raise BetError(f"{bet.bet_type} is not settled by the hand", code="BET_UNKNOWN_TYPE")
        dv = hand_value(outcome.dealer)
        h = next(x for x in outcome.hands if x.seat == bet.seat)
        pv = hand_value(h.cards)
        cat = category(pv)
        if h.action == "fold":
            return Verdict.lose("fold: the hand and the ante are lost (61/2004 art. 6 7))")
        if not qualifies(dv):
            if bet.bet_type == "ante":
                return Verdict.win(
                    1, reason="croupier below ace-king: ante 1:1 (61/2004 art. 9 2))"
                )
            return Verdict.push("croupier below ace-king: raise returned (61/2004 art. 9 2))")
        if dv > pv:
            return Verdict.lose(
                f"croupier's {category_name(dv)} beats the player's "
                f"{category_name(pv)} (61/2004 art. 8, art. 9 4))"
            )
        if bet.bet_type == "ante":
            return Verdict.win(1, reason="player beats the croupier: ante 1:1 (61/2004 art. 9 5))")
        odds = Fraction(rules.raise_odds(cat))
        reason = f"{category_name(pv)} pays {odds}:1 on the raise (61/2004 art. 9 5))"
        if cat in CAPPED and rules.max_payout and bet.stake * odds > rules.max_payout:
            odds = Fraction(rules.max_payout, bet.stake)
            reason += f", limited to the house maximum of {rules.max_payout} per game"
        return Verdict.win(odds, reason=reason)

    def settle(
        self, rules: StudPokerRules, outcome: StudOutcome, bets: Sequence[Bet], money: MoneyRules
    ) -> Settlement:
        state = outcome.jackpot or initial_state(rules.jackpot_params())
        return self.settle_with_jackpot(rules, outcome, bets, money, state)[0]

    def settle_with_jackpot(
        self,
        rules: StudPokerRules,
        outcome: StudOutcome,
        bets: Sequence[Bet],
        money: MoneyRules,
        state: JackpotState,
    ) -> tuple[Settlement, JackpotState]:
        """Settle a game and run the jackpot from ``state``; returns the settlement
        (jackpot itemised in ``extras["jackpot"]``) and the state to persist."""
        _check_bets(rules, outcome, bets)
        results: list[BetResult] = []
        jackpot_bets = [b for b in bets if b.bet_type == "jackpot"]
        for bet in bets:
            if bet.bet_type != "jackpot":
                v = self.verdict(rules, outcome, bet)
                results.append(BetResult(bet, settle_amounts(bet.stake, v, money), v.reason))
        extras: dict[str, JSON] = {}
        dealt = [h.seat for h in outcome.hands]
        if jackpot_bets or state.carried:
            new = [JackpotBet(b.seat, b.stake, b.bet_id) for b in jackpot_bets]
            playing, _still = round_bets(state, new, dealt)
            eligible = {
                h.seat: category_name(hand_value(h.cards))
                for h in outcome.hands
                if h.action == "raise" or rules.jackpot_on_fold
            }
            jr = settle_round(state, playing, eligible)
            own = {b.bet_id: b for b in jackpot_bets}
            for jb in playing:
                placed = own.get(jb.bet_id) if jb in new else None
                if placed is None:  # carried from a void game (art. 11 1), 4))
                    placed = Bet(jb.bet_id, jb.seat, "jackpot", None, jb.stake)
                results.append(_jackpot_result(placed, jr))
            extras["jackpot"] = jr.to_json()
            state = jr.state
        order = {id(b): i for i, b in enumerate(bets)}
        results.sort(key=lambda r: order.get(id(r.bet), len(order)))
        settlement = Settlement(
            self.game_id,
            self.outcome_json(replace(outcome, jackpot=None)),
            tuple(results),
            Totals.of(results),
            extras,
        )
        return settlement, state

    # -- math
    def math(self, rules: StudPokerRules, **options: Any) -> MathReport:
        unknown = set(options) - {"rounds", "seed"}
        if unknown:
            raise RulesError(
                f"stud poker is dealt from one deck (61/2004 art. 1 1)) and simulated: it takes "
                f"--rounds and --seed, not {', '.join(sorted(unknown))}",
                code="MATH_OPTION",
            )
        rounds = options.get("rounds") or DEFAULT_ROUNDS
        seed = options.get("seed")
        seed = DEFAULT_SEED if seed is None else seed
        if not isinstance(rounds, int) or rounds < 2:
            raise RulesError(f"--rounds must be at least 2, got {rounds!r}", code="MATH_OPTION")
        sim = simulate(rules, rounds, seed)
        lo, hi = sim.ci95()
        dist = tuple(
            sorted(
                ((Fraction(net), Fraction(n, rounds)) for net, n in sim.counts.items()),
                reverse=True,
            )
        )
        raise_rate = Fraction(sim.raises, rounds)
        lines = [
            MathLine(
                "ante",
                None,
                -sim.mean,
                dist,
                f"simulation, per unit of ante with the raise; 95% CI {-hi:.3%} .. {-lo:.3%}",
            ),
        ]
        details: dict[str, JSON] = {
            "rounds": rounds,
            "seed": seed,
            "prng": "SplitMix64, pure (firmware_host.games.stud_poker.simulate.splitmix64)",
            "strategy": STRATEGY,
            "ci95_house_edge_per_ante": [round(-hi, 6), round(-lo, 6)],
            "raise_rate": round(float(raise_rate), 6),  # display only
            "house_edge_per_total_bet": round(float(-sim.mean / (1 + 2 * raise_rate)), 6),
            "suit_tie_break": "no ties: suits decide equal ranks (61/2004 art. 4 1), art. 8)",
            "max_payout": "not applied in the simulation (it depends on the stake)",
        }
        if rules.jackpot_offered:
            lines.append(self._jackpot_line(rules))
        return MathReport(self.game_id, self.rules_json(rules), "simulation", tuple(lines), details)

    def _jackpot_line(self, rules: StudPokerRules) -> MathLine:
        params = rules.jackpot_params()
        total = _math.comb(52, 5)
        counts = hand_counts()
        probs = {h: Fraction(n, total) for h, n in counts.items()}
        pool = params.seed
        outcomes: list[tuple[Fraction, Fraction]] = []
        for h in JACKPOT_HANDS:
            prize = prize_for(params, h, pool)
            outcomes.append((Fraction(prize - params.stake, params.stake), probs[h]))
        outcomes.append((Fraction(-1), 1 - sum(probs.values(), Fraction(0))))
        ret = fixed_return(params, probs, pool)
        edge = 1 - ret / params.stake
        slope = probs["royal_flush"] + probs["straight_flush"] / 10
        per_million = slope * 1_000_000 / params.stake
        return MathLine(
            "jackpot",
            None,
            edge,
            tuple(sorted(outcomes, reverse=True)),
            f"exact at the pool = seed ({pool}); each further 1,000,000 in the pool (above the fixed "
            f"sums) returns {per_million.numerator / per_million.denominator:.4f} more per unit "
            "of stake (display)",
        )


def _check_bets(rules: StudPokerRules, outcome: StudOutcome, bets: Sequence[Bet]) -> None:
    """Art. 6: one ante per dealt place, a raise exactly twice it iff the place
    raised, a jackpot bet only with an ante (art. 10 1))."""
    hands = {h.seat: h for h in outcome.hands}
    antes: dict[int, Bet] = {}
    raises_: dict[int, Bet] = {}
    jackpots: dict[int, Bet] = {}
    for bet in bets:
        if bet.seat not in hands:
            raise BetError(
                f"bet {bet.bet_id}: place {bet.seat} was not dealt a hand",
                code="BET_SEAT_NOT_DEALT",
            )
        book = {"ante": antes, "raise": raises_, "jackpot": jackpots}[bet.bet_type]
        if bet.seat in book:
            raise BetError(
                f"bet {bet.bet_id}: place {bet.seat} already has a {bet.bet_type} "
                "(one hand per player, 61/2004 art. 6 1))",
                code="BET_DUPLICATE",
            )
        book[bet.seat] = bet
    for seat, h in hands.items():
        ante = antes.get(seat)
        if ante is None:
            raise BetError(
                f"place {seat} was dealt without an ante (61/2004 art. 6 2), art. 11 3))",
                code="ANTE_REQUIRED",
            )
        r = raises_.get(seat)
        if h.action == "raise":
            if r is None:
                raise BetError(f"place {seat} raised but has no raise bet", code="RAISE_MISSING")
            if r.stake != 2 * ante.stake:
                raise BetError(
                    f"place {seat}: the raise must be exactly twice the ante "
                    f"({2 * ante.stake}), got {r.stake} (61/2004 art. 6 6))",
                    code="RAISE_NOT_TWICE_ANTE",
                )
        elif r is not None:
            raise BetError(
                f"place {seat} folded but has a raise bet (61/2004 art. 6 7))",
                code="RAISE_AFTER_FOLD",
            )
    if jackpots and not rules.jackpot_offered:
        raise BetNotOffered("this table does not run the progressive jackpot")


def _jackpot_result(bet: Bet, jr: JackpotRound) -> BetResult:
    """A jackpot bet is collected; a prize is what the player receives for it
    (``payout = prize - stake`` on top of the stake handed back, net the same)."""
    prize = sum(p.prize for p in jr.payments if p.seat == bet.seat)
    if prize:
        hand = next(p.hand for p in jr.payments if p.seat == bet.seat)
        a = Amounts("win", prize - bet.stake, 0, prize - bet.stake, Fraction(0))
        return BetResult(
            bet, a, f"jackpot: {hand.replace('_', ' ')} receives {prize} (61/2004 art. 10)"
        )
    return BetResult(
        bet,
        Amounts("lose", 0, 0, -bet.stake, Fraction(0)),
        "no jackpot hand; the stake feeds the pool (61/2004 art. 10)",
    )


GAME = StudPoker()
