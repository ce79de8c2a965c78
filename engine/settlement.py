"""The settlement of a round: who pays whom, and why, factor by factor; its values and its
arithmetic (from the working copy at the round's end).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from .rules import Rules
from .scoring import Score, go_score

if TYPE_CHECKING:
    from .working import Work

Outcome = Literal["stop", "best_score", "instant_win", "instant_loss", "nagari"]
"""How a round ended (see ``Settlement``)."""
EndReason = Literal["stop", "last_go", "chongtong", "three_ppeok", "heodang", "cards_exhausted", "tied_scores"]
"""What ended it: a stop, a go on the last card, 총통, 3뻑, 허당, the cards running out, tied scores."""
PaymentReason = Literal["gwang_sale", "first_ppeok", "second_ppeok", "third_ppeok", "first_ttadak"]
"""What an instant payment is for: 광팔기, 첫뻑/연뻑 (one to three), 첫따닥."""
FactorName = Literal["shake_bomb", "meongbak", "nagari_carry", "pibak", "gwangbak", "gobak", "own_shake_bomb"]
"""A settlement multiplier: 흔들기/폭탄, 멍박, the 나가리 carry, 피박, 광박, 고박, a loser's own 흔들기/폭탄."""


@dataclass(frozen=True, slots=True, init=False)
class Factor:
    """One named factor of a settlement: a multiplier (×value) or points."""

    name: FactorName
    value: int

    def __init__(self, name: FactorName, value: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "value", value)


@dataclass(frozen=True, slots=True, init=False)
class Payment:
    """An instant point transfer of the round (첫뻑, 연뻑, 첫따닥, 광팔기)."""

    payer: int
    payee: int
    points: int
    reason: PaymentReason

    def __init__(self, payer: int, payee: int, points: int, reason: PaymentReason) -> None:
        object.__setattr__(self, "payer", payer)
        object.__setattr__(self, "payee", payee)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "reason", reason)


@dataclass(frozen=True, slots=True, init=False)
class Bill:
    """What one losing seat owes the winner."""

    seat: int
    factors: tuple[Factor, ...]
    """This loser's own multipliers (피박, 광박, 고박, ...)."""
    points: int
    """go score × winner multipliers × this loser's multipliers."""
    pays: int
    """Points actually paid (3-player 고박 moves one loser's bill to the other)."""
    covers: tuple[int, ...]
    """Seats whose bill this seat pays (itself included when it pays its own)."""

    def __init__(self, seat: int, factors: tuple[Factor, ...], points: int, pays: int, covers: tuple[int, ...]) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "factors", factors)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "pays", pays)
        object.__setattr__(self, "covers", covers)


@dataclass(frozen=True, slots=True, init=False)
class Settlement:
    """The end of a round, explained.

    ``outcome`` is ``stop`` (a seat stopped), ``best_score`` (arcade: highest score when
    the cards ran out), ``instant_win``, ``instant_loss`` or ``nagari``.
    """

    outcome: Outcome
    reason: EndReason
    winner: int
    """-1 for 나가리."""
    score: Score | None
    base: int
    gos: int
    go_score: int
    winner_factors: tuple[Factor, ...]
    bills: tuple[Bill, ...]
    payments: tuple[Payment, ...]
    """Every instant payment of the round (already paid when they happened)."""
    points: tuple[int, ...]
    """Net points of each seat for the round, instant payments included."""
    money: tuple[int, ...]
    """``points`` × the point value."""
    point_value: int
    carry_next: bool
    """The next round of the match is ×2 (나가리 carry)."""

    def __init__(
        self,
        outcome: Outcome, reason: EndReason, winner: int, score: Score | None, base: int, gos: int, go_score: int,
        winner_factors: tuple[Factor, ...], bills: tuple[Bill, ...], payments: tuple[Payment, ...],
        points: tuple[int, ...], money: tuple[int, ...], point_value: int, carry_next: bool,
    ) -> None:
        object.__setattr__(self, "outcome", outcome)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "winner", winner)
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "gos", gos)
        object.__setattr__(self, "go_score", go_score)
        object.__setattr__(self, "winner_factors", winner_factors)
        object.__setattr__(self, "bills", bills)
        object.__setattr__(self, "payments", payments)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "money", money)
        object.__setattr__(self, "point_value", point_value)
        object.__setattr__(self, "carry_next", carry_next)

    @property
    def is_draw(self) -> bool:
        return self.winner < 0


