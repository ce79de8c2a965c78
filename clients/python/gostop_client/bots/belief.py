"""What the opponents' plays say about their hidden hands: a posterior to sample from.

A uniform determinization treats every unknown card as equally likely to sit in an
opponent's hand. But an opponent's plays are public (``View.plays``: who played what, on
which floor), and most players are predictable: a player who lays a card down while holding
a card that captures a 광 on the floor is rare. ``Belief`` models every opponent as the
``greedy`` heuristic with noise —

    P(play p | hand H) = (1 − noise) · exp(β·v(p)) / Σ_{c ∈ H} exp(β·v(c)) + noise / |H|

where v is greedy's value of playing each card on the floor the play was decided on
(``greedy.Situation.play_value`` on a view rebuilt from the ``PlayRecord``), and H is the
hand the opponent held then: its hidden cards now, its revealed cards and the cards it
played since. The noise term keeps the model honest against players that are not greedy
(a human, another search bot): no hand is ever ruled out.

The posterior over the opponents' hidden cards (the product of these likelihoods over
their past plays, times the uniform prior) is sampled by a Metropolis chain whose moves
swap one hidden card of an opponent with another unknown card (another opponent's, or the
stock's). The samples fix the opponents' hands; ``engine.determinize.determinize`` draws
the stock order around them, so every sample is consistent with the view.

Approximations (the model is a likelihood, not a replay): the piles at the time of a play
are the first cards of today's piles (a later 피 steal shifts them), 뻑 stacks are taken
from the floor, 폭탄 and 빈 내기 plays are not scored, and bonus-card replacements drawn
after a play count as held before it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from engine import PlayCard, View, action_from_id
from engine.cards import MONTH
from engine.determinize import unknown_cards
from engine.state import Phase
from engine.views import SeatView, Stack

from .greedy import Situation

_SIBLING: Final = tuple(
    next((d for d in range(48) if MONTH[d] == MONTH[c] and d != c), c) if c < 48 else c for c in range(51)
)
"""For each card, another card of its month (to ask greedy about a hand holding a pair)."""


class _Observation:
    """One opponent play, with greedy's weight exp(β·(v − max)) of each card it could have played."""

    __slots__ = ("later", "played", "weight", "weight_pair")

    def __init__(self, played: int, later: frozenset[int], weight: dict[int, float], weight_pair: dict[int, float]):
        self.played = played
        self.later = later
        """Cards this seat played from its hand at this play and after (held then, not now)."""
        self.weight = weight
        self.weight_pair = weight_pair
        """The weight when the hand holds another card of the month (greedy's pair set-up)."""

    def log_likelihood(self, hand: Sequence[int], noise: float) -> float:
        months = [0] * 13
        for c in hand:
            months[MONTH[c]] += 1
        for c in self.later:
            months[MONTH[c]] += 1
        total = 0.0
        mine = 0.0
        for group in (hand, self.later):
            for c in group:
                w = self.weight_pair[c] if months[MONTH[c]] >= 2 and MONTH[c] else self.weight[c]
                total += w
                if c == self.played:
                    mine = w
        size = len(hand) + len(self.later)
        return math.log((1.0 - noise) * mine / total + noise / size)


