"""Matches: a series of rounds among the same seats.

A match keeps the 선 (the winner leads; after a 나가리 the 선 stays), the 나가리 carry,
cumulative points and money, and each seat's win/loss/draw record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .actions import Action
from .dealing import Deal, new_round
from .errors import IllegalAction, RoundOver
from .events import Event
from .play import apply
from .rng import Rng
from .rules import TOTAL_MAX, Rules
from .state import State

_GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def round_seed(match_seed: int, round_no: int) -> int:
    """The seed of round ``round_no`` (1-based): the match seed for round 1."""
    if round_no == 1:
        return match_seed
    return Rng((match_seed + round_no * _GOLDEN) & _MASK).next_u64()


@dataclass(frozen=True, slots=True)
class RoundResult:
    """The outcome of one finished round of a match."""

    round_no: int
    winner: int
    """-1 for 나가리."""
    outcome: str
    points: tuple[int, ...]
    money: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Match:
    rules: Rules
    seed: int
    rounds: int
    """Rounds to play; 0 for an open-ended match."""
    round_no: int
    round: State
    points: tuple[int, ...]
    """Cumulative net points per seat (finished rounds)."""
    money: tuple[int, ...]
    wins: tuple[int, ...]
    losses: tuple[int, ...]
    draws: tuple[int, ...]
    history: tuple[RoundResult, ...]

    @property
    def round_over(self) -> bool:
        return self.round.over

    @property
    def finished(self) -> bool:
        """Every planned round is played (never for an open-ended match)."""
        return self.rounds > 0 and self.round_no >= self.rounds and self.round.over


def new_match(
    rules: Rules, seed: int, rounds: int = 1, *, deal: Deal | None = None
) -> tuple[Match, list[Event]]:
    """Start a match and deal its first round (``deal`` replaces the first shuffle)."""
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
        raise ValueError(f"rounds must be a non-negative integer, not {rounds!r}")
    state, events = new_round(rules, round_seed(seed, 1), deal=deal)
    zeros = (0,) * rules.players
    match = Match(rules, seed, rounds, 1, state, zeros, zeros, zeros, zeros, zeros, ())
    return _record(match), events


def match_apply(match: Match, action: Action, seat: int | None = None) -> tuple[Match, list[Event]]:
    """Apply an action to the current round; record the round when it ends."""
    state, events = apply(match.round, action, seat)
    return _record(replace(match, round=state)), events


def next_round(match: Match) -> tuple[Match, list[Event]]:
    """Deal the next round: winner leads (선 stays after 나가리), carry applied.

    An open-ended match ends for good (``MATCH_TOTAL_LIMIT``) when the next round could carry a
    running total of points or money past the int64 the wire holds: a round moves at most
    ``rules.round_points_bound`` points per seat, so totals never overflow, whatever the number of
    rounds.
    """
    if not match.round.over:
        raise IllegalAction("the current round is not over", code="ROUND_IN_PROGRESS")
    if match.finished:
        raise RoundOver("the match is over")
    bound = match.rules.round_points_bound
    money_bound = bound * match.rules.point_value
    if any(abs(p) > TOTAL_MAX - bound for p in match.points) or any(
        abs(m) > TOTAL_MAX - money_bound for m in match.money
    ):
        raise IllegalAction(
            "the match's running totals are too close to the int64 limit for another round",
            code="MATCH_TOTAL_LIMIT",
        )
    last = match.round.settlement
    assert last is not None
    dealer = last.winner if last.winner >= 0 else match.round.dealer
    carry = last.carry_next and last.winner < 0
    no = match.round_no + 1
    state, events = new_round(match.rules, round_seed(match.seed, no), dealer=dealer, carry=carry)
    return _record(replace(match, round_no=no, round=state)), events


def _record(match: Match) -> Match:
    """Fold a just-finished round into the totals (once)."""
    st = match.round
    if not st.over or any(r.round_no == match.round_no for r in match.history):
        return match
    s = st.settlement
    assert s is not None
    playing = st.order
    n = len(match.points)
    wins, losses, draws = list(match.wins), list(match.losses), list(match.draws)
    for seat in playing:
        if s.winner < 0:
            draws[seat] += 1
        elif seat == s.winner:
            wins[seat] += 1
        else:
            losses[seat] += 1
    result = RoundResult(match.round_no, s.winner, s.outcome, s.points, s.money)
    return replace(
        match,
        points=tuple(match.points[i] + s.points[i] for i in range(n)),
        money=tuple(match.money[i] + s.money[i] for i in range(n)),
        wins=tuple(wins),
        losses=tuple(losses),
        draws=tuple(draws),
        history=match.history + (result,),
    )
