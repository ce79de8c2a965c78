"""A one-ply heuristic player: every legal action gets a value, the highest wins.

``GreedyBot`` reads only its seat's view and is deterministic (equal values go to the lower action
id). A value adds what the cards taken are worth to the seat, what taking them denies the
opponents and the risk of feeding them; the weights are the module's constants, in capitals.
The terms are explained in docs/bot-strength.md ("How the bots decide").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from gostop.engine import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    DeclineGwangSale,
    FlipOnly,
    Go,
    JoinRound,
    KeepGukjin,
    PlayCard,
    SellGwang,
    SitOut,
    Stop,
    View,
    action_id,
    score,
)
from gostop.engine.cards import CHEONGDAN, CHODAN, GODORI, GUKJIN, HONGDAN, KIND, MONTH, PI_VALUE, Kind
from gostop.engine.determinize import unknown_cards
from gostop.engine.state import Phase

IMMEDIATE: Final = 1.0
KIND_BASE: Final = {Kind.GWANG: 1.0, Kind.YEOL: 0.5, Kind.TTI: 0.5, Kind.PI: 0.35}
GWANG_STEP: Final = 0.6
COUNT_STEP: Final = 0.15
PI_STEP: Final = 0.05
SET_PROGRESS: Final = (0.2, 0.45)
GWANG_BAK: Final = 0.5
PI_BAK: Final = 0.5
DENY: Final = 0.6
THREAT_ONE: Final = 0.2
THREAT_GWANG: Final = 2.5
CAPTURE_BONUS: Final = 0.5
STEAL: Final = 1.0
LAY_LOSS: Final = 0.5
PAIR_SETUP: Final = 0.4
SHAKE_BONUS: Final = 0.8
BOMB_BONUS: Final = 2.0
FLIP_ONLY: Final = 0.1
GO_MIN_TURNS: Final = 3
GO_MAX: Final = 3
SIT_MATCH: Final = 1.0
SIT_OUT_BELOW: Final = 8.0

SETS: Final[tuple[tuple[frozenset[int], int], ...]] = (
    (GODORI, 5), (HONGDAN, 3), (CHEONGDAN, 3), (CHODAN, 3),
)
"""The named sets and their points: 고도리, 홍단, 청단, 초단."""
SETS_OF: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(i for i, (cards, _) in enumerate(SETS) if c in cards) for c in range(51)
)
"""Indexes into ``SETS`` of the sets each card belongs to."""

STATIC_VALUE: Final[tuple[float, ...]] = tuple(
    (2.0 if c == 44 else 3.0) if KIND[c] is Kind.GWANG
    else 2.5 if c in GODORI
    else 2.0 if any(c in s for s, _ in SETS)
    else 1.5 if c == GUKJIN
    else 1.2 if KIND[c] is not Kind.PI
    else float(PI_VALUE[c])
    for c in range(51)
)
"""A context-free worth of each card (used for 4-player sit-out and by fast rollouts)."""


class _Pile:
    """One seat's pile as greedy reads it."""

    __slots__ = ("cards", "converted", "gwang", "pi", "seat", "set_held", "sseul", "total", "tti", "yeol")

    def __init__(self, seat: int, cards: tuple[int, ...], converted: bool, sseul: int) -> None:
        self.seat = seat
        self.cards = cards
        self.converted = converted
        self.sseul = sseul
        s = score(cards, converted, sseul)
        self.total = s.total
        self.gwang = s.gwang_count
        self.yeol = s.yeol_count
        self.tti = s.tti_count
        self.pi = s.pi_value
        held = frozenset(cards)
        self.set_held = tuple(len(held & cs) for cs, _ in SETS)