class Belief:
    """Samples of the opponents' hidden hands, weighted by their past plays (see the module).

    ``beta``: how sharply the model expects greedy's best play (0: uniform, no inference).
    ``noise``: the share of plays explained as random. ``samples``: hands kept; ``burn`` and
    ``thin``: Metropolis steps before the first sample and between samples.
    """

    def __init__(
        self,
        view: View,
        rng: random.Random,
        *,
        beta: float = 3.0,
        noise: float = 0.05,
        samples: int = 32,
        burn: int = 150,
        thin: int = 8,
    ) -> None:
        self.view = view
        self.beta = beta
        self.noise = noise
        self.pool = unknown_cards(view)
        me = view.viewer
        self.missing = {
            s.seat: s.hand_size - len(s.revealed)
            for s in view.seats
            if s.seat != me and s.active and s.hand_size - len(s.revealed) > 0
        }
        self.observations = {seat: self._observations(seat) for seat in self.missing}
        self.informed = any(self.observations.values()) and beta > 0.0
        self.samples: list[dict[int, tuple[int, ...]]] = []
        self.accepted = 0
        if self.informed:
            self._run(rng, samples, burn, thin)

    # -- the likelihood ------------------------------------------------------

    def _observations(self, seat: int) -> list[_Observation]:
        v = self.view
        plays = v.plays
        out = []
        revealed = v.seats[seat].revealed
        for t, rec in enumerate(plays):
            if rec.seat != seat or rec.action >= 128:
                continue
            action = action_from_id(rec.action)
            assert isinstance(action, PlayCard)
            later = frozenset(
                r.action % 64 for r in plays[t:] if r.seat == seat and r.action < 128
            )
            then = self._view_at(t)
            sit = Situation(then)
            candidates = set(self.pool) | set(revealed) | later
            values: dict[int, float] = {}
            values_pair: dict[int, float] = {}
            for c in candidates:
                sit.hand = ()
                values[c] = sit.play_value(c, False)
                sit.hand = (c, _SIBLING[c])
                values_pair[c] = sit.play_value(c, False)
            top = max(max(values.values()), max(values_pair.values()))
            beta = self.beta
            weight = {c: math.exp(beta * (x - top)) for c, x in values.items()}
            weight_pair = {c: math.exp(beta * (x - top)) for c, x in values_pair.items()}
            out.append(_Observation(action.card, later, weight, weight_pair))
        return out

    def _view_at(self, t: int) -> View:
        """The view the player of play ``t`` had when it decided (public part, approximately)."""
        v = self.view
        rec = v.plays[t]
        seat = rec.seat
        played_since = [0] * len(v.seats)
        for r in v.plays[t:]:
            if r.action < 128:
                played_since[r.seat] += 1
        seats: list[SeatView] = []
        for s in v.seats:
            size = s.hand_size + played_since[s.seat]
            pile = s.captured[: rec.piles[s.seat]] if s.seat < len(rec.piles) else s.captured
            seats.append(replace(s, captured=pile, hand=(rec.action % 64,) if s.seat == seat else s.revealed,
                                 hand_size=size))
        by_month: dict[int, int] = {}
        for c in rec.floor:
            by_month[MONTH[c]] = by_month.get(MONTH[c], 0) + 1
        makers = {st.month: st.maker for st in v.stacks}
        stacks = tuple(Stack(m, makers.get(m, -1)) for m, k in sorted(by_month.items()) if k >= 3 and m)
        return replace(
            v, viewer=seat, phase=Phase.PLAY, to_move=seat, floor=rec.floor, stacks=stacks, seats=tuple(seats),
            pending=None, legal_actions=(), turn=None, plays=v.plays[:t],
        )

    def log_likelihood(self, seat: int, hidden: Sequence[int]) -> float:
        """log P(the seat's observed plays | its hidden cards are ``hidden``)."""
        hand = list(hidden) + list(self.view.seats[seat].revealed)
        return sum(ob.log_likelihood(hand, self.noise) for ob in self.observations[seat])

    # -- the chain -----------------------------------------------------------

    def _run(self, rng: random.Random, samples: int, burn: int, thin: int) -> None:
        pool = list(self.pool)
        rng.shuffle(pool)
        seats = sorted(self.missing)
        hands: dict[int, list[int]] = {}
        for s in seats:
            hands[s] = pool[: self.missing[s]]
            del pool[: self.missing[s]]
        rest = pool
        ll = {s: self.log_likelihood(s, hands[s]) for s in seats}
        slots = [(s, i) for s in seats for i in range(self.missing[s])]
        step = 0
        total = burn + samples * thin
        while step < total:
            step += 1
            s, i = slots[int(rng.random() * len(slots))]
            # Swap with any other unknown card: another opponent's or the stock's.
            others = len(rest) + sum(self.missing[o] for o in seats if o != s)
            if others == 0:
                break
            j = int(rng.random() * others)
            if j < len(rest):
                old, new = hands[s][i], rest[j]
                hands[s][i] = new
                new_ll = self.log_likelihood(s, hands[s])
                delta = new_ll - ll[s]
                if delta >= 0 or rng.random() < math.exp(delta):
                    rest[j] = old
                    ll[s] = new_ll
                    self.accepted += 1
                else:
                    hands[s][i] = old
            else:
                j -= len(rest)
                for o in seats:
                    if o == s:
                        continue
                    if j < self.missing[o]:
                        break
                    j -= self.missing[o]
                hands[s][i], hands[o][j] = hands[o][j], hands[s][i]
                new_s, new_o = self.log_likelihood(s, hands[s]), self.log_likelihood(o, hands[o])
                delta = new_s + new_o - ll[s] - ll[o]
                if delta >= 0 or rng.random() < math.exp(delta):
                    ll[s], ll[o] = new_s, new_o
                    self.accepted += 1
                else:
                    hands[s][i], hands[o][j] = hands[o][j], hands[s][i]
            if step > burn and (step - burn) % thin == 0:
                self.samples.append({s: tuple(sorted(hands[s])) for s in seats})

    def sample(self, k: int) -> dict[int, tuple[int, ...]] | None:
        """The ``k``-th kept sample (cycling), or None when there is nothing to infer."""
        if not self.samples:
            return None
        return self.samples[k % len(self.samples)]


__all__ = ["Belief"]
