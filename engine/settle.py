"""The arithmetic of a round's settlement: who pays whom and why, from the working copy at the
round's end (the values it produces are those of ``settlement.py``).
"""

from __future__ import annotations

from dataclasses import replace

from .events import RoundSettled
from .rules import Rules
from .scoring import go_score
from .settlement import Bill, Factor, Settlement
from .state import Phase
from .working import Work

# -------------------------------------------------------------------- settlement


def shake_bomb_count(rules: Rules, shakes: tuple[int, ...], bombs: tuple[int, ...]) -> int:
    """흔들기/폭탄 doublings of a seat that shook ``shakes`` and bombed ``bombs`` (months)."""
    if not rules.shake_bomb:
        return 0
    if rules.shake_bomb_count == "per_month":
        return len(set(shakes) | set(bombs))
    return len(shakes) + len(bombs)


def settle(
    w: Work, winner: int, outcome: str, reason: str, *, fixed: int | None = None, minimum: int = 0
) -> Settlement:
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


def finish_round(w: Work, settlement: Settlement) -> None:
    w.settlement = settlement
    w.phase, w.to_move, w.turn = Phase.OVER, -1, None
    if not w.quiet:
        w.events.append(RoundSettled(settlement))
