"""What the opponents' plays say about their hidden hands: a posterior to sample from.

``Belief`` models every opponent as ``greedy`` with noise, weighs its possible hands by the public
plays it made (``View.plays``) and samples them with a Metropolis chain; the stock order is drawn
around them, so every sample is consistent with the view. The model and its approximations:
docs/bot-strength.md ("How the bots decide").
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from gostop.engine import View
from gostop.engine.cards import GUKJIN, MONTH
from gostop.engine.determinize import unknown_cards
from gostop.engine.state import Phase, PlayRecord
from gostop.engine.views import SeatView, Stack

from .greedy import SHAKE_BONUS, Situation

BETA: Final = 30.0
"""Default sharpness of the opponent model (greedy is deterministic: a sharp model fits it)."""
NOISE: Final = 0.01
"""Default share of plays the model explains as random."""

_SIBLING: Final = tuple(
    next((d for d in range(48) if MONTH[d] == MONTH[c] and d != c), c) if c < 48 else c for c in range(51)
)
"""For each card, another card of its month (to ask greedy about a hand holding a pair)."""


def _from_hand(record: PlayRecord) -> tuple[int, ...]:
    """The hand cards a play used: the card played, or a 폭탄's three (the month's cards that
    were not on the floor); none for a 빈 내기."""
    if record.action < 128:
        return (record.action % 64,)
    if 128 < record.action <= 140:
        month = record.action - 128
        return tuple(c for c in range(4 * month - 4, 4 * month) if c not in record.floor)
    return ()


_TIE_WEIGHT: Final = math.exp(-5.0)
"""Weight kept by a play that ties greedy's best value but has a higher action id (greedy
breaks ties by the lower id, so such a play is all but ruled out)."""


class _Observation:
    """One opponent play, and greedy's value of every play it could have made instead.

    Greedy's value of playing card c depends on the rest of the hand only through k, the
    number of cards of c's month in the hand (c included): k changes the unseen cards of the
    month greedy counts (its own cards are not unseen to it; the chance of a 뻑 or of feeding
    the next player), its pair set-up term (k ≥ 2), and the 흔들기 (k = 3, no card of the
    month on the floor) or 폭탄 (k = 3, one on the floor) it may declare. So ``value[c][k-1]``
    is exact for every hand, and a hand's likelihood needs no call to greedy.
    """

    __slots__ = ("bomb", "capture", "later", "played", "played_id", "shake", "value")

    def __init__(
        self,
        played_id: int,
        later: frozenset[int],
        value: dict[int, tuple[float, float, float, float]],
        shake: Sequence[bool],
        bomb: Sequence[float | None],
        capture: dict[int, float],
    ) -> None:
        self.played_id = played_id
        self.played = played_id % 64
        self.later = later
        """Cards this seat held then and played since (this play included), or bombed."""
        self.value = value
        self.shake = shake
        """Per month: a hand holding three of it may shake (no card of the month on the floor)."""
        self.bomb = bomb
        """Per month: a hand holding three of it may bomb; the bomb's value without its hand cards."""
        self.capture = capture
        """Greedy's capture value of each card (the hand cards of a bomb add theirs)."""

    def log_likelihood(self, hand: Sequence[int], beta: float, noise: float) -> float:
        months = [0] * 13
        for c in hand:
            months[MONTH[c]] += 1
        for c in self.later:
            months[MONTH[c]] += 1
        options: list[tuple[float, int]] = []
        mine = -math.inf
        for group in (hand, self.later):
            for c in group:
                m = MONTH[c]
                k = months[m] if m else 1
                v = self.value[c][k - 1]
                ident = c
                if k == 3 and self.shake[m]:
                    v += SHAKE_BONUS  # the shaken play beats the plain one
                    ident += 64
                options.append((v, ident))
                if ident == self.played_id:
                    mine = v
        for m in range(1, 13):
            base = self.bomb[m]
            if months[m] == 3 and base is not None:
                held = sum(self.capture[c] for group in (hand, self.later) for c in group if MONTH[c] == m)
                options.append((base + held, 128 + m))
        if mine == -math.inf:  # the play was not available to this hand
            return math.log(noise / len(options))
        top = max(v for v, _ in options)
        first = min(j for v, j in options if v >= top - 1e-9)  # greedy's choice among equals
        total = 0.0
        mine_w = 0.0
        for v, ident in options:
            w = math.exp(beta * (v - top))
            if v >= top - 1e-9 and ident != first:
                w *= _TIE_WEIGHT
            if ident == self.played_id:
                mine_w = w
            total += w
        return math.log((1.0 - noise) * mine_w / total + noise / len(options))


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
        beta: float = BETA,
        noise: float = NOISE,
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
        hidden = v.seats[seat].hand_size - len(revealed)
        for t, rec in enumerate(plays):
            if rec.seat != seat or rec.action >= 128:
                continue
            later = {c for r in plays[t:] if r.seat == seat for c in _from_hand(r)}
            then = self._view_at(t)
            sit = Situation(then)
            # The rebuilt view hides every card of the hand but the played one; greedy saw them all.
            base = list(sit.unseen_month)
            sit.unseen_total = max(1, sit.unseen_total - (hidden + len(revealed) + len(later) - 1))
            played_month = MONTH[rec.action % 64]
            candidates = set(self.pool) | set(revealed) | later
            values: dict[int, tuple[float, float, float, float]] = {}
            for c in candidates:
                m = MONTH[c]
                row: list[float] = []
                for k in range(1, 5 if m else 2):
                    sit.unseen_month[m] = max(0, base[m] - (k - (m == played_month)))
                    sit.hand = (c, _SIBLING[c]) if k >= 2 else (c,)
                    row.append(sit.play_value(c, False))
                sit.unseen_month[m] = base[m]
                row += [row[-1]] * (4 - len(row))
                values[c] = (row[0], row[1], row[2], row[3])
            on_floor = [0] * 13
            for c in rec.floor:
                on_floor[MONTH[c]] += 1
            rules = sit.rules
            shake = [bool(rules.shake_bomb) and m > 0 and on_floor[m] == 0 for m in range(13)]
            bomb: list[float | None] = [None] * 13
            if rules.shake_bomb:
                sit.hand = ()  # a bomb's value without its hand cards (each hand adds its own)
                for c in rec.floor:
                    m = MONTH[c]
                    if m and on_floor[m] == 1:
                        bomb[m] = sit.bomb_value(m)
            capture = {c: sit.capture_value(c) for c in candidates}
            out.append(_Observation(rec.action, frozenset(later), values, shake, bomb, capture))
        return out

    def _view_at(self, t: int) -> View:
        """The view the player of play ``t`` had when it decided (public part, approximately).

        Its own hand is only the played card (the rest is what the likelihood varies; nothing
        of it counts as revealed); another seat's revealed cards are those of the months it
        had shaken by then.
        """
        v = self.view
        rec = v.plays[t]
        seat = rec.seat
        since: list[set[int]] = [set() for _ in v.seats]
        for r in v.plays[t:]:
            since[r.seat].update(_from_hand(r))
        seats: list[SeatView] = []
        for s in v.seats:
            size = s.hand_size + len(since[s.seat])
            pile = s.captured[: rec.piles[s.seat]] if s.seat < len(rec.piles) else s.captured
            if s.seat == seat:
                hand: tuple[int, ...] = (rec.action % 64,)
                shown: tuple[int, ...] = ()
            else:
                shaken = {MONTH[r.action % 64] for r in v.plays[:t] if r.seat == s.seat and 64 <= r.action < 128}
                shown = hand = tuple(sorted(c for c in set(s.revealed) | since[s.seat] if MONTH[c] in shaken))
            seats.append(replace(s, captured=pile, hand=hand, revealed=shown, hand_size=size))
        by_month: dict[int, int] = {}
        for c in rec.floor:
            by_month[MONTH[c]] = by_month.get(MONTH[c], 0) + 1
        makers = {st.month: st.maker for st in v.stacks}
        stacks = tuple(Stack(m, makers.get(m, -1)) for m, k in sorted(by_month.items()) if k >= 3 and m)
        # 국진 captured since was not converted yet: greedy valued it as a 열끗.
        gukjin = v.gukjin if any(GUKJIN in s.captured for s in seats) else "open"
        return replace(
            v, viewer=seat, phase=Phase.PLAY, to_move=seat, floor=rec.floor, stacks=stacks, seats=tuple(seats),
            pending=None, legal_actions=(), turn=None, plays=v.plays[:t], gukjin=gukjin,
        )

    def log_likelihood(self, seat: int, hidden: Sequence[int]) -> float:
        """log P(the seat's observed plays | its hidden cards are ``hidden``)."""
        hand = list(hidden) + list(self.view.seats[seat].revealed)
        beta, noise = self.beta, self.noise
        return sum(ob.log_likelihood(hand, beta, noise) for ob in self.observations[seat])

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