def shake_bomb_count(rules: Rules, shakes: tuple[int, ...], bombs: tuple[int, ...]) -> int:
    """흔들기/폭탄 doublings of a seat that shook ``shakes`` and bombed ``bombs`` (months)."""
    if not rules.shake_bomb:
        return 0
    if rules.shake_bomb_count == "per_month":
        return len(set(shakes) | set(bombs))
    return len(shakes) + len(bombs)


def settle(
    w: Work, winner: int, outcome: Outcome, reason: EndReason, *, fixed: int | None = None, minimum: int = 0
) -> Settlement:
    """The settlement of the round ``w`` ends: ``winner`` (-1: 나가리) is paid its go score times the
    factors, or ``fixed`` points (instant wins); ``minimum`` is the least go score it is paid."""
    r = w.rules
    n_seats = len(w.seats)
    points = [0] * n_seats
    for p in w.payments:
        points[p.payer] -= p.points
        points[p.payee] += p.points
    if winner < 0:
        return Settlement(
            outcome, reason, -1, None, 0, 0, 0, (), (), tuple(w.payments), tuple(points),
            tuple(p * r.point_value for p in points), r.point_value, r.nagari_carry,
        )
    playing = w.order()
    losers = [o for o in playing if o != winner]
    sc = w.score(winner)
    ws = w.seats[winner]
    factors: list[Factor] = []
    if fixed is not None:
        go_pts = fixed
    else:
        go_pts = max(go_score(sc.total, ws.gos, r.go_scoring), minimum)
        k = shake_bomb_count(r, ws.shakes, ws.bombs)
        if k:
            factors.append(Factor("shake_bomb", 1 << k))
        if r.meongbak and sc.yeol_count >= r.meongbak_min_yeol:
            factors.append(Factor("meongbak", 2))
    if w.carry:
        factors.append(Factor("nagari_carry", 2))
    mult = 1
    for f in factors:
        mult *= f.value
    bills: list[Bill] = []
    for loser in losers:
        lf: list[Factor] = []
        if fixed is None:
            ls = w.score(loser)
            if (
                r.pibak
                and (sc.pi > 0 or not r.pibak_requires_winner_pi)
                and ls.pi_value <= r.pibak_max_pi
                and (ls.pi_value > 0 or not r.pibak_zero_exempt)
            ):
                lf.append(Factor("pibak", 2))
            if r.gwangbak and sc.gwang > 0 and ls.gwang_count == 0:
                lf.append(Factor("gwangbak", 2))
            if r.gobak and len(playing) == 2 and w.seats[loser].gos > 0:
                lf.append(Factor("gobak", 2))
            if r.shake_bomb_when_losing:
                k = shake_bomb_count(r, w.seats[loser].shakes, w.seats[loser].bombs)
                if k:
                    lf.append(Factor("own_shake_bomb", 1 << k))
        owed = go_pts * mult
        for f in lf:
            owed *= f.value
        bills.append(Bill(loser, tuple(lf), owed, owed, (loser,)))
    if fixed is None and r.gobak and len(playing) >= 3:
        goers = [b.seat for b in bills if w.seats[b.seat].gos > 0]
        if goers:
            payer = max(goers, key=lambda o: w.seats[o].last_go_order)
            total = sum(b.points for b in bills)
            covered = tuple(b.seat for b in bills)
            bills = [
                replace(b, pays=total, covers=covered) if b.seat == payer else replace(b, pays=0, covers=())
                for b in bills
            ]
    for b in bills:
        points[b.seat] -= b.pays
        points[winner] += b.pays
    return Settlement(
        outcome, reason, winner, sc, sc.total, ws.gos, go_pts, tuple(factors), tuple(bills),
        tuple(w.payments), tuple(points), tuple(p * r.point_value for p in points), r.point_value, False,
    )
