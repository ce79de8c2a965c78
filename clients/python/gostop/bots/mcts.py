"""Information-set Monte Carlo search: determinized sampling of the bot's information set.

Every iteration samples the hidden cards consistently with the bot's view (or, with ``infer``,
from ``belief.Belief``), plays each candidate out on ``engine.Playout`` with a cheap policy (the
opponents' first replies by ``greedy``) and scores the round. ``mode="flat"`` (the default)
compares the root actions on common samples by sequential halving; ``mode="uct"`` grows one
tree. The budget per decision is the first of ``iterations``, ``millis`` and ``cpu_millis`` (the
default, ``DEFAULT_CPU_MILLIS``), or ``cancel()``. The design: docs/bot-strength.md ("How the bots
decide").
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Sequence
from typing import Final

from gostop.engine import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    JoinRound,
    PlayCard,
    Playout,
    SellGwang,
    Stop,
    View,
    cached_action_id,
)
from gostop.engine import view as engine_view
from gostop.engine.cards import CHEONGDAN, CHODAN, GODORI, HONGDAN, KIND, MONTH, PI_VALUE, Kind
from gostop.engine.determinize import determinize
from gostop.engine.state import Phase, Position, State

from .belief import BETA, NOISE, Belief
from .greedy import STATIC_VALUE, GreedyBot, Situation

DEFAULT_CPU_MILLIS: Final = 180.0
"""The default budget: CPU milliseconds per decision (the 200 ms rule of a bot, with room
for the last batch of rollouts and the caller's own work)."""

_STOP: Final = Stop()
_CONVERT: Final = ConvertGukjin()
_JOIN: Final = JoinRound()
_SELL: Final = SellGwang()


_VALUE: Final = STATIC_VALUE
_SETS: Final = (GODORI, HONGDAN, CHEONGDAN, CHODAN)
_SET_OF: Final = tuple(next((i for i, cs in enumerate(_SETS) if c in cs), -1) for c in range(51))
_SET_POINTS: Final = (5.0, 3.0, 3.0, 3.0)
_IS_GWANG: Final = tuple(KIND[c] is Kind.GWANG for c in range(51))
_PIV: Final = PI_VALUE


def rollout_action(pos: Position, legal: Sequence[Action], rng: random.Random, epsilon: float) -> Action:
    """The default policy: ε-random, else the best one-ply capture by a cheap card worth.

    A card's worth to the mover is its static worth (``greedy.STATIC_VALUE``) plus: the
    set's points when it completes an alive 고도리/단 (+1 when it is the second card), 60% of
    the set's points when it blocks an opponent holding two, +2 for a third 광 (+1.5 when an
    opponent holds two), +0.5 per 피 point from 7 피 on. A capture is worth 1 + the played
    card + the best floor card of its month (all three of a stack, +1); laying a card down
    costs half its worth (a fifth when the mover holds its month again); a 폭탄 is always
    taken; a 빈 내기 is worth 0; a little noise breaks ties. Capture choices take the better
    card. 국진 is converted, go/stop stops, 4-player seats join and sell.
    """
    n = len(legal)
    if n == 1:
        return legal[0]
    if epsilon > 0.0 and rng.random() < epsilon:
        return legal[int(rng.random() * n)]
    phase = pos.phase
    if phase is Phase.PLAY or phase is Phase.CHOOSE_HAND or phase is Phase.CHOOSE_FLIP:
        me = pos.to_move
        mine = [0, 0, 0, 0]
        theirs = [0, 0, 0, 0]
        g_me = g_them = pi_me = 0
        for s, seat in enumerate(pos.seats):
            if s == me:
                for c in seat.captured:
                    k = _SET_OF[c]
                    if k >= 0:
                        mine[k] += 1
                    elif _IS_GWANG[c]:
                        g_me += 1
                    else:
                        pi_me += _PIV[c]
            else:
                g = 0
                for c in seat.captured:
                    k = _SET_OF[c]
                    if k >= 0:
                        theirs[k] += 1
                    elif _IS_GWANG[c]:
                        g += 1
                g_them = max(g_them, g)
        worth = list(_VALUE)
        for k, cards in enumerate(_SETS):
            bonus = 0.0
            if theirs[k] == 0:
                if mine[k] == 2:
                    bonus += _SET_POINTS[k]
                elif mine[k] == 1:
                    bonus += 1.0
            if mine[k] == 0 and theirs[k] == 2:
                bonus += 0.6 * _SET_POINTS[k]
            if bonus:
                for c in cards:
                    worth[c] += bonus
        if g_me == 2 or g_them == 2:
            bonus = (2.0 if g_me == 2 else 0.0) + (1.5 if g_them == 2 else 0.0)
            for c in (0, 8, 28, 40, 44):
                worth[c] += bonus
        if phase is not Phase.PLAY:
            choice = legal[0]
            top = -1e9
            for a in legal:
                if type(a) is ChooseCapture and worth[a.card] > top:
                    top, choice = worth[a.card], a
            return choice
        pi_bonus = 0.5 if pi_me >= 7 else 0.0
        count = [0] * 13
        best = [0.0] * 13
        total = [0.0] * 13
        for c in pos.floor:
            m = MONTH[c]
            count[m] += 1
            v = worth[c] + pi_bonus * _PIV[c]
            total[m] += v
            if v > best[m]:
                best[m] = v
        held = [0] * 13
        for c in pos.seats[me].hand:
            held[MONTH[c]] += 1
        choice = legal[0]
        top = -1e9
        for a in legal:
            if type(a) is PlayCard:
                c = a.card
                m = MONTH[c]
                k = count[m]
                if k == 0:
                    v = (-0.2 if held[m] >= 2 else -0.5) * worth[c] + (0.05 if a.shake else 0.0)
                elif k == 3:
                    v = 2.0 + worth[c] + total[m]
                else:
                    v = 1.0 + worth[c] + best[m]
            elif type(a) is Bomb:
                v = 20.0
            else:
                v = 0.0
            v += rng.random() * 0.3
            if v > top:
                top, choice = v, a
        return choice
    if phase is Phase.GO_STOP:
        return _STOP
    if phase is Phase.GUKJIN:
        return _CONVERT
    if phase is Phase.SIT_OUT:
        return _JOIN
    if phase is Phase.GWANG_SALE:
        return _SELL
    return legal[0]  # pragma: no cover


class Budget:
    """When one decision's search ends: the first of its limits reached.

    ``iterations`` (rollouts), ``millis`` of wall-clock time (``time.perf_counter``) and
    ``cpu_millis`` of the calling thread's CPU time (``time.thread_time``), all counted from
    the start of the decision (the belief's set-up included). CPU time is what a free core
    gives: it does not grow when other processes share the machine, so a CPU budget keeps
    the bot's strength, and its worst decision on an idle core, the same under load.

    The search asks ``spent`` between batches of rollouts; a CPU budget also stops when the
    next batch, as long as the last one, would end past the deadline, so that a decision
    stays under its CPU budget rather than overshooting it by a batch. ``stop``, once set
    (from any thread), ends the search at the next batch whatever the limits say.
    """

    __slots__ = ("cpu_end", "cpu_last", "cpu_start", "limit", "stop", "wall_end", "wall_start")

    def __init__(self, iterations: int | None, millis: float | None, cpu_millis: float | None,
                 stop: threading.Event | None = None) -> None:
        self.limit = iterations if iterations is not None else 1 << 60
        self.stop = stop
        self.wall_start = time.perf_counter()
        self.cpu_start = self.cpu_last = time.thread_time()
        self.wall_end = math.inf if millis is None else self.wall_start + millis / 1000.0
        self.cpu_end = math.inf if cpu_millis is None else self.cpu_start + cpu_millis / 1000.0

    def spent(self, done: int) -> bool:
        """Whether the search must stop after ``done`` iterations (called once per batch)."""
        if done >= self.limit:
            return True
        if self.stop is not None and self.stop.is_set():
            return True
        if self.wall_end != math.inf and time.perf_counter() >= self.wall_end:
            return True
        if self.cpu_end == math.inf:
            return False
        now = time.thread_time()
        batch, self.cpu_last = now - self.cpu_last, now
        return now + batch >= self.cpu_end

    def projected(self, done: int) -> float:
        """The iterations the search will have run when it ends, at the rate seen so far."""
        total = float(self.limit)
        if self.wall_end != math.inf:
            now = time.perf_counter()
            rate = done / max(now - self.wall_start, 1e-9)
            total = min(total, done + rate * max(0.0, self.wall_end - now))
        if self.cpu_end != math.inf:
            now = time.thread_time()
            rate = done / max(now - self.cpu_start, 1e-9)
            total = min(total, done + rate * max(0.0, self.cpu_end - now))
        return total


class _Node:
    __slots__ = ("avail", "children", "seat", "total", "visits")

    def __init__(self, seat: int) -> None:
        self.seat = seat
        """The seat that chose the action leading here (rewards are from its side)."""
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.total = 0.0
        self.avail = 0


class MctsBot:
    """Information-set Monte Carlo search with a fast heuristic rollout (see the module).

    ``iterations`` / ``millis`` / ``cpu_millis``: budget per decision (default
    ``cpu_millis=DEFAULT_CPU_MILLIS`` when none is given); an iteration is one rollout,
    ``millis`` is wall-clock time and ``cpu_millis`` the deciding thread's CPU time.
    ``mode``: ``flat`` or ``uct``.
    ``infer``: sample the opponents' hands from ``belief.Belief`` (``beta``, ``noise``:
    its model of the opponent; ``belief_samples``: hands kept per decision). ``reply_depth``:
    opponent plays per rollout chosen by ``greedy`` (flat mode).
    ``halving``: sequential halving of the root actions (flat). ``prior_weight``: weight of
    greedy's opinion (flat). ``exploration``: UCB1 constant (uct). ``epsilon``: random-move
    share of the rollout policy. ``points_weight`` / ``points_scale``: reward = ±1 for a
    win/loss (0 for 나가리) + ``points_weight`` × clip(net points / ``points_scale``, ±1).
    Deterministic for a given ``seed`` and view with an ``iterations`` budget.
    """

    def __init__(
        self,
        iterations: int | None = None,
        millis: float | None = None,
        seed: int = 0,
        *,
        cpu_millis: float | None = None,
        exploration: float = 0.7,
        epsilon: float = 0.0,
        points_weight: float = 0.5,
        points_scale: float = 20.0,
        mode: str = "flat",
        halving: bool = True,
        prior_weight: float = 0.5,
        infer: bool = True,
        beta: float = BETA,
        noise: float = NOISE,
        belief_samples: int = 32,
        reply_depth: int = 1,
    ) -> None:
        if iterations is None and millis is None and cpu_millis is None:
            cpu_millis = DEFAULT_CPU_MILLIS
        if iterations is not None and iterations < 1:
            raise ValueError("iterations must be at least 1")
        if millis is not None and millis <= 0:
            raise ValueError("millis must be positive")
        if cpu_millis is not None and cpu_millis <= 0:
            raise ValueError("cpu_millis must be positive")
        self.name = "mcts"
        self.iterations = iterations
        self.millis = millis
        self.cpu_millis = cpu_millis
        self.seed = seed
        self.exploration = exploration
        self.epsilon = epsilon
        self.points_weight = points_weight
        self.points_scale = points_scale
        if mode not in ("flat", "uct"):
            raise ValueError(f"mode must be 'flat' or 'uct', not {mode!r}")
        self.mode = mode
        self.halving = halving
        self.prior_weight = prior_weight
        self.infer = infer
        self.beta = beta
        self.noise = noise
        self.belief_samples = belief_samples
        self.reply_depth = reply_depth
        self._greedy = GreedyBot()
        self._cancelled = threading.Event()
        self.last_iterations = 0
        """Iterations run by the latest search (0 when the decision was forced)."""
        self.last_root: dict[int, tuple[int, float]] = {}
        """Latest search: root action id → (visits, mean reward)."""

    def budget(self) -> Budget:
        """A fresh budget for one decision, its clocks started now (and ended by ``cancel``)."""
        return Budget(self.iterations, self.millis, self.cpu_millis, self._cancelled)

    def cancel(self) -> None:
        """End the running search, and any later one, at its next batch (safe from any thread):
        ``choose`` then returns at once with the best action found so far."""
        self._cancelled.set()

    def _decision_rng(self, view: View) -> random.Random:
        me = view.seats[view.viewer]
        key = hash((self.seed, view.viewer, view.steps, me.hand, view.floor, view.stock_count))
        return random.Random(key)

    def choose(self, view: View, legal: Sequence[Action]) -> Action:
        if not legal:
            raise ValueError("no legal action to choose from")
        if len(legal) == 1:
            self.last_iterations = 0
            return legal[0]
        budget = self.budget()
        rng = self._decision_rng(view)
        if self.mode == "flat":
            prior = self.prior(view, legal)
            stats = self.search_flat(view, legal, rng, prior, budget)
            best = max(
                range(len(legal)), key=lambda i: (stats[i][1], stats[i][0] + prior[i], -cached_action_id(legal[i]))
            )
            self.last_root = {cached_action_id(a): (stats[i][1], stats[i][0]) for i, a in enumerate(legal)}
            return legal[best]
        root = self.search(view, rng, budget)
        by_id = {cached_action_id(a): a for a in legal}
        ranked = sorted(
            ((n.visits, n.total / n.visits if n.visits else 0.0, -i) for i, n in root.children.items() if i in by_id),
            reverse=True,
        )
        if not ranked:  # pragma: no cover - every root action is legal in every sample
            return legal[0]
        self.last_root = {-k: (v, q) for v, q, k in ranked}
        return by_id[-ranked[0][2]]

    def prior(self, view: View, legal: Sequence[Action]) -> list[float]:
        """Greedy's opinion of the root actions, scaled to [-prior_weight, 0] (0: its favourite).

        Added to the sampled mean rewards: the search overrides the heuristic only when the
        samples disagree by more than the heuristic's margin. Used for plays and capture
        choices; go/stop and the other decisions are left to the samples.
        """
        if not self.prior_weight or view.phase not in (Phase.PLAY, Phase.CHOOSE_HAND, Phase.CHOOSE_FLIP):
            return [0.0] * len(legal)
        sit = Situation(view)
        values = [sit.value(a) for a in legal]
        top, low = max(values), min(values)
        span = top - low
        if span <= 1e-9:
            return [0.0] * len(legal)
        return [self.prior_weight * (v - top) / span for v in values]

    def search_flat(
        self,
        view: View,
        legal: Sequence[Action],
        rng: random.Random,
        prior: Sequence[float] | None = None,
        budget: Budget | None = None,
    ) -> list[tuple[float, int]]:
        """Root-only search with common random numbers and sequential halving.

        Every determinization (and rollout seed) is shared by all surviving root actions, so
        their rewards are compared on the same hidden cards. Returns (mean, samples) per action.
        """
        k = len(legal)
        sums = [0.0] * k
        counts = [0] * k
        alive = list(range(k))
        budget = budget if budget is not None else self.budget()
        limit = budget.limit
        rounds = max(1, math.ceil(math.log2(k))) if self.halving else 1
        belief = self.belief(view, rng)
        done = 0
        phase_start = 0
        phase = 0
        eps = self.epsilon
        n = 0
        while done < limit:
            sample = determinize(view, rng, belief.sample(n) if belief else None)
            n += 1
            seed = rng.getrandbits(63)
            for i in alive:
                p = Playout(sample)
                pos = p.position
                p.apply(legal[i])
                r = random.Random(seed)
                replies = self.reply_depth
                while not p.over:
                    moves = p.legal_actions()
                    if replies and p.to_move != view.viewer and len(moves) > 1 and pos.phase is Phase.PLAY:
                        replies -= 1
                        p.apply(self._greedy.choose(engine_view(p.state(), p.to_move), moves))
                        continue
                    p.apply(rollout_action(pos, moves, r, eps))
                sums[i] += self._rewards(p)[view.viewer]
                counts[i] += 1
            done += len(alive)
            if budget.spent(done):
                break
            if phase < rounds - 1 and len(alive) > 2:
                total = budget.projected(done)
                if done - phase_start >= total / rounds:
                    alive.sort(key=lambda i: (-sums[i] / counts[i] - (prior[i] if prior else 0.0), i))
                    alive = sorted(alive[: max(2, (len(alive) + 1) // 2)])
                    phase += 1
                    phase_start = done
        self.last_iterations = done
        return [(sums[i] / counts[i] if counts[i] else -math.inf, counts[i]) for i in range(k)]

    def belief(self, view: View, rng: random.Random) -> Belief | None:
        """The posterior over the opponents' hands from their past plays (None: sample uniformly)."""
        if not self.infer or not view.plays:
            return None
        b = Belief(view, rng, beta=self.beta, noise=self.noise, samples=self.belief_samples)
        return b if b.informed else None

    def search(self, view: View, rng: random.Random, budget: Budget | None = None) -> _Node:
        """Run the budgeted search from ``view``; return the root node."""
        root = _Node(-1)
        budget = budget if budget is not None else self.budget()
        belief = self.belief(view, rng)
        done = 0
        while done < budget.limit:
            self._iterate(root, determinize(view, rng, belief.sample(done) if belief else None), rng)
            done += 1
            if budget.spent(done):
                break
        self.last_iterations = done
        return root

    def _iterate(self, root: _Node, sample: State, rng: random.Random) -> None:
        p = Playout(sample)
        pos = p.position
        node = root
        path = [root]
        c = self.exploration
        eps = self.epsilon
        while not p.over:
            legal = p.legal_actions()
            mover = p.to_move
            children = node.children
            untried: list[Action] = []
            for a in legal:
                child = children.get(cached_action_id(a))
                if child is None:
                    untried.append(a)
                else:
                    child.avail += 1
            if untried:
                a = rollout_action(pos, untried, rng, 0.0) if len(untried) > 1 else untried[0]
                child = children[cached_action_id(a)] = _Node(mover)
                child.avail = 1
                p.apply(a)
                path.append(child)
                break
            best = None
            best_action: Action = legal[0]
            top = -math.inf
            for a in legal:
                ch = children[cached_action_id(a)]
                u = ch.total / ch.visits + c * math.sqrt(math.log(ch.avail) / ch.visits)
                if u > top:
                    top, best, best_action = u, ch, a
            assert best is not None
            p.apply(best_action)
            node = best
            path.append(node)
        while not p.over:
            p.apply(rollout_action(pos, p.legal_actions(), rng, eps))
        rewards = self._rewards(p)
        for n in path:
            n.visits += 1
            if n.seat >= 0:
                n.total += rewards[n.seat]

    def _rewards(self, p: Playout) -> list[float]:
        settlement = p.position.settlement
        assert settlement is not None
        points: tuple[int, ...] = settlement.points
        winner: int = settlement.winner
        out = [0.0 if winner < 0 else (1.0 if s == winner else -1.0) for s in range(len(points))]
        if self.points_weight:
            w, scale = self.points_weight, self.points_scale
            for s, pts in enumerate(points):
                out[s] += w * max(-1.0, min(1.0, pts / scale))
        return out


__all__ = ["DEFAULT_CPU_MILLIS", "Budget", "MctsBot", "rollout_action"]
