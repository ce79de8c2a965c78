// What the prompts promise, from the view alone: the settlement a stop would give now (go/stop),
// what the next 고 makes of the score, and 국진's score either way. Pure functions of a GameView
// (no drawing), so that a test can run them against the engine's own settlement of the same view.
import { GoScoring, type GameView, type SeatView } from "./api";
import { goScore, score, stopPreview, type BaseScore, type RuleFacts, type SeatFacts, type StopPreview } from "./scoring";

/** The rules that settle a round, as the view gives them. */
export function ruleFacts(view: GameView): RuleFacts {
  const r = view.rules;
  return {
    additive: r?.goScoring === GoScoring.ADDITIVE,
    meongbak: r?.meongbak ?? false,
    meongbakMinYeol: r?.meongbakMinYeol ?? 7,
    pibak: r?.pibak ?? false,
    pibakMaxPi: r?.pibakMaxPi ?? 5,
    pibakRequiresWinnerPi: r?.pibakRequiresWinnerPi ?? true,
    pibakZeroExempt: r?.pibakZeroExempt ?? true,
    gwangbak: r?.gwangbak ?? false,
    gobak: r?.gobak ?? false,
    shakeBombWhenLosing: r?.shakeBombWhenLosing ?? false,
  };
}

/** A seat's base score as the view gives it. */
export function baseOf(seat: SeatView): BaseScore {
  const s = seat.score;
  return {
    gwangCount: s?.gwangCount ?? 0, hasBigwang: s?.hasBigwang ?? false, yeolCount: s?.yeolCount ?? 0,
    ttiCount: s?.ttiCount ?? 0, piValue: s?.piValue ?? 0, sseulCount: s?.sseulCount ?? 0, gwang: s?.gwang ?? 0,
    yeol: s?.yeol ?? 0, godori: s?.godori ?? 0, tti: s?.tti ?? 0, hongdan: s?.hongdan ?? 0,
    cheongdan: s?.cheongdan ?? 0, chodan: s?.chodan ?? 0, pi: s?.pi ?? 0, sseul: s?.sseul ?? 0, total: s?.total ?? 0,
  };
}

function facts(seat: SeatView): SeatFacts {
  return { seat: seat.seat, score: baseOf(seat), gos: seat.gos, lastGoOrder: seat.lastGoOrder, multiplier: seat.multiplier || 1 };
}

/** The settlement if `seat` stopped now: its go score, the winner's factors, each playing opponent's bill. */
export function previewStop(view: GameView, seat: number): StopPreview {
  const me = view.seats.find((s) => s.seat === seat);
  if (me === undefined) return { goPoints: 0, winnerFactors: [], bills: [], total: 0 };
  // The engine settles the losers in turn order from the 선 (its bills come in that order).
  const n = view.seats.length;
  const losers = view.seats
    .filter((s) => s.active && s.seat !== seat)
    .sort((a, b) => ((a.seat - view.dealer + n) % n) - ((b.seat - view.dealer + n) % n));
  return stopPreview(ruleFacts(view), facts(me), losers.map(facts), view.carry);
}

/** The next 고 of `seat`: its count, and the go score of the current base after it. */
export function previewGo(view: GameView, seat: number): { nextGo: number; afterGo: number } {
  const me = view.seats.find((s) => s.seat === seat);
  const nextGo = (me?.gos ?? 0) + 1;
  return { nextGo, afterGo: goScore(me?.score?.total ?? 0, nextGo, ruleFacts(view).additive) };
}

/** `seat`'s base score with 국진 kept as a 열끗 and made a 쌍피. */
export function gukjinScores(view: GameView, seat: number): { keep: BaseScore; convert: BaseScore } {
  const me = view.seats.find((s) => s.seat === seat);
  const pile = me?.captured ?? [];
  const sseul = me?.score?.sseulCount ?? 0;
  return { keep: score(pile, false, sseul), convert: score(pile, true, sseul) };
}