class Situation:
    """Everything the heuristic derives from one view."""

    def __init__(self, view: View) -> None:
        rules = view.rules
        if rules is None:
            raise ValueError("the view carries no rules")
        self.view = view
        self.rules = rules
        self.me = view.viewer
        converted = view.gukjin == "converted"
        self.piles = {
            s.seat: _Pile(s.seat, s.captured, converted, s.sseul) for s in view.seats if s.active
        }
        n = len(view.seats)
        order = [(self.me + i) % n for i in range(1, n)]
        self.opps = [o for o in order if view.seats[o].active]
        unseen = unknown_cards(view)
        self.unseen_month = [0] * 13
        for c in unseen:
            self.unseen_month[MONTH[c]] += 1
        self.unseen_total = max(1, len(unseen))
        self.hidden_in_hands = sum(
            view.seats[o].hand_size - len(view.seats[o].revealed) for o in self.opps
        )
        self.revealed_months = {MONTH[c] for o in self.opps for c in view.seats[o].revealed}
        self.floor_month: list[list[int]] = [[] for _ in range(13)]
        for c in view.floor:
            self.floor_month[MONTH[c]].append(c)
        self.stack_maker = {st.month: st.maker for st in view.stacks}
        self.hand = view.seats[self.me].hand
        # A set is alive for a seat while no other pile holds one of its cards.
        self.set_owners = [
            {seat for seat, p in self.piles.items() if p.set_held[i]} for i in range(len(SETS))
        ]

    # -- card values --------------------------------------------------------

    def alive(self, set_index: int, seat: int) -> bool:
        return not (self.set_owners[set_index] - {seat})

    def gain(self, seat: int, c: int) -> float:
        """What capturing card ``c`` is worth to ``seat``."""
        p = self.piles[seat]
        kind = KIND[c]
        value = 0.0
        after = score((*p.cards, c), p.converted, p.sseul).total
        value += IMMEDIATE * (after - p.total)
        if c == GUKJIN and p.converted:
            kind = Kind.PI
        if kind is Kind.GWANG:
            value += KIND_BASE[kind] + GWANG_STEP * min(p.gwang, 2)
            if p.gwang == 0:
                value += GWANG_BAK
        elif kind is Kind.PI:
            pv = 2 if c == GUKJIN else PI_VALUE[c]
            value += pv * (KIND_BASE[kind] + PI_STEP * min(p.pi, 9))
            limit = self.rules.pibak_max_pi
            if self.rules.pibak and p.pi <= limit < p.pi + pv:
                value += PI_BAK
        else:
            count = p.yeol if kind is Kind.YEOL else p.tti
            value += KIND_BASE[kind] + COUNT_STEP * min(count, 4)
        for i in SETS_OF[c]:
            held = p.set_held[i]
            if held < 2 and self.alive(i, seat):
                value += SET_PROGRESS[held] * SETS[i][1]
        return value

    def threat(self, seat: int, c: int) -> float:
        """How much opponent ``seat`` needs card ``c`` (denial value)."""
        p = self.piles[seat]
        kind = KIND[c]
        value = 0.0
        for i in SETS_OF[c]:
            if self.alive(i, seat):
                held = p.set_held[i]
                if held == 2:
                    value += SETS[i][1]
                elif held == 1:
                    value += THREAT_ONE * SETS[i][1]
        if kind is Kind.GWANG and p.gwang >= 2:
            value += THREAT_GWANG
        elif (kind is Kind.YEOL and p.yeol >= 4 and not (c == GUKJIN and p.converted)) or (
            kind is Kind.TTI and p.tti >= 4
        ):
            value += 1.0
        elif kind is Kind.PI and p.pi >= 8:
            value += PI_VALUE[c]
        return value

    def capture_value(self, c: int) -> float:
        deny = max((self.threat(o, c) for o in self.opps), default=0.0)
        return self.gain(self.me, c) + DENY * deny

    # -- probabilities --------------------------------------------------------

    def p_flip(self, month: int) -> float:
        """Chance that the next flipped card is of ``month``."""
        return self.unseen_month[month] / self.unseen_total

    def p_opponent_holds(self, month: int) -> float:
        """Chance that some opponent holds a card of ``month``."""
        if month in self.revealed_months:
            return 1.0
        u = self.unseen_month[month]
        if u == 0 or self.hidden_in_hands == 0:
            return 0.0
        miss = 1.0
        total = self.unseen_total
        for k in range(self.hidden_in_hands):
            if total - k <= 0:
                break
            miss *= max(0.0, (total - u - k) / (total - k))
        return 1.0 - miss

    # -- actions ------------------------------------------------------------

    def play_value(self, card: int, shake: bool) -> float:
        m = MONTH[card]
        on_floor = self.floor_month[m]
        n = len(on_floor)
        mine = self.capture_value(card)
        if n == 0:
            p = self.p_opponent_holds(m)
            nxt = self.opps[0] if self.opps else self.me
            value = -p * (self.gain(nxt, card) + LAY_LOSS * mine)
            if any(MONTH[c] == m for c in self.hand if c != card):
                value += PAIR_SETUP * mine * (1.0 - p)
            value += self.p_flip(m) * (mine + STEAL)
            if shake:
                value += SHAKE_BONUS
            return value
        if n == 1:
            value = CAPTURE_BONUS + mine + self.capture_value(on_floor[0])
            return value * (1.0 - self.p_flip(m))
        if n == 2:
            values = sorted(self.capture_value(c) for c in on_floor)
            value = CAPTURE_BONUS + mine + values[1]
            return value + self.p_flip(m) * (values[0] + STEAL)
        value = CAPTURE_BONUS + mine + sum(self.capture_value(c) for c in on_floor)
        maker = self.stack_maker.get(m, -1)
        if maker >= 0:
            value += STEAL * (2 if maker == self.me else 1)
        return value

    def bomb_value(self, month: int) -> float:
        cards = [c for c in self.hand if MONTH[c] == month] + self.floor_month[month]
        return CAPTURE_BONUS + sum(self.capture_value(c) for c in cards) + STEAL + BOMB_BONUS

    def danger(self, seat: int) -> float:
        """How close opponent ``seat`` is to a stop: its score plus near-complete sets."""
        p = self.piles[seat]
        value = float(p.total)
        for i, (_, points) in enumerate(SETS):
            if p.set_held[i] == 2 and self.alive(i, seat):
                value += points
        if p.gwang == 2:
            value += 3
        if p.pi >= 8:
            value += 1
        if p.yeol == 4:
            value += 1
        if p.tti == 4:
            value += 1
        return value

    def turns_left(self) -> int:
        s = self.view.seats[self.me]
        return s.hand_size + (s.spare_flips if self.view.stock_count else 0)

    def should_go(self) -> bool:
        limit = (self.rules.go_threshold - 1) // 2
        worst = max((self.danger(o) for o in self.opps), default=0.0)
        me = self.view.seats[self.me]
        return worst <= limit and self.turns_left() >= GO_MIN_TURNS and me.gos < GO_MAX

    def should_convert(self) -> bool:
        p = self.piles[self.me]
        if p.converted:
            return True
        keep = score(p.cards, False, p.sseul).total
        conv = score(p.cards, True, p.sseul).total
        if conv != keep:
            return conv > keep
        pi_after = p.pi + 2
        pi_gap = max(0, 10 - pi_after) / 10
        yeol_gap = max(0, 5 - p.yeol) / 5
        if pi_gap < yeol_gap:
            return True
        if self.rules.pibak and p.pi <= self.rules.pibak_max_pi:
            worst = max((self.danger(o) for o in self.opps), default=0.0)
            return worst >= self.rules.go_threshold - 2
        return False

    def hand_strength(self) -> float:
        floor_months = {MONTH[c] for c in self.view.floor}
        return sum(STATIC_VALUE[c] + (SIT_MATCH if MONTH[c] in floor_months else 0.0) for c in self.hand)

    def value(self, action: Action) -> float:
        """The heuristic value of one legal action."""
        if isinstance(action, PlayCard):
            return self.play_value(action.card, action.shake)
        if isinstance(action, Bomb):
            return self.bomb_value(action.month)
        if isinstance(action, FlipOnly):
            return FLIP_ONLY
        if isinstance(action, ChooseCapture):
            return self.capture_value(action.card)
        if isinstance(action, Go | Stop):
            go = self.should_go()
            return 1.0 if isinstance(action, Go) == go else 0.0
        if isinstance(action, KeepGukjin | ConvertGukjin):
            conv = self.should_convert()
            return 1.0 if isinstance(action, ConvertGukjin) == conv else 0.0
        if isinstance(action, JoinRound | SitOut):
            sit = self.hand_strength() < SIT_OUT_BELOW
            return 1.0 if isinstance(action, SitOut) == sit else 0.0
        if isinstance(action, SellGwang):
            return 1.0
        if isinstance(action, DeclineGwangSale):
            return 0.0
        raise ValueError(f"unknown action {action!r}")  # pragma: no cover


class GreedyBot:
    """The documented one-ply heuristic of this module; deterministic given the view."""

    def __init__(self, seed: int = 0) -> None:
        self.name = "greedy"
        self.seed = seed  # unused: the bot is deterministic

    def choose(self, view: View, legal: Sequence[Action]) -> Action:
        if not legal:
            raise ValueError("no legal action to choose from")
        if len(legal) == 1:
            return legal[0]
        if view.phase is Phase.OVER:  # pragma: no cover - no legal action then
            raise ValueError("the round is over")
        sit = Situation(view)
        return max(legal, key=lambda a: (sit.value(a), -action_id(a)))
