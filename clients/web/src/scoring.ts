// The base score and the settlement arithmetic of engine/scoring.py and engine/settle.py, so the
// page can show what a decision is worth before it is made: 국진 either way, and at go/stop the
// settlement a stop would give now and what a 고 would change. Only what the view already shows
// goes in (captured piles, gos, 흔들기/폭탄, the rules): nothing hidden is needed.
import { BIGWANG, CARDS, CHEONGDAN, CHODAN, GODORI, GUKJIN, HONGDAN } from "./cards";

export interface BaseScore {
  gwangCount: number;
  hasBigwang: boolean;
  yeolCount: number;
  ttiCount: number;
  piValue: number;
  sseulCount: number;
  gwang: number;
  yeol: number;
  godori: number;
  tti: number;
  hongdan: number;
  cheongdan: number;
  chodan: number;
  pi: number;
  sseul: number;
  total: number;
}

/** Score categories in the engine's fixed order (Score.categories). */
export const CATEGORIES = ["gwang", "yeol", "godori", "tti", "hongdan", "cheongdan", "chodan", "pi", "sseul"] as const;
export type Category = (typeof CATEGORIES)[number];

function gwangPoints(n: number, bigwang: boolean): number {
  if (n === 5) return 15;
  if (n === 4) return 4;
  if (n === 3) return bigwang ? 2 : 3;
  return 0;
}

/** engine.scoring.score: a captured pile's base score by category. */
export function score(cards: Iterable<number>, gukjinConverted = false, sseulPoints = 0): BaseScore {
  let gwang = 0, yeol = 0, tti = 0, pi = 0, birds = 0, hong = 0, cheong = 0, cho = 0;
  let bigwang = false;
  for (const c of cards) {
    const info = CARDS[c];
    if (info === undefined) continue;
    if (c === GUKJIN) {
      if (gukjinConverted) pi += 2;
      else yeol += 1;
    } else if (info.kind === "pi") {
      pi += info.pi;
    } else if (info.kind === "yeol") {
      yeol += 1;
      if (GODORI.has(c)) birds += 1;
    } else if (info.kind === "tti") {
      tti += 1;
      if (HONGDAN.has(c)) hong += 1;
      else if (CHEONGDAN.has(c)) cheong += 1;
      else if (CHODAN.has(c)) cho += 1;
    } else {
      gwang += 1;
      if (c === BIGWANG) bigwang = true;
    }
  }
  const s = {
    gwangCount: gwang,
    hasBigwang: bigwang,
    yeolCount: yeol,
    ttiCount: tti,
    piValue: pi,
    sseulCount: sseulPoints,
    gwang: gwangPoints(gwang, bigwang),
    yeol: yeol >= 5 ? yeol - 4 : 0,
    godori: birds === 3 ? 5 : 0,
    tti: tti >= 5 ? tti - 4 : 0,
    hongdan: hong === 3 ? 3 : 0,
    cheongdan: cheong === 3 ? 3 : 0,
    chodan: cho === 3 ? 3 : 0,
    pi: pi >= 10 ? pi - 9 : 0,
    sseul: sseulPoints,
    total: 0,
  };
  s.total = CATEGORIES.reduce((t, k) => t + s[k], 0);
  return s;
}

/** engine.scoring.go_score: the score of base `base` after `gos` 고. */
export function goScore(base: number, gos: number, additive: boolean): number {
  if (gos <= 0) return base;
  if (gos <= 2) return base + gos;
  return (additive ? base + gos : base + 2) * 2 ** (gos - 2);
}

export interface Factor {
  name: string;
  value: number;
}

export interface BillPreview {
  seat: number;
  factors: Factor[];
  points: number;
  pays: number;
  covers: number[];
}

export interface SeatFacts {
  seat: number;
  /** The seat's base score as the view gives it. */
  score: BaseScore;
  gos: number;
  lastGoOrder: number;
  /** ×2^k of its 흔들기/폭탄 (SeatView.multiplier). */
  multiplier: number;
}

export interface RuleFacts {
  additive: boolean;
  meongbak: boolean;
  meongbakMinYeol: number;
  pibak: boolean;
  pibakMaxPi: number;
  pibakRequiresWinnerPi: boolean;
  pibakZeroExempt: boolean;
  gwangbak: boolean;
  gobak: boolean;
  shakeBombWhenLosing: boolean;
}

export interface StopPreview {
  goPoints: number;
  winnerFactors: Factor[];
  bills: BillPreview[];
  total: number;
}

/**
 * engine.settle.settle for a stop by `winner` now: its go score, the winner's multipliers and each
 * loser's 박, with the 3-player 고박 transfer. `carry` is the view's 나가리 carry.
 */
export function stopPreview(rules: RuleFacts, winner: SeatFacts, losers: SeatFacts[], carry: boolean): StopPreview {
  const sc = winner.score;
  const goPoints = goScore(sc.total, winner.gos, rules.additive);
  const winnerFactors: Factor[] = [];
  if (winner.multiplier > 1) winnerFactors.push({ name: "shake_bomb", value: winner.multiplier });
  if (rules.meongbak && sc.yeolCount >= rules.meongbakMinYeol) winnerFactors.push({ name: "meongbak", value: 2 });
  if (carry) winnerFactors.push({ name: "nagari_carry", value: 2 });
  const mult = winnerFactors.reduce((m, f) => m * f.value, 1);
  let bills: BillPreview[] = losers.map((l) => {
    const factors: Factor[] = [];
    const ls = l.score;
    if (
      rules.pibak &&
      (sc.pi > 0 || !rules.pibakRequiresWinnerPi) &&
      ls.piValue <= rules.pibakMaxPi &&
      (ls.piValue > 0 || !rules.pibakZeroExempt)
    ) {
      factors.push({ name: "pibak", value: 2 });
    }
    if (rules.gwangbak && sc.gwang > 0 && ls.gwangCount === 0) factors.push({ name: "gwangbak", value: 2 });
    if (rules.gobak && losers.length === 1 && l.gos > 0) factors.push({ name: "gobak", value: 2 });
    if (rules.shakeBombWhenLosing && l.multiplier > 1) factors.push({ name: "own_shake_bomb", value: l.multiplier });
    const points = factors.reduce((p, f) => p * f.value, goPoints * mult);
    return { seat: l.seat, factors, points, pays: points, covers: [l.seat] };
  });
  if (rules.gobak && losers.length >= 2) {
    const goers = losers.filter((l) => l.gos > 0);
    if (goers.length > 0) {
      const payer = goers.reduce((a, b) => (b.lastGoOrder > a.lastGoOrder ? b : a)).seat;
      const total = bills.reduce((t, b) => t + b.points, 0);
      const covered = bills.map((b) => b.seat);
      bills = bills.map((b) =>
        b.seat === payer ? { ...b, pays: total, covers: covered } : { ...b, pays: 0, covers: [] },
      );
    }
  }
  return { goPoints, winnerFactors, bills, total: bills.reduce((t, b) => t + b.pays, 0) };
}
